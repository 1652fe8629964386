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
label: the opposite of the reference's label. Against a soft reference s (:func:`reference_metrics`) that is the
opposite of the label s is cut to, 1 − L(s) with L(s) = 1 when s > t, 0 when s < t and the tie label at s = t (the
weighted label's threshold and tie rule), so an unparsed reply earns only the expected credit of a wrong label
(s or 1 − s, the smaller share), not the partial credit 2s(1 − s) a prediction of 1 − s would get. Items whose
reference is NaN (e.g. a majority tie) are always dropped. The choice is returned
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
        return dict.fromkeys(METRICS, no_items)
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


def _reference_label(reference: np.ndarray, threshold: float, tie_label: float) -> np.ndarray:
    """The label a reference stands for: itself when 0, 1 or NaN; a soft score s cut at ``threshold`` (1 above, 0
    below, ``tie_label`` at it), as the weighted label is cut (seed 000 eq. 6)."""
    reference = np.asarray(reference, dtype=float)
    hard = np.isnan(reference) | (reference == 0) | (reference == 1)
    cut = np.where(reference > threshold, 1.0, 0.0)
    cut = np.where(np.isclose(reference, threshold, rtol=0.0, atol=1e-12), tie_label, cut)
    return np.where(hard, reference, cut)


def _with_unparsed(preds, reference, unparsed: UnparsedRule, *, soft_threshold: float = 0.5,
                   soft_tie_label: float = 1.0) -> np.ndarray:
    """Under "wrong", a missing prediction becomes the opposite of the reference's label (module docstring)."""
    if unparsed != "wrong":
        return preds
    return np.where(np.isnan(preds), 1 - _reference_label(reference, soft_threshold, soft_tie_label), preds)


def _kappas(preds, majority, weighted, unparsed: UnparsedRule) -> tuple[np.ndarray, np.ndarray]:
    """κ against the majority and against the weighted reference, per row of ``preds``."""
    return (_kappa_rows(_with_unparsed(preds, majority, unparsed), majority),
            _kappa_rows(_with_unparsed(preds, weighted, unparsed), weighted))


def _kappa_notes(preds, reference, unparsed: UnparsedRule, name: str) -> list[str]:
    """Per row of ``preds``: why κ against ``reference`` is undefined ("" where it is defined)."""
    counts = np.stack(_valid_counts(_with_unparsed(preds, reference, unparsed), reference), axis=-1)
    reasons = [undefined_reasons(*(int(c) for c in row)).get("kappa", "") for row in counts]
    return [f"κ({name}) is undefined: {reason}" if reason else "" for reason in reasons]


FLOAT_NOISE = 1e-12
"""A difference of two κ values smaller than this is rounding, not a gap: it is stored as 0 (the same κ computed
against two references that agree came out as −1.1e-16, which a reader takes for a value)."""


def without_float_noise(values):
    """``values`` with every entry within :data:`FLOAT_NOISE` of 0 set to 0.0 (NaN stays NaN)."""
    array = np.asarray(values, dtype=float)
    return np.where(np.abs(array) < FLOAT_NOISE, 0.0, array)


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
    delta = without_float_noise(kappa_m - kappa_w)
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
    return KappaGap(delta=delta, mean_delta=float(without_float_noise(_mean_of_finite(delta))),
                    t_statistic=t_statistic, p_value=p_value,
                    df=df, bootstrap_ci=bootstrap_ci, cell_notes=cell_notes, notes=notes)


# ------------------------------------------------------------------ against many references at once (issue 19)

def bootstrap_resample_counts(n_items: int, *, n_resamples: int, seed: int) -> np.ndarray:
    """How many times each item is drawn in each resample (resamples × items, float32).

    The draws are exactly those of ``scipy.stats.bootstrap(..., rng=np.random.default_rng(seed))`` with the default
    batch (``rng.integers(0, n, (n_resamples, n))`` in one call), so every interval below equals the one
    :func:`classification_metrics` and :func:`kappa_gap` compute for the same seed. A metric over a resample is then
    a metric of the counts ``counts @ indicators``: one matrix product scores every cell and resample at once.
    """
    drawn = np.random.default_rng(seed).integers(0, n_items, (n_resamples, n_items))
    counts = np.empty((n_resamples, n_items), dtype=np.float32)
    step = max(1, 2_000_000 // max(n_items, 1))
    for start in range(0, n_resamples, step):
        block = drawn[start:start + step]
        offsets = (np.arange(len(block)) * n_items)[:, None]
        counts[start:start + step] = np.bincount((block + offsets).ravel(),
                                                 minlength=len(block) * n_items).reshape(len(block), n_items)
    return counts


@dataclass(frozen=True)
class ReferenceMetrics:
    """Metrics of every cell (rows of the predictions) against every reference, arrays of cells × references:
    ``point[metric]``, ``low[metric]``, ``high[metric]`` (NaN = undefined), ``counts`` (cells × references × 4:
    tp, fp, fn, tn; expected counts for a soft reference), ``n`` (items scored), ``notes`` (per cell and reference:
    metric or ``<metric>_ci`` → reason). Against the reference ``base``: ``delta`` = κ(reference) − κ(base) per cell,
    and per reference the paired t-test over cells (``t_statistic``, ``p_value``, ``df``) and the item bootstrap of
    the mean Δκ (``mean_delta``, ``delta_low``, ``delta_high``), with ``test_notes`` saying why any is undefined."""

    point: dict[str, np.ndarray]
    low: dict[str, np.ndarray]
    high: dict[str, np.ndarray]
    counts: np.ndarray
    n: np.ndarray
    notes: list[list[dict[str, str]]]
    delta: np.ndarray
    mean_delta: np.ndarray
    delta_low: np.ndarray
    delta_high: np.ndarray
    t_statistic: np.ndarray
    p_value: np.ndarray
    df: list[int | None]
    test_notes: list[dict[str, str]]


def _expected_indicators(preds: np.ndarray, reference: np.ndarray, unparsed: UnparsedRule, *,
                         soft_threshold: float, soft_tie_label: float) -> np.ndarray:
    """Per cell and item: the item's share of tp, fp, fn, tn (cells × items × 4). A 0/1 reference gives 0/1 shares;
    a soft reference s gives p·s, p·(1 − s), (1 − p)·s, (1 − p)·(1 − s): expected counts. Items without a
    reference or (under "exclude") a prediction give 0 everywhere."""
    preds = _with_unparsed(preds, reference, unparsed, soft_threshold=soft_threshold, soft_tie_label=soft_tie_label)
    valid = ~np.isnan(preds) & ~np.isnan(reference)
    p = np.where(valid, preds, 0.0)
    s = np.where(valid, reference, 0.0)
    v = valid.astype(float)
    return np.stack([p * s, p * (v - s), (v - p) * s, (v - p) * (v - s)], axis=-1)


def _quantiles(values: np.ndarray, confidence: float) -> tuple[np.ndarray, np.ndarray]:
    """The percentile interval along axis 0, NaN where any resample is NaN (as ``scipy.stats.bootstrap``)."""
    alpha = (1 - confidence) / 2
    bounds = stats.quantile(np.moveaxis(values, 0, -1), np.array([alpha, 1 - alpha]), axis=-1)
    return bounds[..., 0], bounds[..., 1]


def reference_metrics(preds, references, *, base: int = 0, unparsed: UnparsedRule = "exclude",
                      metrics: tuple[str, ...] = ("kappa", "f1"), n_resamples: int = 2000, seed: int = 0,
                      confidence: float = 0.95, resample_counts: np.ndarray | None = None,
                      soft_threshold: float = 0.5, soft_tie_label: float = 1.0) -> ReferenceMetrics:
    """:func:`classification_metrics` and :func:`kappa_gap` for many references at once, vectorised.

    ``preds``: cells × items (1/0/NaN). ``references``: references × items, 0/1/NaN or soft scores in [0, 1]
    (metrics of expected counts; κ and F1 then equal scikit-learn's with each item split into a positive with
    weight s and a negative with weight 1 − s). The intervals are the paired item bootstrap of
    :func:`classification_metrics` with the same draws (:func:`bootstrap_resample_counts`, passed in to share them
    across calls), over all the audit's items at once: an item without a reference or a prediction counts 0 in the
    resample that draws it, so every cell and reference shares one set of resamples (the pairing the Δκ interval
    needs). Where every item has both, each interval equals :func:`classification_metrics`'s exactly; where some
    do not, that function resamples only the scored items and its interval differs slightly. The rules for
    undefined values and intervals are the module's. Δκ against ``base`` follows
    :func:`kappa_gap` (a reference's Δκ with itself is 0 in every cell). Under ``unparsed="wrong"`` a missing
    prediction against a soft score s is 1 − L(s), L cutting s at ``soft_threshold`` with ``soft_tie_label`` at
    it (the weighted label's threshold and tie rule; module docstring); 0/1 references are unaffected.
    """
    soft = {"soft_threshold": soft_threshold, "soft_tie_label": soft_tie_label}
    preds = np.atleast_2d(np.asarray(preds, dtype=float))
    references = np.atleast_2d(np.asarray(references, dtype=float))
    n_cells, n_items = preds.shape
    if resample_counts is None:
        resample_counts = bootstrap_resample_counts(n_items, n_resamples=n_resamples, seed=seed)
    shape = (n_cells, len(references))
    point = {name: np.full(shape, np.nan) for name in metrics}
    low = {name: np.full(shape, np.nan) for name in metrics}
    high = {name: np.full(shape, np.nan) for name in metrics}
    counts = np.zeros((*shape, 4))
    resampled_kappa = np.empty((len(resample_counts), *shape))
    notes: list[list[dict[str, str]]] = [[{} for _ in references] for _ in range(n_cells)]
    for r, reference in enumerate(references):
        indicators = _expected_indicators(preds, reference, unparsed, **soft)  # cells × items × 4
        counts[:, r] = indicators.sum(axis=1)
        flat = indicators.transpose(1, 0, 2).reshape(n_items, n_cells * 4).astype(np.float32)
        resampled = (resample_counts @ flat).astype(float).reshape(len(resample_counts), n_cells, 4)
        values = metrics_from_counts(*np.moveaxis(resampled, -1, 0))
        estimates = metrics_from_counts(*counts[:, r].T)
        resampled_kappa[:, :, r] = values["kappa"]
        scored = ((~np.isnan(_with_unparsed(preds, reference, unparsed, **soft))) & ~np.isnan(reference)).sum(axis=1)
        for name in metrics:
            point[name][:, r] = estimates[name]
            low[name][:, r], high[name][:, r] = _quantiles(values[name], confidence)
        for cell in range(n_cells):
            cell_notes = {k: v for k, v in undefined_reasons(*counts[cell, r]).items() if k in metrics}
            for name in metrics:
                if name in cell_notes:
                    cell_notes[f"{name}_ci"] = f"{name} is undefined"
                elif scored[cell] < 2:
                    cell_notes[f"{name}_ci"] = "fewer than two scored items"
                elif not np.isfinite(low[name][cell, r]) or not np.isfinite(high[name][cell, r]):
                    cell_notes[f"{name}_ci"] = f"{name} is undefined in some bootstrap resamples"
                if f"{name}_ci" in cell_notes:
                    low[name][cell, r] = high[name][cell, r] = np.nan
            notes[cell][r] = cell_notes
    n = counts.sum(axis=-1)

    kappa = metrics_from_counts(*np.moveaxis(counts, -1, 0))["kappa"]
    delta = kappa - kappa[:, [base]]
    resampled_delta = resampled_kappa - resampled_kappa[:, :, [base]]
    finite = np.isfinite(resampled_delta)
    n_finite = finite.sum(axis=1)
    with np.errstate(invalid="ignore"):
        resampled_mean = np.where(n_finite > 0, np.where(finite, resampled_delta, 0).sum(axis=1) / n_finite, np.nan)
    delta_low, delta_high = _quantiles(resampled_mean, confidence)
    mean_delta = np.array([_mean_of_finite(delta[:, r]) for r in range(len(references))])
    t_statistic, p_value = np.full(len(references), np.nan), np.full(len(references), np.nan)
    df: list[int | None] = []
    test_notes: list[dict[str, str]] = []
    for r in range(len(references)):
        cells = np.isfinite(delta[:, r])
        reasons = {}
        if r == base:
            reasons["t_test"] = "the reference the others are compared with"
            df.append(None)
        elif cells.sum() >= 2 and np.ptp(delta[cells, r]) > 0:
            test = stats.ttest_rel(kappa[cells, r], kappa[cells, base])
            t_statistic[r], p_value[r] = test.statistic, test.pvalue
            df.append(int(cells.sum()) - 1)
        else:
            df.append(None)
            reasons["t_test"] = (f"the paired t-test needs at least two cells with a defined Δκ that are not all "
                                 f"equal (there are {int(cells.sum())})")
        if not cells.any():
            reasons["mean_delta"] = "no cell has a defined Δκ"
        if not (np.isfinite(delta_low[r]) and np.isfinite(delta_high[r])):
            reasons["bootstrap"] = "no cell has a defined Δκ in some bootstrap resamples"
            delta_low[r] = delta_high[r] = np.nan
        test_notes.append(reasons)
    return ReferenceMetrics(point=point, low=low, high=high, counts=counts, n=n, notes=notes, delta=delta,
                            mean_delta=mean_delta, delta_low=delta_low, delta_high=delta_high,
                            t_statistic=t_statistic, p_value=p_value, df=df, test_notes=test_notes)
