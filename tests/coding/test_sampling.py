"""The stratified sample of an error-analysis round (coding.sampling): hand-worked apportionments, the seeded
draw, its record and its rebuild, and properties over random strata."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from coding.sampling import (
    ALGORITHM,
    SamplingError,
    equal_allocation,
    proportional_allocation,
    sample_rebuild,
    stratified_sample,
)


def replies(sizes: dict[tuple[int, str], int]) -> pd.DataFrame:
    """Eligible replies with the given count per (model, condition), ids numbered from 1."""
    rows, next_id = [], 1
    for (model, condition), size in sizes.items():
        for _ in range(size):
            rows.append({"request_id": next_id, "model": model, "condition": condition})
            next_id += 1
    return pd.DataFrame(rows)


def test_proportional_99_over_40_35_25():
    # Quotas 99·40/100 = 39.60, 99·35/100 = 34.65, 99·25/100 = 24.75; floors 39 + 34 + 24 = 97, two seats left:
    # the largest fractional parts are .75 (the third) and .65 (the second) → 39, 35, 25.
    assert proportional_allocation([40, 35, 25], 99) == [39, 35, 25]


def test_proportional_ties_go_to_the_larger_stratum_then_the_first():
    # 7 over 2/5/7 (N 14): quotas 1, 2.5, 3.5; floors 1 + 2 + 3 = 6, one seat left; the second and third tie at .5
    # and the larger (7) takes it → 1, 2, 4.
    assert proportional_allocation([2, 5, 7], 7) == [1, 2, 4]
    # 10 over 5/5/5: quotas 3⅓ each, one seat left, three equal ties: the first stratum takes it.
    assert proportional_allocation([5, 5, 5], 10) == [4, 3, 3]


def test_equal_with_a_short_stratum_re_apportions_its_surplus():
    # 99 over 10/50/50/50: the equal share is ⌊99/4⌋ = 24; the first stratum has only 10 and gives them all; the
    # 89 left over the three others: ⌊89/3⌋ = 29 each and 89 − 87 = 2 seats one each to two of them (seeded order).
    allocation = equal_allocation([10, 50, 50, 50], 99, np.random.default_rng(0))
    assert allocation[0] == 10 and sorted(allocation[1:]) == [29, 30, 30] and sum(allocation) == 99


def test_equal_cascades_when_the_surplus_makes_another_stratum_short():
    # 120 over 5/20/100/100: share ⌊120/4⌋ = 30, both 5 and 20 are short and give all; 95 left over two: 47 each
    # and one seat → 48 and 47.
    allocation = equal_allocation([5, 20, 100, 100], 120, np.random.default_rng(1))
    assert allocation[:2] == [5, 20] and sorted(allocation[2:]) == [47, 48]


def test_equal_remainder_order_is_seeded():
    orders = {tuple(equal_allocation([9, 9, 9, 9], 10, np.random.default_rng(seed))) for seed in range(20)}
    assert all(sum(order) == 10 and sorted(order) == [2, 2, 3, 3] for order in orders)
    assert len(orders) > 1, "different seeds give the two extra seats to different strata"


def test_the_sample_follows_the_allocation_and_records_the_draw():
    eligible = replies({(1, "zs"): 40, (1, "cot"): 35, (2, "zs"): 25})
    sample = stratified_sample(eligible, n=99, allocation="proportional", seed=7)
    assert len(sample.ids) == len(set(sample.ids)) == 99
    assert set(sample.ids) <= set(eligible.request_id)
    by_id = eligible.set_index("request_id")
    drawn = by_id.loc[sample.ids].groupby(["model", "condition"]).size().to_dict()
    # Strata sort by model then condition: (1, cot) 35, (1, zs) 40, (2, zs) 25 → 34.65, 39.60, 24.75 → 35, 39, 25.
    assert drawn == {(1, "cot"): 35, (1, "zs"): 39, (2, "zs"): 25}
    draw = sample.draw
    assert draw["algorithm"] == ALGORITHM and draw["seed"] == 7 and draw["allocation"] == "proportional"
    assert draw["n"] == 99 and draw["n_eligible"] == 100 and draw["ids"] == sample.ids
    assert [(s["model"], s["condition"], s["eligible"], s["allocated"]) for s in draw["strata"]] == [
        (1, "cot", 35, 35), (1, "zs", 40, 39), (2, "zs", 25, 25)]
    assert sorted(i for s in draw["strata"] for i in s["ids"]) == sorted(sample.ids)
    assert sample.ids != sorted(sample.ids), "the display order is shuffled, not by stratum"


def test_same_seed_same_sample_whatever_the_row_order_and_another_seed_another_sample():
    eligible = replies({(1, "zs"): 60, (1, "cot"): 60, (2, "zs"): 60, (2, "cot"): 60})
    first = stratified_sample(eligible, n=30, allocation="equal", seed=123)
    shuffled = eligible.sample(frac=1, random_state=5)
    assert stratified_sample(shuffled, n=30, allocation="equal", seed=123).ids == first.ids
    assert stratified_sample(eligible, n=30, allocation="equal", seed=124).ids != first.ids


def test_rebuild_draws_the_same_sample_and_notices_a_changed_eligible_set():
    eligible = replies({(3, "zs"): 12, (3, "persona_ifl"): 7, (4, "zs"): 20})
    sample = stratified_sample(eligible, n=15, allocation="equal", seed=-5)
    assert sample_rebuild(eligible, sample.draw).ids == sample.ids
    changed = eligible[eligible.request_id != int(eligible.request_id.iloc[-1])]
    with pytest.raises(SamplingError, match="4 × zs"):
        sample_rebuild(changed, sample.draw)
    with pytest.raises(SamplingError, match="made by"):
        sample_rebuild(eligible, {**sample.draw, "algorithm": "coding.sampling/0"})


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"n": 11}, "sample size 11 is larger than the 10 eligible replies"),
    ({"n": 0}, "at least 1"),
    ({"n": 5, "allocation": "random"}, "allocation must be one of proportional, equal"),
])
def test_impossible_samples_are_refused(kwargs, message):
    eligible = replies({(1, "zs"): 6, (1, "cot"): 4})
    with pytest.raises(SamplingError, match=message):
        stratified_sample(eligible, **{"allocation": "equal", "seed": 1, **kwargs})


def test_bad_eligible_frames_are_refused():
    with pytest.raises(SamplingError, match="lack the column"):
        stratified_sample(pd.DataFrame({"request_id": [1]}), n=1, allocation="equal", seed=1)
    with pytest.raises(SamplingError, match=r"no eligible|larger than the 0"):
        stratified_sample(pd.DataFrame(columns=["request_id", "model", "condition"]), n=1, allocation="equal",
                          seed=1)
    duplicated = pd.DataFrame({"request_id": [1, 1], "model": [1, 1], "condition": ["zs", "zs"]})
    with pytest.raises(SamplingError, match="repeat"):
        stratified_sample(duplicated, n=1, allocation="equal", seed=1)


@settings(max_examples=200, deadline=None)
@given(sizes=st.lists(st.integers(min_value=1, max_value=60), min_size=1, max_size=12),
       fraction=st.floats(min_value=0.0, max_value=1.0), seed=st.integers(min_value=0, max_value=2**40))
def test_allocations_sum_to_n_fit_their_strata_and_are_fair(sizes, fraction, seed):
    total = sum(sizes)
    n = max(1, round(fraction * total))
    proportional = proportional_allocation(sizes, n)
    assert sum(proportional) == n
    for size, allocated in zip(sizes, proportional, strict=True):
        assert 0 <= allocated <= size
        assert abs(allocated - n * size / total) < 1, "within one of the quota"
    equal = equal_allocation(sizes, n, np.random.default_rng(seed))
    assert sum(equal) == n
    assert all(0 <= allocated <= size for size, allocated in zip(sizes, equal, strict=True))
    # Max–min fair: a stratum that could give more never has fewer than the largest allocation minus one.
    largest = max(equal)
    assert all(allocated >= largest - 1 for size, allocated in zip(sizes, equal, strict=True) if allocated < size)


@settings(max_examples=40, deadline=None)
@given(sizes=st.lists(st.integers(min_value=1, max_value=30), min_size=1, max_size=8),
       fraction=st.floats(min_value=0.0, max_value=1.0), seed=st.integers(min_value=0, max_value=2**31),
       allocation=st.sampled_from(["proportional", "equal"]))
def test_drawn_counts_per_stratum_equal_the_recorded_allocation(sizes, fraction, seed, allocation):
    eligible = replies({(k // 3, f"c{k % 3}"): size for k, size in enumerate(sizes)})
    n = max(1, round(fraction * len(eligible)))
    sample = stratified_sample(eligible, n=n, allocation=allocation, seed=seed)
    by_id = eligible.set_index("request_id")
    drawn = by_id.loc[sample.ids].groupby(["model", "condition"]).size().to_dict()
    recorded = {(s["model"], s["condition"]): s["allocated"] for s in sample.draw["strata"] if s["allocated"]}
    assert drawn == recorded and len(sample.ids) == n
