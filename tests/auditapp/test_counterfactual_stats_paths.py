"""The counterfactual statistics' fast paths against the general ones they stand in for: integer keys coded by
marking which occur (:func:`stats._dense_codes`) against ``np.unique`` and a wide range's sort or hash, pair ids
taken as their own combined codes against the combined key factorised, and the completion's counts over codes
against the pandas group-by they replaced; on random frames with missing values, ties and shuffled rows."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from auditapp.paradigms.counterfactual import stats
from tests.auditapp.counterfactual_frames import dialect_frame, names_frame

FLOATS = {"rtol": 1e-12, "atol": 1e-12}


def shuffled(frame: pd.DataFrame, seed: int) -> pd.DataFrame:
    return frame.iloc[np.random.default_rng(seed).permutation(len(frame))].reset_index(drop=True)


def assert_same_cells(found: pd.DataFrame, expected: pd.DataFrame) -> None:
    pd.testing.assert_frame_equal(found, expected, check_exact=False, **FLOATS)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_dense_codes_are_np_unique(seed):
    rng = np.random.default_rng(seed)
    for values in (rng.integers(-50, 50, size=1000), rng.integers(10**9, 10**9 + 3000, size=800),
                   rng.integers(0, 100, size=300).astype(np.int32),
                   np.repeat(rng.integers(0, 10, size=30), 7), np.array([5])):
        uniques, inverse = np.unique(values, return_inverse=True)
        found = stats._dense_codes(values)
        assert found is not None
        np.testing.assert_array_equal(found[0], uniques)
        assert found[0].dtype == uniques.dtype
        np.testing.assert_array_equal(found[1], inverse)
    assert stats._dense_codes(np.array([0, 10**12])) is None  # too wide: the caller sorts or hashes
    assert stats._dense_codes(np.array([], dtype=np.int64)) is None
    assert stats._dense_codes(np.array([0.5, 1.5])) is None


@pytest.mark.parametrize("seed", [3, 4])
def test_combined_codes_group_the_same_rows_whether_pairs_are_unique_or_shared(seed):
    rng = np.random.default_rng(seed)
    outer = rng.integers(0, 6, size=2000)
    unique_pairs = np.arange(2000) // 2  # every pair in one outer group ...
    outer_of_pair = outer[::2].repeat(2)
    shared = rng.integers(0, 40, size=2000)  # ... or pairs shared across the outer groups
    for inner, outer_codes in ((unique_pairs, outer_of_pair), (shared, outer)):
        codes, n = stats._combined_codes(outer_codes, inner, int(inner.max()) + 1)
        reference, keys = pd.factorize(outer_codes * (int(inner.max()) + 1) + inner)
        assert n == len(keys)
        # The same partition of the rows (the codes may be numbered otherwise).
        assert len(set(zip(codes.tolist(), reference.tolist(), strict=True))) == n


@pytest.mark.parametrize("seed", [5, 6])
def test_names_cells_are_the_same_over_compact_wide_and_text_pair_ids(seed):
    frame = shuffled(names_frame(models=3, tasks=4, iterations=6, missing=0.15, seed=seed), seed)
    frame.loc[frame.index[:40], "y"] = 1.0  # ties
    compact = stats.names_cells(frame)
    wide = frame.assign(pair=frame["pair"] * 10**9 + 7)  # a range too wide to mark: hashed
    text = frame.assign(pair=frame["pair"].astype(str))
    shared = frame.assign(pair=frame["pair"] % (6 * 30))  # iteration × 30 + pair: repeated in every model × task
    for other in (wide, text, shared):
        assert_same_cells(stats.names_cells(other), compact)
    assert compact["n_pairs_dropped"].sum() > 0 and compact["p"].notna().all()


@pytest.mark.parametrize("seed", [7, 8])
def test_dialect_cells_are_the_same_over_categorical_and_text_pairs(seed):
    frame = shuffled(dialect_frame(models=3, tasks=3, iterations=20, missing=0.1, seed=seed), seed)
    expected = stats.dialect_cells(frame)
    assert_same_cells(stats.dialect_cells(frame.assign(pair=frame["pair"].astype(str))), expected)
    assert_same_cells(stats.dialect_cells(frame.assign(pair=frame["pair"].cat.codes.astype(np.int64) * 10**10)),
                      expected)


def groupby_rows_and_labelled(frame: pd.DataFrame) -> pd.DataFrame:
    """The pandas group-by :func:`stats._rows_and_labelled` replaced."""
    keys = ["model", "task"]
    replied = frame["y"].notna().groupby([frame["model"], frame["task"]], observed=True, sort=False).agg(
        n_rows="size", n_labelled="sum")
    replied.index = pd.MultiIndex.from_arrays(
        [replied.index.get_level_values(key).astype(object) for key in keys], names=keys)
    return replied


def random_completion_frame(seed: int, *, categorical: bool) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    n = 5000
    model = rng.choice(["m-b", "m-a", "m-c"], size=n)
    task = rng.choice(["warm", "cold", "lazy", "never"], size=n, p=[0.5, 0.3, 0.2, 0.0])
    y = rng.integers(0, 2, size=n).astype(float)
    y[rng.random(n) < 0.2] = np.nan
    frame = pd.DataFrame({"model": model, "task": task, "y": y,
                          "reason": np.where(np.isnan(y), rng.choice(["refused", "", "index absent"], size=n), "")})
    frame.loc[frame.index[:25], "model"] = None  # a row of no model counts in no cell
    if categorical:
        frame["model"] = pd.Categorical(frame["model"], categories=["m-c", "m-a", "m-b", "unused"])
        frame["task"] = pd.Categorical(frame["task"], categories=["cold", "warm", "lazy", "never"])
    return frame


@pytest.mark.parametrize("categorical", [False, True])
@pytest.mark.parametrize("seed", [9, 10])
def test_the_completion_counts_are_the_groupbys(seed, categorical):
    frame = random_completion_frame(seed, categorical=categorical)
    found = stats._rows_and_labelled(frame)
    expected = groupby_rows_and_labelled(frame)
    pd.testing.assert_frame_equal(found.sort_index(), expected.sort_index(), check_dtype=False)
    assert found["n_rows"].sum() == len(frame) - 25

    targets = (frame.dropna(subset=["model"]).astype({"model": object, "task": object})
               .groupby(["model", "task"]).size().rename("n_texts_asked").reset_index())
    targets["n_texts_asked"] += 3
    targets["n_texts_failed_requests"] = 1
    for table in stats.completion(frame, targets):
        assert len(table) and table.notna().all().all()
