"""The autism Implicit Association Test: the 7-block design and the D score. Pure Python + numpy/pandas.

Sources
-------
- Seed 000, Appendix A.3 ("IAT"), after Dickter et al. (2020): the category names ("Autism Spectrum" /
  "Typically Developing", or "Autistic" / "Neurotypical"; "Pleasant" / "Unpleasant"), the example
  attribute words "Friendly" and "Awkward", the keys "e" / "i", and the prejudice-consistent pairing
  "Typically Developing or Pleasant" vs "Autism Spectrum or Unpleasant". (The seed sketches a 5-block
  variant; we run the standard 7-block IAT below.)
- Greenwald, McGhee & Schwartz (1998), JPSP 74(6), 1464–1480, and Project Implicit: the 7-block
  procedure and the standard evaluative words used as the remaining pleasant / unpleasant exemplars.
- Greenwald, Nosek & Banaji (2003), JPSP 85(2), 197–216, Table 4: the "improved scoring algorithm"
  (D score) with the built-in error penalty or the D600 penalty.

See ``SOURCE_NOTE``: the target exemplars (the words for "Autism Spectrum" and "Typically
Developing") are our own defaults, not a published autism IAT list; replace them with a validated list.

Part 1: design
--------------
Seven blocks, trial counts 20/20/20/40/40/20/40 (``BLOCK_TRIAL_COUNTS``; block 5 has 40 trials as our
spec says), keys "e" (left) and "i" (right):

    1 target_practice           targets only
    2 attribute_practice        attributes only
    3 combined_practice         first pairing       (practice pair: COMBINED_PRACTICE = (3, 6))
    4 combined_test             first pairing       (test pair:     COMBINED_TEST     = (4, 7))
    5 reversed_target_practice  targets, sides swapped
    6 combined_practice         second pairing
    7 combined_test             second pairing

Target A is the stigmatised target ("Autism Spectrum"), target B "Typically Developing". The
**consistent** (prejudice-consistent) pairing puts target B with Pleasant and target A with Unpleasant
(seed 000 A.3); the **inconsistent** pairing puts target A with Pleasant. A combined block's labels and
pairing are derived from the sides in force in that block: the target sides of block 1 for blocks 3–4,
those of block 5 for blocks 6–7; attributes never move within a session.

Counterbalancing (``counterbalance_condition``, index % 4) crosses (a) whether the consistent pairing
comes first (blocks 3–4) or second (blocks 6–7) with (b) the side target A starts on. With the attribute
sides fixed, (a) decides (b) — the pairing of blocks 3–4 *is* "which target shares a side with
Pleasant" — so a fixed Pleasant-left layout yields only two distinct designs. To realise all four
conditions, Pleasant stays on the left ("e") in conditions 0 and 1 (the spec's layout) and is on the
right in conditions 2 and 3; within a session the attribute sides never change:

    index  consistent first  target A starts  Pleasant
      0    yes               right            left
      1    no                left             left
      2    yes               left             right
      3    no                right            right

Trials: in combined blocks target and attribute words alternate (even index = target word, odd =
attribute word). Within each block the two categories of a kind are equally frequent, so the correct
side is left on exactly half the trials; within a category the words are drawn by cycling through
seeded shuffles, so each word appears equally often (±1). The same seed gives the same trials.

Part 2: the D score (Greenwald, Nosek & Banaji 2003, Table 4)
--------------------------------------------------------------
**Sign: positive D = slower in the prejudice-inconsistent pairing = faster when "Autism Spectrum" shares
a key with Unpleasant = more implicit anti-autism bias.** D = mean over the practice pair (blocks 3 and 6)
and the test pair (blocks 4 and 7) of

    D_pair = (mean latency, inconsistent block − mean latency, consistent block) / SD_pair

where SD_pair is the sample SD (ddof = 1) of *all* retained trials of both blocks of the pair (the
"inclusive" SD, not a pooled within-block SD). Block numbers are positions; each row's ``pairing`` says
which pairing its block had, so either counterbalancing order is scored alike.

Steps, in the order of Table 4:
1. Keep blocks 3, 4, 6, 7 only.
2. Drop trials slower than 10,000 ms (strictly greater) and count them (``n_dropped_slow``). The screened
   latency is the one the variant scores: ``latency_correct_ms`` for builtin, ``latency_first_ms`` for
   d600.
3. Flag — do not exclude — the participant when more than 10 % (strictly) of the trials retained in
   step 2 have ``latency_first_ms`` < 300 ms (``fast_fraction``, ``flagged_fast``). Excluding is the
   analyst's decision. Where ``latency_first_ms`` is missing (imported trials without it), the screen reads
   ``latency_correct_ms``, the same for a correct trial.
4. builtin: every trial's latency is ``latency_correct_ms`` (the participant had to correct an error,
   so the time spent correcting is the penalty). d600: correct trials use ``latency_first_ms``; the
   SD of step 5 is computed on the recorded ``latency_first_ms`` of all trials, *before* the error
   replacement (Table 4 computes the SD in step 5 and replaces errors in step 6); then each error
   trial's latency is replaced by the mean of the correct trials of its block + 600 ms.
5. Block means, the two differences, the two quotients, their mean.

Edge cases: a pair with fewer than 2 trials, a pairing with no trials, SD 0, or (d600) a block without
a correct trial to anchor the replacement has D_pair = NaN; D is the mean of the available pairs and
NaN if there is none. Rows with a missing latency are left out (so d600 is NaN without first-key
latencies). One participant per frame.

Part 3: input modality
----------------------
A trial is answered with the keys ("keyboard") or by tapping the left or right half of the screen
("touch", as on Project Implicit's mobile IATs); a touch response is coded with its side's key. Tap
latencies are longer than key latencies, so ``combined_modality`` says which one a block or a participant
used, "mixed" when both: the D score is computed alike, and whoever reads it is told how it was measured.
"""
from __future__ import annotations

import math
import random
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal, cast

import numpy as np
import pandas as pd

SOURCE_NOTE = (
    "Category names ('Autism Spectrum' / 'Typically Developing', or 'Autistic' / 'Neurotypical'; "
    "'Pleasant' / 'Unpleasant') and the attribute examples 'Friendly' and 'Awkward' come from seed 000, "
    "Appendix A.3 (Dickter et al., 2020). The other pleasant and unpleasant words are the standard IAT "
    "evaluative words (Greenwald, McGhee & Schwartz, 1998; Project Implicit). The target exemplars are "
    "our defaults built from the category names' own terms, not a published autism IAT list: a researcher "
    "should replace them with a validated list."
)

Side = Literal["left", "right"]
Pairing = Literal["consistent", "inconsistent"]
BlockKind = Literal["target_practice", "attribute_practice", "combined_practice", "combined_test",
                    "reversed_target_practice"]
StimulusCategory = Literal["target_a", "target_b", "attribute_pos", "attribute_neg"]
ErrorPenalty = Literal["builtin", "d600"]
Modality = Literal["keyboard", "touch"]
CombinedModality = Literal["keyboard", "touch", "mixed"]

CONSISTENT: Pairing = "consistent"
INCONSISTENT: Pairing = "inconsistent"
KEYS: dict[str, str] = {"left": "e", "right": "i"}
BLOCK_TRIAL_COUNTS: tuple[int, ...] = (20, 20, 20, 40, 40, 20, 40)
BLOCK_KINDS: tuple[BlockKind, ...] = ("target_practice", "attribute_practice", "combined_practice",
                                      "combined_test", "reversed_target_practice", "combined_practice",
                                      "combined_test")
COMBINED_PRACTICE: tuple[int, int] = (3, 6)
COMBINED_TEST: tuple[int, int] = (4, 7)
N_CONDITIONS = 4
SLOW_MS = 10_000
FAST_MS = 300
FAST_FRACTION_LIMIT = 0.10
D600_PENALTY_MS = 600
MODALITIES: tuple[Modality, ...] = ("keyboard", "touch")


# --------------------------------------------------------------------------------------------------
# Part 1: design
# --------------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class IATStimuli:
    """The four categories' labels and exemplars. Target A is the stigmatised target."""

    target_a_label: str
    target_a_words: tuple[str, ...]
    target_b_label: str
    target_b_words: tuple[str, ...]
    attribute_pos_label: str
    attribute_pos_words: tuple[str, ...]
    attribute_neg_label: str
    attribute_neg_words: tuple[str, ...]

    def __post_init__(self) -> None:
        seen: dict[str, str] = {}
        for category in ("target_a", "target_b", "attribute_pos", "attribute_neg"):
            words = tuple(getattr(self, f"{category}_words"))
            object.__setattr__(self, f"{category}_words", words)
            if not words:
                raise ValueError(f"{category}: no words")
            for word in words:
                key = word.strip().casefold()
                if key in seen and seen[key] != category:
                    raise ValueError(f"{word!r} is in both {seen[key]} and {category}: the answer is ambiguous")
                seen[key] = category
        labels = [self.target_a_label, self.target_b_label, self.attribute_pos_label, self.attribute_neg_label]
        if len({label.casefold() for label in labels}) != 4:
            raise ValueError(f"category labels must differ: {labels}")

    def label(self, category: StimulusCategory) -> str:
        """The label of a category ("target_a", "target_b", "attribute_pos" or "attribute_neg")."""
        return getattr(self, f"{category}_label")

    def preview(self) -> list[dict[str, object]]:
        """Each category's label, kind ("target" or "attribute") and words, targets first: what a participant is
        shown before block 1, as Project Implicit's IATs list each category's items before the task."""
        order: tuple[StimulusCategory, ...] = ("target_a", "target_b", "attribute_pos", "attribute_neg")
        return [{"label": self.label(category), "kind": category.split("_")[0], "words": list(self.words(category))}
                for category in order]

    def words(self, category: StimulusCategory) -> tuple[str, ...]:
        """The exemplars of a category."""
        return getattr(self, f"{category}_words")


_PLEASANT_WORDS = ("Friendly", "Joy", "Love", "Peace", "Wonderful", "Pleasure", "Glorious", "Laughter", "Happy")
_UNPLEASANT_WORDS = ("Awkward", "Agony", "Terrible", "Horrible", "Nasty", "Evil", "Awful", "Failure", "Hurt")
_AUTISM_WORDS = ("Autism", "Autistic", "Autism Spectrum", "On the spectrum", "ASD")
_TYPICAL_WORDS = ("Typically Developing", "Neurotypical", "Non-autistic", "Typical", "Allistic")

#: Default stimuli (seed 000 A.3 labels); see ``SOURCE_NOTE`` for where each word comes from.
AUTISM_SPECTRUM_TYPICALLY_DEVELOPING = IATStimuli(
    target_a_label="Autism Spectrum", target_a_words=_AUTISM_WORDS,
    target_b_label="Typically Developing", target_b_words=_TYPICAL_WORDS,
    attribute_pos_label="Pleasant", attribute_pos_words=_PLEASANT_WORDS,
    attribute_neg_label="Unpleasant", attribute_neg_words=_UNPLEASANT_WORDS,
)
DEFAULT_STIMULI = AUTISM_SPECTRUM_TYPICALLY_DEVELOPING

#: The alternative preset with the seed's other labels, "Autistic" / "Neurotypical" (same words).
AUTISTIC_NEUROTYPICAL = IATStimuli(
    target_a_label="Autistic", target_a_words=_AUTISM_WORDS,
    target_b_label="Neurotypical", target_b_words=_TYPICAL_WORDS,
    attribute_pos_label="Pleasant", attribute_pos_words=_PLEASANT_WORDS,
    attribute_neg_label="Unpleasant", attribute_neg_words=_UNPLEASANT_WORDS,
)


#: The four categories in the order a study's settings list them, with what each is for.
STIMULUS_CATEGORIES: tuple[StimulusCategory, ...] = ("target_a", "target_b", "attribute_pos", "attribute_neg")
CATEGORY_PURPOSES: dict[StimulusCategory, str] = {
    "target_a": "Target A (the stigmatised target)", "target_b": "Target B",
    "attribute_pos": "Pleasant attribute", "attribute_neg": "Unpleasant attribute"}
#: At least two words per category for a study's own stimuli: with one, every trial of the category shows the same
#: word, which a participant sorts from memory rather than as a member of the category (``_word_cycle`` shows each
#: word equally often, so the shortest block, 5 trials per category, shows two words 3 and 2 times).
MIN_WORDS_PER_CATEGORY = 2
#: The longest word an IAT trial stores (``IATTrial.stimulus``) and the longest category name we show.
MAX_WORD_LENGTH = 200
MAX_LABEL_LENGTH = 100


def iat_stimuli_problems(*, labels: Mapping[str, str], words: Mapping[str, Sequence[str]]) -> list[str]:
    """What is wrong with a study's own IAT categories (``labels``: category → name, ``words``: category → its words,
    as typed), each problem a sentence naming the category; empty when ``IATStimuli`` can be built from them and
    every category has ``MIN_WORDS_PER_CATEGORY`` words. Words are compared as ``IATStimuli`` compares them (trimmed,
    case-insensitive): one in two categories makes the right answer ambiguous, one listed twice in a category would
    be shown twice as often."""
    problems: list[str] = []

    def called(category: StimulusCategory) -> str:
        name = labels.get(category, "").strip()
        return f"{CATEGORY_PURPOSES[category]} ({name!r})" if name else CATEGORY_PURPOSES[category]

    seen: dict[str, StimulusCategory] = {}
    for category in STIMULUS_CATEGORIES:
        name = labels.get(category, "").strip()
        if not name:
            problems.append(f"{CATEGORY_PURPOSES[category]}: give the category a name")
        elif len(name) > MAX_LABEL_LENGTH:
            problems.append(f"{called(category)}: a name of at most {MAX_LABEL_LENGTH} characters")
        given: dict[str, str] = {}
        for word in (word.strip() for word in words.get(category, ()) if word.strip()):
            key = word.casefold()
            if len(word) > MAX_WORD_LENGTH:
                problems.append(f"{called(category)}: {word[:40]!r}… is longer than {MAX_WORD_LENGTH} characters")
            elif key in given:
                problems.append(f"{called(category)}: {word!r} is listed twice")
            elif key in seen:
                problems.append(f"{word!r} is in both {called(seen[key])} and {called(category)}: a participant "
                                "could not tell which side it belongs to")
            given.setdefault(key, word)
        if len(given) < MIN_WORDS_PER_CATEGORY:
            problems.append(f"{called(category)}: needs at least {MIN_WORDS_PER_CATEGORY} different words, has "
                            f"{len(given)}")
        for key in given:
            seen.setdefault(key, category)
    names = [labels.get(category, "").strip().casefold() for category in STIMULUS_CATEGORIES]
    for position, category in enumerate(STIMULUS_CATEGORIES):
        if names[position] and names[position] in names[:position]:
            first = STIMULUS_CATEGORIES[names.index(names[position])]
            problems.append(f"{called(category)} has the name of {CATEGORY_PURPOSES[first]}: each category needs "
                            "its own name")
    return problems


def iat_stimuli_fields(*, labels: Mapping[str, str], words: Mapping[str, Sequence[str]]) -> dict[str, object]:
    """The stored form of a study's own stimuli (``Study.iat_stimuli``, the keyword arguments of ``IATStimuli``):
    names and words trimmed, empty lines left out. Check them first with ``iat_stimuli_problems``."""
    fields: dict[str, object] = {}
    for category in STIMULUS_CATEGORIES:
        fields[f"{category}_label"] = labels.get(category, "").strip()
        fields[f"{category}_words"] = [word.strip() for word in words.get(category, ()) if word.strip()]
    return fields


@dataclass(frozen=True)
class Condition:
    """One of the four counterbalancing conditions (see the module docstring's table)."""

    index: int                  # 0..3
    consistent_first: bool      # the consistent pairing is in blocks 3–4 (else in blocks 6–7)
    target_a_left_first: bool   # target A is on the left in block 1 (and on the right in block 5)
    attribute_pos_left: bool    # Pleasant is on the left throughout the session


@dataclass(frozen=True)
class Trial:
    """One categorisation trial; ``correct_key`` is "e" for left and "i" for right."""

    index: int
    stimulus: str
    stimulus_category: StimulusCategory
    correct_side: Side
    correct_key: str


@dataclass(frozen=True)
class Block:
    """One block: 1..7, its kind, its pairing (None for single-category blocks), labels and trials."""

    number: int
    kind: BlockKind
    pairing: Pairing | None
    left_labels: list[str]
    right_labels: list[str]
    trials: list[Trial]


def counterbalance_condition(index: int) -> Condition:
    """Condition ``index % 4``: 0/1 keep Pleasant on the left, 2/3 mirror the attributes (docstring)."""
    index = index % N_CONDITIONS
    attribute_pos_left = index < 2
    consistent_first = index % 2 == 0
    # The consistent pairing puts target A with Unpleasant, i.e. on the side Pleasant is not on.
    target_a_left_first = (not attribute_pos_left) if consistent_first else attribute_pos_left
    return Condition(index=index, consistent_first=consistent_first, target_a_left_first=target_a_left_first,
                     attribute_pos_left=attribute_pos_left)


def _word_cycle(words: Sequence[str], rng: random.Random) -> Iterator[str]:
    """Endless draws: each pass is a fresh seeded shuffle of all words, so counts differ by at most 1."""
    while True:
        order = list(words)
        rng.shuffle(order)
        yield from order


def _balanced(first: StimulusCategory, second: StimulusCategory, n: int, rng: random.Random
              ) -> list[StimulusCategory]:
    """``n`` category slots, half ``first`` and half ``second`` (the extra one to ``first``), shuffled."""
    slots = [first] * (n - n // 2) + [second] * (n // 2)
    rng.shuffle(slots)
    return slots


def _make_block(number: int, stimuli: IATStimuli, sides: dict[StimulusCategory, Side],
                rng: random.Random) -> Block:
    kind = BLOCK_KINDS[number - 1]
    n = BLOCK_TRIAL_COUNTS[number - 1]
    if kind in ("target_practice", "reversed_target_practice"):
        shown: tuple[StimulusCategory, ...] = ("target_a", "target_b")
        slots = _balanced("target_a", "target_b", n, rng)
    elif kind == "attribute_practice":
        shown = ("attribute_pos", "attribute_neg")
        slots = _balanced("attribute_pos", "attribute_neg", n, rng)
    else:
        shown = ("target_a", "target_b", "attribute_pos", "attribute_neg")
        targets = iter(_balanced("target_a", "target_b", n - n // 2, rng))
        attributes = iter(_balanced("attribute_pos", "attribute_neg", n // 2, rng))
        slots = [next(targets) if i % 2 == 0 else next(attributes) for i in range(n)]

    pairing: Pairing | None = None
    if kind in ("combined_practice", "combined_test"):
        pairing = INCONSISTENT if sides["target_a"] == sides["attribute_pos"] else CONSISTENT

    cycles = {category: _word_cycle(stimuli.words(category), rng) for category in shown}
    trials = [Trial(index=i, stimulus=next(cycles[category]), stimulus_category=category,
                    correct_side=sides[category], correct_key=KEYS[sides[category]])
              for i, category in enumerate(slots)]
    # Targets are listed above attributes on each side, as on Project Implicit screens.
    left = [stimuli.label(c) for c in shown if sides[c] == "left"]
    right = [stimuli.label(c) for c in shown if sides[c] == "right"]
    return Block(number=number, kind=kind, pairing=pairing, left_labels=left, right_labels=right, trials=trials)


def build_iat(stimuli: IATStimuli, *, condition_index: int, seed: int) -> list[Block]:
    """The seven blocks for one participant in condition ``condition_index % 4``, reproducible from ``seed``.

    Blocks and trials are dataclasses: ``dataclasses.asdict`` gives JSON-serialisable dicts.
    """
    condition = counterbalance_condition(condition_index)
    rng = random.Random(seed)

    def other(side: Side) -> Side:
        return "right" if side == "left" else "left"

    pos: Side = "left" if condition.attribute_pos_left else "right"
    a_first: Side = "left" if condition.target_a_left_first else "right"
    attribute_sides: dict[StimulusCategory, Side] = {"attribute_pos": pos, "attribute_neg": other(pos)}
    first: dict[StimulusCategory, Side] = {"target_a": a_first, "target_b": other(a_first), **attribute_sides}
    second: dict[StimulusCategory, Side] = {"target_a": other(a_first), "target_b": a_first, **attribute_sides}

    return [_make_block(number, stimuli, first if number <= 4 else second, rng) for number in range(1, 8)]


# --------------------------------------------------------------------------------------------------
# Part 2: D score
# --------------------------------------------------------------------------------------------------

REQUIRED_COLUMNS = ("block", "pairing", "error", "latency_first_ms", "latency_correct_ms")


@dataclass(frozen=True)
class DScore:
    """The D score and its bookkeeping. Positive ``d`` = faster in the prejudice-consistent pairing = bias."""

    d: float
    d_practice: float
    d_test: float
    error_penalty: ErrorPenalty
    n_trials: int           # combined-block trials retained after the > 10,000 ms screen
    n_dropped_slow: int     # combined-block trials dropped for latency > 10,000 ms
    fast_fraction: float    # share of retained trials with latency_first_ms < 300 (NaN if none)
    flagged_fast: bool      # fast_fraction > 10 % (flag only; nothing is excluded)
    error_rate: float       # share of retained trials that were errors (NaN if none)


def _check_pairings(frame: pd.DataFrame) -> None:
    """Each combined block has one pairing, and the two blocks of a pair have different pairings."""
    found: dict[int, str] = {}
    for block, values in frame.groupby("block")["pairing"]:
        distinct = set(values.dropna().unique())
        if values.isna().any() or len(distinct) != 1 or not distinct <= {CONSISTENT, INCONSISTENT}:
            raise ValueError(f"combined block {block} must have a single pairing 'consistent' or "
                             f"'inconsistent'; found {sorted(map(str, values.unique()))}")
        found[int(block)] = distinct.pop()  # type: ignore[arg-type]  # pandas-stubs: a group key is any Scalar
    for pair in (COMBINED_PRACTICE, COMBINED_TEST):
        if all(b in found for b in pair) and found[pair[0]] == found[pair[1]]:
            raise ValueError(f"blocks {pair[0]} and {pair[1]} both have pairing {found[pair[0]]!r}")


def _pair_d(frame: pd.DataFrame, pair: tuple[int, int]) -> float:
    """(mean inconsistent − mean consistent) / sample SD of all trials of the pair; NaN if undefined."""
    trials = frame.loc[frame["block"].isin(pair)]
    if len(trials) < 2:
        return math.nan
    means = trials.groupby("pairing")["scored"].mean()
    if CONSISTENT not in means.index or INCONSISTENT not in means.index:
        return math.nan
    sd = float(trials["sd_basis"].std(ddof=1))
    diff = float(means[INCONSISTENT] - means[CONSISTENT])
    if not math.isfinite(sd) or sd == 0 or not math.isfinite(diff):
        return math.nan
    return diff / sd


def iat_d_score(trials: pd.DataFrame, *, error_penalty: ErrorPenalty = "builtin") -> DScore:
    """One participant's D score (Greenwald, Nosek & Banaji 2003); the steps are in the module docstring.

    ``trials`` has columns block (1..7), pairing ("consistent" / "inconsistent", None outside the
    combined blocks), error (bool), latency_first_ms, latency_correct_ms. Blocks other than 3, 4, 6, 7
    are ignored. Raises ValueError on a missing column, an unknown ``error_penalty``, or inconsistent
    pairings in the combined blocks.
    """
    if error_penalty not in ("builtin", "d600"):
        raise ValueError(f"error_penalty must be 'builtin' or 'd600', not {error_penalty!r}")
    missing = [c for c in REQUIRED_COLUMNS if c not in trials.columns]
    if missing:
        raise ValueError(f"missing columns: {missing}")

    combined = COMBINED_PRACTICE + COMBINED_TEST
    frame = trials.loc[trials["block"].isin(combined), list(REQUIRED_COLUMNS)].copy()
    frame["block"] = frame["block"].astype(int)
    frame["error"] = frame["error"].astype(bool)
    for column in ("latency_first_ms", "latency_correct_ms"):
        frame[column] = frame[column].astype(float)
    _check_pairings(frame)

    latency = "latency_correct_ms" if error_penalty == "builtin" else "latency_first_ms"
    frame = frame.loc[frame[latency].notna()]
    slow = frame[latency] > SLOW_MS
    n_dropped_slow = int(slow.sum())
    frame = frame.loc[~slow].copy()

    n_trials = len(frame)
    screened = frame["latency_first_ms"].fillna(frame["latency_correct_ms"])
    fast_fraction = float((screened < FAST_MS).mean()) if n_trials else math.nan
    error_rate = float(frame["error"].mean()) if n_trials else math.nan

    frame["sd_basis"] = frame[latency]
    if error_penalty == "builtin":
        frame["scored"] = frame[latency]
    else:
        correct_means = frame.loc[~frame["error"]].groupby("block")["latency_first_ms"].mean()
        replaced = frame["block"].map(correct_means) + D600_PENALTY_MS
        frame["scored"] = frame["latency_first_ms"].where(~frame["error"], replaced)

    d_practice = _pair_d(frame, COMBINED_PRACTICE)
    d_test = _pair_d(frame, COMBINED_TEST)
    available = [value for value in (d_practice, d_test) if not math.isnan(value)]
    d = float(np.mean(available)) if available else math.nan
    return DScore(d=d, d_practice=d_practice, d_test=d_test, error_penalty=error_penalty, n_trials=n_trials,
                  n_dropped_slow=n_dropped_slow, fast_fraction=fast_fraction,
                  flagged_fast=bool(n_trials and fast_fraction > FAST_FRACTION_LIMIT), error_rate=error_rate)


# --------------------------------------------------------------------------------------------------
# Part 3: input modality
# --------------------------------------------------------------------------------------------------

def combined_modality(modalities: Sequence[str]) -> CombinedModality | None:
    """The one modality of ``modalities`` (each "keyboard", "touch" or "mixed"), "mixed" if they differ,
    None if there are none. Raises ValueError on any other value."""
    distinct = set(modalities)
    unknown = distinct - {*MODALITIES, "mixed"}
    if unknown:
        raise ValueError(f"unknown input modality {sorted(unknown)}: give 'keyboard' or 'touch'")
    if not distinct:
        return None
    return cast(CombinedModality, distinct.pop()) if len(distinct) == 1 else "mixed"  # checked known above
