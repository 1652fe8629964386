"""A small BITS corpus in the public repository's file shape (github.com/PranavNV/BITS): an unnamed pandas index
column, ``Template``, ``Sentence``, ``Sentiment``, ``Class``, ``SubClass`` and one score column per tool, and a
separate control file. The sentences and scores are ours; as CSV, XLSX or JSON Lines bytes for upload tests."""
from __future__ import annotations

import csv
import io
import json

from openpyxl import Workbook

CONTROL_HEADER = ["", "Template", "Sentence", "Sentiment", "TextBlob", "VADER"]
CONTROL_ROWS = [
    ["0", "T1", "They are parents of a child.", "Neutral", "0.0", "0.0"],
    ["1", "T6", "They were vexing because of the neighbour.", "Anger", "0.0", "-0.4"],
]
PERTURBED_HEADER = ["", "Template", "Sentence", "Sentiment", "Class", "SubClass", "TextBlob", "VADER", "Google"]
PERTURBED_ROWS = [
    ["0", "T1", "They are parents of a Blind child.", "Neutral", "Disable", "Blind", "0.0", "-0.4", ""],
    ["1", "T1", "They are parents of an Autistic child.", "Neutral", "Disable", "Autistic", "0.0", "-0.1", "0.2"],
    ["2", "T6", "They were vexing because of the Deaf neighbour.", "Anger", "Disable", "Deaf", "0.0", "-0.6", "-0.9"],
    ["3", "T1", "They are parents of a Tall child.", "Neutral", "Normal", "Tall", "0.0", "0.1", "0.1"],
]


def csv_bytes(header: list[str], rows: list[list[str]]) -> bytes:
    buffer = io.StringIO()
    csv.writer(buffer, lineterminator="\n").writerows([header, *rows])
    return buffer.getvalue().encode("utf-8")


def xlsx_bytes(header: list[str], rows: list[list[str]]) -> bytes:
    """The rows in a workbook, numbers as numbers (as a spreadsheet saves them)."""
    workbook = Workbook()
    sheet = workbook.active
    sheet.append(header)
    for row in rows:
        sheet.append([_number_or_text(cell) for cell in row])
    buffer = io.BytesIO()
    workbook.save(buffer)
    return buffer.getvalue()


def _number_or_text(cell: str):
    try:
        return float(cell)
    except ValueError:
        return cell or None


def jsonl_bytes(header: list[str], rows: list[list[str]]) -> bytes:
    """One JSON object a line, numbers as numbers, an empty cell left out (as a script writing records does); the
    unnamed index column has no key to go under, so it is left out too."""
    lines = []
    for row in rows:
        record = {name: _number_or_text(cell) for name, cell in zip(header, row, strict=True) if name and cell != ""}
        lines.append(json.dumps(record, ensure_ascii=False))
    return ("\n".join(lines) + "\n").encode("utf-8")


def public_shape_files(*, fmt: str = "csv", perturbed_rows: list[list[str]] | None = None
                       ) -> tuple[tuple[str, bytes], tuple[str, bytes]]:
    """((name, bytes) of the perturbed file, (name, bytes) of the control file)."""
    make = {"csv": csv_bytes, "xlsx": xlsx_bytes, "jsonl": jsonl_bytes}[fmt]
    return ((f"Disability_Corpus.{fmt}", make(PERTURBED_HEADER, perturbed_rows or PERTURBED_ROWS)),
            (f"Standard_Corpus.{fmt}", make(CONTROL_HEADER, CONTROL_ROWS)))
