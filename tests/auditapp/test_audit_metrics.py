"""Audit metrics from 2×2 counts equal scikit-learn's; bootstrap CIs; the Δκ tests (scipy)."""
from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats
from sklearn.metrics import accuracy_score, cohen_kappa_score, f1_score, precision_score, recall_score

from auditapp.audit_metrics import classification_metrics, kappa_gap, metrics_from_counts


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
