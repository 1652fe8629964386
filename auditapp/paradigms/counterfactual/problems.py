"""What is wrong with a researcher's counterfactual material (seed 002): every problem found, named by the part
(``tasks``, ``names``, ``vignettes``, ``pools``, ``pairs``, ``spec``), the row and the column. Pure: no Django.

Validation never stops at the first problem: the parsers collect them all and raise one :class:`MaterialError`,
so a researcher fixes a file once, not once per mistake, and material with any problem is used in no part.

:func:`records_of` reads a researcher's table (CSV text or a list of objects) into numbered records. Rows are
counted as the researcher sees them: in CSV text the spreadsheet row (the header is row 1, the first
data row is row 2); in a list (a JSON spec) the entry's position from 1.
"""
from __future__ import annotations

import csv
import io
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

MAX_SHOWN_IN_MESSAGE = 5


@dataclass(frozen=True)
class MaterialProblem:
    """One problem: the part of the material, where in it (``row``, ``column``; None where it does not apply)
    and what is wrong."""

    part: str
    message: str
    row: int | None = None
    column: str | None = None

    def __str__(self) -> str:
        where = [self.part, *([f"row {self.row}"] if self.row is not None else []),
                 *([f"column '{self.column}'"] if self.column is not None else [])]
        return f"{', '.join(where)}: {self.message}"

    def as_dict(self) -> dict:
        return {"part": self.part, "row": self.row, "column": self.column, "message": self.message}


class MaterialError(ValueError):
    """The material cannot be used; ``problems`` lists every problem found."""

    def __init__(self, problems: list[MaterialProblem]):
        self.problems = list(problems)
        shown = "; ".join(str(problem) for problem in self.problems[:MAX_SHOWN_IN_MESSAGE])
        more = len(self.problems) - MAX_SHOWN_IN_MESSAGE
        super().__init__(f"{len(self.problems)} problem(s): {shown}" + (f" (and {more} more)" if more > 0 else ""))


def raise_if_any(problems: list[MaterialProblem]) -> None:
    """Raise :class:`MaterialError` with ``problems`` unless there are none."""
    if problems:
        raise MaterialError(problems)


def text_problems(value, *, part: str, row: int | None, column: str, max_chars: int,
                  required: bool = True) -> list[MaterialProblem]:
    """The problems of one text cell: not a string, empty (when ``required``), or longer than ``max_chars``."""
    if value is None or (isinstance(value, str) and not value.strip()):
        return [MaterialProblem(part, "empty", row, column)] if required else []
    if not isinstance(value, str):
        return [MaterialProblem(part, f"must be text, not {type(value).__name__}", row, column)]
    if len(value) > max_chars:
        return [MaterialProblem(part, f"{len(value)} characters; at most {max_chars}", row, column)]
    return []


def checked_text(value: object) -> str:
    """``value``, a cell :func:`text_problems` (with ``required``) found nothing wrong with, typed as the text
    it then is. Raises TypeError for anything else: a call before the check would be a bug."""
    if not isinstance(value, str):
        raise TypeError(f"expected checked text, not {type(value).__name__}")
    return value


def _csv_records(text: str) -> tuple[list[tuple[int, dict[str, Any]]], list[str] | None]:
    """The data rows of CSV text as (spreadsheet row, {lower-cased header: cell}) and the header (None when the
    text is empty)."""
    reader = csv.reader(io.StringIO(text.lstrip("\ufeff")))
    header = next(reader, None)
    if header is None:
        return [], None
    columns = [cell.strip().lower() for cell in header]
    records = [(row, {**dict(zip(columns, cells, strict=False)),
                      **({EXTRA_CELLS: len(cells) - len(columns)} if len(cells) > len(columns) else {})})
               for row, cells in enumerate(reader, start=2) if any(cell.strip() for cell in cells)]
    return records, columns


EXTRA_CELLS = "\x00extra cells"
"""Marks a CSV row with more cells than its header (never a column name: a header cell is text)."""


def is_list(source: object) -> bool:
    """A JSON list (or tuple): what a part given as entries must be."""
    return isinstance(source, list | tuple)


def records_of(source: str | Sequence[object], *, part: str, columns: Sequence[str],
               optional: Sequence[str] = ()) -> tuple[list[tuple[int, dict[str, Any]]], list[MaterialProblem]]:
    """Numbered records of CSV text (spreadsheet rows, header = row 1) or of a list (entries from 1), keys
    lower-cased, and the problems of their shape: an empty file, an entry that is not an object, an unknown
    column, a required column that no record has (once each)."""
    problems: list[MaterialProblem] = []
    records: list[tuple[int, dict[str, Any]]]
    if isinstance(source, str):
        records, header = _csv_records(source)
        if header is None:
            return [], [MaterialProblem(part, "the file is empty")]
        present = set(header)
        problems += [MaterialProblem(part, f"{record.pop(EXTRA_CELLS)} cell(s) beyond the header's "
                                           f"{len(header)} columns", row)
                     for row, record in records if EXTRA_CELLS in record]
    elif not is_list(source):
        return [], [MaterialProblem(part, f"must be CSV text or a list of objects with {list(columns)}, not "
                                          f"{type(source).__name__}")]
    else:
        records = []
        for row, entry in enumerate(source, start=1):
            if isinstance(entry, Mapping):
                records.append((row, {str(key).strip().lower(): value for key, value in entry.items()}))
            else:
                problems.append(MaterialProblem(part, f"must be an object with {list(columns)}", row))
        present = set().union(*(record.keys() for _, record in records)) if records else set(columns)
    problems += [MaterialProblem(part, f"unknown column; expected {list(columns)}", None, column)
                 for column in sorted(present - set(columns) - set(optional)) if column]
    problems += [MaterialProblem(part, "missing column", None, column) for column in columns
                 if column not in present]
    return records, problems
