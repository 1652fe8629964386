"""The counterfactual statistics (seed 002, SI Appendix "Statistical analysis"): every statistic against scipy /
statsmodels recomputed cell by cell from the raw frame, hand-worked examples (arithmetic in the comments), missing
values, undefined tests, planted effects and a 4,000,000-row frame."""
import math
import warnings

import numpy as np
import pandas as pd
import pytest
from scipy import stats
from statsmodels.stats.multitest import multipletests

from auditapp.paradigms.counterfactual.stats import (
    FEW_PAIRS,
    FEW_TEXT_PAIRS,
    FEW_TEXTS,
    NO_VARIANCE_NOTE,
    NO_VARIANCE_PAIRED,
    NO_VARIANCE_WELCH,
    NOT_RECORDED,
    REQUEST_FAILED,
    completion,
    dialect_cells,
    dialect_summary,
    names_cells,
    names_group_counts,
    names_summary,
)
from tests.auditapp.counterfactual_frames import GROUPS, dialect_frame, names_frame


def row(frame: pd.DataFrame, **where) -> pd.Series:
    selected = frame
    for column, value in where.items():
        selected = selected[selected[column] == value]
    assert len(selected) == 1, (where, selected)
    return selected.iloc[0]


def names_rows(model: str, task: str, group: str, pairs: list[tuple[float, float]], start: int = 0) -> list[dict]:
    """Rows of one cell from (y minority, y reference) per pair; a side given as None has no row at all."""
    rows = []
    for number, sides in enumerate(pairs, start=start):
        for side, y in zip(("minority", "reference"), sides, strict=True):
            if y is not None:
                rows.append({"model": model, "task": task, "group": group, "pair": f"r{number // 30}:{number % 30}",
                             "side": side, "y": y})
    return rows


# ---------------------------------------------------------------- names: hand-worked
def test_names_hand_worked_cell():
    # Four pairs (minority, reference): (1,0) (1,1) (0,0) (1,0) → gaps 1, 0, 0, 1.
    frame = pd.DataFrame(names_rows("m", "warm", "Black", [(1, 0), (1, 1), (0, 0), (1, 0)]))
    cell = row(names_cells(frame), model="m", task="warm", group="Black")
    # mean = 2/4 = 0.5; squared deviations 4 × 0.25 = 1; sd = √(1/3) = 0.57735; se = 0.57735/√4 = 0.288675;
    # t = 0.5/0.288675 = 1.7320508 (= √3); df = 3; p = 2·P(T₃ > 1.732) = 0.18169.
    assert cell["n_pairs"] == 4 and cell["n_pairs_dropped"] == 0
    assert cell["mean_gap"] == 0.5
    assert cell["sd"] == pytest.approx(math.sqrt(1 / 3))
    assert cell["se"] == pytest.approx(math.sqrt(1 / 3) / 2)
    assert cell["t"] == pytest.approx(math.sqrt(3))
    assert cell["df"] == 3
    assert cell["p"] == pytest.approx(0.18169, abs=1e-5)
    # 95% interval: t₀.₉₇₅,₃ = 3.182446; 0.5 ± 3.182446 × 0.288675 = 0.5 ± 0.918694.
    assert cell["ci_low"] == pytest.approx(0.5 - 0.918694, abs=1e-6)
    assert cell["ci_high"] == pytest.approx(0.5 + 0.918694, abs=1e-6)
    # yes-rates: minority 3/4, reference 1/4; the gap is their difference when no side is missing.
    assert (cell["n_minority"], cell["yes_minority"], cell["n_reference"], cell["yes_reference"]) == (4, 0.75, 4, 0.25)
    # One cell is a BH family of one: q = p.
    assert cell["fdr_tested"] and cell["q"] == pytest.approx(cell["p"]) and not cell["significant"]
    assert cell["note"] == ""


def test_names_missing_side_drops_the_pair_from_the_gap_only():
    # Pairs: (1,0) (1,1) (0,0) (1,0) complete; (1, NaN) refused reference; (NaN, 0) unparseable minority;
    # (1, no row) the reference's row absent altogether.
    frame = pd.DataFrame(names_rows("m", "warm", "Black",
                                    [(1, 0), (1, 1), (0, 0), (1, 0), (1, np.nan), (np.nan, 0), (1, None)]))
    cell = row(names_cells(frame), model="m", task="warm", group="Black")
    # The gap is the hand-worked cell's: only the four complete pairs.
    assert cell["n_pairs"] == 4 and cell["n_pairs_dropped"] == 3
    assert cell["mean_gap"] == 0.5 and cell["t"] == pytest.approx(math.sqrt(3))
    # The present sides still count: minority judged in pairs 1–5 and 7 → 5 yes of 6; reference judged in
    # pairs 1–4 and 6 → 1 yes of 5.
    assert (cell["n_minority"], cell["yes_minority"]) == (6, pytest.approx(5 / 6))
    assert (cell["n_reference"], cell["yes_reference"]) == (5, pytest.approx(1 / 5))
    # Over the complete pairs only (the gap's texts): minority 3 yes of 4, reference 1 of 4; 0.75 − 0.25 = 0.5.
    assert (cell["yes_minority_paired"], cell["yes_reference_paired"]) == (0.75, 0.25)


def test_names_undefined_tests_are_nan_noted_and_out_of_the_family():
    frame = pd.DataFrame(
        names_rows("m", "warm", "Arab", [(1, 0)] * 5)             # gaps all +1: scipy says t = inf, p = 0
        + names_rows("m", "warm", "Asian", [(1, 1), (0, 0)] * 3, 10) # gaps all 0: scipy says nan
        + names_rows("m", "warm", "Black", [(1, 0), (1, np.nan)], 20)# one complete pair
        + names_rows("m", "warm", "Hispanic", [(1, 0), (0, 0), (1, 0), (0, 0)], 30))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # scipy warns of its catastrophic cancellation
        assert stats.ttest_1samp([1.0] * 5, 0).statistic == math.inf
        assert math.isnan(stats.ttest_1samp([0.0] * 6, 0).statistic)
    cells = names_cells(frame)
    arab, asian, black, hispanic = (row(cells, group=group) for group in GROUPS)
    for cell, note in ((arab, NO_VARIANCE_NOTE), (asian, NO_VARIANCE_NOTE), (black, FEW_PAIRS)):
        assert cell["note"] == note
        assert all(math.isnan(cell[column]) for column in ("t", "df", "p", "ci_low", "ci_high", "q"))
        assert not cell["fdr_tested"] and not cell["significant"]
    # The gap itself is still reported: +1 over five pairs, 0 over six, +1 over the one complete pair.
    assert (arab["mean_gap"], arab["sd"], asian["mean_gap"], black["mean_gap"], black["n_pairs"]) == (1, 0, 0, 1, 1)
    assert math.isnan(black["sd"])
    # Hispanic is the family's only member, so q = p.
    assert hispanic["fdr_tested"] and hispanic["q"] == pytest.approx(hispanic["p"])
    counts = names_group_counts(cells).set_index("group")
    assert counts.loc["All"].to_dict() == {"n_cells": 4, "n_tested": 1, "n_untested": 3, "n_significant": 0}
    assert counts.loc["Arab", "n_untested"] == 1 and counts.loc["Hispanic", "n_tested"] == 1


def test_names_inconsistent_input_is_refused():
    rows = names_rows("m", "warm", "Black", [(1, 0), (0, 1)])
    with pytest.raises(ValueError, match="different groups"):
        names_cells(pd.DataFrame([*rows[:1], {**rows[1], "group": "Arab"}, *rows[2:]]))
    with pytest.raises(ValueError, match="two minority rows"):
        names_cells(pd.DataFrame([*rows, rows[0]]))
    with pytest.raises(ValueError, match="side must be one of"):
        names_cells(pd.DataFrame([*rows, {**rows[0], "side": "White"}]))
    with pytest.raises(ValueError, match="missing column"):
        names_cells(pd.DataFrame(rows).drop(columns="pair"))


# ---------------------------------------------------------------- names: against scipy / statsmodels
def scipy_names_cells(frame: pd.DataFrame) -> pd.DataFrame:
    """The reference: each cell recomputed from the raw rows with scipy, one cell at a time."""
    plain = frame.astype({"model": str, "task": str, "group": str, "side": str})
    wide = plain.set_index(["model", "task", "group", "pair", "side"])["y"].unstack("side").reset_index()
    records = []
    for (model, task, group), cell in wide.groupby(["model", "task", "group"]):
        if cell[["minority", "reference"]].isna().all(axis=None):
            continue
        complete = cell.dropna(subset=["minority", "reference"])
        gaps = (complete["minority"] - complete["reference"]).to_numpy()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            result = stats.ttest_1samp(gaps, 0.0) if len(gaps) >= 2 else None
        interval = result.confidence_interval(0.95) if result is not None else None
        records.append({"model": model, "task": task, "group": group, "n_pairs": len(gaps),
                        "n_pairs_dropped": len(cell) - len(gaps), "mean_gap": gaps.mean() if len(gaps) else np.nan,
                        "yes_minority": cell["minority"].mean(), "yes_reference": cell["reference"].mean(),
                        "n_minority": cell["minority"].notna().sum(), "n_reference": cell["reference"].notna().sum(),
                        "t": result.statistic if result else np.nan, "df": result.df if result else np.nan,
                        "p": result.pvalue if result else np.nan,
                        "ci_low": interval.low if result else np.nan, "ci_high": interval.high if result else np.nan})
    return pd.DataFrame(records)


def test_names_cells_equal_scipy_and_statsmodels_cell_by_cell():
    frame = names_frame(models=3, tasks=4, iterations=6, missing=0.1, seed=7, effects={(1, "Black"): 0.3})
    ours = names_cells(frame).astype({"model": str, "task": str, "group": str})
    reference = scipy_names_cells(frame)
    merged = ours.merge(reference, on=["model", "task", "group"], suffixes=("", "_scipy"), validate="1:1")
    assert len(merged) == len(ours) == 3 * 4 * 4
    for column in ("n_pairs", "n_pairs_dropped", "n_minority", "n_reference"):
        np.testing.assert_array_equal(merged[column], merged[f"{column}_scipy"])
    defined = merged["fdr_tested"]
    assert defined.sum() >= 40
    for column in ("mean_gap", "yes_minority", "yes_reference"):
        np.testing.assert_allclose(merged[column], merged[f"{column}_scipy"], rtol=1e-12)
    for column in ("t", "df", "p", "ci_low", "ci_high"):
        np.testing.assert_allclose(merged.loc[defined, column], merged.loc[defined, f"{column}_scipy"], rtol=1e-9)
    # BH over every defined cell of the matrix at once, as statsmodels does it.
    reject, corrected, _, _ = multipletests(merged.loc[defined, "p"], alpha=0.05, method="fdr_bh")
    np.testing.assert_allclose(merged.loc[defined, "q"], corrected, rtol=1e-12)
    np.testing.assert_array_equal(merged.loc[defined, "significant"], reject)
    assert merged.loc[~defined, "q"].isna().all()


def test_names_plain_columns_give_the_categorical_result():
    frame = names_frame(models=2, tasks=3, iterations=3, missing=0.05, seed=3)
    plain = frame.astype({"model": str, "task": str, "group": str, "side": str, "pair": str})
    pd.testing.assert_frame_equal(names_cells(plain),
                                  names_cells(frame).astype({"model": object, "task": object, "group": object}),
                                  check_dtype=False)


def test_names_summary_and_group_counts_by_hand():
    # Three models' cells for one task × two groups (gaps and significance set by hand).
    cells = pd.DataFrame({
        "model": ["a", "b", "c", "a", "b", "c"], "task": "warm", "group": ["Black"] * 3 + ["Asian"] * 3,
        "mean_gap": [0.10, 0.02, -0.04, 0.0, np.nan, -0.2],
        "significant": [True, False, False, False, False, True], "fdr_tested": [True, True, True, True, False, True]})
    summary = names_summary(cells)
    black = row(summary, task="warm", group="Black")
    # Black: mean (0.10 + 0.02 − 0.04)/3 = 0.026667; sd √(((0.073333)² + (−0.006667)² + (−0.066667)²)/2) = 0.070238;
    # two positive, one negative → modal sign +, "2 of 3"; one significant model, its mean 0.10.
    assert black["mean"] == pytest.approx(0.08 / 3)
    assert black["sd"] == pytest.approx(np.std([0.10, 0.02, -0.04], ddof=1))
    assert (black["n_positive"], black["n_negative"], black["n_zero"], black["modal_sign"]) == (2, 1, 0, 1)
    assert (black["consistency_k"], black["consistency_m"], black["consistency_text"]) == (2, 3, "2 of 3")
    assert (black["n_significant"], black["mean_gap_significant"]) == (1, 0.10)
    asian = row(summary, task="warm", group="Asian")
    # Asian: model b has no gap (m = 2); a's zero gap has no direction: one negative → "1 of 2", sign −.
    assert (asian["n_models"], asian["n_zero"], asian["modal_sign"], asian["consistency_text"]) == (2, 1, -1, "1 of 2")
    assert asian["mean"] == pytest.approx(-0.1) and asian["consistency"] == 0.5
    counts = names_group_counts(cells).set_index("group")
    assert counts.loc["All"].to_dict() == {"n_cells": 6, "n_tested": 5, "n_untested": 1, "n_significant": 2}


def test_names_summary_orders_tasks_for_figure_one():
    cells = pd.DataFrame({"model": "a", "task": ["x", "y", "z", "x", "y", "z"], "group": ["Arab"] * 3 + ["Black"] * 3,
                          "mean_gap": [0.1, -0.3, 0.0, -0.1, 0.2, 0.05], "significant": False})
    summary = names_summary(cells)
    order = {group: list(frame.sort_values("order_in_group")["task"]) for group, frame in summary.groupby("group")}
    assert order == {"Arab": ["y", "z", "x"], "Black": ["x", "z", "y"]}


# ---------------------------------------------------------------- names: planted effects
def test_names_planted_effect_is_recovered_and_the_null_is_quiet():
    # +0.10 yes-rate for Black names on task 2, in every model; nothing else planted. 250 iterations give 1,750
    # Black pairs per cell: se ≈ √(0.5/1750) = 0.017, so 0.10 is z ≈ 5.9, well past BH's threshold.
    frame = names_frame(models=10, tasks=6, iterations=250, effects={(2, "Black"): 0.10}, missing=0.02, seed=11)
    cells = names_cells(frame)
    planted = (cells["task"] == "task-02") & (cells["group"] == "Black")
    assert planted.sum() == 10 and cells.loc[planted, "significant"].all()
    covered = (cells.loc[planted, "ci_low"] <= 0.10) & (0.10 <= cells.loc[planted, "ci_high"])
    assert covered.sum() >= 8  # 95% intervals: 9.5 of 10 expected
    null = cells[~planted]
    assert null["significant"].mean() <= 0.05
    assert (null["p"] < 0.05).mean() <= 0.09  # uncorrected: about 5% by chance
    summary = row(names_summary(cells), task="task-02", group="Black")
    assert summary["consistency_text"] == "10 of 10" and summary["mean"] == pytest.approx(0.10, abs=0.02)


def test_names_no_effect_anywhere_stays_at_alpha():
    cells = names_cells(names_frame(models=8, tasks=10, iterations=20, seed=5))
    assert cells["fdr_tested"].all()
    assert (cells["p"] < 0.05).mean() <= 0.08
    assert cells["significant"].mean() <= 0.05


def test_names_four_million_judgments():
    # The paper's scale: 19 models × 39 tasks × 90 iterations × 60 texts = 4,001,400 judgments, 2% missing,
    # +0.15 for Black names on task 5 (630 pairs a cell: se ≈ 0.028, z ≈ 5.3). Results only; the seconds are
    # benchmarks/counterfactual_stats.py's.
    frame = names_frame(effects={(5, "Black"): 0.15}, missing=0.02, seed=21)
    assert len(frame) == 4_001_400
    cells = names_cells(frame)
    assert len(cells) == 19 * 39 * 4 and cells["fdr_tested"].all()
    assert (cells["n_pairs"] + cells["n_pairs_dropped"]).sum() == 4_001_400 // 2
    minority = frame["side"] == "minority"
    assert cells["n_minority"].sum() == frame.loc[minority, "y"].notna().sum()
    assert cells["n_reference"].sum() == frame.loc[~minority, "y"].notna().sum()
    planted = (cells["task"] == "task-05") & (cells["group"] == "Black")
    assert cells.loc[planted, "significant"].all() and cells.loc[~planted, "significant"].mean() <= 0.05
    summary = row(names_summary(cells), task="task-05", group="Black")
    assert summary["consistency_text"] == "19 of 19" and summary["n_significant"] == 19
    assert summary["order_in_group"] == 39 and summary["mean"] == pytest.approx(0.15, abs=0.02)
    assert row(names_group_counts(cells), group="All")["n_tested"] == 2964
    # Spot checks against scipy on three cells of the big frame.
    for model, task, group in (("model-00", "task-00", "Arab"), ("model-18", "task-05", "Black"),
                               ("model-09", "task-38", "Hispanic")):
        raw = frame[(frame["model"] == model) & (frame["task"] == task) & (frame["group"] == group)]
        wide = raw.astype({"side": str}).pivot(index="pair", columns="side", values="y").dropna()
        result = stats.ttest_1samp(wide["minority"] - wide["reference"], 0.0)
        cell = row(cells, model=model, task=task, group=group)
        np.testing.assert_allclose([cell["t"], cell["p"], cell["n_pairs"]],
                                   [result.statistic, result.pvalue, len(wide)], rtol=1e-9)


# ---------------------------------------------------------------- dialect
def dialect_rows(model: str, task: str, texts: list[tuple[str, str, float]]) -> list[dict]:
    return [{"model": model, "task": task, "pair": pair, "dialect": dialect, "y": y} for pair, dialect, y in texts]


def test_dialect_hand_worked_cell():
    # SAE: p1 judged 1 and 1, p2 judged 1 and 0; AAVE: p1 judged 0, p2 judged 0 and 1, p3 judged 0 (its SAE
    # never drawn), and one AAVE text of p1 refused (NaN: out of everything).
    frame = pd.DataFrame(dialect_rows("m", "professional", [
        ("p1", "SAE", 1), ("p1", "SAE", 1), ("p2", "SAE", 1), ("p2", "SAE", 0),
        ("p1", "AAVE", 0), ("p2", "AAVE", 0), ("p2", "AAVE", 1), ("p3", "AAVE", 0), ("p1", "AAVE", np.nan)]))
    cell = row(dialect_cells(frame), model="m", task="professional")
    # yes-rates: SAE 3/4 = 0.75, AAVE 1/4 = 0.25 → Δ = −0.5.
    assert (cell["n_sae"], cell["yes_sae"], cell["n_aave"], cell["yes_aave"], cell["gap"]) == (4, 0.75, 4, 0.25, -0.5)
    # CI: √(0.25·0.75/4 + 0.75·0.25/4) = √0.09375 = 0.306186; × 1.96 = 0.600125.
    assert cell["ci_low"] == pytest.approx(-0.5 - 0.600125, abs=1e-6)
    assert cell["ci_high"] == pytest.approx(-0.5 + 0.600125, abs=1e-6)
    # Cohen's h: 2·asin(√0.25) − 2·asin(√0.75) = 2·π/6 − 2·π/3 = −π/3.
    assert cell["cohens_h"] == pytest.approx(-math.pi / 3)
    # Welch: each side's variance (ddof 1) is (3·0.25² + 0.75²)/3 = 0.25; se = √(0.25/4 + 0.25/4) = 0.353553;
    # t = −0.5/0.353553 = −√2; df = 0.125² / (2 · 0.0625²/3) = 6.
    assert cell["welch_t"] == pytest.approx(-math.sqrt(2)) and cell["welch_df"] == pytest.approx(6)
    assert cell["welch_p"] == pytest.approx(stats.t.sf(math.sqrt(2), 6) * 2)
    # Paired: p1 AAVE mean 0, SAE mean 1 → −1; p2 AAVE 0.5, SAE 0.5 → 0; p3 has no SAE → dropped.
    # d = (−1, 0): mean −0.5, sd √0.5, se 0.5, t = −1, df 1, p = P(|T₁| > 1) = 0.5 exactly.
    assert (cell["paired_n"], cell["paired_n_dropped"], cell["paired_mean"]) == (2, 1, -0.5)
    assert cell["paired_t"] == pytest.approx(-1) and cell["paired_df"] == 1 and cell["paired_p"] == pytest.approx(0.5)
    # One task: a family of one, q = the paired p.
    assert cell["primary"] == "paired" and cell["q"] == pytest.approx(0.5) and not cell["significant"]
    welch = row(dialect_cells(frame, primary="welch"), task="professional")
    assert welch["q"] == pytest.approx(welch["welch_p"])


def test_dialect_undefined_tests():
    frame = pd.DataFrame(
        dialect_rows("m", "same", [("p1", "SAE", 1), ("p1", "SAE", 1), ("p1", "AAVE", 1), ("p1", "AAVE", 1)])
        + dialect_rows("m", "few", [("p1", "SAE", 1), ("p1", "AAVE", 0), ("p2", "AAVE", 1)])
        + dialect_rows("m", "flat", [("p1", "SAE", 1), ("p1", "SAE", 0), ("p1", "AAVE", 0), ("p1", "AAVE", 1),
                                     ("p2", "SAE", 1), ("p2", "AAVE", 1)]))
    cells = dialect_cells(frame)
    same, few, flat = (row(cells, task=task) for task in ("same", "few", "flat"))
    assert same["welch_note"] == NO_VARIANCE_WELCH and math.isnan(same["welch_p"]) and same["gap"] == 0
    assert same["paired_note"] == FEW_TEXT_PAIRS and same["paired_n"] == 1
    assert few["welch_note"] == FEW_TEXTS and math.isnan(few["welch_t"])
    # flat: the pairs' differences are 0.5 − 0.5 = 0 and 1 − 1 = 0: no variance, though Welch is defined.
    assert flat["paired_note"] == NO_VARIANCE_PAIRED and math.isnan(flat["paired_p"]) and flat["paired_n"] == 2
    assert flat["welch_note"] == "" and math.isfinite(flat["welch_p"])
    assert not cells["fdr_tested"].any() and cells["q"].isna().all() and not cells["significant"].any()
    with pytest.raises(ValueError, match="dialect must be one of"):
        dialect_cells(pd.DataFrame(dialect_rows("m", "t", [("p1", "AAE", 1)])))
    with pytest.raises(ValueError, match="primary must be one of"):
        dialect_cells(frame, primary="wilcoxon")


def test_dialect_cells_equal_scipy_and_statsmodels_cell_by_cell():
    frame = dialect_frame(models=4, tasks=5, iterations=30, effects={1: -0.3}, missing=0.08, seed=2)
    for primary in ("paired", "welch"):
        ours = dialect_cells(frame, primary=primary).astype({"model": str, "task": str})
        judged = frame.dropna(subset=["y"]).astype({"model": str, "task": str, "pair": str, "dialect": str})
        for (model, task), texts in judged.groupby(["model", "task"]):
            cell = row(ours, model=model, task=task)
            aave = texts.loc[texts["dialect"] == "AAVE", "y"].to_numpy()
            sae = texts.loc[texts["dialect"] == "SAE", "y"].to_numpy()
            assert (cell["n_aave"], cell["n_sae"]) == (len(aave), len(sae))
            np.testing.assert_allclose([cell["yes_aave"], cell["yes_sae"], cell["gap"]],
                                       [aave.mean(), sae.mean(), aave.mean() - sae.mean()], rtol=1e-12)
            h = 2 * np.arcsin(np.sqrt(aave.mean())) - 2 * np.arcsin(np.sqrt(sae.mean()))
            np.testing.assert_allclose(cell["cohens_h"], h, rtol=1e-12)
            welch = stats.ttest_ind(aave, sae, equal_var=False)
            np.testing.assert_allclose([cell["welch_t"], cell["welch_df"], cell["welch_p"]],
                                       [welch.statistic, welch.df, welch.pvalue], rtol=1e-9)
            per_pair = texts.groupby(["pair", "dialect"])["y"].mean().unstack("dialect").dropna()
            paired = stats.ttest_rel(per_pair["AAVE"], per_pair["SAE"])
            assert cell["paired_n"] == len(per_pair) and cell["paired_n_dropped"] == texts["pair"].nunique() - len(
                per_pair)
            np.testing.assert_allclose([cell["paired_t"], cell["paired_df"], cell["paired_p"]],
                                       [paired.statistic, paired.df, paired.pvalue], rtol=1e-9)
        # BH within each model across its tasks.
        p_column = "paired_p" if primary == "paired" else "welch_p"
        for _, tasks in ours.groupby("model"):
            reject, corrected, _, _ = multipletests(tasks[p_column], alpha=0.05, method="fdr_bh")
            np.testing.assert_allclose(tasks["q"], corrected, rtol=1e-12)
            np.testing.assert_array_equal(tasks["significant"], reject)


def test_dialect_planted_effect_is_recovered_and_summarised():
    # −0.3 yes-rate for AAVE texts on task 0 in every model; 50 iterations of 10 texts, as the paper.
    frame = dialect_frame(models=6, tasks=8, iterations=50, effects={0: -0.3}, missing=0.03, seed=4)
    cells = dialect_cells(frame)
    planted = cells["task"] == "task-00"
    assert cells.loc[planted, "significant"].all()
    covered = (cells.loc[planted, "ci_low"] <= -0.3) & (-0.3 <= cells.loc[planted, "ci_high"])
    assert covered.sum() >= 5  # 5.7 of 6 expected
    assert cells.loc[~planted, "significant"].mean() <= 0.05
    summary = dialect_summary(cells).set_index("task")
    assert summary.loc["task-00", "consistency_text"] == "6 of 6" and summary.loc["task-00", "modal_sign"] == -1
    assert summary.loc["task-00", "n_significant"] == 6
    assert summary.loc["task-00", "mean"] == pytest.approx(-0.3, abs=0.05)
    assert list(summary.index) == [f"task-{i:02d}" for i in range(8)]


# ---------------------------------------------------------------- completion (Table 1)
def test_completion_rates_and_reasons_by_hand():
    # Model a, task warm: 2 requests of 60 texts (120 asked), one failed (60 texts, no rows); the other's 60 rows:
    # 57 labelled, 2 refused, 1 unparseable. Task cold: 60 asked, 60 rows, 60 labelled.
    # Model b, task warm: 60 asked, 58 rows (2 texts never recorded), 55 labelled, 3 missing without a reason.
    frame = pd.DataFrame(
        [{"model": "a", "task": "warm", "y": 1.0, "reason": ""}] * 57
        + [{"model": "a", "task": "warm", "y": np.nan, "reason": "refused"}] * 2
        + [{"model": "a", "task": "warm", "y": np.nan, "reason": "unparseable"}]
        + [{"model": "a", "task": "cold", "y": 0.0, "reason": ""}] * 60
        + [{"model": "b", "task": "warm", "y": 0.0, "reason": None}] * 55
        + [{"model": "b", "task": "warm", "y": np.nan, "reason": None}] * 3)
    targets = pd.DataFrame({"model": ["a", "a", "b"], "task": ["warm", "cold", "warm"],
                            "n_texts_asked": [120, 60, 60], "n_texts_failed_requests": [60, 0, 0]})
    per_model, per_task, reasons = completion(frame, targets)
    warm_a = row(per_task, model="a", task="warm")
    # a × warm: 57 of 120 = 0.475; missing 63 = 3 in replies + 60 in the failed request.
    assert warm_a[["n_asked", "n_labelled", "n_missing", "n_missing_in_replies", "n_failed_requests",
                   "n_not_recorded"]].tolist() == [120, 57, 63, 3, 60, 0]
    assert warm_a["rate"] == pytest.approx(0.475)
    # Model a: (57 + 60) of 180 = 0.65; model b: 55 of 60, 2 never recorded.
    assert row(per_model, model="a")["rate"] == pytest.approx(117 / 180)
    b = row(per_model, model="b")
    assert (b["n_labelled"], b["n_missing"], b["n_not_recorded"], b["rate"]) == (55, 5, 2, pytest.approx(55 / 60))
    assert reasons.to_dict(orient="records") == [
        {"model": "a", "task": "warm", "reason": REQUEST_FAILED, "n": 60},
        {"model": "a", "task": "warm", "reason": "refused", "n": 2},
        {"model": "a", "task": "warm", "reason": "unparseable", "n": 1},
        {"model": "b", "task": "warm", "reason": "missing (no reason recorded)", "n": 3},
        {"model": "b", "task": "warm", "reason": NOT_RECORDED, "n": 2}]
    assert reasons.groupby("model")["n"].sum().to_dict() == per_model.set_index("model")["n_missing"].to_dict()


def test_completion_refuses_inconsistent_targets():
    frame = pd.DataFrame({"model": ["a"] * 3, "task": "warm", "y": [1.0, 0.0, 1.0], "reason": ""})
    with pytest.raises(ValueError, match="without a target"):
        completion(frame, pd.DataFrame({"model": ["a"], "task": ["cold"], "n_texts_asked": [3],
                                        "n_texts_failed_requests": [0]}))
    with pytest.raises(ValueError, match="more judgments than texts asked"):
        completion(frame, pd.DataFrame({"model": ["a"], "task": ["warm"], "n_texts_asked": [3],
                                        "n_texts_failed_requests": [1]}))


def test_completion_of_a_categorical_frame_with_a_target_per_request():
    frame = names_frame(models=3, tasks=2, iterations=4, missing=0.1, seed=9).assign(reason="refused")
    frame.loc[frame["y"].notna(), "reason"] = ""
    targets = pd.DataFrame({"model": np.repeat([f"model-{i:02d}" for i in range(3)], 2 * 4),
                            "task": np.tile(np.repeat(["task-00", "task-01"], 4), 3),
                            "n_texts_asked": 60, "n_texts_failed_requests": 0})
    per_model, per_task, reasons = completion(frame, targets)
    assert per_task["n_asked"].tolist() == [240] * 6
    expected = frame.groupby("model", observed=True)["y"].count()
    assert per_model.set_index("model")["n_labelled"].to_dict() == {str(k): v for k, v in expected.items()}
    assert reasons["n"].sum() == frame["y"].isna().sum() and set(reasons["reason"]) == {"refused"}
