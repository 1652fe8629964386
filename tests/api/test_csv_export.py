"""CSV cells and chunked streaming."""
from __future__ import annotations

import csv
import datetime as dt
import io

from common.api.csv_export import ROWS_PER_CHUNK, CSVRenderer, csv_cell, csv_chunks


def test_cells():
    when = dt.datetime(2026, 1, 2, 3, 4, 5, 600, tzinfo=dt.timezone(dt.timedelta(hours=2)))
    assert csv_cell(when) == "2026-01-02T01:04:05.000600Z"
    assert csv_cell(None) == ""
    assert csv_cell({"b": 1, "a": "é"}) == '{"a": "é", "b": 1}'
    assert csv_cell(-1) == -1


def test_formula_like_text_is_neutralised_and_numbers_are_not():
    text = "".join(csv_chunks(["=header", "n"], [("=1+1", -1), ("-0.25", -0.25), ("@x", 3)]))
    assert list(csv.reader(io.StringIO(text))) == [["'=header", "n"], ["'=1+1", "-1"], ["-0.25", "-0.25"],
                                                   ["'@x", "3"]]
    assert CSVRenderer().render({"detail": "-x"}) == b"detail\n\"'-x\"\n"


def test_every_text_cell_is_quoted_so_another_separator_cannot_split_off_a_formula():
    # Excel in a locale whose list separator is ";" would split an unquoted ok;=HYPERLINK(...) into two cells.
    text = "".join(csv_chunks(["text", "n"], [("ok;=HYPERLINK(1)", 2), ("tab\t@x", 0.5)]))
    assert text == 'text,n\n"ok;=HYPERLINK(1)",2\n"tab\t@x",0.5\n'


def test_rows_are_streamed_in_chunks_and_quoted():
    rows = ((i, f"text, with comma and \"quotes\" {i}", "line\nbreak") for i in range(2 * ROWS_PER_CHUNK + 5))
    chunks = list(csv_chunks(["n", "text", "multi"], rows))
    assert len(chunks) == 3
    parsed = list(csv.reader(io.StringIO("".join(chunks))))
    assert parsed[0] == ["n", "text", "multi"]
    assert parsed[-1] == [str(2 * ROWS_PER_CHUNK + 4), f'text, with comma and "quotes" {2 * ROWS_PER_CHUNK + 4}',
                          "line\nbreak"]
    assert len(parsed) == 1 + 2 * ROWS_PER_CHUNK + 5


def test_renderer_for_objects_pages_and_errors():
    renderer = CSVRenderer()
    assert renderer.render({"detail": "Not found."}) == b'detail\n"Not found."\n'
    page = {"count": 2, "results": [{"a": 1}, {"a": 2, "b": 3}]}
    assert renderer.render(page) == b'a,b\n1,""\n2,3\n'
    assert renderer.render(None) == b""
