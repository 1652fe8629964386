"""The statistics of the counterfactual audits (seed 002, SI Appendix "Statistical analysis" of Experiment 1 and of
Experiment 2, Table 1, Figures 1 and 2, Supplementary Table 3). Pure: no Django.

Inputs are judgment frames, one row per judged text (categorical columns allowed; ``y`` is a float, 1 = yes,
0 = no, NaN = missing: refused, unparseable or absent). Every statistic is computed with grouped sums over integer
codes (``np.bincount``), never per row in Python, so an audit of 4,000,000 judgments is analysed in seconds
(integer keys of a small range are coded by marking which occur, :func:`_dense_codes`, not sorted or hashed); the
t-tests take t from the grouped mean, standard deviation and n, and p from ``scipy.stats.t``. The tests prove each
one equal to scipy's ``ttest_1samp`` / ``ttest_ind(equal_var=False)`` / ``ttest_rel`` and statsmodels'
``multipletests(method="fdr_bh")`` recomputed cell by cell.

Missing values are excluded, never imputed, and only from the statistics that need them: a names pair with a
missing side drops out of the gap (counted in ``n_pairs_dropped``) while its present side still counts in that
side's yes-rate; a dialect text with a missing value drops out of everything, and a text pair with one dialect
unobserved drops out of the paired test only.

Edge cases (ours; the paper does not say): a t-test with fewer than two observations, or with no variance (every
gap equal, so the standard error is 0), is **undefined**: t, df, p and the confidence interval are NaN and
``note`` says why. scipy returns NaN when the equal gaps are 0 and ±inf (p = 0) when they are not; we report
neither an infinite t nor a p of 0 from a sample without variance. The mean gap is still reported and still
counts in the directional consistency. Cells whose p is undefined are left out of the Benjamini–Hochberg family
(``fdr_tested`` is false, ``q`` NaN, never significant); :func:`names_group_counts` reports how many.
Significance is ``q <= alpha``, the BH rule (reject when p₍ₖ₎ ≤ kα/m), so it equals statsmodels' ``reject``.

- Names (Experiment 1): :func:`names_cells` per model × task × group (δ = y(minority) − y(reference) per pair,
  one-sample t-test against 0, BH over the whole model × task × group matrix), :func:`names_summary` per task ×
  group (cross-model mean and SD, directional consistency "k of m", FDR-significant models and their mean gap,
  Figure 1's order), :func:`names_group_counts` (FDR-significant effects per group).
- Dialect (Experiment 2): :func:`dialect_cells` per model × task (Δ = ȳ(AAVE) − ȳ(SAE), approximate 95% CI,
  Cohen's h, Welch's t-test, the paired t-test over text pairs, BH within each model), :func:`dialect_summary`
  per task.
- :func:`completion`: Table 1's completion rates and the reasons for missing values.
"""
from __future__ import annotations

import numpy as np
import pandas as pd
from scipy import stats

from auditapp.paradigms.counterfactual.material import DIALECTS

NO_VARIANCE = 1e-12
"""A standard deviation at or below this is no variance (0/1 data give exactly 0; this guards float rounding)."""
CONFIDENCE = 0.95
NORMAL_95 = 1.96
"""The normal quantile of the dialect gap's approximate 95% interval (Figure 2: "approximate 95% confidence
intervals"), as the paper's wording suggests: Δ ± 1.96·√(p₁(1−p₁)/n₁ + p₂(1−p₂)/n₂)."""
FEW_PAIRS = "fewer than 2 complete pairs"
NO_VARIANCE_NOTE = "all gaps equal: no variance"
FEW_TEXTS = "fewer than 2 judged texts in a dialect"
NO_VARIANCE_WELCH = "no variance in either dialect"
FEW_TEXT_PAIRS = "fewer than 2 text pairs with both dialects judged"
NO_VARIANCE_PAIRED = "all text-pair gaps equal: no variance"
SIDES = ("minority", "reference")
PRIMARY_TESTS = ("paired", "welch")
REQUEST_FAILED = "request failed"
NOT_RECORDED = "no judgment recorded"
"""Ours: texts a request asked about that have no row and were not in a failed request."""
ALL_GROUPS = "All"


def _require(frame: pd.DataFrame, columns: tuple[str, ...], what: str) -> None:
    absent = [column for column in columns if column not in frame.columns]
    if absent:
        raise ValueError(f"{what}: missing column(s) {', '.join(absent)} (needs {', '.join(columns)})")


DENSE_SPAN = 4
"""Integers spanning at most this many times their number (plus :data:`DENSE_MIN_SPAN`) are coded by
:func:`_dense_codes`; wider ones are sorted or hashed."""
DENSE_MIN_SPAN = 1 << 16


def _dense_codes(values: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
    """``np.unique(values, return_inverse=True)`` for integers of a small range, found by marking the values that
    occur (linear in the values and their range, where a sort or a hash of millions of values is not); None for
    no values or a range too wide (see :data:`DENSE_SPAN`)."""
    if not len(values) or not np.issubdtype(values.dtype, np.integer):
        return None
    low, high = int(values.min()), int(values.max())
    if high - low >= DENSE_SPAN * len(values) + DENSE_MIN_SPAN:
        return None
    offset = values.astype(np.int64, copy=False) - low
    present = np.zeros(high - low + 1, dtype=bool)
    present[offset] = True
    rank = np.cumsum(present, dtype=np.int64) - 1
    return (np.flatnonzero(present) + low).astype(values.dtype, copy=False), rank[offset]


def _unique_inverse(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``np.unique(values, return_inverse=True)``, by :func:`_dense_codes` where it can."""
    dense = _dense_codes(values)
    if dense is not None:
        return dense
    uniques, inverse = np.unique(values, return_inverse=True)
    return uniques, inverse.astype(np.int64, copy=False)


def _combined_codes(outer: np.ndarray, inner: np.ndarray, n_inner: int) -> tuple[np.ndarray, int]:
    """Codes of the (outer, inner) combinations that occur (such as a pair within its model × task), and their
    number. When every one of the ``n_inner`` inner codes occurs, each with one outer code only (a pair id unique
    in the whole frame, as the names design gives), they are the combinations' codes already."""
    owner = np.full(n_inner, -1, dtype=np.int64)
    owner[inner] = outer
    if (owner >= 0).all() and (owner[inner] == outer).all():
        return inner, n_inner
    uniques, inverse = _unique_inverse(outer * n_inner + inner)
    return inverse, len(uniques)


def _codes(column: pd.Series, *, ordered: bool = True) -> tuple[np.ndarray, pd.Series, int]:
    """Integer codes of a column, the means to decode them and their number: a categorical keeps its categories'
    order, integers of a small range are coded in sorted order by :func:`_dense_codes`, other columns are coded in
    sorted order (``ordered``; a key that is never shown, such as a pair id, skips the sort of its millions of
    values). A missing value (code −1) is refused: every row belongs to a cell."""
    if isinstance(column.dtype, pd.CategoricalDtype):
        codes = column.cat.codes.to_numpy(np.int64)
        decoder = column
        size = len(column.cat.categories)
    elif (dense := _dense_codes(column.to_numpy())) is not None:
        values, codes = dense
        decoder = pd.Series(values)
        size = len(values)
    else:
        codes, uniques = pd.factorize(column, sort=ordered)
        codes = codes.astype(np.int64, copy=False)
        decoder = pd.Series(uniques)
        size = len(uniques)
    if len(codes) and codes.min() < 0:
        raise ValueError(f"column {column.name!r} has missing values; every judgment needs one")
    return codes, decoder, size


def _decode(codes: np.ndarray, decoder: pd.Series):
    """The values of the codes, categorical again where the input was."""
    if isinstance(decoder.dtype, pd.CategoricalDtype):
        return pd.Categorical.from_codes(codes, dtype=decoder.dtype)
    return decoder.to_numpy()[codes]


def _moments(index: np.ndarray, values: np.ndarray, size: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per group of ``index``: n, mean and the sample standard deviation (ddof 1, two-pass for accuracy), NaN where
    undefined (no value; fewer than two values for the SD). ``values`` must hold no NaN."""
    n = np.bincount(index, minlength=size)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = np.bincount(index, weights=values, minlength=size) / n
        squares = np.bincount(index, weights=(values - mean[index]) ** 2, minlength=size)
        sd = np.where(n >= 2, np.sqrt(squares / (n - 1)), np.nan)
    return n, mean, sd


def _one_sample_t(n: np.ndarray, mean: np.ndarray, sd: np.ndarray) -> dict[str, np.ndarray]:
    """The two-sided one-sample t-test against 0 from n, mean and SD (as ``scipy.stats.ttest_1samp``) and its 95%
    t interval; ``defined`` is false with fewer than two values or no variance (see the module docstring)."""
    defined = (n >= 2) & (sd > NO_VARIANCE)
    with np.errstate(invalid="ignore", divide="ignore"):
        se = np.where(n >= 2, sd / np.sqrt(n), np.nan)
        df = np.where(defined, n - 1, np.nan).astype(float)
        t = np.where(defined, mean / se, np.nan)
    p = np.asarray(2 * stats.t.sf(np.abs(t), df))  # an array for array arguments; asarray types it as one
    half_width = stats.t.ppf(0.5 + CONFIDENCE / 2, df) * se
    return {"se": se, "t": t, "df": df, "p": p, "ci_low": mean - half_width, "ci_high": mean + half_width,
            "defined": defined}


def _bh(p: np.ndarray, *, alpha: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Benjamini–Hochberg over the defined p-values (``scipy.stats.false_discovery_control``): whether each cell
    is in the family, its q (NaN outside it) and whether it is significant (q ≤ alpha)."""
    tested = np.isfinite(p)
    q = np.full(len(p), np.nan)
    if tested.any():
        q[tested] = stats.false_discovery_control(p[tested], method="bh")
    return tested, q, tested & (q <= alpha)


def _sign_consistency(frame: pd.DataFrame, by: list[str], gap: str, significant: str) -> pd.DataFrame:
    """Across models, per ``by``: the cross-model mean and SD (ddof 1) of the models' gaps, the signs, directional
    consistency and the FDR-significant models.

    Directional consistency (SI Appendix: "the fraction of models exhibiting the same sign of the estimated gap")
    is counted over the models with a defined gap (m): k = the models with the modal sign, + or −. A gap of
    exactly 0 has no direction; it counts in m, not in k (ours). With as many positive as negative gaps the modal
    sign is 0 and k is that count."""
    values = frame[gap]
    signs = pd.DataFrame({key: frame[key] for key in by})
    signs["defined"] = values.notna()
    signs["positive"] = values > 0
    signs["negative"] = values < 0
    signs["zero"] = values == 0
    signs["significant"] = frame[significant].astype(bool)
    signs["gap"] = values
    signs["gap_significant"] = values.where(signs["significant"])
    grouped = signs.groupby(by, observed=True, sort=True)
    summary = grouped.agg(n_models=("defined", "sum"), mean=("gap", "mean"), sd=("gap", "std"),
                          n_positive=("positive", "sum"), n_negative=("negative", "sum"), n_zero=("zero", "sum"),
                          n_significant=("significant", "sum"),
                          mean_gap_significant=("gap_significant", "mean")).reset_index()
    summary["modal_sign"] = np.sign(summary["n_positive"] - summary["n_negative"]).astype(int)
    summary["consistency_k"] = np.maximum(summary["n_positive"], summary["n_negative"]).astype(int)
    summary["consistency_m"] = summary["n_models"].astype(int)
    with np.errstate(invalid="ignore", divide="ignore"):
        summary["consistency"] = summary["consistency_k"] / summary["consistency_m"].where(
            summary["consistency_m"] > 0)
    summary["consistency_text"] = (summary["consistency_k"].astype(str) + " of "
                                   + summary["consistency_m"].astype(str))
    for column in ("n_models", "n_positive", "n_negative", "n_zero", "n_significant"):
        summary[column] = summary[column].astype(int)
    return summary[[*by, "n_models", "mean", "sd", "n_positive", "n_negative", "n_zero", "modal_sign",
                    "consistency_k", "consistency_m", "consistency", "consistency_text", "n_significant",
                    "mean_gap_significant"]]


NAMES_COLUMNS = ("model", "task", "group", "pair", "side", "y")
NAMES_CELL_COLUMNS = ("model", "task", "group", "n_pairs", "n_pairs_dropped", "n_minority", "yes_minority",
                      "n_reference", "yes_reference", "yes_minority_paired", "yes_reference_paired", "mean_gap",
                      "sd", "se", "t", "df", "p", "ci_low", "ci_high",
                      "fdr_tested", "q", "significant", "note")


def names_cells(frame: pd.DataFrame, *, alpha: float = 0.05) -> pd.DataFrame:
    """The names paradigm's gaps and tests, one row per model × task × group (SI Appendix, Experiment 1
    "Statistical analysis").

    ``frame``: one row per judged text with ``model``, ``task``, ``group`` (the pair's minority group, on both of
    its rows), ``pair`` (unique within model × task), ``side`` ("minority" or "reference") and ``y``. A pair's two
    rows must agree on the group; a side given twice is refused.

    Per cell: ``n_pairs`` complete pairs (both sides judged) and ``n_pairs_dropped`` (a side missing);
    ``yes_minority`` / ``yes_reference`` over the texts of that side that were judged (``n_minority`` /
    ``n_reference``), and ``yes_minority_paired`` / ``yes_reference_paired`` over the complete pairs only, the texts
    the gap is over (their difference is ``mean_gap``); ``mean_gap`` δ̄ = mean of δ = y(minority) − y(reference)
    over the complete pairs, across all
    iterations; its ``sd`` (ddof 1), ``se``; the one-sample t-test against 0 (``t``, ``df`` = n − 1, two-sided
    ``p``) and the 95% t interval; ``q``: Benjamini–Hochberg over every cell of the matrix with a defined p
    (19 × 39 × 4 = 2,964 in the paper); ``significant``: q ≤ ``alpha``; ``note``: why a test is undefined.
    Rows are in the order of the model, task and group categories (sorted values for plain columns).
    """
    _require(frame, NAMES_COLUMNS, "names frame")
    model, model_decoder, _ = _codes(frame["model"])
    task, task_decoder, n_tasks = _codes(frame["task"])
    group, group_decoder, n_groups = _codes(frame["group"])
    pair, _, n_pair_codes = _codes(frame["pair"], ordered=False)
    side = frame["side"]
    is_minority = (side == SIDES[0]).to_numpy(bool)
    is_reference = (side == SIDES[1]).to_numpy(bool)
    if not (is_minority | is_reference).all():
        unknown = sorted(map(str, pd.unique(side[~(is_minority | is_reference)])))[:5]
        raise ValueError(f"side must be one of {', '.join(SIDES)}; found {', '.join(unknown)}")
    y = frame["y"].to_numpy(float)

    pair_index, n_pairs_total = _combined_codes(model * n_tasks + task, pair, n_pair_codes)
    for side_mask, name in ((is_minority, "minority"), (is_reference, "reference")):
        if np.bincount(pair_index[side_mask], minlength=n_pairs_total).max(initial=0) > 1:
            raise ValueError(f"a pair has two {name} rows; each pair has one text per side")
    pair_group = np.full(n_pairs_total, -1, dtype=np.int64)
    pair_group[pair_index] = group
    if (pair_group[pair_index] != group).any():
        raise ValueError("the two rows of a pair name different groups; both carry the pair's minority group")
    pair_model = np.empty(n_pairs_total, dtype=np.int64)
    pair_model[pair_index] = model
    pair_task = np.empty(n_pairs_total, dtype=np.int64)
    pair_task[pair_index] = task
    minority_y = np.full(n_pairs_total, np.nan)
    minority_y[pair_index[is_minority]] = y[is_minority]
    reference_y = np.full(n_pairs_total, np.nan)
    reference_y[pair_index[is_reference]] = y[is_reference]

    cell_keys, pair_cell = _unique_inverse((pair_model * n_tasks + pair_task) * n_groups + pair_group)
    n_cells = len(cell_keys)
    pairs_per_cell = np.bincount(pair_cell, minlength=n_cells)
    minority_seen = ~np.isnan(minority_y)
    reference_seen = ~np.isnan(reference_y)
    n_minority, yes_minority, _ = _moments(pair_cell[minority_seen], minority_y[minority_seen], n_cells)
    n_reference, yes_reference, _ = _moments(pair_cell[reference_seen], reference_y[reference_seen], n_cells)
    complete = minority_seen & reference_seen
    n_pairs, mean_gap, sd = _moments(pair_cell[complete], minority_y[complete] - reference_y[complete], n_cells)
    _, yes_minority_paired, _ = _moments(pair_cell[complete], minority_y[complete], n_cells)
    _, yes_reference_paired, _ = _moments(pair_cell[complete], reference_y[complete], n_cells)
    test = _one_sample_t(n_pairs, mean_gap, sd)
    tested, q, significant = _bh(test["p"], alpha=alpha)
    note = np.where(n_pairs < 2, FEW_PAIRS, np.where(test["defined"], "", NO_VARIANCE_NOTE))

    cell_group = cell_keys % n_groups
    cell_task = (cell_keys // n_groups) % n_tasks
    cell_model = cell_keys // n_groups // n_tasks
    return pd.DataFrame({
        "model": _decode(cell_model, model_decoder), "task": _decode(cell_task, task_decoder),
        "group": _decode(cell_group, group_decoder), "n_pairs": n_pairs, "n_pairs_dropped": pairs_per_cell - n_pairs,
        "n_minority": n_minority, "yes_minority": yes_minority, "n_reference": n_reference,
        "yes_reference": yes_reference, "yes_minority_paired": yes_minority_paired,
        "yes_reference_paired": yes_reference_paired, "mean_gap": mean_gap, "sd": sd, "se": test["se"], "t": test["t"],
        "df": test["df"], "p": test["p"], "ci_low": test["ci_low"], "ci_high": test["ci_high"],
        "fdr_tested": tested, "q": q, "significant": significant, "note": note}, columns=list(NAMES_CELL_COLUMNS))


def names_summary(cells: pd.DataFrame) -> pd.DataFrame:
    """Across models, per task × group (Figure 1, the Results' "18 of 19 models", Supplementary Table 3).

    ``n_models`` (models with a defined gap), ``mean`` (the cross-model mean of the models' mean gaps, Figure 1's
    thick line) and ``sd`` (across models, ddof 1: its shading), the signs and directional consistency (``modal_sign``,
    ``consistency_k`` of ``consistency_m``, ``consistency``, ``consistency_text`` "18 of 19"),
    ``n_significant`` (FDR-significant models) and ``mean_gap_significant`` (the mean over those models only,
    Supplementary Table 3's "Mean gap (FDR-sig)"). ``order_in_group``: Figure 1's order of the tasks in a group's
    panel, 1 = the most negative cross-model mean (ties in the task order). Rows sorted by group, then that
    order.
    """
    summary = _sign_consistency(cells, ["task", "group"], "mean_gap", "significant")
    summary = summary.sort_values(["group", "mean", "task"], kind="stable", na_position="last")
    summary["order_in_group"] = summary.groupby("group", observed=True).cumcount() + 1
    return summary.reset_index(drop=True)


def names_group_counts(cells: pd.DataFrame) -> pd.DataFrame:
    """Per group and in all (a last row ``All``): the cells, those in the BH family (``n_tested``; the others had
    an undefined p) and the FDR-significant effects (the paper: Arab 37, Asian 31, Black 30, Hispanic 18 = 116)."""
    flags = pd.DataFrame({"group": cells["group"], "cell": True, "tested": cells["fdr_tested"].astype(bool),
                          "significant": cells["significant"].astype(bool)})
    counts = flags.groupby("group", observed=True, sort=True).agg(
        n_cells=("cell", "sum"), n_tested=("tested", "sum"), n_significant=("significant", "sum")).reset_index()
    counts["group"] = counts["group"].astype(object)
    total = pd.DataFrame([{"group": ALL_GROUPS, "n_cells": int(flags["cell"].sum()),
                           "n_tested": int(flags["tested"].sum()), "n_significant": int(flags["significant"].sum())}])
    counts = pd.concat([counts, total], ignore_index=True)
    counts["n_untested"] = counts["n_cells"] - counts["n_tested"]
    return counts[["group", "n_cells", "n_tested", "n_untested", "n_significant"]].astype(
        {"n_cells": int, "n_tested": int, "n_untested": int, "n_significant": int})


DIALECT_COLUMNS = ("model", "task", "pair", "dialect", "y")
DIALECT_CELL_COLUMNS = ("model", "task", "n_sae", "n_aave", "yes_sae", "yes_aave", "gap", "ci_low", "ci_high",
                        "cohens_h", "welch_t", "welch_df", "welch_p", "welch_note", "paired_n", "paired_n_dropped",
                        "paired_mean", "paired_t", "paired_df", "paired_p", "paired_note", "primary", "fdr_tested",
                        "q", "significant")


def dialect_cells(frame: pd.DataFrame, *, alpha: float = 0.05, primary: str = "paired") -> pd.DataFrame:
    """The dialect paradigm's gaps and tests, one row per model × task (SI Appendix, Experiment 2 "Statistical
    analysis"; Figure 2).

    ``frame``: one row per judged text with ``model``, ``task``, ``pair`` (the text pair's key), ``dialect``
    ("SAE" or "AAVE") and ``y``. A text with a missing value drops out of every statistic.

    Per cell: ``n_sae`` / ``n_aave`` judged texts and their yes-rates (averaged across texts and iterations);
    ``gap`` Δ = ȳ(AAVE) − ȳ(SAE); ``ci_low`` / ``ci_high``, the approximate 95% interval of Figure 2, which the
    paper does not define: ours is the normal (Wald) interval of a difference of proportions,
    Δ ± 1.96·√(p₁(1−p₁)/n₁ + p₂(1−p₂)/n₂) (zero width where both yes-rates are 0 or 1); ``cohens_h`` =
    2·asin(√ȳ(AAVE)) − 2·asin(√ȳ(SAE)); Welch's two-sample t-test on the 0/1 values (AAVE first, so t has Δ's sign;
    ``welch_df`` Welch–Satterthwaite); the paired t-test over text pairs (the paper's primary test): per pair,
    the mean y of its AAVE texts and of its SAE texts across iterations, the AAVE − SAE differences tested against
    0 (``paired_n`` pairs with both dialects judged, ``paired_n_dropped`` pairs with one dialect unobserved,
    ``paired_mean`` their mean difference, which weights pairs equally and so may differ from Δ). ``q``:
    Benjamini–Hochberg within each model across its tasks (16 in the paper) on the ``primary`` test's p
    ("paired" or "welch"); ``significant``: q ≤ ``alpha``. A test with fewer than two values per side or no
    variance is undefined (NaN, with its note) and out of the BH family.
    """
    if primary not in PRIMARY_TESTS:
        raise ValueError(f"primary must be one of {', '.join(PRIMARY_TESTS)}, not {primary!r}")
    _require(frame, DIALECT_COLUMNS, "dialect frame")
    judged = frame["y"].notna().to_numpy(bool)
    model, model_decoder, _ = _codes(frame["model"])
    task, task_decoder, n_tasks = _codes(frame["task"])
    pair, _, n_pair_codes = _codes(frame["pair"], ordered=False)
    dialect = frame["dialect"]
    is_aave = (dialect == DIALECTS[1]).to_numpy(bool)
    if not (is_aave | (dialect == DIALECTS[0]).to_numpy(bool)).all():
        unknown = sorted(map(str, pd.unique(dialect[~dialect.isin(DIALECTS)])))[:5]
        raise ValueError(f"dialect must be one of {', '.join(DIALECTS)}; found {', '.join(unknown)}")
    cell_keys, cell = _unique_inverse(model * n_tasks + task)
    n_cells = len(cell_keys)
    y = frame["y"].to_numpy(float)[judged]
    cell, pair, is_aave = cell[judged], pair[judged], is_aave[judged]

    side = cell * 2 + is_aave
    n_side, yes_side, sd_side = (values.reshape(n_cells, 2) for values in _moments(side, y, n_cells * 2))
    n_sae, n_aave = n_side[:, 0], n_side[:, 1]
    yes_sae, yes_aave = yes_side[:, 0], yes_side[:, 1]
    gap = yes_aave - yes_sae
    with np.errstate(invalid="ignore", divide="ignore"):
        half_width = NORMAL_95 * np.sqrt(yes_aave * (1 - yes_aave) / n_aave + yes_sae * (1 - yes_sae) / n_sae)
        cohens_h = 2 * np.arcsin(np.sqrt(yes_aave)) - 2 * np.arcsin(np.sqrt(yes_sae))
        share = sd_side ** 2 / n_side
        welch_se = np.sqrt(share.sum(axis=1))
        enough = (n_sae >= 2) & (n_aave >= 2)
        welch_defined = enough & (welch_se > NO_VARIANCE)
        welch_df = np.where(welch_defined, share.sum(axis=1) ** 2 / (share ** 2 / (n_side - 1)).sum(axis=1), np.nan)
        welch_t = np.where(welch_defined, gap / welch_se, np.nan)
    welch_p = np.asarray(2 * stats.t.sf(np.abs(welch_t), welch_df))  # as in _one_sample_t
    welch_note = np.where(enough, np.where(welch_defined, "", NO_VARIANCE_WELCH), FEW_TEXTS)

    pair_keys, pair_index = _unique_inverse(cell * n_pair_codes + pair)
    pair_side = pair_index * 2 + is_aave
    pair_n = np.bincount(pair_side, minlength=len(pair_keys) * 2).reshape(-1, 2)
    with np.errstate(invalid="ignore", divide="ignore"):
        pair_mean = np.bincount(pair_side, weights=y, minlength=len(pair_keys) * 2).reshape(-1, 2) / pair_n
    pair_cell = pair_keys // n_pair_codes
    both = (pair_n > 0).all(axis=1)
    paired_n, paired_mean, paired_sd = _moments(pair_cell[both], pair_mean[both, 1] - pair_mean[both, 0], n_cells)
    paired = _one_sample_t(paired_n, paired_mean, paired_sd)
    paired_note = np.where(paired_n < 2, FEW_TEXT_PAIRS, np.where(paired["defined"], "", NO_VARIANCE_PAIRED))

    cell_model = cell_keys // n_tasks
    primary_p = paired["p"] if primary == "paired" else welch_p
    tested = np.zeros(n_cells, dtype=bool)
    q = np.full(n_cells, np.nan)
    significant = np.zeros(n_cells, dtype=bool)
    for each_model in np.unique(cell_model):
        mask = cell_model == each_model
        tested[mask], q[mask], significant[mask] = _bh(primary_p[mask], alpha=alpha)
    return pd.DataFrame({
        "model": _decode(cell_model, model_decoder), "task": _decode(cell_keys % n_tasks, task_decoder),
        "n_sae": n_sae, "n_aave": n_aave, "yes_sae": yes_sae, "yes_aave": yes_aave, "gap": gap,
        "ci_low": gap - half_width, "ci_high": gap + half_width, "cohens_h": cohens_h, "welch_t": welch_t,
        "welch_df": welch_df, "welch_p": welch_p, "welch_note": welch_note, "paired_n": paired_n,
        "paired_n_dropped": np.bincount(pair_cell, minlength=n_cells) - paired_n, "paired_mean": paired_mean,
        "paired_t": paired["t"], "paired_df": paired["df"], "paired_p": paired["p"], "paired_note": paired_note,
        "primary": primary, "fdr_tested": tested, "q": q, "significant": significant},
        columns=list(DIALECT_CELL_COLUMNS))


def dialect_summary(cells: pd.DataFrame) -> pd.DataFrame:
    """Across models, per task (Figure 2's bold line, the Results' "all 19 models", "9/19 FDR-significant"): the
    cross-model mean and SD of the gaps Δ, their signs and directional consistency "k of m" (as
    :func:`names_summary`), the FDR-significant models and their mean gap. Rows in the task order."""
    return _sign_consistency(cells, ["task"], "gap", "significant")


COMPLETION_COLUMNS = ("model", "task", "y", "reason")
TARGET_COLUMNS = ("model", "task", "n_texts_asked", "n_texts_failed_requests")
NO_REASON = "missing (no reason recorded)"


def _completion_rates(counts: pd.DataFrame) -> pd.DataFrame:
    counts = counts.copy()
    counts["n_missing"] = counts["n_asked"] - counts["n_labelled"]
    with np.errstate(invalid="ignore", divide="ignore"):
        counts["rate"] = counts["n_labelled"] / counts["n_asked"].where(counts["n_asked"] > 0)
    return counts


def _key_codes(column: pd.Series) -> tuple[np.ndarray, np.ndarray]:
    """Codes of a grouping key (−1 where it is missing) and the values they stand for."""
    if isinstance(column.dtype, pd.CategoricalDtype):
        return column.cat.codes.to_numpy(np.int64), np.asarray(column.cat.categories, dtype=object)
    codes, uniques = pd.factorize(column)
    return codes.astype(np.int64, copy=False), np.asarray(uniques, dtype=object)


def _rows_and_labelled(frame: pd.DataFrame) -> pd.DataFrame:
    """Per model × task that has rows: ``n_rows`` and ``n_labelled``, indexed by the (model, task) values as
    objects; a row whose model or task is missing belongs to none (as a pandas group-by drops it). Counted over
    the keys' codes (the categoricals' own, not factorised again as a group-by does: 4,000,000 rows in a tenth of
    its time)."""
    model, models = _key_codes(frame["model"])
    task, tasks = _key_codes(frame["task"])
    keyed = (model >= 0) & (task >= 0)
    cell = model[keyed] * len(tasks) + task[keyed]
    size = len(models) * len(tasks)
    n_rows = np.bincount(cell, minlength=size)
    n_labelled = np.bincount(cell[frame["y"].notna().to_numpy(bool)[keyed]], minlength=size)
    seen = np.flatnonzero(n_rows)
    index = pd.MultiIndex.from_arrays([pd.Index(models[seen // len(tasks)], dtype=object),
                                       pd.Index(tasks[seen % len(tasks)], dtype=object)], names=["model", "task"])
    return pd.DataFrame({"n_rows": n_rows[seen], "n_labelled": n_labelled[seen]}, index=index)


def completion(frame: pd.DataFrame, targets: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """Completion rates (Table 1: "Exp. 1 compl.", "Exp. 2 compl."; SI Appendix "Handling of missing and
    non-parsed responses") and the reasons for missing values.

    ``frame``: one row per text of every request that got a reply, with ``model``, ``task``, ``y`` (NaN =
    missing) and ``reason`` (why it is missing). ``targets``: per model × task (several rows are summed)
    ``n_texts_asked`` (every text of every request, failed requests included) and ``n_texts_failed_requests``
    (the texts of requests that never got a reply; they have no rows).

    Returns ``(per_model, per_model_task, reasons)``. The first two count ``n_asked``, ``n_labelled`` (a 0/1
    value), ``n_missing`` = asked − labelled, split into ``n_missing_in_replies`` (rows without a value),
    ``n_failed_requests`` and ``n_not_recorded`` (ours: asked texts with no row that were not in a failed
    request), and ``rate`` = labelled / asked (the paper's 144,402 of 152,000 = 95.0%). ``reasons``: model ×
    task × reason with ``n``; a failed request's texts count under "request failed", unrecorded texts under
    "no judgment recorded", a missing row without a reason under "missing (no reason recorded)". A model × task
    with rows but no target, or more rows than its asked texts not in failed requests, is refused.
    """
    _require(frame, COMPLETION_COLUMNS, "completion frame")
    _require(targets, TARGET_COLUMNS, "completion targets")
    keys = ["model", "task"]
    replied = _rows_and_labelled(frame)
    asked = targets.assign(model=targets["model"].astype(object), task=targets["task"].astype(object)).groupby(
        keys, sort=False)[["n_texts_asked", "n_texts_failed_requests"]].sum()
    asked_keys = asked.index
    assert isinstance(asked_keys, pd.MultiIndex)  # grouped by two keys (even when empty)
    unknown = replied.index.difference(asked_keys)
    if len(unknown):
        raise ValueError(f"judgments for model × task without a target: {', '.join(map(str, unknown[:5]))}")
    per_task = asked.join(replied, how="left").fillna({"n_rows": 0, "n_labelled": 0}).astype(int)
    per_task = per_task.rename(columns={"n_texts_asked": "n_asked", "n_texts_failed_requests": "n_failed_requests"})
    per_task["n_missing_in_replies"] = per_task["n_rows"] - per_task["n_labelled"]
    per_task["n_not_recorded"] = per_task["n_asked"] - per_task["n_failed_requests"] - per_task["n_rows"]
    if (per_task["n_not_recorded"] < 0).any():
        over = per_task.index[per_task["n_not_recorded"] < 0][:5]
        raise ValueError(f"more judgments than texts asked (outside failed requests) for {', '.join(map(str, over))}")
    per_task = _completion_rates(per_task.reset_index())
    per_model = _completion_rates(per_task.groupby("model", sort=False)[["n_asked", "n_labelled",
                                                                         "n_missing_in_replies", "n_failed_requests",
                                                                         "n_not_recorded"]].sum().reset_index())

    missing = frame.loc[frame["y"].isna(), ["model", "task", "reason"]]
    reason = missing["reason"].astype(object).where(missing["reason"].notna() & (missing["reason"].astype(str) != ""),
                                                    NO_REASON)
    in_replies = pd.DataFrame({"model": missing["model"].astype(object), "task": missing["task"].astype(object),
                               "reason": reason}).groupby([*keys, "reason"], sort=True).size().rename("n").reset_index()
    outside = []
    for column, label in (("n_failed_requests", REQUEST_FAILED), ("n_not_recorded", NOT_RECORDED)):
        counted = per_task[per_task[column] > 0]
        outside.append(pd.DataFrame({"model": counted["model"], "task": counted["task"], "reason": label,
                                     "n": counted[column]}))
    positions = per_task[keys].assign(position=np.arange(len(per_task)))
    reasons = pd.concat([in_replies, *outside], ignore_index=True).merge(positions, on=keys)
    reasons = reasons.sort_values(["position", "n", "reason"], ascending=[True, False, True], kind="stable")
    columns = ["n_asked", "n_labelled", "n_missing", "n_missing_in_replies", "n_failed_requests", "n_not_recorded",
               "rate"]
    return (per_model[["model", *columns]], per_task[[*keys, *columns]],
            reasons[[*keys, "reason", "n"]].astype({"n": int}).reset_index(drop=True))
