"""annotation.group_sums against pandas' groupby sum, bit for bit, on both of pandas' paths: group numbers that never
decrease (np.add.reduceat), and rows of groups interleaved or holding NaN (the compensated kernel); one column and
several, groups without rows."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from annotation.group_sums import group_sums


def values_and_groups(seed: int, n_rows: int, n_groups: int, ordered: bool) -> tuple[np.ndarray, np.ndarray]:
    """Values of widely different magnitudes (so the order of additions shows in the last bits) in 3 columns."""
    rng = np.random.default_rng(seed)
    values = rng.normal(size=(n_rows, 3)) * 10.0 ** rng.uniform(-4, 4, size=(n_rows, 3))
    groups = rng.integers(0, n_groups, n_rows)
    return values, np.sort(groups) if ordered else groups


@pytest.mark.parametrize("ordered", [True, False])
@pytest.mark.parametrize("seed", range(4))
def test_the_sums_are_pandas_groupby_sums(seed, ordered):
    values, groups = values_and_groups(seed, 400, 30, ordered)
    n_groups = 33  # three groups without rows
    expected = pd.DataFrame(values).groupby(groups).sum().reindex(range(n_groups), fill_value=0.0).to_numpy()
    assert np.array_equal(group_sums(groups, values, n_groups), expected)
    series = pd.Series(values[:, 0]).groupby(groups).sum().reindex(range(n_groups), fill_value=0.0).to_numpy()
    assert np.array_equal(group_sums(groups, values[:, 0], n_groups), series)


def test_the_two_paths_differ_and_nan_takes_the_kernel_which_skips_it():
    values, groups = values_and_groups(0, 400, 30, ordered=True)
    renumbered = groups * 7 % 30  # the same groups, rows in the same order, numbered out of order: the kernel
    kernel = group_sums(renumbered, values, 30)[np.arange(30) * 7 % 30]
    assert np.array_equal(kernel, pd.DataFrame(values).groupby(renumbered).sum().to_numpy()[np.arange(30) * 7 % 30])
    assert not np.array_equal(group_sums(groups, values, 30), kernel), "these values show which path was taken"
    with_nan = values.copy()
    with_nan[0, 0] = np.nan
    expected = pd.DataFrame(with_nan).groupby(groups).sum().to_numpy()
    assert np.array_equal(group_sums(groups, with_nan, 30), expected)
    assert not np.isnan(expected).any()
