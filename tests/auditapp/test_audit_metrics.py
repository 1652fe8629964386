"""Audit metrics from 2×2 counts equal scikit-learn's; bootstrap CIs; the Δκ tests (scipy); every metric
undefined (NaN with its reason, never 0) over zero items and in each degenerate case."""
from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from scipy import stats
from sklearn.metrics import accuracy_score, cohen_kappa_score, f1_score, precision_score, recall_score

from auditapp.audit_metrics import (
    METRICS,
    classification_metrics,
    confusion_counts,
    kappa_gap,
    metrics_from_counts,
    undefined_reasons,
    without_float_noise,
)


def sklearn_metrics(pred, ref) -> dict[str, float]:
    return {"kappa": cohen_kappa_score(ref, pred), "f1": f1_score(ref, pred, zero_division=0),
            "precision": precision_score(ref, pred, zero_division=0),
            "recall": recall_score(ref, pred, zero_division=0), "accuracy": accuracy_score(ref, pred)}


@pytest.mark.parametrize("seed", range(10))
def test_point_estimates_equal_scikit_learn(seed):
    rng = np.random.default_rng(seed)
    ref = rng.integers(0, 2, 200)
    pred = np.where(rng.random(200) < 0.7, ref, 1 - ref)
    result = classification_metrics(pred, ref, n_resamples=200, seed=seed)
    expected = sklearn_metrics(pred, ref)
    for name, value in expected.items():
        assert getattr(result, name) == pytest.approx(value, abs=1e-12), name
        low, high = result.ci[name]
        assert low <= getattr(result, name) <= high


def test_a_hand_worked_table():
    # tp=3, fp=1, fn=2, tn=4 (n=10): accuracy 7/10, precision 3/4, recall 3/5, F1 6/9,
    # p_e = (4·5 + 6·5)/100 = 0.5, kappa = (0.7 − 0.5)/0.5 = 0.4
    values = {k: float(v) for k, v in metrics_from_counts(3, 1, 2, 4).items()}
    assert values == pytest.approx({"kappa": 0.4, "f1": 6 / 9, "precision": 0.75, "recall": 0.6, "accuracy": 0.7})


def test_unparsed_replies_excluded_or_counted_wrong():
    ref = np.array([1, 1, 0, 0, 1, 0, np.nan])
    pred = np.array([1, np.nan, 0, 1, 1, np.nan, 1])
    excluded = classification_metrics(pred, ref, n_resamples=100)
    assert (excluded.n, excluded.n_items, excluded.n_unparsed, excluded.unparsed) == (4, 6, 2, "exclude")
    assert excluded.coverage == pytest.approx(4 / 6)
    assert excluded.accuracy == pytest.approx(accuracy_score([1, 0, 0, 1], [1, 0, 1, 1]))
    wrong = classification_metrics(pred, ref, unparsed="wrong", n_resamples=100)
    assert wrong.n == 6 and wrong.accuracy == pytest.approx(3 / 6)
    assert wrong.kappa == pytest.approx(cohen_kappa_score([1, 1, 0, 0, 1, 0], [1, 0, 0, 1, 1, 1]))


def test_bootstrap_is_seeded_and_undefined_kappa_is_nan():
    rng = np.random.default_rng(3)
    ref = rng.integers(0, 2, 80)
    pred = np.where(rng.random(80) < 0.8, ref, 1 - ref)
    assert classification_metrics(pred, ref, seed=5).ci == classification_metrics(pred, ref, seed=5).ci
    assert classification_metrics(pred, ref, seed=5).ci != classification_metrics(pred, ref, seed=6).ci
    constant = classification_metrics(np.ones(10), np.ones(10), n_resamples=50)
    assert math.isnan(constant.kappa) and constant.accuracy == 1.0 and math.isnan(constant.ci["kappa"][0])


def test_kappa_gap_t_test_equals_scipy_and_bootstrap_brackets_the_mean():
    rng = np.random.default_rng(0)
    items = 150
    weighted = rng.integers(0, 2, items).astype(float)
    majority = np.where(rng.random(items) < 0.9, weighted, 1 - weighted)
    majority[:5] = np.nan  # majority ties: left out of κ(majority)
    preds = np.array([np.where(rng.random(items) < q, majority, 1 - majority) for q in (0.6, 0.7, 0.8, 0.9)])
    preds[0, :10] = np.nan  # unparsed replies
    gap = kappa_gap(preds, majority, weighted, n_resamples=300)
    expected_m = [cohen_kappa_score(majority[ok], p[ok]) for p in preds
                  if (ok := ~np.isnan(p) & ~np.isnan(majority)).any()]
    expected_w = [cohen_kappa_score(weighted[ok], p[ok]) for p in preds if (ok := ~np.isnan(p)).any()]
    assert gap.delta == pytest.approx(np.subtract(expected_m, expected_w))
    t = stats.ttest_rel(expected_m, expected_w)
    assert (gap.t_statistic, gap.p_value, gap.df) == pytest.approx((t.statistic, t.pvalue, 3))
    assert gap.bootstrap_ci[0] <= gap.mean_delta <= gap.bootstrap_ci[1]


# ---------------------------------------------------------------- metrics over nothing are undefined, never 0

def sklearn_undefined_as_nan(pred, ref) -> dict[str, float]:
    """scikit-learn with every undefined value NaN (zero_division=np.nan, replace_undefined_by=np.nan): the
    convention of audit_metrics. scikit-learn's default gives 0 with a warning instead."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return {"kappa": cohen_kappa_score(ref, pred, labels=[0, 1], replace_undefined_by=np.nan),
                "f1": f1_score(ref, pred, zero_division=np.nan),
                "precision": precision_score(ref, pred, zero_division=np.nan),
                "recall": recall_score(ref, pred, zero_division=np.nan),
                "accuracy": accuracy_score(ref, pred)}


# (predictions, reference, the metrics that must be undefined and a word of each reason)
DEGENERATE = {
    "no predicted positives": ([0, 0, 0, 0, 0, 0], [1, 0, 1, 0, 0, 0], {"precision": "no predicted positives"}),
    "no reference positives": ([1, 0, 1, 0, 0, 0], [0, 0, 0, 0, 0, 0], {"recall": "no reference positives"}),
    "no positives anywhere": ([0, 0, 0, 0], [0, 0, 0, 0],
                              {"precision": "no predicted positives", "recall": "no reference positives",
                               "f1": "no positives in the predictions nor in the reference",
                               "kappa": "one class only (0)"}),
    "all positive on both sides": ([1, 1, 1], [1, 1, 1], {"kappa": "one class only (1)"}),
    "precision and recall both 0": ([1, 0, 1, 0], [0, 1, 0, 1], {}),
}


@pytest.mark.parametrize("case", DEGENERATE)
def test_each_degenerate_case_is_undefined_with_its_reason_and_equals_scikit_learn(case):
    pred, ref, undefined = DEGENERATE[case]
    result = classification_metrics(np.array(pred, float), np.array(ref, float), n_resamples=100)
    expected = sklearn_undefined_as_nan(pred, ref)
    for name in METRICS:
        value = getattr(result, name)
        if name in undefined:
            assert math.isnan(value) and math.isnan(expected[name]), name
            assert undefined[name] in result.notes[name]
            assert all(math.isnan(bound) for bound in result.ci[name])
            assert result.notes[f"{name}_ci"] == f"{name} is undefined"
        else:
            assert value == pytest.approx(expected[name], abs=1e-12), name
            assert name not in result.notes
    counts = confusion_counts(np.array(pred), np.array(ref))
    assert set(undefined_reasons(*(int(c) for c in counts))) == set(undefined)


def test_f1_is_zero_not_undefined_when_one_side_has_positives():
    # tp = 0, fp = 0, fn = 2: precision undefined, recall 0; F1 = 2·0 / (0 + 0 + 2) = 0, as scikit-learn says.
    values = {k: float(v) for k, v in metrics_from_counts(0, 0, 2, 4).items()}
    assert math.isnan(values["precision"]) and values["recall"] == 0 and values["f1"] == 0
    assert values["kappa"] == 0  # p_o = p_e = 4/6


def test_every_metric_is_undefined_at_n_zero_with_the_reason():
    no_reference = classification_metrics(np.array([1.0, 0.0, np.nan]), np.full(3, np.nan), n_resamples=100)
    assert (no_reference.n, no_reference.n_items) == (0, 0) and math.isnan(no_reference.coverage)
    for name in METRICS:
        assert math.isnan(getattr(no_reference, name)), name
        assert no_reference.notes[name] == "no items with a reference label"
        assert all(math.isnan(bound) for bound in no_reference.ci[name])
    assert no_reference.notes["coverage"] == "no items with a reference label"
    all_unparsed = classification_metrics(np.full(4, np.nan), np.array([1.0, 0.0, 1.0, 0.0]), n_resamples=100)
    assert (all_unparsed.n, all_unparsed.n_items, all_unparsed.coverage) == (0, 4, 0.0)
    for name in METRICS:
        assert math.isnan(getattr(all_unparsed, name))
        assert all_unparsed.notes[name] == "no item with a reference label got a parsed label (4 unparsed, excluded)"
    # Counted as wrong instead, the same replies give defined metrics: every one is wrong.
    wrong = classification_metrics(np.full(4, np.nan), np.array([1.0, 0.0, 1.0, 0.0]), unparsed="wrong",
                                   n_resamples=100)
    assert (wrong.accuracy, wrong.f1, wrong.precision, wrong.recall) == (0.0, 0.0, 0.0, 0.0)
    assert wrong.kappa == pytest.approx(cohen_kappa_score([1, 0, 1, 0], [0, 1, 0, 1]))
    zero = {k: float(v) for k, v in metrics_from_counts(0, 0, 0, 0).items()}
    assert all(math.isnan(v) for v in zero.values())


def test_a_ci_is_undefined_when_the_metric_is_undefined_in_some_resamples():
    # One predicted positive in 12 items: most resamples leave it out, where precision is undefined.
    pred = np.array([1.0] + [0.0] * 11)
    ref = np.array([1.0, 1.0] + [0.0] * 10)
    result = classification_metrics(pred, ref, n_resamples=200)
    assert result.precision == 1.0
    assert all(math.isnan(bound) for bound in result.ci["precision"])
    assert result.notes["precision_ci"] == "precision is undefined in some bootstrap resamples"
    one_item = classification_metrics(np.array([1.0]), np.array([1.0]), n_resamples=100)
    assert one_item.accuracy == 1.0 and one_item.notes["accuracy_ci"] == "fewer than two scored items"


def test_delta_kappa_is_undefined_where_either_kappa_is():
    items = 40
    rng = np.random.default_rng(1)
    weighted = rng.integers(0, 2, items).astype(float)
    majority = weighted.copy()
    majority[:4] = 1 - majority[:4]
    preds = np.array([np.where(rng.random(items) < 0.8, weighted, 1 - weighted),
                      np.where(rng.random(items) < 0.7, weighted, 1 - weighted),
                      np.zeros(items)])  # the third cell answers 0 everywhere …
    weighted_one_class = weighted.copy()
    weighted_one_class[weighted == 1] = np.nan  # … against a weighted reference holding only 0s
    gap = kappa_gap(preds, majority, weighted_one_class, n_resamples=100)
    assert math.isnan(gap.delta[2]) and np.isfinite(gap.delta[:2]).all()
    assert gap.cell_notes[:2] == ["", ""]
    assert gap.cell_notes[2] == ("κ(weighted) is undefined: predictions and reference hold one class only (0): "
                                 "expected agreement is 1")
    assert gap.df == 1 and "t_test" not in gap.notes
    only_one = kappa_gap(preds[[0, 2]], majority, weighted_one_class, n_resamples=100)
    assert math.isnan(only_one.t_statistic) and only_one.df is None
    assert only_one.notes["t_test"] == "the paired t-test needs at least two cells with a defined Δκ (there is 1)"
    assert only_one.mean_delta == pytest.approx(only_one.delta[0])
    nothing = kappa_gap(preds, majority, np.full(items, np.nan), n_resamples=100)
    assert np.isnan(nothing.delta).all() and math.isnan(nothing.mean_delta)
    assert all(math.isnan(bound) for bound in nothing.bootstrap_ci)
    assert nothing.notes["mean_delta"].startswith("no cell has a defined Δκ")
    assert nothing.cell_notes[0] == ("κ(weighted) is undefined: no items with both a reference label and a "
                                     "parsed label")


def test_a_difference_within_float_noise_of_zero_is_stored_as_zero():
    # κ against two references that agree can differ by rounding alone (−1.1e-16 was shown as a value).
    assert without_float_noise([-1.1e-16, 3e-13, 0.25, -0.5]).tolist() == [0.0, 0.0, 0.25, -0.5]
    assert np.isnan(without_float_noise([np.nan])[0])
    preds = np.array([[1, 0, 1, 0, 1, 1], [0, 0, 1, 1, 1, 0]], dtype=float)
    reference = np.array([1, 0, 1, 1, 0, 1], dtype=float)
    gap = kappa_gap(preds, reference, reference.copy(), n_resamples=100)
    assert gap.delta.tolist() == [0.0, 0.0] and gap.mean_delta == 0.0
