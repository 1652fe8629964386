"""Which texts each request of a counterfactual audit shows the model, and in which order (seed 002, SI Appendix
Experiment 1 and Experiment 2 "Experimental procedure"). Pure: no Django.

A request is one model × one task × one iteration. Everything random is drawn from a numpy generator seeded by a
:class:`numpy.random.SeedSequence` of sha256-derived integers (never Python's ``hash()``, which changes between
processes), so a request's texts are rebuilt exactly from the audit seed and are never stored.

**Names** (Experiment 1). An iteration holds ``n_pairs`` (30) within-gender pairs: one vignette, a minority-group
name and a reference-group ("White") name of the same gender. The pairs depend only on (seed, iteration): every
model and every task of an iteration sees the same texts, so model and task differences are not text differences.
The paper says that pairs are within gender and that the order of texts is randomised; how it balanced genders and
groups it does not say, so the balance here is **ours**:

- genders alternate in a shuffled order (15/15 with two genders); only the genders that the reference group and
  every minority group have names for are used;
- within each gender the minority groups are cycled in one shuffled order, each gender's cycle starting where the
  previous gender's left its remainder, so every group gets ``n_pairs / groups`` pairs give or take one (7 or 8 of
  30 with four groups) and, within a gender, the same;
- vignettes are drawn without replacement within an iteration (an error when there are fewer vignettes than
  pairs); names uniformly, with replacement, from the group × gender's list.

The 2 × ``n_pairs`` texts are numbered 1.. in an order shuffled by (seed, iteration, task), which also randomises
the order within each pair.

**Dialect** (Experiment 2). A batch of ``batch_size`` (10) texts for (seed, iteration, task): each slot independently
takes SAE or AAVE with probability one half and a pair uniformly from the task's text set, so the same text may
appear twice in a batch (as when "sampling independently from the SAE and AAVE pools with equal probability").

**Judgment units** name what each numbered text is: ``"{index}:{pair_no}:{side}"`` (names) and
``"{index}:{pair_key}:{dialect}"`` (dialect); :func:`name_unit_parts` and :func:`dialect_unit_parts` read them back
in bulk, parsing only the distinct keys.
"""
from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from auditapp.paradigms.counterfactual.material import DIALECTS, PersonName, Vignette

SIDES = ("minority", "reference")
REFERENCE_GROUP = "White"
N_PAIRS = 30
BATCH_SIZE = 10


def seeded_rng(*parts: object) -> np.random.Generator:
    """A generator that depends only on ``parts`` (each turned into an integer by sha256 of its text)."""
    entropy = [int.from_bytes(hashlib.sha256(str(part).encode()).digest()[:16], "big") for part in parts]
    return np.random.default_rng(np.random.SeedSequence(entropy))


@dataclass(frozen=True)
class NamePair:
    """One within-gender pair of an iteration: the same vignette with a minority-group name and a reference-group
    name of the same gender."""

    pair_no: int
    vignette_key: str
    gender: str
    group: str
    minority_name: str
    reference_name: str


@dataclass(frozen=True)
class PlannedText:
    """One numbered text of a request: ``index`` is the number shown to the model (from 1), ``unit`` the key of its
    judgment."""

    index: int
    unit: str
    text: str


def paired_genders(names: Sequence[PersonName], reference_group: str) -> list[str]:
    """The genders an iteration pairs: those with names in the reference group and in every other group (a name
    of another gender is never drawn; :func:`unpaired_names` lists them)."""
    by_group: dict[str, set[str]] = {}
    for person in names:
        by_group.setdefault(person.group, set()).add(person.gender)
    reference = by_group.pop(reference_group, set())
    return sorted(reference.intersection(*by_group.values())) if by_group else []


def unpaired_names(names: Sequence[PersonName], reference_group: str) -> list[tuple[str, str]]:
    """(group, gender) of the names an iteration never draws: their gender is not paired (see
    :func:`paired_genders`)."""
    genders = set(paired_genders(names, reference_group))
    return sorted({(person.group, person.gender) for person in names if person.gender not in genders})


def plan_name_pairs(seed: int, iteration: int, vignettes: Sequence[Vignette], names: Sequence[PersonName], *,
                    reference_group: str = REFERENCE_GROUP, n_pairs: int = N_PAIRS) -> list[NamePair]:
    """The ``n_pairs`` pairs of ``iteration`` (see the module docstring). The lists are sorted first, so the plan
    does not depend on the order in which the material was read."""
    if n_pairs < 1:
        raise ValueError(f"an iteration needs at least one pair, not {n_pairs}")
    cells: dict[tuple[str, str], list[str]] = {}
    for person in sorted(names, key=lambda person: (person.group, person.gender, person.name)):
        cells.setdefault((person.group, person.gender), []).append(person.name)
    groups = sorted({group for group, _ in cells} - {reference_group})
    reference_genders = {gender for group, gender in cells if group == reference_group}
    if not reference_genders:
        raise ValueError(f"no names of the reference group {reference_group!r}")
    if not groups:
        raise ValueError(f"no names of any group other than the reference group {reference_group!r}")
    genders = paired_genders(names, reference_group)
    if not genders:
        raise ValueError(f"no gender has names in the reference group {reference_group!r} and in every minority "
                         f"group ({', '.join(groups)})")
    ordered_vignettes = sorted(vignettes, key=lambda vignette: vignette.key)
    if len(ordered_vignettes) < n_pairs:
        raise ValueError(f"{n_pairs} pairs need {n_pairs} different vignettes; there are {len(ordered_vignettes)}")

    rng = seeded_rng("names-pairs", seed, iteration)
    gender_order = [genders[k] for k in rng.permutation(len(genders))]
    group_order = [groups[k] for k in rng.permutation(len(groups))]
    chosen_vignettes = rng.choice(len(ordered_vignettes), size=n_pairs, replace=False)
    name_draws = rng.random((n_pairs, 2))

    # Gender stream h holds the pairs i with i % len(genders) == h; its cycle over the groups starts where the
    # previous streams' remainders ended, so the remainders tile the cycle and group totals differ by at most one.
    stream_lengths = [len(range(h, n_pairs, len(genders))) for h in range(len(genders))]
    stream_starts = np.concatenate([[0], np.cumsum([length % len(groups) for length in stream_lengths])[:-1]])
    pairs = []
    for pair_no in range(n_pairs):
        stream, position = pair_no % len(genders), pair_no // len(genders)
        gender = gender_order[stream]
        group = group_order[(position + stream_starts[stream]) % len(groups)]
        minority_names, reference_names = cells[(group, gender)], cells[(reference_group, gender)]
        pairs.append(NamePair(
            pair_no=pair_no,
            vignette_key=ordered_vignettes[chosen_vignettes[pair_no]].key,
            gender=gender,
            group=group,
            minority_name=minority_names[int(name_draws[pair_no, 0] * len(minority_names))],
            reference_name=reference_names[int(name_draws[pair_no, 1] * len(reference_names))],
        ))
    return pairs


def name_texts(seed: int, iteration: int, task_slug: str, pairs: Sequence[NamePair],
               vignettes_by_key: Mapping[str, Vignette]) -> list[PlannedText]:
    """The 2 × len(pairs) texts of one names request, numbered 1.. in an order shuffled by (seed, iteration,
    task); unit ``"{index}:{pair_no}:{side}"``."""
    sides = []
    for pair in pairs:
        vignette = vignettes_by_key[pair.vignette_key]
        sides.append((pair.pair_no, "minority", vignette.text(pair.minority_name)))
        sides.append((pair.pair_no, "reference", vignette.text(pair.reference_name)))
    order = seeded_rng("names-order", seed, iteration, task_slug).permutation(len(sides))
    return [PlannedText(index, f"{index}:{pair_no}:{side}", text)
            for index, (pair_no, side, text) in enumerate((sides[k] for k in order), start=1)]


def dialect_texts(seed: int, iteration: int, task_slug: str, texts: Mapping[str, Mapping[str, str]], *,
                  batch_size: int = BATCH_SIZE) -> list[PlannedText]:
    """The batch of one dialect request: ``texts`` maps each pair key of the task's text set to the text sent for
    each dialect (``{"SAE": …, "AAVE": …}``, the AAVE text with its feature tags stripped). Unit
    ``"{index}:{pair_key}:{dialect}"``."""
    if not texts:
        raise ValueError(f"the task {task_slug!r} has no text pairs to sample from")
    if batch_size < 1:
        raise ValueError(f"a batch needs at least one text, not {batch_size}")
    keys = sorted(texts)
    rng = seeded_rng("dialect-batch", seed, iteration, task_slug)
    dialects = rng.integers(0, len(DIALECTS), size=batch_size)
    chosen = rng.integers(0, len(keys), size=batch_size)
    batch = []
    for index, (dialect_code, key_code) in enumerate(zip(dialects, chosen, strict=True), start=1):
        key, dialect = keys[key_code], DIALECTS[dialect_code]
        batch.append(PlannedText(index, f"{index}:{key}:{dialect}", texts[key][dialect]))
    return batch


def _categories_and_codes(units: pd.Series | pd.Categorical) -> tuple[pd.Index, np.ndarray, pd.Index]:
    """The distinct keys, each row's position among them, and the rows' index."""
    series = units if isinstance(units, pd.Series) else pd.Series(units)
    if isinstance(series.dtype, pd.CategoricalDtype):
        categories, codes = series.cat.categories, series.cat.codes.to_numpy()
    else:
        codes, categories = pd.factorize(series)
    if (codes < 0).any():
        raise ValueError("a judgment unit is missing")
    return pd.Index(categories, dtype=object), codes, series.index


def _parse_categories(categories: pd.Index, pattern: str, shape: str) -> pd.DataFrame:
    parts = pd.Series(categories, dtype=object).str.extract(pattern)
    bad = categories[parts.isna().any(axis=1).to_numpy()]
    if len(bad):
        raise ValueError(f"{len(bad)} judgment unit(s) not of the form {shape}, e.g. {list(bad[:3])}")
    return parts


def _categorical(values: pd.Series, codes: np.ndarray, categories: Sequence[str] | None = None) -> pd.Categorical:
    """Row values as a categorical, built from the per-key values by their codes (no per-row strings)."""
    value_codes, value_categories = pd.factorize(values)
    if categories is not None:
        value_codes = pd.Index(categories).get_indexer(value_categories)[value_codes]
        value_categories = pd.Index(categories)
    return pd.Categorical.from_codes(value_codes[codes], categories=value_categories)


def name_unit_parts(units: pd.Series | pd.Categorical) -> pd.DataFrame:
    """``index`` (int), ``pair_no`` (int) and ``side`` (categorical) of names judgment units, row for row.

    Only the distinct keys are parsed; a key not of the form ``"{index}:{pair_no}:{side}"`` is an error."""
    categories, codes, row_index = _categories_and_codes(units)
    parts = _parse_categories(categories, rf"^(\d+):(\d+):({'|'.join(SIDES)})$", '"{index}:{pair_no}:{side}"')
    return pd.DataFrame({
        "index": parts[0].astype(np.int64).to_numpy()[codes],
        "pair_no": parts[1].astype(np.int64).to_numpy()[codes],
        "side": _categorical(parts[2], codes, SIDES),
    }, index=row_index, copy=False)  # the arrays made here, not copied again into one block


def dialect_unit_parts(units: pd.Series | pd.Categorical) -> pd.DataFrame:
    """``index`` (int), ``pair_key`` and ``dialect`` (categoricals) of dialect judgment units, row for row.

    Only the distinct keys are parsed; a pair key may itself hold colons (the index is before the first, the
    dialect after the last)."""
    categories, codes, row_index = _categories_and_codes(units)
    parts = _parse_categories(categories, rf"^(\d+):(.+):({'|'.join(DIALECTS)})$", '"{index}:{pair_key}:{dialect}"')
    return pd.DataFrame({
        "index": parts[0].astype(np.int64).to_numpy()[codes],
        "pair_key": _categorical(parts[1], codes),
        "dialect": _categorical(parts[2], codes, DIALECTS),
    }, index=row_index, copy=False)
