"""Stratified, seeded samples of an audit's replies for an error-analysis round (seed 000 §3.4 "Error Analysis": "a
random sample of 99 LLM-generated labels and their accompanying explanations, drawn across models and conditions").

The eligible replies are a DataFrame with one row per reply: an id column and the stratum columns (model and
condition). :func:`stratified_sample` splits ``n`` over the model × condition strata by a named allocation rule,
draws within each stratum without replacement, and orders the drawn replies for display. It returns the ids and a
``draw`` record (eligible count and allocation per stratum, seed, rule, algorithm version, the ids) from which
:func:`sample_rebuild` draws the same sample again from the same eligible set.

Allocation rules:

- ``proportional``: largest-remainder (Hamilton) apportionment. Stratum *i* of size *N_i* out of *N* has the quota
  *q_i = n·N_i/N*; each stratum gets ⌊q_i⌋, and the *r = n − Σ⌊q_i⌋* seats left go one each to the strata with the
  largest fractional parts. Fractional parts are compared exactly (the integers *n·N_i mod N*), and ties go to
  the larger stratum, then to the stratum that sorts first (by its model, then its condition): no seed enters,
  so the allocation depends on the strata sizes only. Each stratum gets ⌊q_i⌋ or ⌈q_i⌉, never more than it has.
- ``equal``: *n* split equally over the *S* strata (max–min fair). A stratum with no more replies than the equal
  share ⌊left/S'⌋ of what is still to allocate over the *S'* strata still open gives all it has; the surplus is
  shared again over the others, until every open stratum has more than its share. Then each open stratum gets the
  share and the ``left mod S'`` seats left go one each to the open strata in a seeded order.

Randomness: every stream is a :class:`numpy.random.SeedSequence` of the seed and sha256-derived integers naming
the stream (a stratum, the display order, the remainder order), never Python's ``hash()`` (salted per process).
A stratum's draw depends only on the seed, the stratum and its eligible ids (sorted first, so the input's row
order does not matter). Edges: no eligible reply, ``n`` < 1 or ``n`` above the eligible count raise
:class:`SamplingError` (a smaller sample is never returned in silence); a stratum may get 0 under
``proportional``.
"""
from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass

import numpy as np
import pandas as pd

ALGORITHM = "coding.sampling/1"
"""The version of the drawing procedure recorded in every draw: a change that draws differently from the same
seed must change it."""
ALLOCATIONS = ("proportional", "equal")
ID_COLUMN = "request_id"
STRATUM_COLUMNS = ("model", "condition")


class SamplingError(ValueError):
    """The sample cannot be drawn as asked; the message says why."""


@dataclass(frozen=True)
class Sample:
    """The drawn ids in display order and the record to rebuild them (:func:`sample_rebuild`)."""

    ids: list[int]
    draw: dict


def _name_entropy(name: str) -> int:
    return int.from_bytes(hashlib.sha256(name.encode("utf-8")).digest()[:8], "big")


def _stream(seed: int, name: str) -> np.random.Generator:
    """The random stream ``name`` of ``seed`` (a negative seed is read modulo 2**64, as SeedSequence wants)."""
    return np.random.default_rng(np.random.SeedSequence([seed % 2**64, _name_entropy(name)]))


def _stratum_name(key: tuple) -> str:
    return "stratum:" + json.dumps(list(key), default=str)


def _ids_digest(ids: list[int]) -> str:
    return hashlib.sha256(",".join(map(str, ids)).encode("ascii")).hexdigest()


def proportional_allocation(sizes: list[int], n: int) -> list[int]:
    """Hamilton apportionment of ``n`` over strata of ``sizes`` (in their sort order: ties go to the larger
    stratum, then the earlier one). Requires 0 ≤ n ≤ sum(sizes)."""
    total = sum(sizes)
    floors = [n * size // total for size in sizes]
    remainders = [n * size % total for size in sizes]
    left = n - sum(floors)
    ranked = sorted(range(len(sizes)), key=lambda i: (-remainders[i], -sizes[i], i))
    for i in ranked[:left]:
        floors[i] += 1
    return floors


def equal_allocation(sizes: list[int], n: int, rng: np.random.Generator) -> list[int]:
    """``n`` split equally over strata of ``sizes`` (max–min fair, see the module docstring); the seats that do not
    divide go to the open strata in the order of one permutation drawn from ``rng``. Requires n ≤ sum(sizes)."""
    allocation = [0] * len(sizes)
    open_strata = set(range(len(sizes)))
    left = n
    while open_strata:
        share = left // len(open_strata)
        saturated = {i for i in open_strata if sizes[i] <= share}
        if not saturated:
            break
        for i in saturated:
            allocation[i] = sizes[i]
            left -= sizes[i]
        open_strata -= saturated
    if open_strata:
        share, extra = divmod(left, len(open_strata))
        order = [i for i in rng.permutation(len(sizes)).tolist() if i in open_strata]
        for rank, i in enumerate(order):
            allocation[i] = share + (1 if rank < extra else 0)
    return allocation


def _strata(eligible: pd.DataFrame) -> list[tuple[tuple, list[int]]]:
    """(stratum key, its sorted ids) of every non-empty stratum, in the strata's sort order."""
    missing = [column for column in (ID_COLUMN, *STRATUM_COLUMNS) if column not in eligible.columns]
    if missing:
        raise SamplingError(f"the eligible replies lack the column(s) {', '.join(missing)}")
    if eligible[ID_COLUMN].duplicated().any():
        raise SamplingError("the eligible replies repeat a request id")
    if eligible[list(STRATUM_COLUMNS)].isna().any().any():
        raise SamplingError("an eligible reply has no model or no condition")
    groups = eligible.groupby(list(STRATUM_COLUMNS), sort=True)[ID_COLUMN]
    return [(tuple(key), sorted(int(i) for i in ids)) for key, ids in groups]


def _jsonable(value):
    return value.item() if isinstance(value, np.generic) else value


def stratified_sample(eligible: pd.DataFrame, *, n: int, allocation: str, seed: int) -> Sample:
    """Draw ``n`` of the ``eligible`` replies (columns ``request_id``, ``model``, ``condition``) stratified across
    model × condition by ``allocation`` ("proportional" or "equal"), seeded by ``seed``."""
    if allocation not in ALLOCATIONS:
        raise SamplingError(f"allocation must be one of {', '.join(ALLOCATIONS)}, not {allocation!r}")
    if n < 1:
        raise SamplingError(f"the sample size must be at least 1, not {n}")
    strata = _strata(eligible)
    n_eligible = sum(len(ids) for _, ids in strata)
    if n > n_eligible:
        raise SamplingError(f"the sample size {n} is larger than the {n_eligible} eligible replies")
    sizes = [len(ids) for _, ids in strata]
    if allocation == "proportional":
        allocated = proportional_allocation(sizes, n)
    else:
        allocated = equal_allocation(sizes, n, _stream(seed, "equal-remainder-order"))
    records, drawn = [], []
    for (key, ids), k in zip(strata, allocated, strict=True):
        chosen = sorted(_stream(seed, _stratum_name(key)).choice(ids, size=k, replace=False).tolist())
        drawn.extend(chosen)
        records.append({**{column: _jsonable(value) for column, value in zip(STRATUM_COLUMNS, key, strict=True)},
                        "eligible": len(ids), "allocated": k, "eligible_digest": _ids_digest(ids), "ids": chosen})
    display = _stream(seed, "display-order").permutation(sorted(drawn)).tolist()
    draw = {"algorithm": ALGORITHM, "seed": seed, "allocation": allocation, "n": n, "n_eligible": n_eligible,
            "strata_columns": list(STRATUM_COLUMNS), "strata": records, "ids": display}
    return Sample(display, draw)


def sample_rebuild(eligible: pd.DataFrame, draw: dict) -> Sample:
    """The sample ``draw`` records, drawn again from ``eligible``; raises SamplingError when the draw was made by
    another algorithm version or ``eligible`` is not the set it was drawn from (a stratum's count or ids differ)."""
    if draw.get("algorithm") != ALGORITHM:
        raise SamplingError(f"the draw was made by {draw.get('algorithm')!r}; this is {ALGORITHM}")
    rebuilt = stratified_sample(eligible, n=draw["n"], allocation=draw["allocation"], seed=draw["seed"])
    recorded = {tuple(s[c] for c in STRATUM_COLUMNS): s["eligible_digest"] for s in draw["strata"]}
    now = {tuple(s[c] for c in STRATUM_COLUMNS): s["eligible_digest"] for s in rebuilt.draw["strata"]}
    if recorded != now:
        changed = sorted({*recorded, *now} - {key for key in recorded if recorded[key] == now.get(key)}, key=str)
        raise SamplingError("the eligible replies differ from those the sample was drawn from in the strata "
                            + "; ".join(" × ".join(map(str, key)) for key in changed))
    return rebuilt
