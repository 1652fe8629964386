"""The bounded XLSX reader (annotation.xlsx_input): values as openpyxl reads them, and every limit holding whatever
the file declares, asserted on what was read (bytes inflated, rows, memory), not on time."""
from __future__ import annotations

import datetime as dt
import io
import tracemalloc
import zipfile

import pytest
from openpyxl import Workbook, load_workbook

from annotation import xlsx_input
from annotation.item_files import ItemFileError, parse_item_file, precheck_item_file, read_table_records
from annotation.xlsx_input import FirstSheet, XlsxError
from tests.xlsx_files import SHEET_PATH, empty_rows_xlsx, workbook_with_sheet_xml

HEADER = ('<row r="1"><c r="A1" t="inlineStr"><is><t>id</t></is></c>'
          '<c r="B1" t="inlineStr"><is><t>sentence</t></is></c></row>')
WHEN = dt.datetime(2024, 2, 29, 13, 45)  # noqa: DTZ001 - a spreadsheet's dates have no time zone


def sheet_xlsx(rows_xml: str, *, before_data: str = "", prolog: str = "") -> bytes:
    return workbook_with_sheet_xml([(
        f'<?xml version="1.0" encoding="UTF-8"?>{prolog}'
        '<worksheet xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main">'
        f'{before_data}<sheetData>{rows_xml}</sheetData></worksheet>').encode()])


def read_rows(content: bytes) -> list[tuple[int, list]]:
    with FirstSheet(content) as sheet:
        return list(sheet.rows())


def refusal(content: bytes) -> XlsxError:
    with pytest.raises(XlsxError) as caught, FirstSheet(content) as sheet:
        list(sheet.rows())
    return caught.value


@pytest.mark.parametrize("epoch_1904", [False, True])
def test_values_are_those_openpyxl_gives_in_read_only_mode(epoch_1904):
    workbook = Workbook()
    if epoch_1904:
        from openpyxl.utils.datetime import CALENDAR_MAC_1904
        workbook.epoch = CALENDAR_MAC_1904
    sheet = workbook.active
    sheet.append(["id", "sentence", "score", "when", "flag"])
    sheet.append([1, "Café ‘quoted’", 0.25, WHEN, True])
    sheet.append(["x2", None, -1, dt.date(1999, 12, 31), False])
    sheet.append([3, "  spaced  ", 1e-9, dt.time(8, 30), "#N/A"])
    sheet["H6"] = "far"
    sheet["B7"] = 12345678901234
    buffer = io.BytesIO()
    workbook.save(buffer)
    expected_sheet = load_workbook(io.BytesIO(buffer.getvalue()), read_only=True, data_only=True).worksheets[0]
    expected_sheet.reset_dimensions()
    expected = [(n, list(values)) for n, values in enumerate(expected_sheet.iter_rows(values_only=True), start=1)
                if values]
    assert read_rows(buffer.getvalue()) == expected
    assert expected[1][1][3] == WHEN and expected[4] == (6, [None] * 7 + ["far"])


def test_a_zip_bomb_sheet_is_refused_before_any_of_its_xml_is_inflated(inflated):
    # The probe's file, smaller: no <dimension>, then two million <row/> deflated to 18 KB.
    content = empty_rows_xlsx(2_000_000)
    assert len(content) < 30_000
    inflated.clear()
    with pytest.raises(XlsxError) as caught:
        FirstSheet(content)
    message = str(caught.value)
    assert message.startswith("the first sheet ('Sheet') (xl/worksheets/sheet1.xml) inflates from ")
    assert "to 12,000,378 bytes (" in message and "may inflate at most 100 times" in message
    assert sum(inflated) < 10_000   # the content types, the workbook and its relationships: no sheet XML


@pytest.mark.parametrize("read", [
    lambda content: precheck_item_file(content, file_format="xlsx"),
    lambda content: parse_item_file(content, file_format="xlsx"),
    lambda content: read_table_records(content, file_format="xlsx"),
], ids=["request check", "item import", "annotator and corpus tables"])
def test_every_reading_of_a_workbook_refuses_the_zip_bomb(read, inflated):
    content = empty_rows_xlsx(2_000_000)
    inflated.clear()
    with pytest.raises(ItemFileError) as caught:
        read(content)
    [problem] = caught.value.problems
    assert "the first sheet ('Sheet')" in problem.message and "at most 100 times" in problem.message
    assert sum(inflated) < 10_000


def test_a_workbook_inflating_past_the_total_bound_is_refused(monkeypatch):
    monkeypatch.setattr(xlsx_input, "MAX_UNCOMPRESSED_BYTES", 5_000)
    with pytest.raises(XlsxError, match=r"^the workbook inflates to [\d,]+ bytes \(the first sheet \('Sheet'\): "
                                        r"[\d,]+\); at most 5,000 are read"):
        FirstSheet(sheet_xlsx(HEADER))


def test_a_lying_dimension_over_empty_rows_stops_at_the_row_limit(monkeypatch):
    monkeypatch.setattr(xlsx_input, "MAX_ROWS", 1_000)
    content = empty_rows_xlsx(100_000, numbered=True, dimension="A1:B2")   # inflates 16 times: not a bomb
    sheet_size = zipfile.ZipFile(io.BytesIO(content)).getinfo(SHEET_PATH).file_size
    with FirstSheet(content) as sheet:
        sheet.check_declared_size()
        with pytest.raises(XlsxError) as caught:
            list(sheet.rows())
    assert (caught.value.row, str(caught.value)) == (1_001, (
        "reading stopped at row 1,001 of the first sheet ('Sheet'): at most 1,000 rows are read. Delete the empty "
        "rows and columns after your data, or save the sheet as CSV."))
    assert sheet.rows_read == 1_001
    assert sheet.bytes_read < sheet_size / 20
    with pytest.raises(ItemFileError, match="reading stopped at row 1,001 of the first sheet"):
        parse_item_file(content, file_format="xlsx")


def test_a_row_numbered_past_the_limit_is_refused_at_once():
    content = sheet_xlsx(HEADER + '<row r="1048577"><c r="A1048577"><v>1</v></c></row>')
    with pytest.raises(XlsxError, match="reading stopped at row 1,048,577 of the first sheet") as caught, \
            FirstSheet(content) as sheet:
        list(sheet.rows())
    assert (caught.value.row, sheet.rows_read) == (1_048_577, 2)


def test_reading_keeps_one_row_in_memory_not_the_sheet():
    content = empty_rows_xlsx(30_000, numbered=True)   # openpyxl's read-only mode peaks at 16 MB on it
    tracemalloc.start()
    try:
        rows = read_rows(content)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert [n for n, _ in rows] == [1, 2]
    assert peak < 1_000_000


def test_the_request_check_reads_the_sheet_only_up_to_its_data():
    content = empty_rows_xlsx(300_000, numbered=True)
    with FirstSheet(content) as sheet:
        sheet.check_declared_size()
    assert sheet.bytes_read <= 64 * 1024 and sheet.rows_read == 0


def test_a_declared_size_past_the_limits_is_refused_by_the_request_check():
    content = sheet_xlsx(HEADER, before_data='<dimension ref="A1:B1048577"/>')
    with pytest.raises(XlsxError, match=r"^the first sheet \('Sheet'\) declares 1,048,577 rows × 2 columns"), \
            FirstSheet(content) as sheet:
        sheet.check_declared_size()


@pytest.mark.parametrize(("cells", "message"), [
    ('<c r="ALM1"><v>1</v></c>', "it has a cell in column ALM (1,001); at most 1,000 columns are read"),
    ('<c r="A1"><v>1</v></c>' * 1_001, "it has more than 1,000 cells; at most 1,000 columns are read"),
])
def test_a_row_past_the_column_limit_is_refused(cells, message):
    error = refusal(sheet_xlsx(f'<row r="1">{cells}</row>'))
    assert error.row == 1 and f"reading stopped at row 1 of the first sheet ('Sheet'): {message}" in str(error)


def test_the_cell_limit_counts_the_gaps_in_a_row(monkeypatch):
    monkeypatch.setattr(xlsx_input, "MAX_CELLS", 50)
    rows = "".join(f'<row r="{n}"><c r="T{n}"><v>1</v></c></row>' for n in range(1, 5))
    error = refusal(sheet_xlsx(rows))
    assert (error.row, str(error).split(";")[0]) == (3, "reading stopped at row 3 of the first sheet ('Sheet'): "
                                                        "60 cells so far")


@pytest.mark.parametrize(("rows", "before_data", "prolog", "message"), [
    (HEADER + '<row r="1"><c r="A1"><v>1</v></c></row>', "", "", "row 1 comes after row 1 (rows out of order"),
    ('<row r="x"/>', "", "", "the row after row 0 is numbered 'x'"),
    ("<row><c>" + "<is>" * 70 + "</is>" * 70 + "</c></row>", "", "", "nests XML elements more than 64 deep"),
    ('<row><c t="inlineStr"><is>' + "<r><t>x</t></r>" * 600 + "</is></c></row>", "", "",
     "a cell or string holds more than 1,000 XML elements"),
    (HEADER, "", '<!DOCTYPE worksheet [<!ENTITY big "aaaaaaaaaa">]>', "declares a DTD or an entity"),
    ('<row><c t="s"><v>0</v></c></row>', "", "", "the cell  in row 1 cannot be read: IndexError"),
    ("<row>", "", "", "is not well-formed XML"),
])
def test_a_malformed_sheet_is_refused_naming_what(rows, before_data, prolog, message):
    assert message in str(refusal(sheet_xlsx(rows, before_data=before_data, prolog=prolog)))


def test_the_element_limit_counts_elements_that_are_not_cells(monkeypatch):
    monkeypatch.setattr(xlsx_input, "MAX_ELEMENTS", 1_000)
    error = refusal(sheet_xlsx("<row>" + "<x/>" * 2_000 + "</row>"))
    assert "the first sheet ('Sheet') holds more than 1,000 XML elements" in str(error)


def test_a_part_read_whole_is_bounded(monkeypatch):
    monkeypatch.setattr(xlsx_input, "MAX_PART_BYTES", 100)
    with pytest.raises(XlsxError, match=r"^the workbook's part \[Content_Types\]\.xml is [\d,]+ bytes; at most 100"):
        FirstSheet(sheet_xlsx(HEADER))


def test_not_a_workbook():
    with pytest.raises(XlsxError, match=r"^not a readable \.xlsx workbook: File is not a zip file"):
        FirstSheet(b"id,sentence\n")


def shared_strings_xlsx(strings: list[str]) -> bytes:
    """A workbook whose first sheet's column A names each string by its index in xl/sharedStrings.xml (as Excel
    writes them; openpyxl writes inline strings)."""
    main = "http://schemas.openxmlformats.org/spreadsheetml/2006/main"
    rows = "".join(f'<row r="{n}"><c r="A{n}" t="s"><v>{n - 1}</v></c></row>' for n in range(1, len(strings) + 1))
    content = sheet_xlsx(rows)
    out = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(content)) as source, zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as target:
        for name in source.namelist():
            data = source.read(name)
            if name == "[Content_Types].xml":
                data = data.replace(b"</Types>", b'<Override PartName="/xl/sharedStrings.xml" ContentType="application/'
                                    b'vnd.openxmlformats-officedocument.spreadsheetml.sharedStrings+xml"/></Types>')
            elif name == "xl/_rels/workbook.xml.rels":
                data = data.replace(b"</Relationships>", b'<Relationship Id="rIdStrings" Type="http://schemas.'
                                    b'openxmlformats.org/officeDocument/2006/relationships/sharedStrings" '
                                    b'Target="sharedStrings.xml"/></Relationships>')
            target.writestr(name, data)
        target.writestr("xl/sharedStrings.xml", f'<sst xmlns="{main}" count="{len(strings)}">'
                        + "".join(f"<si><t>{text}</t></si>" for text in strings) + "</sst>")
    return out.getvalue()


def test_shared_strings_beyond_the_character_bound_are_refused(monkeypatch):
    """Shared strings are held whole while the sheet is read: many distinct strings stop at the bound (each counted
    with its object's overhead), and a workbook within it reads."""
    content = shared_strings_xlsx([f"distinct string {n}" for n in range(200)])
    assert read_rows(content)[199][1] == ["distinct string 199"]
    # 200 strings of 17 or 18 characters, plus 50 each: about 13,500.
    monkeypatch.setattr(xlsx_input, "MAX_SHARED_STRING_CHARACTERS", 10_000)
    message = str(refusal(content))
    assert "shared strings" in message and "10,000 characters" in message
