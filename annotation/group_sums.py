"""pandas' groupby sum on numpy arrays, for the ports of crowd-kit's models (:mod:`annotation.glad`,
:mod:`annotation.dawid_skene`) that must add up as crowd-kit's pandas code does. Pure numpy and pandas.

pandas 3.1's ``groupby(...).sum()`` of floats takes one of two paths (``BaseGrouper._cython_operation``): when the
rows' group numbers never decrease (each group's rows together, in the order of the groups) and the values hold no
NaN, ``np.add.reduceat`` over each group's run of rows (its first value plus the pairwise sum of the others);
otherwise the compiled kernel ``pandas._libs.groupby.group_sum``, which adds each group's values in row order with
compensated (Kahan) summation, skipping NaN. :func:`group_sums` takes the same path on the same group numbers, so
its sums are pandas' to the bit, without the frame and grouper around them (about half a millisecond a call, most of
what crowd-kit's fits spend). ``np.bincount`` would be as fast but adds plainly: a sum of three terms or more can
then differ from crowd-kit's in the last bit, and scipy's conjugate gradients in GLAD carry such differences on to
about 1e-6 relative in the fitted parameters (measured on random studies).

The kernel is pandas' private API: requirements.txt pins pandas, and tests/annotation/test_group_sums.py checks
:func:`group_sums` against ``groupby().sum()`` on both paths, so an upgrade that changes either fails there first.
"""
from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

# pandas-stubs ship no stubs for pandas._libs.groupby (pandas' own .pyi types group_sum as called below)
from pandas._libs import groupby as libgroupby  # type: ignore[attr-defined]

Array = NDArray[np.float64]


def ordered(groups: NDArray[np.intp]) -> bool:
    """Whether the group numbers never decrease along the rows: with values free of NaN, pandas then sums by
    ``np.add.reduceat``, and its result frame holds each column's values together (the kernel's, each row's)."""
    return bool(np.all(groups[1:] >= groups[:-1]))


def group_sums(groups: NDArray[np.intp], values: Array, n_groups: int) -> Array:
    """Each group's sum of ``values`` as pandas' groupby sum computes it, ``groups[i]`` being row i's group number
    as pandas numbers them (sorted keys for ``sort=True``, order of appearance for ``sort=False``: it chooses the
    path). ``values`` has one value a row, or a row of values summed column by column; the sums are (groups,) or
    (groups, columns), 0 for a group without rows."""
    columns = values.reshape(len(values), -1)
    sums = np.zeros((n_groups, columns.shape[1]))
    if len(groups) and ordered(groups) and not np.isnan(columns).any():
        starts = np.flatnonzero(np.r_[True, groups[1:] != groups[:-1]])
        sums[groups[starts]] = np.add.reduceat(columns, starts, axis=0)
    else:
        libgroupby.group_sum(sums, np.zeros(n_groups, dtype=np.int64), columns, groups, None)
    return sums.reshape((n_groups, *values.shape[1:]))
