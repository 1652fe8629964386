"""Trust weights, seed 000 Appendix B eqs. 1–5, on hand-worked numbers, and every edge case."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from psychometrics.trust import trust_weights


def scores(rows) -> pd.DataFrame:
    return pd.DataFrame(rows, columns=["participant", "team", "aq", "sata", "iat_d"])


# Four annotators in two teams. Hand-worked:
#   AQ   10, 20, 30, 40     -> (x-10)/30          = 0, 1/3, 2/3, 1          (eq. 1)
#   SATA 60, 90, 75, 60     -> (x-60)/30          = 0, 1, 1/2, 0            (eq. 2)
#   IAT  .5, -.5, 0, 1      -> 1 - (x+.5)/1.5     = 1/3, 1, 2/3, 0          (eq. 3)
#   R = mean                                      = 1/9, 7/9, 11/18, 1/3    (eq. 4)
#   team a mean R = 4/9:  W = 1/4, 7/4;  team b mean R = 17/36:  W = 22/17, 12/17   (eq. 5)
FOUR = scores([("P1", "a", 10, 60, 0.5), ("P2", "a", 20, 90, -0.5),
               ("P3", "b", 30, 75, 0.0), ("P4", "b", 40, 60, 1.0)])


def test_equations_1_to_5_on_a_worked_example():
    result = trust_weights(FOUR)
    table = result.table.set_index("participant")
    assert table["aq_norm"].tolist() == pytest.approx([0, 1 / 3, 2 / 3, 1])
    assert table["sata_norm"].tolist() == pytest.approx([0, 1, 0.5, 0])
    assert table["iat_norm"].tolist() == pytest.approx([1 / 3, 1, 2 / 3, 0])
    assert table["trust_raw"].tolist() == pytest.approx([1 / 9, 7 / 9, 11 / 18, 1 / 3])
    assert table["weight"].tolist() == pytest.approx([0.25, 1.75, 22 / 17, 12 / 17])
    assert table.groupby("team")["weight"].mean().tolist() == pytest.approx([1.0, 1.0])  # eq. 5's promise
    assert table["included"].all() and result.notes == []


def test_higher_iat_d_means_more_bias_and_a_lower_standardised_value():
    table = trust_weights(FOUR).table.set_index("participant")
    assert table.loc["P4", "iat_d"] == 1.0 and table.loc["P4", "iat_norm"] == 0.0
    assert table.loc["P2", "iat_d"] == -0.5 and table.loc["P2", "iat_norm"] == 1.0


def test_one_annotator_gets_weight_one():
    result = trust_weights(scores([("P1", "a", 30, 70, 0.2)]))
    row = result.table.iloc[0]
    assert np.isnan(row["trust_raw"]) and row["weight"] == 1.0
    assert "no instrument varies across annotators: every included annotator has W = 1" in result.notes


def test_an_instrument_without_spread_is_left_out_of_r():
    same_sata = FOUR.assign(sata=80)
    result = trust_weights(same_sata)
    table = result.table.set_index("participant")
    # R = mean(AQ, IAT):  (0+1/3)/2, (1/3+1)/2, (2/3+2/3)/2, (1+0)/2 = 1/6, 2/3, 2/3, 1/2
    assert table["trust_raw"].tolist() == pytest.approx([1 / 6, 2 / 3, 2 / 3, 1 / 2])
    # team a mean 5/12: W = 2/5, 8/5;  team b mean 7/12: W = 8/7, 6/7
    assert table["weight"].tolist() == pytest.approx([0.4, 1.6, 8 / 7, 6 / 7])
    assert table["sata_norm"].isna().all()
    assert "sata: max = min across annotators, left out of R for everyone" in result.notes


def test_team_whose_r_are_all_zero_gets_weight_one():
    rows = scores([("P1", "a", 40, 90, -0.5), ("P2", "b", 10, 60, 1.0), ("P3", "b", 10, 60, 1.0)])
    result = trust_weights(rows)
    table = result.table.set_index("participant")
    assert table["trust_raw"].tolist() == pytest.approx([1.0, 0.0, 0.0])
    assert table["weight"].tolist() == pytest.approx([1.0, 1.0, 1.0])
    assert "team b: every R is 0, so every member has W = 1" in result.notes


def test_zero_r_in_a_team_with_positive_mean_weighs_zero():
    rows = scores([("P1", "a", 40, 90, -0.5), ("P2", "a", 10, 60, 1.0)])
    assert trust_weights(rows).table["weight"].tolist() == pytest.approx([2.0, 0.0])


def test_missing_instrument_excluded_by_default():
    rows = scores([("P1", "a", 10, 60, 0.5), ("P2", "a", 20, 90, -0.5), ("P3", "a", 30, None, 0.0)])
    result = trust_weights(rows)
    table = result.table.set_index("participant")
    assert not table.loc["P3", "included"] and np.isnan(table.loc["P3", "weight"])
    # P3 takes no part in min/max: AQ spans 10..20, so P2's AQ is 1 (not 1/3)
    assert table.loc["P2", "aq_norm"] == 1.0
    # R = (0+0+0)/3 = 0 and (1+1+1)/3 = 1; mean 1/2 -> W = 0, 2
    assert table["weight"].dropna().tolist() == pytest.approx([0.0, 2.0])
    assert "P3: no weight (missing instrument score; rule 'exclude')" in result.notes


def test_missing_instrument_averaged_when_asked():
    rows = scores([("P1", "a", 10, 60, 0.5), ("P2", "a", 20, 90, -0.5), ("P3", "a", 30, None, 0.0)])
    result = trust_weights(rows, missing="average")
    table = result.table.set_index("participant")
    # AQ over all three: 0, 1/2, 1; SATA over P1,P2: 0, 1; IAT: 1 - (x+.5)/1 = 0, 1, 1/2
    assert table["aq_norm"].tolist() == pytest.approx([0, 0.5, 1])
    assert table["trust_raw"].tolist() == pytest.approx([0, (0.5 + 1 + 1) / 3, (1 + 0.5) / 2])
    mean_r = (0 + 2.5 / 3 + 0.75) / 3
    assert table["weight"].tolist() == pytest.approx([0, (2.5 / 3) / mean_r, 0.75 / mean_r])
    assert "P3: R averages only the instruments they have (rule 'average')" in result.notes


def test_unknown_missing_rule():
    with pytest.raises(ValueError, match="missing must be"):
        trust_weights(FOUR, missing="impute")


def test_without_team_normalisation_an_annotator_without_an_r_gets_the_mean_r_not_the_top_of_the_scale():
    # Rule "average". AQ 10, 20, 30 standardise to 0, 0.5, 1 (eq. 1); SATA is 5 for everyone, so it is left out
    # of R. D has only SATA: included, but with no informative score, so R is undefined.
    scores = pd.DataFrame({"participant": ["A", "B", "C", "D"], "team": ["t"] * 4,
                           "aq": [10.0, 20.0, 30.0, np.nan], "sata": [np.nan, 5.0, 5.0, 5.0],
                           "iat_d": [np.nan] * 4})
    raw = trust_weights(scores, missing="average", team_normalise=False)
    # W = R = 0, 0.5, 1 for A, B, C; D gets their mean R, (0 + 0.5 + 1) / 3 = 0.5 (W = 1 would be the top).
    assert list(raw.table["weight"]) == pytest.approx([0.0, 0.5, 1.0, 0.5])
    assert "D: no informative score, so W = the included annotators' mean R (0.5)" in " ".join(raw.notes)
    # Team-normalised (eq. 5, team mean R 0.5): W = 0, 1, 2, and 1 for D, the team's mean weight, as before.
    assert list(trust_weights(scores, missing="average").table["weight"]) == pytest.approx([0.0, 1.0, 2.0, 1.0])


def test_without_team_normalisation_and_no_r_at_all_every_weight_is_one():
    scores = pd.DataFrame({"participant": ["A", "B"], "team": ["t", "t"], "aq": [10.0, 10.0], "sata": [5.0, 5.0],
                           "iat_d": [0.1, 0.1]})
    assert list(trust_weights(scores, team_normalise=False).table["weight"]) == [1.0, 1.0]
