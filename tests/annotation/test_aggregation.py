"""Majority vote and the weighted ground truth (seed 000, Appendix B eq. 6) on hand-worked numbers."""
from __future__ import annotations

import pandas as pd
import pytest

from annotation.aggregation import AggregationSettings, ground_truth
from psychometrics.trust import trust_weights
from tests.psychometrics.test_trust import FOUR

# W from the worked example in test_trust: P1 1/4, P2 7/4, P3 22/17, P4 12/17
WEIGHTS = pd.Series({"P1": 0.25, "P2": 1.75, "P3": 22 / 17, "P4": 12 / 17})
LABELS = pd.DataFrame([
    ("P1", "x", 1), ("P2", "x", 0), ("P3", "x", 1),      # majority 1; ŷ = (1/4 + 22/17)/(2 + 22/17) = 105/224
    ("P2", "y", 1), ("P4", "y", 0),                      # tie; ŷ = (7/4)/(7/4 + 12/17) = 119/167
    ("P1", "z", -1), ("P4", "z", 1), ("P3", "z", 0),     # -1 excluded; tie; ŷ = (12/17)/(34/17) = 6/17
], columns=["participant", "item", "value"])


def by_item(frame: pd.DataFrame) -> dict:
    return frame.set_index("item").to_dict("index")


def test_equation_6_and_majority_vote_on_a_worked_example():
    result = by_item(ground_truth(LABELS, WEIGHTS))
    assert result["x"]["weighted_score"] == pytest.approx(105 / 224)
    assert (result["x"]["weighted_label"], result["x"]["majority_label"], result["x"]["majority_tie"]) == (0, 1, False)
    assert result["y"]["weighted_score"] == pytest.approx(119 / 167)
    assert result["y"]["weighted_label"] == 1 and result["y"]["majority_tie"]
    assert pd.isna(result["y"]["majority_label"])  # ties are marked, not resolved, by default
    assert result["z"]["weighted_score"] == pytest.approx(6 / 17)
    assert (result["z"]["n_labels"], result["z"]["n_excluded"], result["z"]["n_weighted"]) == (2, 1, 2)


def test_weights_come_straight_from_trust_weights():
    weights = trust_weights(FOUR).table.set_index("participant")["weight"]
    assert ground_truth(LABELS, weights).set_index("item")["weighted_score"].tolist() == pytest.approx(
        [105 / 224, 119 / 167, 6 / 17])


def test_unweighted_score_is_the_plain_mean():
    result = ground_truth(LABELS)
    assert result["weighted_score"].tolist() == pytest.approx([2 / 3, 1 / 2, 1 / 2])


@pytest.mark.parametrize(("rule", "expected"), [("positive", 1), ("negative", 0), ("none", pd.NA)])
def test_weighted_tie_rule_at_the_threshold(rule, expected):
    labels = pd.DataFrame([("P1", "t", 1), ("P2", "t", 0)], columns=["participant", "item", "value"])
    row = ground_truth(labels, settings=AggregationSettings(weighted_tie_rule=rule)).iloc[0]
    assert row["weighted_score"] == 0.5 and row["weighted_tie"]
    assert pd.isna(row["weighted_label"]) if expected is pd.NA else row["weighted_label"] == expected


@pytest.mark.parametrize(("rule", "expected"), [("positive", 1), ("negative", 0)])
def test_majority_tie_rule_still_marks_the_tie(rule, expected):
    row = ground_truth(LABELS, settings=AggregationSettings(majority_tie_rule=rule)).set_index("item").loc["y"]
    assert row["majority_label"] == expected and row["majority_tie"]


def test_threshold_is_configurable():
    result = ground_truth(LABELS, WEIGHTS, settings=AggregationSettings(threshold=0.3))
    assert result["weighted_label"].tolist() == [1, 1, 1]


def test_items_without_weighted_labels():
    labels = pd.DataFrame([("P1", "a", 1), ("P2", "a", 1), ("P3", "b", -1), ("P4", "c", 0)],
                          columns=["participant", "item", "value"])
    weights = pd.Series({"P1": 0.0, "P2": 0.0, "P4": float("nan")})  # P3 absent
    result = by_item(ground_truth(labels, weights))
    assert pd.isna(result["a"]["weighted_score"]) and pd.isna(result["a"]["weighted_label"])  # Σ W = 0
    assert result["a"]["majority_label"] == 1
    assert (result["b"]["n_labels"], result["b"]["n_excluded"]) == (0, 1)  # only "unrelated"
    assert pd.isna(result["b"]["majority_label"]) and not result["b"]["majority_tie"]
    assert result["c"]["n_weighted"] == 0 and pd.isna(result["c"]["weighted_label"])


def test_empty_labels_and_bad_settings():
    assert ground_truth(pd.DataFrame(columns=["participant", "item", "value"])).empty
    with pytest.raises(ValueError, match="tie rule must be 'none', 'positive' or 'negative', not 'coin'"):
        AggregationSettings(weighted_tie_rule="coin")
    with pytest.raises(ValueError, match=r"threshold must lie in \[0, 1\]"):
        AggregationSettings(threshold=1.5)
