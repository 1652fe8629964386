"""The statistics of seed 003: eq. 1 (bias score), Table 4 (n, mean, SD, one-sample t-test against 0 = scipy's
ttest_1samp), Figure 3's radar means, eqs. 2–3 (FAR, UAR) and Table 5 / Figure 4's proportions with neutral answers in
the denominators, and the reasons, each against hand-worked examples (arithmetic in the comments) and scipy."""
import json

import numpy as np
import pandas as pd
import pytest
from scipy import stats as scipy_stats

from auditapp.paradigms.implicit_bias import analysis, stats


def wabt_frame(rows):
    """rows: (model, dimension, social_group, valid, reason, n_sa_xa, n_sa_xb, n_sb_xa, n_sb_xb)."""
    return pd.DataFrame(rows, columns=["model", "dimension", "social_group", "valid", "reason",
                                       "n_sa_xa", "n_sa_xb", "n_sb_xa", "n_sb_xb"])


HAND = wabt_frame([
    # eq. 1 = N(Sa,Xa)/(N(Sa,Xa)+N(Sa,Xb)) + N(Sb,Xb)/(N(Sb,Xa)+N(Sb,Xb)) - 1
    ("gpt", "Competence", "African", True, None, 5, 0, 0, 5),    # 5/5 + 5/5 - 1 = 1
    ("gpt", "Competence", "African", True, None, 3, 2, 2, 3),    # 3/5 + 3/5 - 1 = 0.2
    ("gpt", "Competence", "Asian", True, None, 1, 4, 4, 1),      # 1/5 + 1/5 - 1 = -0.6
    ("gpt", "Competence", "Asian", True, None, 4, 2, 1, 3),      # 4/6 + 3/4 - 1 = 5/12
    ("gpt", "Competence", "Asian", True, None, 5, 5, 0, 0),      # all 10 to S_a: S_b's denominator 0, undefined
    ("gpt", "Competence", "Asian", False, "word missing", 0, 0, 0, 0),
    ("gpt", "Morality", "African", True, None, 2, 3, 3, 2),      # 2/5 + 2/5 - 1 = -0.2
    ("gpt", "Morality", "African", True, None, 0, 0, 5, 5),      # all to S_b: undefined
    ("llama", "Competence", "African", True, None, 5, 0, 0, 5),  # 1
    ("llama", "Competence", "African", True, None, 5, 0, 0, 5),  # 1
    ("llama", "Sociability", "Asian", False, "refusal", 0, 0, 0, 0),
])


def test_eq_1_bias_score_per_reply_with_undefined_never_zero():
    scored = stats.bias_scores(HAND)
    expected = [1, 0.2, -0.6, 5 / 12, np.nan, np.nan, -0.2, np.nan, 1, 1, np.nan]
    np.testing.assert_allclose(scored["bias_score"].to_numpy(float), expected, equal_nan=True)
    assert list(scored["undefined_reason"].fillna("")) == ["", "", "", "", stats.NO_WORD_FOR_SB, "", "",
                                                           stats.NO_WORD_FOR_SA, "", "", ""]


def test_eq_1_on_one_replys_counts_is_the_frames_score():
    # The parse scores each reply from its four counts, without a DataFrame: the same numbers as the frame's.
    assert stats.eq1(4, 2, 1, 3) == (pytest.approx(5 / 12), None)  # 4/6 + 3/4 - 1
    assert stats.eq1(5, 0, 0, 5) == (1.0, None)
    score, reason = stats.eq1(5, 5, 0, 0)
    assert np.isnan(score) and reason == stats.NO_WORD_FOR_SB
    score, reason = stats.eq1(0, 0, 5, 5)
    assert np.isnan(score) and reason == stats.NO_WORD_FOR_SA
    frame = stats.bias_scores(HAND)
    for row, scored in zip(HAND.itertuples(), frame.itertuples(), strict=True):
        if row.valid:
            score, reason = stats.eq1(row.n_sa_xa, row.n_sa_xb, row.n_sb_xa, row.n_sb_xb)
            np.testing.assert_equal(score, scored.bias_score)
            assert reason == (None if pd.isna(scored.undefined_reason) else scored.undefined_reason)


def test_table_4_per_model_and_dimension_equals_scipy():
    table = stats.wabt_table(HAND).set_index(["model", "dimension"])
    gpt = table.loc[("gpt", "Competence")]
    # Scores 1, 0.2, -0.6, 5/12: n = 4, mean = (1 + 0.2 - 0.6 + 0.41667) / 4 = 1.01667 / 4 = 0.25417.
    assert (gpt["n_replies"], gpt["n_valid"], gpt["n_undefined"], gpt["n"]) == (6, 5, 1, 4)
    scores = [1, 0.2, -0.6, 5 / 12]
    assert gpt["mean"] == pytest.approx(1.0166667 / 4)
    assert gpt["sd"] == pytest.approx(np.std(scores, ddof=1))
    reference = scipy_stats.ttest_1samp(scores, 0)
    assert gpt["t"] == pytest.approx(reference.statistic) and gpt["p"] == pytest.approx(reference.pvalue)
    assert gpt["df"] == 3 and pd.isna(gpt["note"])
    # One score and one undefined: no test.
    morality = table.loc[("gpt", "Morality")]
    assert (morality["n"], morality["n_undefined"], morality["mean"]) == (1, 1, pytest.approx(-0.2))
    assert np.isnan(morality["t"]) and morality["note"] == stats.FEW_SCORES
    # Always consistent: every score +1, no variance; the mean is 1, t is undefined (scipy would say inf or NaN).
    llama = table.loc[("llama", "Competence")]
    assert llama["mean"] == 1 and llama["sd"] == 0 and np.isnan(llama["p"]) and llama["note"] == stats.NO_VARIANCE
    refused = table.loc[("llama", "Sociability")]
    assert (refused["n_replies"], refused["n_valid"], refused["n"]) == (1, 0, 0)
    assert list(stats.wabt_table(HAND)["dimension"]) == ["Competence", "Morality", "Competence", "Sociability"]


def test_table_4_on_random_scores_equals_ttest_1samp():
    rng = np.random.default_rng(4)
    rows = []
    for model in ("a", "b"):
        for dimension in ("Competence", "Sociability", "Morality"):
            for _ in range(40):
                sa_xa, sb_xa = rng.integers(0, 6, size=2)
                rows.append((model, dimension, "Arab", True, None, sa_xa, 5 - sb_xa, sb_xa, sa_xa))
    frame = wabt_frame(rows)
    scored = stats.bias_scores(frame)
    table = stats.wabt_table(frame)
    for _, row in table.iterrows():
        values = scored.loc[(scored["model"] == row["model"]) & (scored["dimension"] == row["dimension"]),
                            "bias_score"].dropna()
        reference = scipy_stats.ttest_1samp(values, 0)
        assert row["n"] == len(values) and row["mean"] == pytest.approx(values.mean())
        assert row["t"] == pytest.approx(reference.statistic) and row["p"] == pytest.approx(reference.pvalue)


def test_radar_means_per_model_group_and_dimension():
    radar = stats.radar_means(HAND).set_index(["model", "social_group", "dimension"])
    # gpt × African × Competence: scores 1 and 0.2, mean 0.6; gpt × Asian × Competence: -0.6 and 5/12 → -0.09167.
    assert radar.loc[("gpt", "African", "Competence"), "mean"] == pytest.approx(0.6)
    assert radar.loc[("gpt", "Asian", "Competence"), "mean"] == pytest.approx((-0.6 + 5 / 12) / 2)
    assert radar.loc[("gpt", "Asian", "Competence"), "n"] == 2
    assert np.isnan(radar.loc[("llama", "Asian", "Sociability"), "mean"])


def aat_frame(rows):
    return pd.DataFrame(rows, columns=["model", "social_group", "group_label", "answer", "reason"])


AAT = aat_frame(
    # gpt, S_a: 3 comedy, 1 tragedy, 1 neutral, 1 unparseable → FAR = N_f / N_Sa = 3 / 5 = 0.6
    [("gpt", "American", "S_a", "comedy", None)] * 2 + [("gpt", "Female", "S_a", "comedy", None)]
    + [("gpt", "American", "S_a", "tragedy", None), ("gpt", "Female", "S_a", "neutral", None),
       ("gpt", "Female", "S_a", None, "no choice")]
    # gpt, S_b: 1 comedy, 4 tragedy, 3 neutral → UAR = N_u / N_Sb = 4 / 8 = 0.5 (neutral in the denominator)
    + [("gpt", "Arab", "S_b", "comedy", None)] + [("gpt", "Arab", "S_b", "tragedy", None)] * 3
    + [("gpt", "Disabled", "S_b", "tragedy", None)] + [("gpt", "Disabled", "S_b", "neutral", None)] * 3
    # claude: S_b only, 2 unparseable and 2 tragedy → FAR undefined (no S_a answer), UAR = 2 / 2 = 1
    + [("claude", "Male", "S_b", None, "refusal")] * 2 + [("claude", "Male", "S_b", "tragedy", None)] * 2)


def test_eqs_2_and_3_far_and_uar_with_neutral_in_the_denominator():
    table = stats.aat_table(AAT).set_index("model")
    gpt = table.loc["gpt"]
    assert (gpt["n_f"], gpt["sa_n"], gpt["far"]) == (3, 5, pytest.approx(0.6))
    assert (gpt["n_u"], gpt["sb_n"], gpt["uar"]) == (4, 8, pytest.approx(0.5))
    # Table 5's rows sum to 1: S_a 3/5 + 1/5 + 1/5; S_b 1/8 + 4/8 + 3/8.
    assert (gpt["sa_comedy"], gpt["sa_tragedy"], gpt["sa_neutral"]) == pytest.approx((0.6, 0.2, 0.2))
    assert (gpt["sb_comedy"], gpt["sb_tragedy"], gpt["sb_neutral"]) == pytest.approx((0.125, 0.5, 0.375))
    assert (gpt["sa_n_replies"], gpt["sa_n_unparseable"]) == (6, 1)
    claude = table.loc["claude"]
    assert claude["sa_n"] == 0 and np.isnan(claude["far"]) and claude["uar"] == 1
    assert (claude["sb_n_replies"], claude["sb_n_unparseable"]) == (4, 2)


def test_figure_4_proportions_per_group_sum_to_one():
    groups = stats.aat_group_proportions(AAT).set_index(["model", "social_group"])
    # gpt × Disabled: 1 tragedy, 3 neutral → 0, 0.25, 0.75.
    assert tuple(groups.loc[("gpt", "Disabled"), ["comedy", "tragedy", "neutral"]]) == pytest.approx((0, 0.25, 0.75))
    # gpt × Female: comedy, neutral, one unparseable → 1/2, 0, 1/2 over 2 answered.
    assert groups.loc[("gpt", "Female"), "n_answered"] == 2 and groups.loc[("gpt", "Female"), "comedy"] == 0.5
    sums = groups[["comedy", "tragedy", "neutral"]].sum(axis=1)
    np.testing.assert_allclose(sums, 1)


def test_reason_counts_for_both_tasks():
    """Each row's share is of its own model's replies, and n_replies says how many those are (not all models')."""
    wabt = stats.reason_counts(HAND, task="wabt")
    assert wabt.to_dict("records") == [
        {"model": "gpt", "reason": stats.NO_WORD_FOR_SB, "n": 1, "n_replies": 8, "share": 1 / 8},
        {"model": "gpt", "reason": "word missing", "n": 1, "n_replies": 8, "share": 1 / 8},
        {"model": "gpt", "reason": stats.NO_WORD_FOR_SA, "n": 1, "n_replies": 8, "share": 1 / 8},
        {"model": "llama", "reason": "refusal", "n": 1, "n_replies": 3, "share": 1 / 3}]
    aat = stats.reason_counts(AAT, task="aat")
    assert aat.to_dict("records") == [
        {"model": "gpt", "reason": "no choice", "n": 1, "n_replies": 14, "share": 1 / 14},
        {"model": "claude", "reason": "refusal", "n": 2, "n_replies": 4, "share": 0.5}]


def test_bad_frames_are_refused_with_what_is_wrong():
    with pytest.raises(ValueError, match="missing column"):
        stats.wabt_table(HAND.drop(columns=["n_sb_xb"]))
    with pytest.raises(ValueError, match="answer must be one of"):
        stats.aat_table(AAT.assign(answer="funny"))
    with pytest.raises(ValueError, match="group_label"):
        stats.aat_table(AAT.assign(group_label="S_c"))


def test_payloads_are_json_ready_with_none_for_nan():
    wabt = analysis.wabt_payload(HAND)
    aat = analysis.aat_payload(AAT)
    for payload in (wabt, aat):
        json.dumps(payload, allow_nan=False)
    assert set(wabt["tables"]) == {"wabt_table", "wabt_radar", "wabt_reasons"}
    morality = next(r for r in wabt["tables"]["wabt_table"] if r["dimension"] == "Morality")
    assert morality["t"] is None and morality["note"] == stats.FEW_SCORES
    claude = next(r for r in aat["tables"]["aat_table"] if r["model"] == "claude")
    assert claude["far"] is None and claude["uar"] == 1.0
    bars = aat["tables"]["aat_bars"]
    assert [(b["social_group"], b["answer"]) for b in bars[:3]] == [
        ("American", "comedy"), ("American", "tragedy"), ("American", "neutral")]
    assert aat["columns"]["aat_bars"] == ["model", "social_group", "group_label", "n_answered", "answer", "share"]
    empty = analysis.wabt_payload(HAND.iloc[:0])
    assert empty["tables"]["wabt_table"] == [] and "mean" in empty["columns"]["wabt_table"]
