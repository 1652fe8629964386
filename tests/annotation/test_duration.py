"""The duration shown before consent (annotation.duration), worked by hand."""
from __future__ import annotations

import pytest

from annotation.duration import IAT_BLOCKS, IAT_TRIALS, duration_estimate
from psychometrics.iat import BLOCK_TRIAL_COUNTS


def test_a_study_with_the_aq50_sata_iat_and_ten_sentences():
    estimate = duration_estimate(statements=50 + 5, iat=True, sentences=10)
    # consent and instructions 120 s; 55 statements × 6 s = 330 s; the IAT 200 × 1 s + 200 × 0.25 s + 7 × 20 s
    # = 390 s; 10 sentences × 15 s = 150 s. 120 + 330 + 390 + 150 = 990 s = 16.5 min, rounded up: 17.
    assert estimate.minutes == 17 and not estimate.stated
    assert [(part.name, part.seconds) for part in estimate.parts] == [
        ("consent and instructions", 120), ("questionnaires (55 statements)", 330), ("reaction-time task", 390),
        ("labelling (10 sentences)", 150)]


def test_parts_a_study_lacks_are_left_out_and_whole_minutes_are_never_rounded_down():
    # 120 s + 4 × 15 s = 180 s: exactly 3 minutes; one more sentence (195 s) is 3.25 minutes, shown as 4.
    assert duration_estimate(statements=0, iat=False, sentences=4).minutes == 3
    estimate = duration_estimate(statements=0, iat=False, sentences=5)
    assert estimate.minutes == 4 and [part.name for part in estimate.parts] == [
        "consent and instructions", "labelling (5 sentences)"]


def test_a_stated_duration_wins_and_keeps_the_parts_for_the_researcher_to_compare():
    estimate = duration_estimate(statements=50, iat=True, sentences=10, stated_minutes=30)
    assert (estimate.minutes, estimate.stated, len(estimate.parts)) == (30, True, 4)


def test_negative_counts_are_refused():
    with pytest.raises(ValueError, match="negative"):
        duration_estimate(statements=-1, iat=False, sentences=0)


def test_the_iat_part_counts_the_trials_and_blocks_the_iat_runs():
    # The estimate's own copy of the design (the module stays free of the IAT's code): it must follow the IAT.
    assert (IAT_TRIALS, IAT_BLOCKS) == (sum(BLOCK_TRIAL_COUNTS), len(BLOCK_TRIAL_COUNTS))
