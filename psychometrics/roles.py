"""Which score the analysis reads each of a study's instruments as (its role), inferred and checked. Pure Python.

The trust weights (seed 000 Appendix B, ``psychometrics.trust``) read two questionnaire scores by role: the total
of the instrument with role ``aq`` as x_AQ (eq. 1) and that of the instrument with role ``sata`` as x_SATA (eq. 2);
``annotation.selectors.study_scores_frame`` and the exports find them by role, never by instrument. A wrong role
is therefore read silently as the wrong score, which is why a study's roles are checked here, the one rule the
admin's study page and ``PUT /api/studies/{id}/instruments/`` both apply.

What an instrument is (``instrument_kind``) is read from its slug, else its name:
- AQ: a slug ``aq`` followed by nothing, a digit, ``-`` or ``_`` (``aq50``, ``aq-10``, ``aq_child``), or a name
  with "Autism-Spectrum Quotient" / "Autism Spectrum Quotient" or the word "AQ" (``AQ-50``, ``AQ10``);
- SATA: a slug ``sata`` followed likewise (``sata_partial``, ``sata26``), or a name with "Societal Attitudes
  Towards Autism" or the word "SATA".
Anything else, or an instrument that reads as both, is of no known kind: any role may be given to it (a lab's own
scale can be a study's AQ), and it gets role ``other`` when none is given. The shipped slugs are ``aq50`` and
``sata_partial``; "aqol" (a quality-of-life scale) is no AQ.

The rules (``study_instrument_problems``): each instrument at most once; at most one instrument with role ``aq``
and one with ``sata``; an instrument of a known kind never given the other kind's role (an AQ as SATA). Giving an
AQ the role ``other`` is allowed (a study may run a second AQ that the weights do not read); the study then has
no AQ role unless another instrument has it, which ``weights_gap`` says in words.
"""
from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

AQ = "aq"
SATA = "sata"
OTHER = "other"
ROLES = (AQ, SATA, OTHER)
ROLE_NAMES = {AQ: "AQ", SATA: "SATA", OTHER: "Other"}

_SLUG_PATTERNS = {AQ: re.compile(r"aq(?:$|[-_0-9])"), SATA: re.compile(r"sata(?:$|[-_0-9])")}
_NAME_PATTERNS = {
    AQ: re.compile(r"autism[- ]spectrum quotient|\bAQ(?:-?[0-9]+)?\b", re.IGNORECASE),
    SATA: re.compile(r"societal attitudes towards? autism|\bSATA\b", re.IGNORECASE),
}
# What each weight input is, for the messages (psychometrics.trust.INSTRUMENTS).
WEIGHT_INPUTS = {AQ: "AQ score", SATA: "SATA score", "iat_d": "IAT D score"}


def instrument_kind(*, slug: str, name: str = "") -> str | None:
    """``aq`` or ``sata`` when the instrument is one (module docstring), else None."""
    by_slug = {role for role, pattern in _SLUG_PATTERNS.items() if pattern.match(slug.lower())}
    kinds = by_slug or {role for role, pattern in _NAME_PATTERNS.items() if pattern.search(name)}
    return kinds.pop() if len(kinds) == 1 else None


def inferred_role(*, slug: str, name: str = "") -> str:
    """The role an instrument gets when none is given: its kind, else ``other``."""
    return instrument_kind(slug=slug, name=name) or OTHER


@dataclass(frozen=True)
class RoleEntry:
    """One instrument of a study as the checks see it: its id, slug, display name and chosen role."""

    instrument_id: int
    slug: str
    name: str
    role: str


def study_instrument_problems(entries: Sequence[RoleEntry]) -> dict[int, list[str]]:
    """The problems of a study's instruments by position in ``entries`` (0-based), each a sentence that names the
    instrument; empty when they may be stored. A role seen twice is reported on its second entry."""
    problems: dict[int, list[str]] = {}
    first_with_role: dict[str, RoleEntry] = {}
    seen_instruments: set[int] = set()
    for index, entry in enumerate(entries):
        found = problems.setdefault(index, [])
        if entry.role not in ROLES:
            found.append(f"{entry.name}: {entry.role!r} is not a role (aq, sata or other)")
            continue
        if entry.instrument_id in seen_instruments:
            found.append(f"{entry.name} is listed twice")
        seen_instruments.add(entry.instrument_id)
        kind = instrument_kind(slug=entry.slug, name=entry.name)
        if kind is not None and entry.role not in (kind, OTHER):
            article = "an" if kind == AQ else "a"
            found.append(f"{entry.name} is {article} {ROLE_NAMES[kind]} instrument (slug {entry.slug!r}): it cannot have "
                         f"the role {ROLE_NAMES[entry.role]}, the weights would read it as the "
                         f"{ROLE_NAMES[entry.role]} score")
        if entry.role != OTHER:
            if entry.role in first_with_role:
                found.append(f"{entry.name}: a second instrument with the role {ROLE_NAMES[entry.role]} "
                             f"({first_with_role[entry.role].name} has it); the weights read one "
                             f"{ROLE_NAMES[entry.role]} score")
            else:
                first_with_role[entry.role] = entry
    return {index: found for index, found in problems.items() if found}


def weights_gap(*, roles: Sequence[str], iat_enabled: bool, missing_rule: str) -> str | None:
    """What the trust weights will lack, given the study's roles, whether it runs the IAT and its missing-instrument
    rule (``exclude`` or ``average``, ``psychometrics.trust``), and what they then use; None when nothing lacks."""
    without_role = [role for role in (AQ, SATA) if role not in roles]
    lacking = [WEIGHT_INPUTS[role] for role in without_role] + ([] if iat_enabled else [WEIGHT_INPUTS["iat_d"]])
    if not lacking:
        return None
    reasons = (["no instrument has the role " + " or ".join(ROLE_NAMES[role] for role in without_role)]
               if without_role else []) + ([] if iat_enabled else ["the IAT is off"])
    used = " and ".join(name for name in WEIGHT_INPUTS.values() if name not in lacking)
    if not used:
        then = "no annotator can get a weight, so the weighted ground truth has no label"
    elif missing_rule == "average":
        then = f"the weights use the {used} only (missing-instrument rule: average the instruments an annotator has)"
    else:
        then = ("under this study's missing-instrument rule (give no weight to annotators missing an instrument) no "
                "annotator gets a weight, so the weighted ground truth has no label; with the rule 'average the "
                f"instruments an annotator has' the weights would use the {used} only")
    return f"The trust weights will have no {' and no '.join(lacking)} ({'; '.join(reasons)}): {then}."
