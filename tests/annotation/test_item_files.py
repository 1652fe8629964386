"""Parsing and validating item files: formats, column detection, encodings, and every kind of bad row."""
from __future__ import annotations

import io
import json
import time

import pytest
from openpyxl import Workbook

from annotation.item_files import (
    NUL_MESSAGE,
    ColumnMapping,
    ImportProblem,
    ItemFileError,
    decode_text,
    file_format_from_name,
    item_file_reading_cost,
    parse_item_file,
    precheck_item_file,
    read_table_records,
)
from tests.factories import autalic_like_csv, pathological_xlsx


def problems_of(content: bytes, **kwargs) -> list[ImportProblem]:
    with pytest.raises(ItemFileError) as caught:
        parse_item_file(content, **{"file_format": "csv", **kwargs})
    return caught.value.problems


def test_autalic_shaped_csv_gives_items_annotators_and_labels():
    parsed = parse_item_file(autalic_like_csv(30), file_format="csv")
    assert len(parsed.items) == 30
    assert parsed.annotators == ["A1", "A2", "A3"]
    assert len(parsed.labels) == 90
    first = parsed.items[0]
    assert (first.external_id, first.preceding, first.following) == ("s00000", "Before 0.", "After 0.")
    assert first.target == "Target sentence number 0, with a comma."
    assert first.row == 2
    # item 0: annotator k labels (1, 0, -1)[k % 3]
    assert sorted(v for i, a, v in parsed.labels if i == 0) == [-1, 0, 1]
    assert [(a, v) for i, a, v in parsed.labels if i == 1] == [(0, 0), (1, -1), (2, 1)]
    assert parsed.columns == {"id": "id", "target": "sentence", "preceding": "preceding", "following": "following"}
    assert parsed.label_columns == {"A1_Score": "A1", "A2_Score": "A2", "A3_Score": "A3"}


def test_blank_label_cell_means_not_labelled_and_other_columns_become_metadata():
    content = b"ID,Text,source,A1_Score,A2_Score\n7,Hello,reddit,1,\n8,World,,,0\n"
    parsed = parse_item_file(content, file_format="csv")
    assert [i.external_id for i in parsed.items] == ["7", "8"]
    assert parsed.labels == [(0, 0, 1), (1, 1, 0)]
    assert parsed.items[0].metadata == {"source": "reddit"}
    assert parsed.items[1].metadata == {}


def test_explicit_mapping_and_label_columns():
    content = b"key,body,ctx_before,rater_x,rater_y\nk1,Body one,Prev,1,0\n"
    mapping = ColumnMapping(id="key", target="body", preceding="ctx_before", label_columns=("rater_x",))
    parsed = parse_item_file(content, file_format="csv", mapping=mapping)
    assert parsed.items[0].preceding == "Prev"
    assert parsed.annotators == ["rater_x"]
    assert parsed.labels == [(0, 0, 1)]
    assert parsed.items[0].metadata == {"rater_y": "0"}


def test_row_numbers_as_ids_for_files_without_ids():
    parsed = parse_item_file(b"sentence\nfirst\nsecond\n", file_format="csv",
                             mapping=ColumnMapping(use_row_numbers_as_ids=True))
    assert [i.external_id for i in parsed.items] == ["2", "3"]


def test_missing_id_column_is_named_with_the_way_out():
    problems = problems_of(b"sentence\nfirst\n")
    assert problems[0].row == 1
    assert "no id column" in problems[0].message
    assert any("row numbers" in p.message for p in problems)


def test_row_with_an_extra_field_is_reported_by_row_and_nothing_returned():
    content = b"id,sentence,A1_Score\na,One,1\nb,Two, with an unquoted comma,0\nc,Three,0\n"
    problems = problems_of(content)
    assert [(p.row, p.column) for p in problems] == [(3, None)]
    assert "4 fields where the header has 3" in problems[0].message


def test_every_bad_row_is_listed_with_row_and_column():
    content = (b"id,sentence,A1_Score,A2_Score\n"
               b"a,One,1,0\n"
               b",No id,1,0\n"          # row 3: empty id
               b"a,Dup,1,0\n"           # row 4: duplicate of row 2
               b"d,,1,0\n"              # row 5: empty target
               b"e,Five,2,0\n"          # row 6: label out of range
               b"f,Six,1,yes\n")        # row 7: label not a number
    problems = problems_of(content)
    assert [(p.row, p.column) for p in problems] == [
        (3, "id"), (4, "id"), (5, "sentence"), (6, "A1_Score"), (7, "A2_Score")]
    assert "first on row 2" in problems[1].message
    assert "not one of -1, 0, 1" in problems[3].message


def test_unrelated_label_rejected_when_the_scheme_is_binary():
    problems = problems_of(b"id,sentence,A1_Score\na,One,-1\n", allowed_label_values=frozenset({0, 1}))
    assert (problems[0].row, problems[0].column) == (2, "A1_Score")
    assert "not allowed by this study's label scheme" in problems[0].message


def test_spreadsheet_style_floats_are_integers():
    parsed = parse_item_file(b"id,sentence,A1_Score\n1.0,One,1.0\n", file_format="csv")
    assert parsed.labels == [(0, 0, 1)]
    with pytest.raises(ItemFileError, match="not one of"):
        parse_item_file(b"id,sentence,A1_Score\n1,One,0.5\n", file_format="csv")


def test_unclosed_quote_is_a_malformed_csv_error():
    problems = problems_of(b'id,sentence\na,"never closed\n')
    assert "malformed CSV" in problems[0].message


def test_header_problems_duplicate_and_missing_columns():
    problems = problems_of(b"id,sentence,sentence\na,b,c\n")
    assert any(p.column == "sentence" and "twice" in p.message for p in problems)
    problems = problems_of(b"id,body\na,b\n")
    assert "no target sentence column" in problems[0].message
    problems = problems_of(b"id,sentence\na,b\n", mapping=ColumnMapping(target="body"))
    assert (problems[0].row, problems[0].column) == (1, "body")


@pytest.mark.parametrize(("content", "message"), [(b"", "empty"), (b"id,sentence\n", "no items")])
def test_empty_files(content, message):
    assert message in str(problems_of(content)[0])


def test_utf8_bom_is_removed_from_the_first_column_name():
    content = "\ufeffid,sentence\nx,Naïve café\n".encode()
    parsed = parse_item_file(content, file_format="csv")
    assert parsed.encoding == "utf-8-sig"
    assert parsed.items[0].external_id == "x"
    assert parsed.items[0].target == "Naïve café"
    assert parsed.warnings == []


def test_windows_1252_is_decoded_and_reported():
    content = "id,sentence\nx,It’s a “café”\n".encode("cp1252")
    parsed = parse_item_file(content, file_format="csv")
    assert parsed.encoding == "windows-1252"
    assert parsed.items[0].target == "It’s a “café”"
    assert "not valid UTF-8" in parsed.warnings[0]
    assert "line 2" in parsed.warnings[0]


def test_bytes_neither_utf8_nor_windows_1252_are_rejected_naming_the_line():
    problems = problems_of(b"id,sentence\nx,fine\ny,bad \x81 byte\n")
    assert "invalid byte 0x81 on line 3" in problems[0].message


def test_double_encoded_text_is_warned_about_with_its_row():
    content = "id,sentence\nx,fine\ny,It’s broken\n".encode().decode("cp1252").encode()
    parsed = parse_item_file(content, file_format="csv")
    assert "double-encoded" in parsed.warnings[0]
    assert "first rows: 3" in parsed.warnings[0]


def test_explicit_encoding_is_used():
    content = "id,sentence\nx,café\n".encode("latin-1")
    assert parse_item_file(content, file_format="csv", encoding="latin-1").items[0].target == "café"


def test_tsv():
    parsed = parse_item_file(b"id\tsentence\ta_score\nx\tOne, two\t1\n", file_format="tsv")
    assert parsed.items[0].target == "One, two"
    assert parsed.annotators == ["a"]


def test_jsonl_with_nested_metadata_and_bad_lines():
    lines = [json.dumps({"id": 1, "sentence": "One", "A1_Score": 0, "meta": {"k": 1}}),
             "",
             json.dumps({"id": 2, "sentence": "Two", "A1_Score": None})]
    parsed = parse_item_file("\n".join(lines).encode(), file_format="jsonl")
    assert [i.external_id for i in parsed.items] == ["1", "2"]
    assert parsed.items[0].metadata == {"meta": {"k": 1}}
    assert parsed.labels == [(0, 0, 0)]
    problems = problems_of(b'{"id": 1, "sentence": "One"}\n{"id": 2, "sentence": \n[1]\n', file_format="jsonl")
    assert [(p.row, p.column) for p in problems] == [(2, None), (3, None)]
    assert "not valid JSON" in problems[0].message and "JSON object" in problems[1].message


def test_a_list_or_an_object_where_a_sentence_id_or_label_goes_is_named_and_nothing_is_read():
    lines = [{"id": "j1", "sentence": "ok", "preceding": "", "A1_Score": 1, "meta": ["kept"]},
             {"id": "j2", "sentence": ["list"]}, {"id": "j3", "sentence": {"a": 1}}, {"id": ["j4"], "sentence": "four"},
             {"id": "j5", "sentence": "five", "A1_Score": [1]}, {"id": "j6", "sentence": "six", "preceding": {"a": 1}}]
    content = "\n".join(json.dumps(line) for line in lines).encode()

    problems = problems_of(content, file_format="jsonl")

    assert [(p.row, p.column) for p in problems] == [(2, "sentence"), (3, "sentence"), (4, "id"), (5, "A1_Score"),
                                                     (6, "preceding")]
    assert all("not a list or an object" in p.message for p in problems)


def xlsx_bytes(rows: list[list]) -> bytes:
    workbook = Workbook()
    for row in rows:
        workbook.active.append(row)
    buffer = io.BytesIO()
    workbook.save(buffer)
    return buffer.getvalue()


def test_xlsx_with_numeric_ids_and_labels():
    content = xlsx_bytes([["id", "Sentence", "A1_Score", "A2_Score"], [1, "One", 1, 0], [2, "Two", -1, None]])
    parsed = parse_item_file(content, file_format="xlsx")
    assert [i.external_id for i in parsed.items] == ["1", "2"]
    assert parsed.labels == [(0, 0, 1), (0, 1, 0), (1, 0, -1)]


def test_xlsx_bad_cell_names_row_and_column():
    content = xlsx_bytes([["id", "Sentence", "A1_Score"], [1, "One", 1], [2, "Two", "maybe"]])
    problems = problems_of(content, file_format="xlsx")
    assert [(p.row, p.column) for p in problems] == [(3, "A1_Score")]


def with_cached_values(content: bytes, cached: str) -> bytes:
    """The workbook with every formula's empty cached value replaced, as a spreadsheet application saves it."""
    import zipfile

    source, out = zipfile.ZipFile(io.BytesIO(content)), io.BytesIO()
    with zipfile.ZipFile(out, "w") as target:
        for info in source.infolist():
            data = source.read(info)
            if info.filename.startswith("xl/worksheets/"):
                data = data.replace(b"<v />", f"<v>{cached}</v>".encode())
            target.writestr(info, data)
    return out.getvalue()


def test_a_formula_without_a_computed_value_is_a_problem_not_an_empty_cell():
    # openpyxl writes formulas without the value a spreadsheet application would have computed and saved.
    content = xlsx_bytes([["id", "Sentence", "A1_Score", "A2_Score"], [1, "One", "=0+1", 0], [2, "Two", 1, "=10+5"]])
    problems = problems_of(content, file_format="xlsx")
    assert [(p.row, p.column) for p in problems] == [(2, "A1_Score"), (3, "A2_Score")]
    assert problems[1].message == (
        "cell D3 holds the formula =10+5 with no computed value saved in the file: open and save the workbook in a "
        "spreadsheet application (which computes it), or write the value itself")
    with pytest.raises(ItemFileError, match="cell B2 holds the formula =10"):
        read_table_records(xlsx_bytes([["n", "total"], [1, "=10+5"]]), file_format="xlsx")


def test_a_formula_with_its_computed_value_reads_as_that_value():
    content = with_cached_values(xlsx_bytes([["id", "Sentence", "A1_Score"], [1, "One", "=0+1"]]), "1")
    assert parse_item_file(content, file_format="xlsx").labels == [(0, 0, 1)]


def test_not_a_workbook():
    assert "not a readable .xlsx" in problems_of(b"id,sentence\n", file_format="xlsx")[0].message


def test_format_from_file_name():
    assert file_format_from_name("Data.XLSX") == "xlsx"
    assert file_format_from_name("a.ndjson") == "jsonl"
    with pytest.raises(ItemFileError, match=r"unknown file type '\.pdf'"):
        file_format_from_name("paper.pdf")


def test_decode_text_utf16_with_bom():
    text, encoding, warnings = decode_text("id,sentence\nx,ü\n".encode("utf-16"))
    assert (text.splitlines()[1], encoding, warnings) == ("x,ü", "utf-16", [])


def test_problem_counts_beyond_the_reporting_cap():
    content = b"id,sentence\n" + b"".join(b",x\n" for _ in range(250))
    with pytest.raises(ItemFileError) as caught:
        parse_item_file(content, file_format="csv")
    assert caught.value.total == 250
    assert len(caught.value.problems) == 200
    assert "250 problem(s), nothing imported" in str(caught.value)


def test_text_is_kept_exactly_a_leading_tab_included():
    parsed = parse_item_file(b'id,sentence,before,source\n 1 ,"\t=1+1","  two spaces ","\tx"\n', file_format="csv")
    item = parsed.items[0]
    assert (item.external_id, item.target, item.preceding, item.metadata) == ("1", "\t=1+1", "  two spaces ",
                                                                              {"source": "\tx"})


@pytest.mark.parametrize("file_format", ["csv", "tsv", "xlsx"])
def test_the_quote_our_exports_add_is_taken_off_in_spreadsheet_formats(file_format):
    rows = [["id", "sentence", "source"], ["'-1'", "'=1+1", "'\t=x"], ["2", "''=kept one quote", "'Tis"]]
    if file_format == "xlsx":
        content = xlsx_bytes(rows)
    else:
        delimiter = "\t" if file_format == "tsv" else ","
        content = "\n".join(delimiter.join(f'"{cell}"' for cell in row) for row in rows).encode()
    items = parse_item_file(content, file_format=file_format).items
    assert [(i.external_id, i.target, i.metadata["source"]) for i in items] == [
        ("-1'", "=1+1", "\t=x"), ("2", "'=kept one quote", "'Tis")]


def test_json_lines_text_is_never_unquoted():
    item = parse_item_file(b'{"id": "1", "text": "\'=1+1"}\n', file_format="jsonl").items[0]
    assert item.target == "'=1+1"


def test_a_workbook_declaring_a_huge_sheet_is_refused_before_reading_it():
    content = pathological_xlsx()
    assert len(content) < 100_000
    started = time.monotonic()
    [problem] = problems_of(content, file_format="xlsx")
    assert time.monotonic() - started < 1
    assert problem.message.startswith("the first sheet ('Sheet') declares 1,048,576 rows × 16,384 columns "
                                      "(A1:XFD1048576); at most 1,048,576 rows, 1,000 columns and 20,000,000 cells "
                                      "are read.")
    assert item_file_reading_cost(content, file_format="xlsx") > 9 * len(content)


def test_a_workbook_whose_declared_size_lies_is_bounded_while_reading():
    started = time.monotonic()
    [problem] = problems_of(pathological_xlsx(dimension="A1:B2"), file_format="xlsx")
    assert time.monotonic() - started < 5
    assert (problem.row, problem.column) == (1, None)
    assert problem.message.startswith("reading stopped at row 1 of the first sheet ('Sheet'): it has a cell in "
                                      "column ALM (1,001); at most 1,000 columns are read.")


def test_a_narrow_workbook_with_a_far_cell_is_read_without_padding():
    parsed = parse_item_file(pathological_xlsx(dimension="A1:B2", header_columns=2),
                             file_format="xlsx", mapping=ColumnMapping(use_row_numbers_as_ids=True))
    assert [(i.row, i.target) for i in parsed.items] == [(1_048_576, "x")]


def test_a_csv_header_of_too_many_columns_is_refused():
    header = ",".join(f"c{n}" for n in range(1_001)).encode()
    [problem] = problems_of(header + b"\n" + b"," * 1_000 + b"\n")
    assert (problem.row, problem.message) == (1, "the header has 1,001 columns; at most 1,000 are read")


def test_the_quick_checks_of_a_large_file():
    precheck_item_file(b"id,sentence\n1,ok\n", file_format="csv")
    with pytest.raises(ItemFileError, match=r"line 3 contains a NUL character"):
        precheck_item_file(b"id,sentence\n1,ok\n2,b\x00d\n", file_format="csv")
    with pytest.raises(ItemFileError, match="declares 1,048,576 rows"):
        precheck_item_file(pathological_xlsx(), file_format="xlsx")
    assert item_file_reading_cost(b"abc", file_format="csv") == 3


def test_read_table_records_gives_rows_under_the_header_and_names_every_bad_row():
    table = read_table_records(b"Template,Sentence\nT1,\"'=A b\"\n\nT2,c\n", file_format="csv")
    # The quote our exports put before a formula-like cell is removed; a blank line is skipped, rows keep numbers.
    assert table.rows == [(2, {"Template": "T1", "Sentence": "=A b"}), (4, {"Template": "T2", "Sentence": "c"})]
    with pytest.raises(ItemFileError) as error:
        read_table_records(b"a,a,b\n1,2\n1,2,3\n1,x\x00,3\n", file_format="csv")
    assert [str(p) for p in error.value.problems] == [
        "row 1, column 'a': the column appears more than once",
        "row 2: 2 fields where the header has 3 (a missing or extra delimiter, or an unquoted comma?)",
        f"row 4, column 'a': {NUL_MESSAGE}",
    ]
    with pytest.raises(ItemFileError, match="unknown format 'json'"):
        read_table_records(b"{}", file_format="json")


def test_read_table_records_reads_json_lines_under_the_union_of_their_keys():
    table = read_table_records(b'{"id": 1, "text": "a"}\n\n{"id": "2", "platform": null, "score": 0.5}\n',
                               file_format="jsonl")
    assert table.rows == [(1, {"id": "1", "text": "a", "platform": "", "score": ""}),
                          (3, {"id": "2", "text": "", "platform": "", "score": "0.5"})]
    assert [list(row) for _, row in table.rows] == [["id", "text", "platform", "score"]] * 2
    with pytest.raises(ItemFileError) as error:
        read_table_records(b'{"id": 1\n[1, 2]\n{"id": {"a": 1}}\n{"t": "x\\u0000"}\n', file_format="jsonl")
    assert [str(p) for p in error.value.problems] == [
        "row 1: not valid JSON: Expecting ',' delimiter (character 9)",
        "row 2: each line must be a JSON object",
        "row 3, column 'id': a value must be text, a number, true, false or null, not a list or an object",
        f"row 4, column 't': {NUL_MESSAGE}",
    ]


def test_json_lines_end_at_line_feeds_only_and_their_keys_are_read_as_headers_are():
    line = json.dumps({"id": "a", " text ": "I am disabled\u2028and\u0085proud"}, ensure_ascii=False)
    table = read_table_records((line + "\r\n").encode(), file_format="jsonl")
    assert table.rows == [(1, {"id": "a", "text": "I am disabled\u2028and\u0085proud"})]


def test_json_lines_whose_keys_differ_widely_cannot_fill_out_a_table_past_the_files_size():
    lines = [json.dumps({f"k{i}": "" for i in range(999)})] + [json.dumps({"id": str(n)}) for n in range(2000)]
    content = "\n".join(lines).encode()
    with pytest.raises(ItemFileError, match="2,001 lines name 1,000 keys between them"):
        read_table_records(content, file_format="jsonl")
