"""Evaluation sets of classification audits: which of a study's items an audit classifies. Pure Python.

Seed 000 §3.4 classifies 2,121 targets and keeps the ICL examples out of them ("284 distinct sentences not
included in the 2,121 classification targets"); a researcher may also want a psychometric test set, a list of
their own, or a pilot on a seeded sample of n items first. The kinds:

    all           every item with a ground truth but the attention checks and the study's ICL example items
                  (the behaviour before evaluation sets existed, and the default)
    item_set      a stored item set of the study by name: a test set (all, high_aq, low_aq, low_bias, high_bias)
                  or an example set (icl_a, icl_b)
    not_examples  every item with a ground truth but the attention checks and the examples of the ICL sets the
                  audit's own conditions use (with no ICL condition: every item)
    items         a list of item ids (the items' external ids)

A sample draws n items of the set without replacement, from a generator seeded with the audit's seed; the items
are put in the order of their ids first, so the same seed and the same set give the same sample whatever order
the set came in.
"""
from __future__ import annotations

import hashlib
import re
from collections.abc import Collection, Iterable, Mapping, Sequence

import numpy as np

KINDS = ("all", "item_set", "not_examples", "items")
DEFAULT_KIND = KINDS[0]
SHOWN_IDS = 5
"""How many ids a problem names before it says how many more there are."""

_SEPARATORS = re.compile(r"[\n\r,;\t]+")


def parse_item_ids(text: str) -> list[str]:
    """Item ids from pasted or uploaded text: one per line, or separated by commas, semicolons or tabs; blanks
    dropped, each id once, in the order given."""
    ids = (part.strip() for part in _SEPARATORS.split(text))
    return list(dict.fromkeys(part for part in ids if part))


def seeded_sample(ids: Iterable[str], n: int, seed: int) -> list[str]:
    """``n`` of the ids drawn without replacement with the audit's seed, returned sorted.

    The ids are sorted and deduplicated first, so the sample depends only on the set, ``n`` and the seed. Raises
    ValueError when n is not between 1 and the number of ids."""
    pool = sorted(set(ids))
    if not 1 <= n <= len(pool):
        raise ValueError(f"a sample of {n} items from a set of {len(pool)}")
    rng = np.random.default_rng(_seed_entropy("evaluation sample", seed))
    return [pool[index] for index in np.sort(rng.choice(len(pool), size=n, replace=False))]


def _seed_entropy(purpose: str, seed: int) -> int:
    """A non-negative integer for numpy's generator from any 64-bit seed (numpy refuses negative seeds)."""
    return int.from_bytes(hashlib.sha256(f"{purpose}:{seed}".encode()).digest()[:8], "big")


def item_ids_sha256(ids: Iterable[str]) -> str:
    """The sha256 of the sorted item ids, one per line: names the evaluated items in the manifest."""
    return hashlib.sha256("\n".join(sorted(ids)).encode()).hexdigest()


def some_ids(ids: Collection[str]) -> str:
    """A few of the ids, sorted, for a message ("a1, a2, a3, a4, a5 and 7 more")."""
    ordered = sorted(ids)
    shown = ", ".join(ordered[:SHOWN_IDS])
    return f"{shown} and {len(ordered) - SHOWN_IDS} more" if len(ordered) > SHOWN_IDS else shown


def overlap_problem(evaluated: Collection[str], examples: Mapping[str, Collection[str]]) -> str | None:
    """The problem of an evaluation set that shares items with the ICL example sets the audit uses (by set
    name), or None when it shares none. Classifying an item with itself among the examples measures recall of
    the prompt, not classification (seed 000 §3.4 keeps them apart)."""
    evaluated = set(evaluated)
    shared = {name: evaluated & set(members) for name, members in examples.items()}
    shared = {name: items for name, items in shared.items() if items}
    if not shared:
        return None
    every = set().union(*shared.values())
    per_set = ", ".join(f"{len(items)} in {name}" for name, items in sorted(shared.items()))
    return (f"the evaluation set overlaps the ICL examples of this audit's conditions: {len(every)} items "
            f"({per_set}; e.g. {some_ids(every)}); choose evaluation_set 'not_examples' to leave them out, "
            "or allow_overlap to audit them anyway")


def kind_problems(*, kind: str, item_set: str, item_ids: Sequence[str], sample: int | None) -> list[str]:
    """What is wrong with an evaluation set's description before any item is looked up."""
    if kind not in KINDS:
        return [f"evaluation_set: unknown kind {kind!r}; choose one of {', '.join(KINDS)}"]
    problems = []
    if kind == "item_set" and not item_set:
        problems.append("evaluation_set 'item_set' needs item_set: the stored set's name")
    if kind != "item_set" and item_set:
        problems.append(f"item_set {item_set!r} is read only with evaluation_set 'item_set' (not {kind!r})")
    if kind == "items" and not item_ids:
        problems.append("evaluation_set 'items' needs item_ids: the items' ids (their external ids)")
    if kind != "items" and item_ids:
        problems.append(f"item_ids are read only with evaluation_set 'items' (not {kind!r})")
    if sample is not None and sample < 1:
        problems.append(f"sample must be at least 1 (got {sample})")
    return problems
