"""Agreement against published examples and the reference libraries (krippendorff is a test-only dependency)."""
from __future__ import annotations

import math

import krippendorff
import numpy as np
import pandas as pd
import pytest
from sklearn.metrics import cohen_kappa_score

from annotation.agreement import agreement_summary, cohen_kappa_matrix, fleiss_kappa, krippendorff_alpha_nominal


def long_labels(matrix: list[list[float]]) -> pd.DataFrame:
    """Rows = annotators, columns = items, NaN = not labelled → one row per label."""
    rows = [(f"A{r}", f"u{c}", v) for r, row in enumerate(matrix) for c, v in enumerate(row) if not math.isnan(v)]
    return pd.DataFrame(rows, columns=["participant", "item", "value"])


nan = float("nan")
# Krippendorff (2011), "Computing Krippendorff's Alpha-Reliability", example C: 4 observers, 12 units,
# missing values; nominal alpha = 0.743.
KRIPPENDORFF_2011 = [
    [1, 2, 3, 3, 2, 1, 4, 1, 2, nan, nan, nan],
    [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, nan, 3],
    [nan, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, nan],
    [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, nan],
]
# The krippendorff package's README example; nominal alpha = 0.691.
PACKAGE_README = [
    [nan, nan, nan, nan, nan, 3, 4, 1, 2, 1, 1, 3, 3, nan, 3],
    [1, nan, 2, 1, 3, 3, 4, 3, nan, nan, nan, nan, nan, nan, nan],
    [nan, nan, 2, 1, 3, 4, 4, nan, 2, 1, 1, 3, 3, nan, 4],
]


def test_alpha_matches_krippendorff_2011_worked_example():
    assert round(krippendorff_alpha_nominal(long_labels(KRIPPENDORFF_2011)), 3) == 0.743


def test_alpha_matches_the_package_readme_example():
    assert round(krippendorff_alpha_nominal(long_labels(PACKAGE_README)), 3) == 0.691


@pytest.mark.parametrize("seed", range(12))
def test_alpha_matches_the_krippendorff_package_on_random_sparse_data(seed):
    rng = np.random.default_rng(seed)
    matrix = rng.integers(0, 2 + seed % 3, size=(3 + seed % 5, 30)).astype(float)
    matrix[rng.random(matrix.shape) < 0.4] = np.nan
    expected = krippendorff.alpha(reliability_data=matrix, level_of_measurement="nominal")
    assert krippendorff_alpha_nominal(long_labels(matrix.tolist())) == pytest.approx(expected, abs=1e-12)


def test_alpha_edge_cases():
    assert math.isnan(krippendorff_alpha_nominal(long_labels([[1, 1, 1], [1, 1, 1]])))  # one category only
    assert math.isnan(krippendorff_alpha_nominal(long_labels([[1, nan], [nan, 0]])))  # nothing pairable
    assert math.isnan(krippendorff_alpha_nominal(pd.DataFrame(columns=["participant", "item", "value"])))


# Fleiss (1971) as reproduced on Wikipedia "Fleiss' kappa": 10 subjects, 14 raters, 5 categories; kappa = 0.210.
FLEISS_TABLE = [[0, 0, 0, 0, 14], [0, 2, 6, 4, 2], [0, 0, 3, 5, 6], [0, 3, 9, 2, 0], [2, 2, 8, 1, 1],
                [7, 7, 0, 0, 0], [3, 2, 6, 3, 0], [2, 5, 3, 2, 2], [6, 5, 2, 1, 0], [0, 2, 2, 3, 7]]


def labels_from_counts(table: list[list[int]]) -> pd.DataFrame:
    rows = []
    for item, counts in enumerate(table):
        rater = 0
        for category, count in enumerate(counts):
            for _ in range(count):
                rows.append((f"r{rater}", f"s{item}", category))
                rater += 1
    return pd.DataFrame(rows, columns=["participant", "item", "value"])


def test_fleiss_kappa_matches_the_published_example():
    result = fleiss_kappa(labels_from_counts(FLEISS_TABLE))
    assert round(result.kappa, 3) == 0.210
    assert (result.n_items, result.raters_per_item, result.reason) == (10, 14, "computed")


def test_fleiss_kappa_refuses_unequal_raters_and_says_so():
    result = fleiss_kappa(long_labels(KRIPPENDORFF_2011))
    assert math.isnan(result.kappa)
    assert result.reason.startswith("not computed: raters per item vary (1–4)")


def test_cohen_kappa_matrix_over_shared_items():
    matrix = cohen_kappa_matrix(long_labels([[1, 0, 1, 1, nan], [1, 0, 0, 1, 1], [nan, nan, nan, 0, 1]]))
    # A0 vs A1 on 4 shared items: po = 3/4, pe = 3/4·2/4 + 1/4·2/4 = 1/2, kappa = (3/4 - 1/2)/(1/2) = 1/2
    assert matrix.loc["A0", "A1"] == pytest.approx(0.5) == matrix.loc["A1", "A0"]
    assert matrix.loc["A0", "A1"] == pytest.approx(cohen_kappa_score([1, 0, 1, 1], [1, 0, 0, 1]))
    assert math.isnan(matrix.loc["A0", "A2"])  # one shared item
    assert matrix.loc["A1", "A2"] == pytest.approx(cohen_kappa_score([1, 1], [0, 1]))
    assert (np.diag(matrix) == 1).all()


def _pairwise_with_scikit_learn(labels: pd.DataFrame) -> pd.DataFrame:
    """The reference: ``cohen_kappa_score`` pair by pair over shared items (NaN below two items or one category)."""
    wide = labels.pivot(index="item", columns="participant", values="value")
    out = pd.DataFrame(np.nan, index=wide.columns, columns=wide.columns)
    for a in wide.columns:
        for b in wide.columns:
            both = wide[[a, b]].dropna()
            if a == b:
                out.loc[a, b] = 1.0
            elif len(both) >= 2 and len(set(both[a]) | set(both[b])) >= 2:
                out.loc[a, b] = cohen_kappa_score(both[a].astype(int), both[b].astype(int))
    return out


@pytest.mark.parametrize("seed", range(5))
def test_cohen_kappa_matrix_is_scikit_learns_bit_for_bit_on_binary_labels(seed):
    rng = np.random.default_rng(seed)
    matrix = rng.integers(0, 2, size=(12, 40)).astype(float)
    matrix[rng.random(matrix.shape) < 0.6] = nan
    matrix[3, :] = np.where(np.isnan(matrix[3, :]), nan, 1.0)  # one annotator who only ever says 1
    labels = long_labels(matrix.tolist())
    pd.testing.assert_frame_equal(cohen_kappa_matrix(labels), _pairwise_with_scikit_learn(labels),
                                  check_exact=True, check_names=False)


def test_cohen_kappa_matrix_matches_scikit_learn_with_three_categories():
    rng = np.random.default_rng(7)
    matrix = rng.integers(-1, 2, size=(8, 30)).astype(float)
    matrix[rng.random(matrix.shape) < 0.5] = nan
    labels = long_labels(matrix.tolist())
    pd.testing.assert_frame_equal(cohen_kappa_matrix(labels), _pairwise_with_scikit_learn(labels),
                                  rtol=0, atol=1e-12, check_names=False)


def test_summary():
    summary = agreement_summary(long_labels(KRIPPENDORFF_2011))
    assert (summary["n_annotators"], summary["n_items"], summary["n_labels"]) == (4, 12, 41)
    assert round(summary["krippendorff_alpha"], 3) == 0.743 and math.isnan(summary["fleiss_kappa"])
