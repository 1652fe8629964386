"""Classification-audit metrics (seed 000 §4.1–4.2, Tables 1–2, Figure 1). Pure numpy and scipy.

Every metric is computed from the 2×2 counts (tp, fp, fn, tn) with numpy along an axis, so one call
scores thousands of bootstrap resamples at once; scikit-learn's functions give the same point
estimates (tests check this) but are far too slow inside a resampling loop.

    accuracy  = (tp + tn) / n
    precision = tp / (tp + fp)
    recall    = tp / (tp + fn)
    F1        = 2·tp / (2·tp + fp + fn)
    Cohen's κ = (p_o − p_e) / (1 − p_e), p_o = (tp + tn)/n,
                p_e = ((tp + fp)(tp + fn) + (fn + tn)(fp + tn)) / n²

A metric over zero items is undefined, never 0: it is NaN here (None in JSON, empty in CSV, "—" on the
dashboard), and :func:`undefined_reasons` says why. Undefined are every metric at n = 0; precision with no
predicted positives (tp + fp = 0); recall with no reference positives (tp + fn = 0); F1 when 2·tp + fp + fn = 0
(no positives in the predictions nor in the reference, so precision and recall are both undefined); κ when
p_e = 1 (predictions and reference hold the same single class). F1 stays defined, and 0, when only one of
precision and recall is undefined or both are 0: the count formula has a positive denominator and no positive
was found. This is scikit-learn's arithmetic with ``zero_division=np.nan`` (and ``cohen_kappa_score``'s
``replace_undefined_by=np.nan``); we do not take its default, a 0 with an ``UndefinedMetricWarning``, because
a 0 in a table reads as a measured failure while nothing was measured.

Predictions are 1, 0 or NaN (no parsed label: a refusal, an unparseable reply, a failed request).
``unparsed="exclude"`` (default) drops those items; ``unparsed="wrong"`` counts each as the wrong
label. Items whose reference is NaN (e.g. a majority tie) are always dropped. The choice is returned
with every result.

Confidence intervals: ``scipy.stats.bootstrap`` over items (paired: prediction and reference are
resampled together), percentile method, seeded. The CI of an undefined metric is undefined; so is the CI of a
metric undefined in some resamples (its sampling distribution has no percentile), and of any metric over fewer
than two items. Each undefined interval has its reason too.

Δκ = κ(majority) − κ(weighted) per model × condition cell, undefined (with its reason) where either κ is.
Seed 000 §4.1 tests the gap with a paired t-test over the cells (``scipy.stats.ttest_rel``); because the cells
share items they are not independent, so :func:`kappa_gap` also gives a paired bootstrap over items of the
mean Δκ across cells. The t-test needs two cells with a defined Δκ, the mean and its bootstrap one.
"""
from __future__ import annotations

import warnings
from dataclasses import asdict, dataclass, field
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
    """numerator / denominator, NaN where the denominator is 0 (the ratio is over nothing)."""
    numerator, denominator = np.asarray(numerator, dtype=float), np.asarray(denominator, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(denominator > 0, numerator / np.where(denominator > 0, denominator, 1), np.nan)


def metrics_from_counts(tp, fp, fn, tn) -> dict[str, np.ndarray]:
    """Every metric from 2×2 counts (arrays broadcast), NaN where undefined; see the module docstring."""
    tp, fp, fn, tn = (np.asarray(x, dtype=float) for x in (tp, fp, fn, tn))
    n = tp + fp + fn + tn
    p_o = _ratio(tp + tn, n)
    p_e = _ratio((tp + fp) * (tp + fn) + (fn + tn) * (fp + tn), n * n)
    return {
        "kappa": _ratio(p_o - p_e, np.where(p_e < 1, 1 - p_e, 0)),
        "f1": _ratio(2 * tp, 2 * tp + fp + fn),
        "precision": _ratio(tp, tp + fp),
        "recall": _ratio(tp, tp + fn),
        "accuracy": p_o,
    }


NO_ITEMS = "no items with both a reference label and a parsed label"


def undefined_reasons(tp: int, fp: int, fn: int, tn: int, *, no_items: str = NO_ITEMS) -> dict[str, str]:
    """Why each metric undefined at these counts is undefined (metric → reason; a defined metric is absent).

    ``no_items`` is the reason at n = 0, which the caller can say more precisely (no reference at all, or
    every item unparsed)."""
    if tp + fp + fn + tn == 0:
        return {name: no_items for name in METRICS}
    reasons = {}
    if tp + fp == 0:
        reasons["precision"] = "no predicted positives (tp + fp = 0)"
    if tp + fn == 0:
        reasons["recall"] = "no reference positives (tp + fn = 0)"
    if tp + fp == 0 and tp + fn == 0:
        reasons["f1"] = "no positives in the predictions nor in the reference (2·tp + fp + fn = 0)"
    if fp + fn == 0 and (tp == 0 or tn == 0):
        only = "0" if tp == 0 else "1"
        reasons["kappa"] = f"predictions and reference hold one class only ({only}): expected agreement is 1"
    return reasons


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
    """One model × condition × reference: point estimates (NaN = undefined), 95% CIs, counts, the unparsed rule,
    and ``notes``: why each undefined value is undefined, keyed by the metric (``"f1"``) or its interval
    (``"f1_ci"``)."""

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
    notes: dict[str, str] = field(default_factory=dict)

    def as_dict(self) -> dict:
        return asdict(self)


def classification_metrics(pred, ref, *, unparsed: UnparsedRule = "exclude", n_resamples: int = 2000,
                           seed: int = 0, confidence: float = 0.95) -> CellMetrics:
    """Metrics of predictions against a reference over items (NaN = no label; see module docstring).

    ``n`` is the number of items scored; ``coverage`` the share of items with a reference that got a
    parsed label (undefined without such items). An undefined metric is NaN with its reason in ``notes``;
    its CI is NaN, and so is the CI of a metric undefined in some resamples or over fewer than two items.
    """
    with_reference = int(np.sum(~np.isnan(np.asarray(ref, dtype=float))))
    pred, ref, n_unparsed = _prepare(pred, ref, unparsed)
    counts = tuple(int(c) for c in confusion_counts(pred, ref))
    point = {k: float(v) for k, v in metrics_from_counts(*counts).items()}
    no_items = ("no items with a reference label" if with_reference == 0 else
                f"no item with a reference label got a parsed label ({n_unparsed} unparsed, excluded)")
    notes = undefined_reasons(*counts, no_items=no_items)
    ci = {name: (float("nan"), float("nan")) for name in METRICS}
    for name in METRICS:
        if name in notes:
            notes[f"{name}_ci"] = f"{name} is undefined"
        elif len(pred) < 2:
            notes[f"{name}_ci"] = "fewer than two scored items"
        else:
            def statistic(p, r, axis=-1, _name=name):
                return metrics_from_counts(*confusion_counts(p, r, axis=axis))[_name]

            with warnings.catch_warnings():  # undefined in some resamples: the interval is NaN, as documented
                warnings.simplefilter("ignore", stats.DegenerateDataWarning)
                result = stats.bootstrap((pred, ref), statistic, paired=True, vectorized=True,
                                         n_resamples=n_resamples, confidence_level=confidence,
                                         method="percentile", rng=np.random.default_rng(seed))
            ci[name] = (float(result.confidence_interval.low), float(result.confidence_interval.high))
            if not np.all(np.isfinite(ci[name])):
                notes[f"{name}_ci"] = f"{name} is undefined in some bootstrap resamples"
    coverage = (with_reference - n_unparsed) / with_reference if with_reference else float("nan")
    if not with_reference:
        notes["coverage"] = "no items with a reference label"
    return CellMetrics(**point, ci=ci, n=len(pred), n_items=with_reference, n_unparsed=n_unparsed,
                       coverage=coverage, unparsed=unparsed, notes=notes)


@dataclass(frozen=True)
class KappaGap:
    """Δκ = κ(majority) − κ(weighted) per cell (NaN where undefined, with the reason in ``cell_notes``; "" where
    defined), the paired t-test over cells and a paired item bootstrap of the mean Δκ; ``notes`` says why the
    mean (``"mean_delta"``), the test (``"t_test"``) or the interval (``"bootstrap"``) is undefined."""

    delta: np.ndarray
    mean_delta: float
    t_statistic: float
    p_value: float
    df: int | None
    bootstrap_ci: tuple[float, float]
    cell_notes: list[str] = field(default_factory=list)
    notes: dict[str, str] = field(default_factory=dict)


def _kappa_rows(preds: np.ndarray, ref: np.ndarray) -> np.ndarray:
    """κ of every row of ``preds`` (cells × items, NaN = excluded) against ``ref`` (items, NaN = none),
    along the last axis; extra leading axes (resamples) broadcast."""
    return metrics_from_counts(*_valid_counts(preds, ref))["kappa"]


def _valid_counts(preds: np.ndarray, ref: np.ndarray) -> tuple[np.ndarray, ...]:
    valid = ~np.isnan(preds) & ~np.isnan(ref)
    return confusion_counts(np.where(valid, preds, -1), np.where(valid, ref, -1), axis=-1)


def _with_unparsed(preds, reference, unparsed: UnparsedRule) -> np.ndarray:
    return np.where(np.isnan(preds), 1 - reference, preds) if unparsed == "wrong" else preds


def _kappas(preds, majority, weighted, unparsed: UnparsedRule) -> tuple[np.ndarray, np.ndarray]:
    """κ against the majority and against the weighted reference, per row of ``preds``."""
    return (_kappa_rows(_with_unparsed(preds, majority, unparsed), majority),
            _kappa_rows(_with_unparsed(preds, weighted, unparsed), weighted))


def _kappa_notes(preds, reference, unparsed: UnparsedRule, name: str) -> list[str]:
    """Per row of ``preds``: why κ against ``reference`` is undefined ("" where it is defined)."""
    counts = np.stack(_valid_counts(_with_unparsed(preds, reference, unparsed), reference), axis=-1)
    reasons = [undefined_reasons(*(int(c) for c in row)).get("kappa", "") for row in counts]
    return [f"κ({name}) is undefined: {reason}" if reason else "" for reason in reasons]


def _mean_of_finite(values: np.ndarray) -> float:
    finite = values[np.isfinite(values)]
    return float(finite.mean()) if finite.size else float("nan")


def kappa_gap(preds, majority, weighted, *, unparsed: UnparsedRule = "exclude", n_resamples: int = 2000,
              seed: int = 0, confidence: float = 0.95) -> KappaGap:
    """Δκ for each cell (rows of ``preds``, cells × items) against the two references over the same items.

    ``unparsed="wrong"`` counts a missing prediction as wrong against each reference in turn. Cells whose
    Δκ is undefined are left out of the t-test and of the means; the t-test needs two cells with a Δκ, the mean
    and its bootstrap one (a resample in which no cell has a Δκ makes the interval undefined).
    """
    preds = np.asarray(preds, dtype=float)
    majority, weighted = np.asarray(majority, dtype=float), np.asarray(weighted, dtype=float)
    kappa_m, kappa_w = _kappas(preds, majority, weighted, unparsed)
    delta = kappa_m - kappa_w
    cells = np.isfinite(delta)
    cell_notes = ["; ".join(note for note in pair if note) for pair in
                  zip(_kappa_notes(preds, majority, unparsed, "majority"),
                      _kappa_notes(preds, weighted, unparsed, "weighted"), strict=True)]
    notes = {}
    t_statistic = p_value = float("nan")
    df = None
    if cells.sum() >= 2:
        test = stats.ttest_rel(kappa_m[cells], kappa_w[cells])
        t_statistic, p_value, df = float(test.statistic), float(test.pvalue), int(cells.sum()) - 1
    else:
        defined = int(cells.sum())
        notes["t_test"] = (f"the paired t-test needs at least two cells with a defined Δκ "
                           f"(there {'is' if defined == 1 else 'are'} {defined})")
    bootstrap_ci = (float("nan"), float("nan"))
    if cells.any():
        def mean_gap(index, axis=-1):
            rows = np.atleast_2d(index)
            means = np.array([_mean_of_finite(np.subtract(*_kappas(preds[:, row], majority[row], weighted[row],
                                                                    unparsed))) for row in rows])
            return means if np.ndim(index) > 1 else means[0]

        items = np.arange(preds.shape[-1])
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", stats.DegenerateDataWarning)
            result = stats.bootstrap((items,), mean_gap, vectorized=True, n_resamples=n_resamples,
                                     confidence_level=confidence, method="percentile",
                                     rng=np.random.default_rng(seed))
        bootstrap_ci = (float(result.confidence_interval.low), float(result.confidence_interval.high))
        if not np.all(np.isfinite(bootstrap_ci)):
            notes["bootstrap"] = "no cell has a defined Δκ in some bootstrap resamples"
    else:
        notes["mean_delta"] = "no cell has a defined Δκ (κ is undefined against a reference in every cell)"
        notes["bootstrap"] = notes["mean_delta"]
    return KappaGap(delta=delta, mean_delta=_mean_of_finite(delta), t_statistic=t_statistic, p_value=p_value,
                    df=df, bootstrap_ci=bootstrap_ci, cell_notes=cell_notes, notes=notes)
