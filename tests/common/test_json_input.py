"""JSON read with a bound on its nesting."""
from __future__ import annotations

import pytest

from common.json_input import MAX_JSON_DEPTH, JSONTooDeepError, json_depth, json_loads_bounded


def test_depth_counts_arrays_and_objects():
    assert [json_depth(v) for v in (1, "x", None, [], {}, [1, {"a": [2]}], {"a": {"b": {}}})] == [0, 0, 0, 1, 1, 3, 3]


def test_depth_of_data_deeper_than_the_recursion_limit_is_counted_without_recursing():
    deep: list = []
    for _ in range(50_000):
        deep = [deep]
    assert json_depth(deep) == 50_001


def test_nesting_up_to_the_bound_is_read_and_beyond_it_refused():
    at_bound = "[" * MAX_JSON_DEPTH + "]" * MAX_JSON_DEPTH
    assert json_depth(json_loads_bounded(at_bound)) == MAX_JSON_DEPTH
    with pytest.raises(JSONTooDeepError, match="nested more than 64 levels"):
        json_loads_bounded("[" + at_bound + "]")


@pytest.mark.parametrize("text", ["[" * 100_000 + "]" * 100_000, '{"a":' * 100_000 + "1" + "}" * 100_000,
                                  "[" * 100_000])
def test_text_nested_100000_deep_is_refused_not_a_recursion_error(text):
    with pytest.raises(JSONTooDeepError) as caught:
        json_loads_bounded(text)
    assert isinstance(caught.value, ValueError)


def test_options_are_passed_to_the_parser():
    assert json_loads_bounded('{"a": 1.5}', parse_float=str) == {"a": "1.5"}
