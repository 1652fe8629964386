"""Writes of error-analysis rounds (seed 000 §3.4 "Error Analysis"): drawing a round from a finished audit, its
coders, its cross-lens mappings, closing and reopening it, and checking that its draw rebuilds.

A round's population is what the audit's paradigm gives as ``explained_replies`` (:mod:`auditapp.engine.registry`:
the coding app never names a paradigm). Every function that can be refused raises :class:`RoundError` with every
problem it found, and stores nothing.
"""
from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass

import pandas as pd
from django.contrib.auth import get_user_model
from django.db import IntegrityError, transaction
from django.utils import timezone

from annotation.models import new_seed
from auditapp.engine import registry
from auditapp.models import Audit
from coding import sampling
from coding.models import Code, Codebook, CodeMapping, Coder, CodingRound, Excerpt, RoundLens

MAX_LENSES = 6
ACCEPTED_STATUSES = (Audit.Status.COMPLETED,)
"""Only a completed audit is sampled: one still queued, running, paused or stopped can be resumed (and a failed or
cancelled one retried), which adds replies to the eligible set; its sample would not be one of the audit's final
replies, and the draw could not be rebuilt from them."""
SEED_RANGE = (-(2**63), 2**63 - 1)

logger = logging.getLogger(__name__)


class RoundError(ValueError):
    """A round cannot be created or changed as asked; ``problems`` lists every reason."""

    def __init__(self, problems: Sequence[str]):
        self.problems = list(problems)
        super().__init__("; ".join(self.problems))


@dataclass(frozen=True)
class MappingSpec:
    """A cross-lens mapping: a name and the ids of codes from at least two of the round's lenses."""

    name: str
    codes: tuple[int, ...]


def invite_path(coder: Coder) -> str:
    """The path of an outside coder's invite link (the coders' pages answer it)."""
    return f"/c/{coder.invite_token}/"


# ------------------------------------------------------------------------------------------------ eligibility

def eligible_replies(*, audit: Audit, eligible: str, models_included: Sequence[int] = (),
                     conditions_included: Sequence[str] = ()) -> pd.DataFrame:
    """The audit's explained replies a round with these settings samples from: all of them ("parsed") or those
    whose label differs from the weighted ground truth ("disagree": a reply whose item has no weighted label is not
    eligible, as it neither agrees nor disagrees), from the included models and conditions (empty: all)."""
    explained = registry.get(audit.paradigm).explained_replies
    if explained is None:
        raise RoundError([_no_explained_replies(audit)])
    frame = explained(audit)
    if models_included:
        frame = frame[frame.model.isin(list(models_included))]
    if conditions_included:
        frame = frame[frame.condition.isin(list(conditions_included))]
    if eligible == CodingRound.Eligible.DISAGREE:
        frame = frame[frame.reference_label.notna()]
        frame = frame[frame.label != frame.reference_label]
    return frame.reset_index(drop=True)


def _no_explained_replies(audit: Audit) -> str:
    return (f"audit {audit.id} is a {registry.get(audit.paradigm).label} audit: its paradigm gives no replies with "
            "a label and an explanation to code")


# ---------------------------------------------------------------------------------------------------- creation

def _lens_problems(codebook_ids: Sequence[int]) -> tuple[list[str], list[Codebook]]:
    problems: list[str] = []
    if not 1 <= len(codebook_ids) <= MAX_LENSES:
        problems.append(f"a round has 1 to {MAX_LENSES} lenses (one codebook each), not {len(codebook_ids)}")
    repeated = sorted({i for i in codebook_ids if list(codebook_ids).count(i) > 1})
    if repeated:
        problems.append(f"each lens needs its own codebook; repeated: {', '.join(map(str, repeated))}")
    found = {c.id: c for c in Codebook.objects.filter(id__in=codebook_ids)}
    unknown = [str(i) for i in dict.fromkeys(codebook_ids) if i not in found]
    if unknown:
        problems.append(f"no codebook with id {', '.join(unknown)}")
    codebooks = [found[i] for i in dict.fromkeys(codebook_ids) if i in found]
    lineages: dict = {}
    for codebook in codebooks:
        lineages.setdefault(codebook.lineage, []).append(codebook)
    problems.extend("two versions of one codebook are not two lenses: " + ", ".join(f"{c.id} ({c})" for c in versions)
                    for versions in lineages.values() if len(versions) > 1)
    with_codes = set(Code.objects.filter(codebook__in=codebooks).values_list("codebook_id", flat=True))
    empty = [f"{c.id} ({c})" for c in codebooks if c.id not in with_codes]
    if empty:
        problems.append(f"codebook {', '.join(empty)} has no codes")
    return problems, codebooks


def _mapping_problems(mappings: Sequence[MappingSpec], lens_of_codebook: dict[int, int]) -> list[str]:
    """Problems of cross-lens mappings over lenses ``lens_of_codebook`` (codebook id → lens number, from 1)."""
    problems: list[str] = []
    names = [m.name.strip() for m in mappings]
    if any(not name for name in names):
        problems.append("every mapping needs a name")
    repeated = sorted({name for name in names if name and names.count(name) > 1})
    if repeated:
        problems.append(f"mapping names repeat: {', '.join(repeated)}")
    code_ids = {code for mapping in mappings for code in mapping.codes}
    codebook_of = dict(Code.objects.filter(id__in=code_ids).values_list("id", "codebook_id"))
    for mapping in mappings:
        label = f"mapping {mapping.name.strip() or '(unnamed)'!r}"
        unknown = [str(c) for c in mapping.codes if c not in codebook_of]
        outside = [str(c) for c in mapping.codes if c in codebook_of and codebook_of[c] not in lens_of_codebook]
        if unknown:
            problems.append(f"{label}: no code with id {', '.join(unknown)}")
        if outside:
            problems.append(f"{label}: code {', '.join(outside)} is not in any of the round's lenses")
        lenses = {lens_of_codebook[codebook_of[c]] for c in mapping.codes if codebook_of.get(c) in lens_of_codebook}
        if not unknown and not outside and len(lenses) < 2:
            problems.append(f"{label} must join codes of at least two lenses")
    return problems


def round_create(*, audit: Audit, codebooks: Sequence[int], name: str = "", sample_size: int = 99,
                 allocation: str = CodingRound.Allocation.PROPORTIONAL, eligible: str = CodingRound.Eligible.PARSED,
                 models_included: Sequence[int] = (), conditions_included: Sequence[str] = (),
                 seed: int | None = None, show_model: bool = False, show_condition: bool = False,
                 show_reference: bool = False, mappings: Sequence[MappingSpec] = (), created_by=None) -> CodingRound:
    """Draw a round from ``audit`` and snapshot its excerpts, in one transaction: lens *k* codes with the *k*-th
    codebook of ``codebooks``; ``seed`` None draws a random one (recorded). Raises RoundError naming every problem
    (the audit's paradigm or status, unknown models or conditions, the lenses, the mappings, a sample larger than
    the eligible replies)."""
    problems: list[str] = []
    if registry.get(audit.paradigm).explained_replies is None:
        problems.append(_no_explained_replies(audit))
    if audit.status not in ACCEPTED_STATUSES:
        problems.append(f"audit {audit.id} is {audit.get_status_display().lower()}: a round is drawn from a "
                        "completed audit only (one that can still be resumed or retried would change its replies)")
    if allocation not in CodingRound.Allocation.values:
        problems.append(f"allocation must be one of {', '.join(CodingRound.Allocation.values)}, not {allocation!r}")
    if eligible not in CodingRound.Eligible.values:
        problems.append(f"eligible must be one of {', '.join(CodingRound.Eligible.values)}, not {eligible!r}")
    if sample_size < 1:
        problems.append(f"the sample size must be at least 1, not {sample_size}")
    if seed is not None and not SEED_RANGE[0] <= seed <= SEED_RANGE[1]:
        problems.append("the seed must fit in 64 bits")
    models_included = list(dict.fromkeys(models_included))
    conditions_included = list(dict.fromkeys(conditions_included))
    audit_models = set(audit.models.values_list("id", flat=True))
    unknown_models = [str(m) for m in models_included if m not in audit_models]
    if unknown_models:
        problems.append(f"audit {audit.id} has no model with id {', '.join(unknown_models)}")
    audit_conditions = set(audit.conditions.values_list("condition", flat=True))
    unknown_conditions = [c for c in conditions_included if c not in audit_conditions]
    if unknown_conditions:
        problems.append(f"audit {audit.id} has no condition {', '.join(map(repr, unknown_conditions))}")
    lens_problems, lens_codebooks = _lens_problems(list(codebooks))
    problems += lens_problems
    problems += _mapping_problems(mappings, {c.id: k + 1 for k, c in enumerate(lens_codebooks)})
    if problems:
        raise RoundError(problems)
    seed = new_seed() if seed is None else seed
    frame = eligible_replies(audit=audit, eligible=eligible, models_included=models_included,
                             conditions_included=conditions_included)
    try:
        sample = sampling.stratified_sample(frame, n=sample_size, allocation=allocation, seed=seed)
    except sampling.SamplingError as error:
        raise RoundError([f"{error} ({CodingRound.Eligible(eligible).label.lower()}"
                          f"{', of the chosen models' if models_included else ''}"
                          f"{', under the chosen conditions' if conditions_included else ''})"]) from error
    with transaction.atomic():
        # An in-place edit of a codebook (coding.codebook_services.codebook_save) replaces its codes: locked, the
        # codebooks cannot change between this check and the round's first use of them, which freezes them.
        list(Codebook.objects.select_for_update().filter(id__in=[c.id for c in lens_codebooks]).order_by("id")
             .values_list("id"))
        lens_problems, lens_codebooks = _lens_problems(list(codebooks))
        problems = lens_problems + _mapping_problems(mappings, {c.id: k + 1 for k, c in enumerate(lens_codebooks)})
        if problems:
            raise RoundError(problems)
        coding_round = CodingRound.objects.create(
            audit=audit, name=name.strip() or f"Error analysis of {audit.name}", sample_size=sample_size,
            allocation=allocation, eligible=eligible, models_included=models_included,
            conditions_included=conditions_included, seed=seed, show_model=show_model,
            show_condition=show_condition, show_reference=show_reference, draw=sample.draw, created_by=created_by)
        RoundLens.objects.bulk_create([RoundLens(round=coding_round, codebook=codebook, position=k)
                                       for k, codebook in enumerate(lens_codebooks)])
        Excerpt.objects.bulk_create(_excerpts(coding_round, frame, sample.ids))
        _mappings_store(coding_round, mappings)
    return coding_round


def _nullable(value) -> int | None:
    return None if pd.isna(value) else int(value)


def _excerpts(coding_round: CodingRound, frame: pd.DataFrame, ids: list[int]) -> list[Excerpt]:
    rows = frame.set_index("request_id").loc[ids]
    return [Excerpt(round=coding_round, request_id=int(request_id), position=position,
                    model_name=row.model_name, condition=row.condition, target=row.target,
                    preceding=row.preceding or "", following=row.following or "", label=int(row.label),
                    explanation=row.explanation, reference_label=_nullable(row.reference_label),
                    majority_label=_nullable(row.majority_label))
            for position, (request_id, row) in enumerate(rows.iterrows())]


# -------------------------------------------------------------------------------------------------- the draw

@dataclass(frozen=True)
class DrawCheck:
    """Whether a round's draw rebuilds: ``matches`` and, when it does not, why."""

    matches: bool
    detail: str


def round_verify(*, coding_round: CodingRound) -> DrawCheck:
    """Draw the round's sample again from the audit's replies now, with the recorded seed and settings, and compare
    it with the recorded draw and the stored excerpts (a re-parse of the audit changes the eligible set: the
    check then says which strata differ)."""
    frame = eligible_replies(audit=coding_round.audit, eligible=coding_round.eligible,
                             models_included=coding_round.models_included,
                             conditions_included=coding_round.conditions_included)
    try:
        rebuilt = sampling.sample_rebuild(frame, coding_round.draw)
    except sampling.SamplingError as error:
        return DrawCheck(False, str(error))
    stored = list(coding_round.excerpts.order_by("position").values_list("request_id", flat=True))
    if rebuilt.ids != coding_round.draw["ids"]:
        return DrawCheck(False, "the same seed draws other replies from the same eligible set")
    if stored != rebuilt.ids:
        return DrawCheck(False, "the stored excerpts are not the drawn replies in the drawn order")
    return DrawCheck(True, f"the seed {coding_round.seed} draws the same {len(stored)} replies in the same order")


# ------------------------------------------------------------------------------------------------------ coders

class RoundRefusedToCoder(RoundError):
    """A researcher who codes in the round asked for what would show them the other coders' codes while they can
    still change their own (seed 000 §3.4: coded "independently ... without reconciliation")."""


def coder_add(*, coding_round: CodingRound, lens_id: int, user_id: int | None = None, name: str = "") -> Coder:
    """Add a coder to one of the round's lenses: a researcher's account (``user_id``, a staff user) or an outside
    coder (``name`` only), who reaches the coding pages through the invite link alone. The name is the only way
    the coder appears in exports and must be unique in the round; an account coder without one is "Coder <n>"."""
    problems: list[str] = []
    if coding_round.closed_at is not None:
        problems.append("the round is closed: reopen it to add coders")
    lens = coding_round.lenses.filter(id=lens_id).first()
    if lens is None:
        problems.append(f"the round has no lens with id {lens_id}")
    user = None
    if user_id is not None:
        user = get_user_model().objects.filter(id=user_id).first()
        if user is None:
            problems.append(f"no user with id {user_id}")
        elif not user.is_staff:
            problems.append(f"user {user_id} is not a researcher (staff): invite an outside coder by name instead")
        elif coding_round.coders.filter(user=user).exists():
            problems.append(f"user {user_id} already codes in this round")
    name = name.strip()
    if not name and user_id is None:
        problems.append("an outside coder needs a name (or give a researcher's user id)")
    if not name:
        name = f"Coder {coding_round.coders.count() + 1}"
    if len(name) > Coder._meta.get_field("name").max_length:
        problems.append(f"the name is longer than {Coder._meta.get_field('name').max_length} characters")
    if coding_round.coders.filter(name=name).exists():
        problems.append(f"the round already has a coder named {name!r}")
    if problems:
        raise RoundError(problems)
    try:
        with transaction.atomic():
            return Coder.objects.create(round=coding_round, lens=lens, user=user, name=name)
    except IntegrityError as error:
        raise RoundError([f"the round already has a coder named {name!r} or that account"]) from error


def coder_remove(*, coder: Coder, by) -> None:
    """Remove a coder who has coded nothing yet (a coder's codings are kept: they are the round's data).

    A researcher ``by`` may not remove their own coder row from an open round (RoundRefusedToCoder): no longer a
    coder, they could read the other coders' codes and then be added back. ``by`` None is the system."""
    if by is not None and coder.user_id == by.pk and coder.round.closed_at is None:
        raise RoundRefusedToCoder([
            "you are this coder, and the round is open: leaving it would open the other coders' codes to you; "
            "another researcher can remove you"])
    if coder.codings.exists():
        raise RoundError([f"coder {coder.name!r} has coded {coder.codings.count()} excerpt(s): their codes are the "
                          "round's data and are kept"])
    coder.delete()


# ------------------------------------------------------------------------------------------- close and reopen

def round_close(*, coding_round: CodingRound, by) -> CodingRound:
    """No more coding is accepted. Closing a closed round keeps its first closing time.

    Closing opens the round's results to its coders, so a researcher ``by`` who is a coder of the round may close
    it only once every coder has finished (RoundRefusedToCoder): before that, closing would show them codes they
    could still answer by reopening. ``by`` None is the system."""
    if coding_round.closed_at is None:
        if _is_coder(coding_round, by) and coding_round.coders.filter(completed_at__isnull=True).exists():
            raise RoundRefusedToCoder([
                "you are a coder of this round: you can close it once every coder has finished; until then "
                "another researcher can (closing shows you the other coders' codes)"])
        coding_round.closed_at = timezone.now()
        coding_round.save(update_fields=["closed_at"])
        logger.info("Coding round %s closed by user %s", coding_round.id, getattr(by, "pk", None))
    return coding_round


def round_reopen(*, coding_round: CodingRound, by) -> CodingRound:
    """Coding is accepted again (an open round stays open).

    A researcher ``by`` who is a coder of the round may not reopen it (RoundRefusedToCoder): once closed, they can
    read the other coders' codes, and reopened they could change their own after reading them."""
    if coding_round.closed_at is not None:
        if _is_coder(coding_round, by):
            raise RoundRefusedToCoder([
                "you are a coder of this round and it has been closed, so its codes were open to you: another "
                "researcher, who does not code in it, can reopen it"])
        coding_round.closed_at = None
        coding_round.save(update_fields=["closed_at"])
        logger.info("Coding round %s reopened by user %s", coding_round.id, getattr(by, "pk", None))
    return coding_round


def _is_coder(coding_round: CodingRound, user) -> bool:
    return user is not None and user.pk is not None and coding_round.coders.filter(user_id=user.pk).exists()


# ---------------------------------------------------------------------------------------------------- mappings

def _mappings_store(coding_round: CodingRound, mappings: Sequence[MappingSpec]) -> None:
    stored = CodeMapping.objects.bulk_create([CodeMapping(round=coding_round, name=m.name.strip())
                                              for m in mappings])
    through = CodeMapping.codes.through
    through.objects.bulk_create([through(codemapping_id=mapping.id, code_id=code)
                                 for mapping, spec in zip(stored, mappings, strict=True)
                                 for code in dict.fromkeys(spec.codes)])


def mappings_replace(*, coding_round: CodingRound, mappings: Sequence[MappingSpec]) -> list[CodeMapping]:
    """Replace the round's cross-lens mappings with ``mappings`` (an empty list removes them all); each joins codes
    of at least two of the round's lenses. Raises RoundError naming every problem."""
    lenses = list(coding_round.lenses.order_by("position").values_list("codebook_id", flat=True))
    problems = _mapping_problems(mappings, {codebook: k + 1 for k, codebook in enumerate(lenses)})
    if problems:
        raise RoundError(problems)
    with transaction.atomic():
        coding_round.mappings.all().delete()
        _mappings_store(coding_round, mappings)
    return list(coding_round.mappings.prefetch_related("codes"))
