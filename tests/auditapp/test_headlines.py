"""The headline arithmetic (auditapp.engine.headlines): the summary line, differences with their approximate CI
worked by hand, the comparison's alignment, and what cannot be compared."""
from __future__ import annotations

import math

import pytest

from auditapp.engine.headlines import Z_95, Headline, HeadlineRow, NotComparable, compare, difference


def kappa(rows) -> Headline:
    return Headline("Cohen's κ (Table 1)", "Condition", "max", tuple(rows))


def test_difference_and_its_interval_by_hand():
    # Baseline 0.40 with CI [0.30, 0.50]: se = 0.20 / 3.919928 = 0.0510213; other 0.55 [0.41, 0.69]: se = 0.0714298.
    # Δ = 0.15; half width = 1.959964 · √(0.0510213² + 0.0714298²) = 1.959964 · √0.00770539
    #                      = 1.959964 · 0.0877804 = 0.1720465.
    first = HeadlineRow("m", "zs", 0.40, 0.30, 0.50)
    other = HeadlineRow("m", "zs", 0.55, 0.41, 0.69)
    result = difference(first, other)
    assert result.value == pytest.approx(0.15)
    assert result.low == pytest.approx(0.15 - 0.1720465, abs=1e-6)
    assert result.high == pytest.approx(0.15 + 0.1720465, abs=1e-6)
    # The interval is symmetric about Δ and wider than either interval alone.
    assert result.high - result.value == pytest.approx(result.value - result.low)
    assert result.high - result.low > 0.28


def test_a_difference_without_both_intervals_has_none_and_undefined_values_give_none():
    assert difference(HeadlineRow("m", "c", 0.2), HeadlineRow("m", "c", 0.5, 0.4, 0.6)).low is None
    assert difference(HeadlineRow("m", "c", 0.2), HeadlineRow("m", "c", 0.5)).value == pytest.approx(0.3)
    assert difference(HeadlineRow("m", "c", None, note="n = 0"), HeadlineRow("m", "c", 0.5)).value is None
    assert difference(None, HeadlineRow("m", "c", 0.5)).value is None


def test_compare_aligns_rows_by_model_and_cell_and_keeps_first_seen_order():
    first = kappa([HeadlineRow("A", "zs", 0.4, 0.3, 0.5, 16), HeadlineRow("B", "zs", 0.2)])
    second = kappa([HeadlineRow("B", "zs", 0.1), HeadlineRow("C", "zs", 0.7)])
    table = compare([first, second])
    assert [(row["model"], row["cell"]) for row in table["rows"]] == [("A", "zs"), ("B", "zs"), ("C", "zs")]
    a, b, c = table["rows"]
    assert a["values"][0]["n"] == 16 and a["values"][1] is None and a["differences"][0]["value"] is None
    assert b["differences"][0]["value"] == pytest.approx(-0.1)
    assert c["values"][0] is None and c["values"][1]["value"] == 0.7


def test_headlines_of_different_measures_or_fewer_than_two_are_refused():
    bias = Headline("Mean bias score (Table 4)", "Dimension", "abs", ())
    with pytest.raises(NotComparable, match="measure different things"):
        compare([kappa([]), bias])
    with pytest.raises(NotComparable, match="two or more"):
        compare([kappa([])])


def test_summary_names_the_range_and_the_row_the_measure_points_at():
    headline = kappa([HeadlineRow("A", "zs", 0.4), HeadlineRow("A", "cot", 0.61), HeadlineRow("B", "zs", None, note="n = 0")])
    assert headline.summary() == "Cohen's κ (Table 1): 0.400 to 0.610 over 2 of 3 cells; highest 0.610 (A, cot)"
    gaps = Headline("Gap (Figure 1)", "Task", "abs", (HeadlineRow("A", "t1", 0.05), HeadlineRow("A", "t2", -0.12)))
    assert gaps.summary() == "Gap (Figure 1): -0.120 to 0.050 over 2 of 2 cells; largest in size -0.120 (A, t2)"
    assert kappa([HeadlineRow("A", "zs", None, note="n = 0")]).summary() == "Cohen's κ (Table 1): no defined value (n = 0)"


def test_a_value_that_rounds_to_zero_is_never_negative_zero():
    sense = Headline("ScoreSense (Table 7)", "Group", "abs", (HeadlineRow("vader", "PWoD", -5.8e-19),
                                                              HeadlineRow("textblob", "PWoD", -0.0004)))
    assert sense.summary() == ("ScoreSense (Table 7): 0.000 to 0.000 over 2 of 2 cells; largest in size 0.000 "
                               "(textblob, PWoD)")


def test_z_is_the_normal_quantile():
    from scipy.stats import norm
    assert math.isclose(Z_95, norm.ppf(0.975), rel_tol=1e-12)
