"""Workbooks written by hand for the XLSX reading tests and benchmark: what openpyxl never writes (a missing or
lying ``<dimension>``, millions of empty rows compressing to almost nothing). Pure Python, no Django."""
from __future__ import annotations

import io
import zipfile
from collections.abc import Iterable, Iterator

SHEET_PATH = "xl/worksheets/sheet1.xml"
_CHUNK_ROWS = 100_000


def workbook_with_sheet_xml(parts: Iterable[bytes]) -> bytes:
    """openpyxl's empty workbook whose first sheet's XML is ``parts`` joined, streamed into the zip (deflated)."""
    from openpyxl import Workbook

    template = io.BytesIO()
    Workbook().save(template)
    out = io.BytesIO()
    with zipfile.ZipFile(template) as source, zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as workbook:
        for name in source.namelist():
            if name != SHEET_PATH:
                workbook.writestr(name, source.read(name))
                continue
            with workbook.open(name, "w", force_zip64=True) as sheet:
                for part in parts:
                    sheet.write(part)
    return out.getvalue()


def empty_rows_xlsx(n_rows: int, *, dimension: str | None = None, numbered: bool = False) -> bytes:
    """A workbook whose first sheet has a header (id, sentence), one item, then ``n_rows`` empty rows: ``<row/>``
    (about 300 KB per 50 million) or, ``numbered``, ``<row r="n" ht="15" customHeight="1"/>`` (compressing far
    less). ``dimension`` is the ``<dimension ref>`` declared; None declares none."""
    declared = f'<dimension ref="{dimension}"/>' if dimension else ""
    head = ('<?xml version="1.0" encoding="UTF-8" standalone="yes"?>'
            '<worksheet xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main">'
            f'{declared}<sheetData>'
            '<row r="1"><c r="A1" t="inlineStr"><is><t>id</t></is></c>'
            '<c r="B1" t="inlineStr"><is><t>sentence</t></is></c></row>'
            '<row r="2"><c r="A2"><v>1</v></c><c r="B2" t="inlineStr"><is><t>One sentence.</t></is></c></row>')

    def rows() -> Iterator[bytes]:
        yield head.encode()
        for start in range(0, n_rows, _CHUNK_ROWS):
            count = min(_CHUNK_ROWS, n_rows - start)
            if numbered:
                yield "".join(f'<row r="{n}" ht="15" customHeight="1"/>'
                              for n in range(start + 3, start + 3 + count)).encode()
            else:
                yield b"<row/>" * count
        yield b"</sheetData></worksheet>"

    return workbook_with_sheet_xml(rows())
