"""The 7-block autism IAT (design, counterbalancing) and the D score (Greenwald, Nosek & Banaji 2003)."""
from __future__ import annotations

import json
import math
import statistics
from collections import Counter
from dataclasses import asdict

import numpy as np
import pandas as pd
import pytest

from psychometrics.iat import (
    AUTISTIC_NEUROTYPICAL,
    BLOCK_TRIAL_COUNTS,
    COMBINED_PRACTICE,
    COMBINED_TEST,
    DEFAULT_STIMULI,
    SOURCE_NOTE,
    IATStimuli,
    build_iat,
    counterbalance_condition,
    iat_d_score,
)

COLUMNS = ["block", "pairing", "error", "latency_first_ms", "latency_correct_ms"]


def rows(block, pairing, latencies, *, error=False, correct=None):
    """Trials of one block; latency_correct defaults to latency_first (a correct first response)."""
    correct = latencies if correct is None else correct
    return [(block, pairing, error, float(f), float(c)) for f, c in zip(latencies, correct, strict=True)]


def frame(*groups) -> pd.DataFrame:
    return pd.DataFrame([r for group in groups for r in group], columns=COLUMNS)


def worked(shift=0.0, consistent_blocks=(3, 4), inconsistent_blocks=(6, 7), fast=500.0, slow=700.0):
    """Each pair: 20 consistent trials at ``fast`` ms and 20 inconsistent at ``slow`` ms (plus ``shift``)."""
    return frame(*(rows(block, "consistent", [fast + shift] * 20) for block in consistent_blocks),
                 *(rows(block, "inconsistent", [slow + shift] * 20) for block in inconsistent_blocks))


# The spec's worked number. Each pair: 20 × 500 (consistent) and 20 × 700 (inconsistent).
#   diff = 700 − 500 = 200; the 40 latencies have mean 600 and deviations ±100,
#   so SS = 40 × 100² = 400,000; sample SD = sqrt(400,000 / 39) = 101.2739…
#   D_pair = 200 / 101.2739 = 1.97484…; D = mean(1.97484, 1.97484) = 1.97484.
WORKED_D = 200 / math.sqrt(400_000 / 39)


# ----------------------------------------------------------------------------------------- D score
@pytest.mark.parametrize("penalty", ["builtin", "d600"])
def test_worked_example_gives_1_97484(penalty):
    score = iat_d_score(worked(), error_penalty=penalty)
    assert math.sqrt(400_000 / 39) == pytest.approx(101.2739, abs=1e-4)
    assert WORKED_D == pytest.approx(1.97484, abs=1e-5)
    assert score.d == pytest.approx(1.97484, abs=1e-5)
    assert score.d_practice == pytest.approx(WORKED_D)
    assert score.d_test == pytest.approx(WORKED_D)
    assert score.error_penalty == penalty
    assert (score.n_trials, score.n_dropped_slow, score.error_rate) == (80, 0, 0.0)
    assert score.fast_fraction == 0.0 and score.flagged_fast is False


def test_positive_d_means_faster_in_the_consistent_pairing():
    # Consistent (Typically Developing + Pleasant) is faster: 500 < 700, so D > 0 = more bias.
    assert iat_d_score(worked()).d > 0
    # Consistent slower (900 vs 700): diff = 700 − 900 = −200, D = −1.97484.
    assert iat_d_score(worked(fast=900.0)).d == pytest.approx(-WORKED_D)


def test_adding_a_constant_to_every_latency_leaves_d_unchanged():
    # diff and SD are both shift-invariant: 200 / 101.27 either way.
    assert iat_d_score(worked(shift=1234.0)).d == pytest.approx(WORKED_D)
    assert iat_d_score(worked(shift=-250.0)).d == pytest.approx(WORKED_D)


def test_swapping_the_pairings_flips_the_sign():
    data = worked()
    swapped = data.assign(pairing=data["pairing"].map({"consistent": "inconsistent", "inconsistent": "consistent"}))
    assert iat_d_score(swapped).d == pytest.approx(-iat_d_score(data).d)
    assert iat_d_score(swapped).d == pytest.approx(-WORKED_D)


def test_block_numbers_are_positions_and_the_pairing_column_decides():
    # Counterbalanced order: consistent pairing in blocks 6 and 7, inconsistent in 3 and 4. Same D.
    second = worked(consistent_blocks=(6, 7), inconsistent_blocks=(3, 4))
    assert iat_d_score(second).d == pytest.approx(WORKED_D)


def test_non_combined_blocks_are_ignored():
    noise = frame(rows(1, None, [9000.0] * 20), rows(2, None, [100.0] * 20), rows(5, None, [5000.0] * 40))
    score = iat_d_score(pd.concat([worked(), noise], ignore_index=True))
    assert score.d == pytest.approx(WORKED_D)
    assert score.n_trials == 80


def test_slow_trials_are_dropped_and_counted():
    # Three trials over 10,000 ms added to block 4 (consistent): dropped, so D is the worked D.
    # A trial at exactly 10,000 ms is kept (the rule is "> 10,000").
    data = pd.concat([worked(), frame(rows(4, "consistent", [12_000.0, 10_001.0, 30_000.0]))], ignore_index=True)
    score = iat_d_score(data)
    assert score.n_dropped_slow == 3
    assert score.n_trials == 80
    assert score.d == pytest.approx(WORKED_D)
    kept = iat_d_score(pd.concat([worked(), frame(rows(4, "consistent", [10_000.0]))], ignore_index=True))
    assert kept.n_dropped_slow == 0 and kept.n_trials == 81


def test_slow_screen_uses_the_latency_each_variant_scores():
    # An error trial: first key at 9,000 ms, correction at 10,500 ms.
    # builtin screens latency_correct (10,500 > 10,000: dropped); d600 screens latency_first (kept).
    extra = frame(rows(3, "consistent", [9000.0], error=True, correct=[10_500.0]))
    data = pd.concat([worked(), extra], ignore_index=True)
    builtin = iat_d_score(data, error_penalty="builtin")
    d600 = iat_d_score(data, error_penalty="d600")
    assert (builtin.n_dropped_slow, builtin.n_trials) == (1, 80)
    assert (d600.n_dropped_slow, d600.n_trials) == (0, 81)
    assert d600.error_rate == pytest.approx(1 / 81)


def test_fast_responders_are_flagged_not_excluded():
    # 80 combined trials. 9 first-key latencies under 300 ms: 9/80 = 11.25 % > 10 %: flagged.
    data = worked()
    fast_rows = data.index[:9]
    data.loc[fast_rows, "latency_first_ms"] = 250.0
    score = iat_d_score(data)
    assert score.fast_fraction == pytest.approx(9 / 80)
    assert score.flagged_fast is True
    assert score.n_trials == 80  # flagged, not excluded; builtin D still uses latency_correct
    assert score.d == pytest.approx(WORKED_D)
    # 8/80 = exactly 10 %: not "more than 10 %", not flagged. 299 counts as fast, 300 does not.
    data.loc[data.index[8], "latency_first_ms"] = 300.0
    data.loc[data.index[7], "latency_first_ms"] = 299.0
    score = iat_d_score(data)
    assert score.fast_fraction == pytest.approx(8 / 80)
    assert score.flagged_fast is False


def test_without_first_key_latencies_the_screen_reads_the_correct_key_and_d600_is_nan():
    # Imported trials without a first-key column: 9 of 80 correct-key latencies at 250 ms, 9/80 > 10 %: flagged.
    data = worked()
    data.loc[data.index[:9], "latency_correct_ms"] = 250.0
    data["latency_first_ms"] = np.nan
    builtin = iat_d_score(data)
    assert builtin.fast_fraction == pytest.approx(9 / 80) and builtin.flagged_fast is True
    assert builtin.d == pytest.approx(iat_d_score(data.assign(latency_first_ms=data["latency_correct_ms"])).d)
    assert math.isnan(iat_d_score(data, error_penalty="d600").d)


def test_fast_fraction_is_taken_after_the_slow_screen():
    # 20 consistent + 20 inconsistent per pair = 80 trials, 9 of them under 300 ms (first key), and
    # 10 trials over 10,000 ms that are dropped first: 9 / 80 = 11.25 % (not 9 / 90 = 10 %).
    data = worked()
    data.loc[data.index[:9], "latency_first_ms"] = 250.0
    data = pd.concat([data, frame(rows(7, "inconsistent", [20_000.0] * 10))], ignore_index=True)
    score = iat_d_score(data)
    assert score.n_dropped_slow == 10
    assert score.fast_fraction == pytest.approx(9 / 80)
    assert score.flagged_fast is True


# D600, worked by hand.
#   Practice pair. Block 3 (consistent): correct 400, 600; one error, first key at 800.
#     correct mean = 500, so the error scores 500 + 600 = 1100; block mean = (400 + 600 + 1100) / 3 = 700.
#   Block 6 (inconsistent): correct 600, 800; one error, first key at 400.
#     correct mean = 700, so the error scores 700 + 600 = 1300; block mean = (600 + 800 + 1300) / 3 = 900.
#   diff = 900 − 700 = 200. SD over the recorded first-key latencies (Table 4 step 5, before the
#     replacement of step 6): 400, 600, 800, 600, 800, 400 -> mean 600, SS = 4 × 200² = 160,000,
#     SD = sqrt(160,000 / 5) = sqrt(32,000) = 178.885; D_practice = 200 / 178.885 = sqrt(5)/2 = 1.118034.
#   Test pair, no errors. Block 4 (consistent): 500, 700 (mean 600); block 7 (inconsistent): 700, 900
#     (mean 800). diff = 200; SD of 500, 700, 700, 900: SS = 2 × 200² = 80,000, SD = sqrt(80,000 / 3)
#     = 163.299; D_test = 200 / 163.299 = sqrt(1.5) = 1.224745.
#   D = (1.118034 + 1.224745) / 2 = 1.171389. Error rate = 2 errors / 10 trials = 0.2.
#   builtin on the same data, the errors corrected at 1100 (block 3) and 700 (block 6):
#     block 3 = (400 + 600 + 1100) / 3 = 700, block 6 = (600 + 800 + 700) / 3 = 700: D_practice = 0.
def d600_example() -> pd.DataFrame:
    return frame(
        rows(3, "consistent", [400.0, 600.0]), rows(3, "consistent", [800.0], error=True, correct=[1100.0]),
        rows(6, "inconsistent", [600.0, 800.0]), rows(6, "inconsistent", [400.0], error=True, correct=[700.0]),
        rows(4, "consistent", [500.0, 700.0]), rows(7, "inconsistent", [700.0, 900.0]),
    )


def test_d600_on_a_hand_worked_example():
    score = iat_d_score(d600_example(), error_penalty="d600")
    assert score.d_practice == pytest.approx(math.sqrt(5) / 2)
    assert score.d_practice == pytest.approx(1.118034, abs=1e-6)
    assert score.d_test == pytest.approx(math.sqrt(1.5))
    assert score.d == pytest.approx(1.171389, abs=1e-6)
    assert score.error_rate == pytest.approx(0.2)
    assert score.n_trials == 10


def test_builtin_on_the_same_example_uses_the_corrected_latencies():
    score = iat_d_score(d600_example(), error_penalty="builtin")
    assert score.d_practice == pytest.approx(0.0)
    assert score.d_test == pytest.approx(math.sqrt(1.5))
    assert score.d == pytest.approx(math.sqrt(1.5) / 2)


def test_d600_block_without_a_correct_trial_has_no_anchor():
    # Block 6 all errors: no correct mean to add 600 ms to, so the practice pair is NaN; D = D_test.
    data = frame(rows(3, "consistent", [400.0, 600.0]), rows(6, "inconsistent", [500.0, 700.0], error=True),
                 rows(4, "consistent", [500.0, 700.0]), rows(7, "inconsistent", [700.0, 900.0]))
    score = iat_d_score(data, error_penalty="d600")
    assert math.isnan(score.d_practice)
    assert score.d == pytest.approx(math.sqrt(1.5))


def test_pooled_sd_matches_numpy_pandas_and_statistics():
    rng = np.random.default_rng(7)
    groups = []
    for block, pairing, centre, n in ((3, "consistent", 650, 20), (6, "inconsistent", 780, 20),
                                      (4, "consistent", 640, 40), (7, "inconsistent", 760, 40)):
        groups.append(rows(block, pairing, rng.normal(centre, 120, n).round(1).tolist()))
    data = frame(*groups)
    score = iat_d_score(data)
    for pair, got in ((COMBINED_PRACTICE, score.d_practice), (COMBINED_TEST, score.d_test)):
        part = data[data["block"].isin(pair)]
        latencies = part["latency_correct_ms"]
        diff = (latencies[part["pairing"] == "inconsistent"].mean()
                - latencies[part["pairing"] == "consistent"].mean())
        sd_numpy = np.std(latencies.to_numpy(), ddof=1)
        assert sd_numpy == pytest.approx(latencies.std(ddof=1))
        assert sd_numpy == pytest.approx(statistics.stdev(latencies.tolist()))
        assert got == pytest.approx(diff / sd_numpy)
    assert score.d == pytest.approx((score.d_practice + score.d_test) / 2)


def test_zero_sd_pair_is_nan_and_d_uses_the_other_pair():
    # Practice pair: every latency 600 ms -> SD 0 -> NaN. Test pair: worked D.
    data = frame(rows(3, "consistent", [600.0] * 20), rows(6, "inconsistent", [600.0] * 20),
                 rows(4, "consistent", [500.0] * 20), rows(7, "inconsistent", [700.0] * 20))
    score = iat_d_score(data)
    assert math.isnan(score.d_practice)
    assert score.d_test == pytest.approx(WORKED_D)
    assert score.d == pytest.approx(WORKED_D)


def test_pair_with_fewer_than_two_trials_or_one_pairing_is_nan():
    # Practice pair: one trial in all -> NaN. Test pair: only block 4 (no inconsistent) -> NaN. D -> NaN.
    data = frame(rows(3, "consistent", [500.0]), rows(4, "consistent", [500.0, 700.0]))
    score = iat_d_score(data)
    assert math.isnan(score.d_practice) and math.isnan(score.d_test) and math.isnan(score.d)
    assert score.n_trials == 3


def test_no_combined_trials_gives_nan_everywhere():
    score = iat_d_score(frame(rows(1, None, [500.0, 600.0])))
    assert math.isnan(score.d) and math.isnan(score.fast_fraction) and math.isnan(score.error_rate)
    assert (score.n_trials, score.n_dropped_slow, score.flagged_fast) == (0, 0, False)


def test_all_trials_of_a_pair_too_slow_makes_that_pair_nan():
    data = pd.concat([worked(), frame(rows(3, "consistent", [50_000.0]))], ignore_index=True)
    data.loc[data["block"].isin(COMBINED_PRACTICE), "latency_correct_ms"] = 20_000.0
    score = iat_d_score(data)
    assert score.n_dropped_slow == 41
    assert math.isnan(score.d_practice)
    assert score.d == pytest.approx(WORKED_D)


@pytest.mark.parametrize(("bad", "message"), [
    (frame(rows(3, "consistent", [500.0]), rows(6, "consistent", [700.0])),      # both blocks of a pair alike
     "blocks 3 and 6 both have pairing 'consistent'"),
    (frame(rows(3, None, [500.0]), rows(6, "inconsistent", [700.0])),            # combined block without pairing
     "combined block 3 must have a single pairing 'consistent' or 'inconsistent'"),
    (frame(rows(3, "consistent", [500.0]), rows(3, "inconsistent", [700.0])),    # two pairings in one block
     r"combined block 3 must .*; found \['consistent', 'inconsistent'\]"),
    (frame(rows(4, "compatible", [500.0]), rows(7, "inconsistent", [700.0])),    # unknown pairing name
     r"combined block 4 must .*; found \['compatible'\]"),
])
def test_inconsistent_pairing_columns_are_rejected(bad, message):
    with pytest.raises(ValueError, match=message):
        iat_d_score(bad)


def test_bad_arguments_are_rejected():
    with pytest.raises(ValueError, match="error_penalty"):
        iat_d_score(worked(), error_penalty="d2sd")
    with pytest.raises(ValueError, match="missing columns"):
        iat_d_score(worked().drop(columns=["latency_first_ms"]))


# ------------------------------------------------------------------------------------------ design
def by_number(blocks):
    return {block.number: block for block in blocks}


def label_side(block, label):
    if label in block.left_labels:
        return "left"
    assert label in block.right_labels
    return "right"


def test_default_stimuli_and_source_note():
    s = DEFAULT_STIMULI
    assert (s.target_a_label, s.target_b_label) == ("Autism Spectrum", "Typically Developing")
    assert (s.attribute_pos_label, s.attribute_neg_label) == ("Pleasant", "Unpleasant")
    assert "Friendly" in s.attribute_pos_words and "Awkward" in s.attribute_neg_words
    assert len(s.attribute_pos_words) == len(s.attribute_neg_words) == 9
    assert s.target_a_words == ("Autism", "Autistic", "Autism Spectrum", "On the spectrum", "ASD")
    assert s.target_b_words == ("Typically Developing", "Neurotypical", "Non-autistic", "Typical", "Allistic")
    assert (AUTISTIC_NEUROTYPICAL.target_a_label, AUTISTIC_NEUROTYPICAL.target_b_label) == ("Autistic", "Neurotypical")
    for source in ("Dickter", "Greenwald, McGhee & Schwartz", "Project Implicit", "validated"):
        assert source in SOURCE_NOTE


def test_stimuli_validation():
    with pytest.raises(ValueError, match="both"):
        IATStimuli("A", ("x", "Joy"), "B", ("y",), "Pleasant", ("Joy",), "Unpleasant", ("Hurt",))
    with pytest.raises(ValueError, match="no words"):
        IATStimuli("A", (), "B", ("y",), "Pleasant", ("Joy",), "Unpleasant", ("Hurt",))
    with pytest.raises(ValueError, match="labels"):
        IATStimuli("A", ("x",), "A", ("y",), "Pleasant", ("Joy",), "Unpleasant", ("Hurt",))
    lists = IATStimuli("A", ["x"], "B", ["y"], "P", ["p"], "U", ["u"])
    assert lists.target_a_words == ("x",)  # lists become tuples


@pytest.mark.parametrize("condition", range(4))
def test_block_structure_and_counts(condition):
    blocks = build_iat(DEFAULT_STIMULI, condition_index=condition, seed=1)
    assert [b.number for b in blocks] == [1, 2, 3, 4, 5, 6, 7]
    assert [len(b.trials) for b in blocks] == [20, 20, 20, 40, 40, 20, 40] == list(BLOCK_TRIAL_COUNTS)
    assert [b.kind for b in blocks] == ["target_practice", "attribute_practice", "combined_practice",
                                        "combined_test", "reversed_target_practice", "combined_practice",
                                        "combined_test"]
    assert [b.pairing is None for b in blocks] == [True, True, False, False, True, False, False]
    for block in blocks:
        assert [t.index for t in block.trials] == list(range(len(block.trials)))
        expected = {1: {"target_a", "target_b"}, 2: {"attribute_pos", "attribute_neg"},
                    5: {"target_a", "target_b"}}.get(block.number,
                                                     {"target_a", "target_b", "attribute_pos", "attribute_neg"})
        assert {t.stimulus_category for t in block.trials} == expected
        assert len(block.left_labels) == len(block.right_labels) == (1 if block.number in (1, 2, 5) else 2)


@pytest.mark.parametrize("condition", range(4))
def test_combined_blocks_alternate_target_and_attribute(condition):
    for block in build_iat(DEFAULT_STIMULI, condition_index=condition, seed=3):
        if block.number in (3, 4, 6, 7):
            kinds = [t.stimulus_category.split("_")[0] for t in block.trials]
            assert kinds == ["target", "attribute"] * (len(block.trials) // 2)


@pytest.mark.parametrize("condition", range(4))
def test_sides_swap_in_block_5_and_attributes_stay(condition):
    s = DEFAULT_STIMULI
    b = by_number(build_iat(s, condition_index=condition, seed=5))
    a_first = label_side(b[1], s.target_a_label)
    assert label_side(b[1], s.target_b_label) != a_first
    assert label_side(b[5], s.target_a_label) != a_first              # swapped in block 5
    assert label_side(b[5], s.target_b_label) == a_first
    for n in (3, 4):
        assert label_side(b[n], s.target_a_label) == a_first          # combined blocks follow block 1
    for n in (6, 7):
        assert label_side(b[n], s.target_a_label) != a_first          # ... and block 5
    pos = label_side(b[2], s.attribute_pos_label)
    assert all(label_side(b[n], s.attribute_pos_label) == pos for n in (2, 3, 4, 6, 7))
    cond = counterbalance_condition(condition)
    assert (pos == "left") is cond.attribute_pos_left
    assert (a_first == "left") is cond.target_a_left_first


@pytest.mark.parametrize("condition", range(4))
def test_consistent_pairing_is_placed_by_the_condition(condition):
    s = DEFAULT_STIMULI
    cond = counterbalance_condition(condition)
    b = by_number(build_iat(s, condition_index=condition, seed=11))
    first, second = ("consistent", "inconsistent") if cond.consistent_first else ("inconsistent", "consistent")
    assert (b[3].pairing, b[4].pairing, b[6].pairing, b[7].pairing) == (first, first, second, second)
    for n in (3, 4, 6, 7):
        # Consistent: "Typically Developing or Pleasant" vs "Autism Spectrum or Unpleasant".
        shares_with_pleasant = s.target_b_label if b[n].pairing == "consistent" else s.target_a_label
        pleasant_side = b[n].left_labels if s.attribute_pos_label in b[n].left_labels else b[n].right_labels
        assert shares_with_pleasant in pleasant_side
        assert b[n].left_labels[0] in (s.target_a_label, s.target_b_label)  # target label listed first


def test_the_four_conditions():
    table = [(c.consistent_first, c.target_a_left_first, c.attribute_pos_left)
             for c in map(counterbalance_condition, range(4))]
    assert table == [(True, False, True), (False, True, True), (True, True, False), (False, False, False)]
    assert counterbalance_condition(6) == counterbalance_condition(2)
    assert counterbalance_condition(-1) == counterbalance_condition(3)
    # Conditions 0 and 1 keep the spec's layout: Pleasant on "e" (left), Unpleasant on "i" (right).
    for condition in (0, 1):
        b2 = by_number(build_iat(DEFAULT_STIMULI, condition_index=condition, seed=0))[2]
        assert (b2.left_labels, b2.right_labels) == (["Pleasant"], ["Unpleasant"])


def test_all_four_conditions_differ_and_index_wraps():
    designs = [asdict(block) for c in range(4) for block in build_iat(DEFAULT_STIMULI, condition_index=c, seed=9)]
    per_condition = [json.dumps(designs[7 * c:7 * c + 7]) for c in range(4)]
    assert len(set(per_condition)) == 4
    layouts = {tuple((tuple(b.left_labels), b.pairing) for b in build_iat(DEFAULT_STIMULI, condition_index=c, seed=9))
               for c in range(4)}
    assert len(layouts) == 4  # the conditions differ in layout, not only in trial order
    assert build_iat(DEFAULT_STIMULI, condition_index=5, seed=9) == build_iat(DEFAULT_STIMULI, condition_index=1,
                                                                               seed=9)


@pytest.mark.parametrize("condition", range(4))
def test_correct_answers_match_the_labels_and_are_balanced(condition):
    s = DEFAULT_STIMULI
    for block in build_iat(s, condition_index=condition, seed=13):
        sides = Counter(t.correct_side for t in block.trials)
        assert sides["left"] == sides["right"] == len(block.trials) // 2
        for trial in block.trials:
            assert trial.stimulus in s.words(trial.stimulus_category)
            assert label_side(block, s.label(trial.stimulus_category)) == trial.correct_side
            assert trial.correct_key == {"left": "e", "right": "i"}[trial.correct_side]
        categories = Counter(t.stimulus_category for t in block.trials)
        shown = sorted(categories.values())
        assert shown[0] == shown[-1]  # every shown category equally often (10/10, 5/5/5/5, 20/20, 10×4)


def test_words_within_a_category_appear_about_equally_often():
    s = DEFAULT_STIMULI
    for block in build_iat(s, condition_index=0, seed=17):
        for category in {t.stimulus_category for t in block.trials}:
            counts = Counter(t.stimulus for t in block.trials if t.stimulus_category == category)
            n = sum(counts.values())
            words = s.words(category)
            # e.g. block 4, target A: 10 draws over 5 words -> each word exactly twice;
            # block 3, Pleasant: 5 draws over 9 words -> 5 distinct words once each.
            full = [counts.get(w, 0) for w in words]
            assert max(full) - min(full) <= 1
            assert max(full) == math.ceil(n / len(words))


def test_reproducible_with_a_seed_and_json_serialisable():
    one = build_iat(DEFAULT_STIMULI, condition_index=2, seed=42)
    assert one == build_iat(DEFAULT_STIMULI, condition_index=2, seed=42)
    assert one != build_iat(DEFAULT_STIMULI, condition_index=2, seed=43)
    payload = json.loads(json.dumps([asdict(b) for b in one]))
    assert payload[0]["number"] == 1 and payload[0]["pairing"] is None
    assert set(payload[3]["trials"][0]) == {"index", "stimulus", "stimulus_category", "correct_side", "correct_key"}
    assert set(payload[3]) == {"number", "kind", "pairing", "left_labels", "right_labels", "trials"}


def test_alternative_preset_uses_its_labels():
    b = by_number(build_iat(AUTISTIC_NEUROTYPICAL, condition_index=0, seed=1))
    assert set(b[1].left_labels + b[1].right_labels) == {"Autistic", "Neurotypical"}
    assert set(b[3].left_labels + b[3].right_labels) == {"Autistic", "Neurotypical", "Pleasant", "Unpleasant"}


@pytest.mark.parametrize("condition", range(4))
def test_designed_session_scores_end_to_end(condition):
    # A simulated participant: 550 ± 50 ms in the consistent blocks, 650 ± 50 ms in the inconsistent
    # ones, 800 ± 50 ms elsewhere. Whatever the condition, D has the same positive value; the rows
    # carry the block's own pairing.
    records = []
    for block in build_iat(DEFAULT_STIMULI, condition_index=condition, seed=21):
        for trial in block.trials:
            base = {None: 800.0, "consistent": 550.0, "inconsistent": 650.0}[block.pairing]
            latency = base + (50.0 if trial.index % 2 else -50.0)
            records.append((block.number, block.pairing, False, latency, latency))
    score = iat_d_score(pd.DataFrame(records, columns=COLUMNS))
    # Practice pair: 20 + 20 trials, values 500/600 and 600/700 -> mean 600; deviations ±100 (20 trials)
    # and 0 (20 trials) -> SS = 20 × 100² = 200,000, SD = sqrt(200,000 / 39); D = 100 / SD. Same for test
    # (40 + 40: SS = 40 × 100², SD = sqrt(400,000 / 79)).
    assert score.d_practice == pytest.approx(100 / math.sqrt(200_000 / 39))
    assert score.d_test == pytest.approx(100 / math.sqrt(400_000 / 79))
    assert score.n_trials == 120


def test_the_preview_lists_each_category_with_its_kind_and_words_targets_first():
    preview = DEFAULT_STIMULI.preview()
    assert [(c["label"], c["kind"]) for c in preview] == [
        ("Autism Spectrum", "target"), ("Typically Developing", "target"), ("Pleasant", "attribute"),
        ("Unpleasant", "attribute")]
    assert preview[0]["words"] == ["Autism", "Autistic", "Autism Spectrum", "On the spectrum", "ASD"]
