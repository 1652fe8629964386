"""Classification-audit metrics (seed 000 §4.1–4.2, Tables 1–2, Figure 1). Pure numpy and scipy.

Every metric is computed from the 2×2 counts (tp, fp, fn, tn) with numpy along an axis, so one call
scores thousands of bootstrap resamples at once; scikit-learn's functions give the same point
estimates (tests check this) but are far too slow inside a resampling loop.

    accuracy  = (tp + tn) / n
    precision = tp / (tp + fp)        (0 when tp + fp = 0, as scikit-learn with zero_division=0)
    recall    = tp / (tp + fn)        (0 when tp + fn = 0)
    F1        = 2·tp / (2·tp + fp + fn) (0 when the denominator is 0)
    Cohen's κ = (p_o − p_e) / (1 − p_e), p_o = (tp + tn)/n,
                p_e = ((tp + fp)(tp + fn) + (fn + tn)(fp + tn)) / n²   (NaN when p_e = 1)

Predictions are 1, 0 or NaN (no parsed label: a refusal, an unparseable reply, a failed request).
``unparsed="exclude"`` (default) drops those items; ``unparsed="wrong"`` counts each as the wrong
label. Items whose reference is NaN (e.g. a majority tie) are always dropped. The choice is returned
with every result.

Confidence intervals: ``scipy.stats.bootstrap`` over items (paired: prediction and reference are
resampled together), percentile method, seeded.

Δκ = κ(majority vote) − κ(weighted ground truth) per model × condition cell. Seed 000 §4.1 tests the
gap with a paired t-test over the cells (``scipy.stats.ttest_rel``); because the cells share items
they are not independent, so :func:`kappa_gap` also gives a paired bootstrap over items of the mean
Δκ across cells.
"""
from __future__ import annotations

import warnings
from dataclasses import asdict, dataclass
from typing import Literal

import numpy as np
from scipy import stats

UnparsedRule = Literal["exclude", "wrong"]
METRICS = ("kappa", "f1", "precision", "recall", "accuracy")


def confusion_counts(pred: np.ndarray, ref: np.ndarray, axis: int = -1) -> tuple[np.ndarray, ...]:
    """(tp, fp, fn, tn) of 0/1 arrays along ``axis``."""
    pred, ref = np.asarray(pred), np.asarray(ref)
    tp = np.sum((pred == 1) & (ref == 1), axis=axis)
    fp = np.sum((pred == 1) & (ref == 0), axis=axis)
    fn = np.sum((pred == 0) & (ref == 1), axis=axis)
    tn = np.sum((pred == 0) & (ref == 0), axis=axis)
    return tp, fp, fn, tn


def _ratio(numerator, denominator):
    numerator, denominator = np.asarray(numerator, dtype=float), np.asarray(denominator, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(denominator > 0, numerator / np.where(denominator > 0, denominator, 1), 0.0)


def metrics_from_counts(tp, fp, fn, tn) -> dict[str, np.ndarray]:
    """Every metric from 2×2 counts (arrays broadcast); see the module docstring for the formulas."""
    tp, fp, fn, tn = (np.asarray(x, dtype=float) for x in (tp, fp, fn, tn))
    n = tp + fp + fn + tn
    p_o = _ratio(tp + tn, n)
    p_e = _ratio((tp + fp) * (tp + fn) + (fn + tn) * (fp + tn), n * n)
    with np.errstate(divide="ignore", invalid="ignore"):
        kappa = np.where((p_e < 1) & (n > 0), (p_o - p_e) / np.where(p_e < 1, 1 - p_e, 1), np.nan)
    return {
        "kappa": kappa,
        "f1": _ratio(2 * tp, 2 * tp + fp + fn),
        "precision": _ratio(tp, tp + fp),
        "recall": _ratio(tp, tp + fn),
        "accuracy": p_o,
    }


def _prepare(pred, ref, unparsed: UnparsedRule) -> tuple[np.ndarray, np.ndarray, int]:
    """Drop items without a reference; apply the unparsed rule. Returns (pred, ref, n_unparsed)."""
    if unparsed not in ("exclude", "wrong"):
        raise ValueError(f"unparsed must be 'exclude' or 'wrong', not {unparsed!r}")
    pred, ref = np.asarray(pred, dtype=float), np.asarray(ref, dtype=float)
    keep = ~np.isnan(ref)
    pred, ref = pred[keep], ref[keep]
    missing = np.isnan(pred)
    if unparsed == "exclude":
        return pred[~missing], ref[~missing], int(missing.sum())
    return np.where(missing, 1 - ref, pred), ref, int(missing.sum())


@dataclass(frozen=True)
class CellMetrics:
    """One model × condition × reference: point estimates, 95% CIs, counts, and the unparsed rule."""

    kappa: float
    f1: float
    precision: float
    recall: float
    accuracy: float
    ci: dict[str, tuple[float, float]]
    n: int
    n_items: int
    n_unparsed: int
    coverage: float
    unparsed: UnparsedRule

    def as_dict(self) -> dict:
        return asdict(self)


def classification_metrics(pred, ref, *, unparsed: UnparsedRule = "exclude", n_resamples: int = 2000,
                           seed: int = 0, confidence: float = 0.95) -> CellMetrics:
    """Metrics of predictions against a reference over items (NaN = no label; see module docstring).

    ``n`` is the number of items scored; ``coverage`` the share of items with a reference that got a
    parsed label. With fewer than two scored items, or when a metric is undefined in some resamples
    (e.g. κ when a resample holds one class only), that metric's CI is NaN.
    """
    with_reference = int(np.sum(~np.isnan(np.asarray(ref, dtype=float))))
    pred, ref, n_unparsed = _prepare(pred, ref, unparsed)
    point = {k: float(v) for k, v in metrics_from_counts(*confusion_counts(pred, ref)).items()}
    ci = {name: (float("nan"), float("nan")) for name in METRICS}
    if len(pred) >= 2:
        for name in METRICS:
            def statistic(p, r, axis=-1, _name=name):
                return metrics_from_counts(*confusion_counts(p, r, axis=axis))[_name]

            with warnings.catch_warnings():  # undefined in some resamples: the interval is NaN, as documented
                warnings.simplefilter("ignore", stats.DegenerateDataWarning)
                result = stats.bootstrap((pred, ref), statistic, paired=True, vectorized=True,
                                         n_resamples=n_resamples, confidence_level=confidence,
                                         method="percentile", rng=np.random.default_rng(seed))
            ci[name] = (float(result.confidence_interval.low), float(result.confidence_interval.high))
    coverage = (with_reference - n_unparsed) / with_reference if with_reference else float("nan")
    return CellMetrics(**point, ci=ci, n=len(pred), n_items=with_reference, n_unparsed=n_unparsed,
                       coverage=coverage, unparsed=unparsed)


@dataclass(frozen=True)
class KappaGap:
    """Δκ = κ(majority) − κ(weighted) per cell, the paired t-test over cells, and a paired item bootstrap."""

    delta: np.ndarray
    mean_delta: float
    t_statistic: float
    p_value: float
    df: int
    bootstrap_ci: tuple[float, float]


def _kappa_rows(preds: np.ndarray, ref: np.ndarray) -> np.ndarray:
    """κ of every row of ``preds`` (cells × items, NaN = excluded) against ``ref`` (items, NaN = none),
    along the last axis; extra leading axes (resamples) broadcast."""
    valid = ~np.isnan(preds) & ~np.isnan(ref)
    p = np.where(valid, preds, -1)
    r = np.where(valid, ref, -1)
    return metrics_from_counts(*confusion_counts(p, r, axis=-1))["kappa"]


def _kappas(preds, majority, weighted, unparsed: UnparsedRule) -> tuple[np.ndarray, np.ndarray]:
    """κ against the majority and against the weighted reference, per row of ``preds``."""
    if unparsed == "wrong":
        return (_kappa_rows(np.where(np.isnan(preds), 1 - majority, preds), majority),
                _kappa_rows(np.where(np.isnan(preds), 1 - weighted, preds), weighted))
    return _kappa_rows(preds, majority), _kappa_rows(preds, weighted)


def kappa_gap(preds, majority, weighted, *, unparsed: UnparsedRule = "exclude", n_resamples: int = 2000,
              seed: int = 0, confidence: float = 0.95) -> KappaGap:
    """Δκ for each cell (rows of ``preds``, cells × items) against the two references over the same items.

    ``unparsed="wrong"`` counts a missing prediction as wrong against each reference in turn. Cells whose
    κ is undefined are left out of the t-test and of the means.
    """
    preds = np.asarray(preds, dtype=float)
    majority, weighted = np.asarray(majority, dtype=float), np.asarray(weighted, dtype=float)
    kappa_m, kappa_w = _kappas(preds, majority, weighted, unparsed)
    delta = kappa_m - kappa_w
    cells = np.isfinite(delta)
    test = stats.ttest_rel(kappa_m[cells], kappa_w[cells])

    def mean_gap(index, axis=-1):
        rows = np.atleast_2d(index)
        means = np.array([np.nanmean(np.subtract(*_kappas(preds[:, row], majority[row], weighted[row], unparsed)))
                          for row in rows])
        return means if np.ndim(index) > 1 else means[0]

    items = np.arange(preds.shape[-1])
    result = stats.bootstrap((items,), mean_gap, vectorized=True, n_resamples=n_resamples,
                             confidence_level=confidence, method="percentile", rng=np.random.default_rng(seed))
    return KappaGap(delta=delta, mean_delta=float(np.nanmean(delta)), t_statistic=float(test.statistic),
                    p_value=float(test.pvalue), df=int(cells.sum()) - 1,
                    bootstrap_ci=(float(result.confidence_interval.low), float(result.confidence_interval.high)))
