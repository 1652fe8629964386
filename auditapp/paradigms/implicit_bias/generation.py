"""The instances of the WABT and the AAT (seed 003, MIST, §3.3.3 "Data Generation"). Pure: no Django.

WABT (§3.3.3): "10 paired combinations of S_a and S_b" (:meth:`Lexicon.wabt_combinations`: within a domain and
subdomain, the advantaged group with each disadvantaged one); per combination the sampling is "repeated 50 times":
one S_a and one S_b identifier of the two groups, then 5 X_a and 5 X_b words "from the lexicons corresponding to
the three stereotype content dimensions"; each crossed with the 3 templates, "a total of 4,500 instances". Only one
reading gives 4,500: every sample is asked in all three dimensions, 10 × 50 × 3 dimensions × 3 templates (and
Table 4's n per dimension, up to 1,482 of 1,500, fits it). So:

- ``dimension_draw="every"`` (default, derived from the paper's count): each sample's identifier pair gets a word
  set of each dimension, drawn independently: 4,500 instances, 1,500 per dimension.
- ``dimension_draw="balanced"`` (ours): one dimension per sample, the dimensions cycling over the combinations'
  samples (combination c, sample s gets dimension (50c + s) mod 3), shuffled within each combination: 17/17/16
  per combination, 1,500 instances in all (raise ``samples_per_combination`` to 150 for 4,500).
- ``dimension_draw="uniform"`` (ours): one dimension per sample drawn uniformly at random.

The paper does not say whether the words are shuffled (its templates list X1–X5, coloured positive, before
X6–X10): ``word_order="shuffled"`` (default, ours) puts the 10 words in a random order, ``"paper"`` the 5 X_a
words then the 5 X_b words. Both choices are recorded in every instance's factors.

AAT (§3.3.3): 500 distinct combinations of a group identifier S_e (any identifier of Table 1, S_a or S_b) and a
neutral word S_n (Table 3), drawn uniformly without replacement, each crossed with the 3 templates: 1,500
instances. ``form="two_turn"`` (the paper's: Q1, then Q2 with the model's answer in the conversation) or
``"single_prompt"`` (ours: :data:`~.templates.SINGLE_PROMPT_FRAME`).

Every random choice comes from one :class:`numpy.random.Generator` per task seeded by :func:`seed_sequence` (an int,
or a string through SHA-256, never Python's salted ``hash()``), so the same seed gives the same instances on any
machine. A sample's draws do not depend on the templates: the same seed with edited templates keeps the samples.

An instance has a stable ``key``, its ``factors`` (model-independent, every value a string), and the ``texts`` it
sends (one prompt; or the AAT's two questions, the second asked after the model's answer to the first).
"""
from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from auditapp.paradigms.implicit_bias.lexicons import DIMENSIONS, WORDS_PER_POLARITY, Lexicon, paper_lexicon
from auditapp.paradigms.implicit_bias.templates import (
    AAT_FORMS,
    AAT_TEMPLATES,
    WABT_TEMPLATES,
    AatTemplate,
    WabtTemplate,
    aat_questions,
    aat_single_prompt,
    wabt_prompt,
)

DEFAULT_SAMPLES_PER_COMBINATION = 50
DEFAULT_AAT_COMBINATIONS = 500
DEFAULT_SEED = 0
WORD_ORDERS = ("shuffled", "paper")
DIMENSION_DRAWS = ("every", "balanced", "uniform")


@dataclass(frozen=True)
class Instance:
    """One prompt (or two-turn conversation) of the WABT or the AAT.

    ``words`` (WABT): X1 … X10 as sent; ``x_a_words``: those of them that are positive; ``identifiers``:
    (S_a, S_b) for the WABT, (S_e,) for the AAT."""

    key: str
    task: str
    factors: dict[str, str]
    texts: tuple[str, ...]
    words: tuple[str, ...] = ()
    x_a_words: tuple[str, ...] = ()
    identifiers: tuple[str, ...] = ()


def seed_sequence(seed: int | str, stream: str) -> np.random.SeedSequence:
    """The seed sequence of one stream (``"wabt"``, ``"aat"``) of a seed: a non-negative int, or a string hashed
    with SHA-256 (stable across processes, unlike ``hash()``)."""
    if isinstance(seed, bool) or not isinstance(seed, int | str):
        raise ValueError(f"the seed must be a non-negative integer or a string, not {seed!r}")
    if isinstance(seed, int) and seed < 0:
        raise ValueError(f"the seed must be a non-negative integer or a string, not {seed}")
    seed_entropy = seed if isinstance(seed, int) else _digest_int(f"seed:{seed}")
    return np.random.SeedSequence([seed_entropy, _digest_int(f"stream:{stream}")])


def _digest_int(text: str) -> int:
    return int.from_bytes(hashlib.sha256(text.encode("utf-8")).digest()[:16], "big")


def _dimensions(rng: np.random.Generator, *, combination: int, samples: int,
                dimension_draw: str) -> list[tuple[str, ...]]:
    """Each sample's dimensions (see the module docstring)."""
    if dimension_draw == "every":
        return [DIMENSIONS] * samples
    if dimension_draw == "balanced":
        cycle = [DIMENSIONS[(combination * samples + sample) % len(DIMENSIONS)] for sample in range(samples)]
        return [(cycle[i],) for i in rng.permutation(samples)]
    return [(DIMENSIONS[i],) for i in rng.integers(0, len(DIMENSIONS), size=samples)]


def generate_wabt(*, lexicon: Lexicon | None = None, templates: Sequence[WabtTemplate] = WABT_TEMPLATES,
                  samples_per_combination: int = DEFAULT_SAMPLES_PER_COMBINATION, seed: int | str = DEFAULT_SEED,
                  word_order: str = "shuffled", dimension_draw: str = "every") -> list[Instance]:
    """The WABT instances: combinations × samples × dimensions × templates (4,500 with the defaults), in that
    order.

    Key ``wabt:c<combination>:s<sample>:<dimension>:t<template>`` (numbers 1-based, dimension in lower case). Factors: ``task``, ``combination`` ("African vs.
    American", the paper's wording), ``combination_index``, ``domain``, ``subdomain``, ``social_group`` (the
    disadvantaged group: the radar axis of Figure 3), ``advantaged_group``, ``s_a``, ``s_b``, ``dimension``,
    ``sample``, ``template``, ``word_order``, ``dimension_draw``."""
    lexicon = lexicon or paper_lexicon()
    if word_order not in WORD_ORDERS:
        raise ValueError(f"word_order must be one of {list(WORD_ORDERS)}, not {word_order!r}")
    if dimension_draw not in DIMENSION_DRAWS:
        raise ValueError(f"dimension_draw must be one of {list(DIMENSION_DRAWS)}, not {dimension_draw!r}")
    if isinstance(samples_per_combination, bool) or not isinstance(samples_per_combination, int) \
            or samples_per_combination < 1:
        raise ValueError(f"samples_per_combination must be a positive integer, not {samples_per_combination!r}")
    rng = np.random.default_rng(seed_sequence(seed, "wabt"))
    instances: list[Instance] = []
    for index, (advantaged, disadvantaged) in enumerate(lexicon.wabt_combinations()):
        combination = f"{disadvantaged.group} vs. {advantaged.group}"
        dimensions = _dimensions(rng, combination=index, samples=samples_per_combination,
                                 dimension_draw=dimension_draw)
        for sample, sample_dimensions in enumerate(dimensions):
            s_a = str(rng.choice(advantaged.items))
            s_b = str(rng.choice(disadvantaged.items))
            for dimension in sample_dimensions:
                x_a = [str(w) for w in rng.choice(lexicon.attribute_words(dimension, "X_a"), WORDS_PER_POLARITY,
                                                  replace=False)]
                x_b = [str(w) for w in rng.choice(lexicon.attribute_words(dimension, "X_b"), WORDS_PER_POLARITY,
                                                  replace=False)]
                words = x_a + x_b
                if word_order == "shuffled":
                    words = [words[i] for i in rng.permutation(len(words))]
                factors = {"task": "wabt", "combination": combination, "combination_index": str(index + 1),
                           "domain": advantaged.domain, "subdomain": advantaged.subdomain,
                           "social_group": disadvantaged.group, "advantaged_group": advantaged.group,
                           "s_a": s_a, "s_b": s_b, "dimension": dimension, "sample": str(sample + 1),
                           "word_order": word_order, "dimension_draw": dimension_draw}
                instances.extend(Instance(
                    key=f"wabt:c{index + 1:02d}:s{sample + 1:03d}:{dimension.lower()}:t{template.number}",
                    task="wabt", factors={**factors, "template": str(template.number)},
                    texts=(wabt_prompt(template, s_a=s_a, s_b=s_b, words=words),),
                    words=tuple(words), x_a_words=tuple(x_a), identifiers=(s_a, s_b)) for template in templates)
    return instances


def generate_aat(*, lexicon: Lexicon | None = None, templates: Sequence[AatTemplate] = AAT_TEMPLATES,
                 combinations: int = DEFAULT_AAT_COMBINATIONS, seed: int | str = DEFAULT_SEED,
                 form: str = "two_turn") -> list[Instance]:
    """The AAT instances: distinct (S_e, S_n) combinations × templates (1,500 with the defaults).

    Key ``aat:<combination>:t<template>:<form>``. Factors: ``task``, ``combination_index``, ``domain``,
    ``subdomain``, ``social_group``, ``group_label`` (S_a or S_b), ``s_e``, ``s_n``, ``neutral_category``,
    ``template``, ``form``. ``texts``: (Q1, Q2) two-turn, (prompt,) single-prompt. More combinations than the
    lexicon has (identifiers × neutral words) is refused."""
    lexicon = lexicon or paper_lexicon()
    if form not in AAT_FORMS:
        raise ValueError(f"form must be one of {list(AAT_FORMS)}, not {form!r}")
    pairs = [(group, identifier, category.category, word) for group in lexicon.groups for identifier in group.items
             for category in lexicon.neutral for word in category.items]
    if isinstance(combinations, bool) or not isinstance(combinations, int) or not 1 <= combinations <= len(pairs):
        raise ValueError(f"combinations must be an integer from 1 to {len(pairs)} (identifiers × neutral words), "
                         f"not {combinations!r}")
    rng = np.random.default_rng(seed_sequence(seed, "aat"))
    instances = []
    for number, pick in enumerate(rng.choice(len(pairs), size=combinations, replace=False), start=1):
        group, s_e, category, s_n = pairs[pick]
        factors = {"task": "aat", "combination_index": str(number), "domain": group.domain,
                   "subdomain": group.subdomain, "social_group": group.group, "group_label": group.label,
                   "s_e": s_e, "s_n": s_n, "neutral_category": category, "form": form}
        for template in templates:
            texts = (aat_questions(template, s_e=s_e, s_n=s_n) if form == "two_turn"
                     else (aat_single_prompt(template, s_e=s_e, s_n=s_n),))
            instances.append(Instance(key=f"aat:{number:03d}:t{template.number}:{form}", task="aat",
                                      factors={**factors, "template": str(template.number)}, texts=tuple(texts),
                                      identifiers=(s_e,)))
    return instances
