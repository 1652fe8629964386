"""Reading and validating files of study items (CSV, TSV, JSONL, XLSX); pure Python, no Django.

A file holds one item per row: an id, the target sentence, optionally the preceding and following
sentences (seed 000 §3.1 shows annotators the target with its context), any other columns (kept as
item metadata), and optionally one label column per annotator, the shape of public datasets such as
AUTALIC: ``A1_Score, A2_Score, ...`` with values -1 / 0 / 1, where -1 is "unrelated / needs more
context". Each label column becomes one imported annotator, named by the column (``A1``).

Validation is all or nothing: :func:`parse_item_file` either returns every item and label, or raises
:class:`ItemFileError` listing every problem found, each naming the row and the column.

Text is kept exactly as in the file (no whitespace is stripped from sentences or metadata; ids, labels
and column names are trimmed). In CSV, TSV and XLSX a cell that starts with a single quote followed by
``= + - @``, tab, carriage return or another quote loses that quote, the one our CSV exports add against
formula injection (``common.spreadsheet_cells``), so an export imports back to the original text.

Row numbers are those a spreadsheet shows: the header is row 1 and the first item is row 2 (CSV, TSV,
XLSX). In JSON Lines there is no header, and the row is the line number.

Text encoding: UTF-8 (with or without a byte-order mark) is read as is; UTF-16 with a BOM is read as
UTF-16; a file that is not valid UTF-8 is decoded as Windows-1252 only if every byte is defined there,
and the fallback is reported as a warning; otherwise the file is rejected naming the first bad line.
Text that looks double-encoded (UTF-8 read as Windows-1252 and saved again, e.g. ``â€™``) is warned
about with the row, never silently accepted as correct.
"""
from __future__ import annotations

import codecs
import csv
import io
import json
import re
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass, field

from annotation.xlsx_input import MAX_COLUMNS, FirstSheet, UncachedFormula, XlsxError
from common.json_input import JSONTooDeepError, json_loads_bounded
from common.spreadsheet_cells import formula_escape_removed

FORMATS = ("csv", "tsv", "jsonl", "xlsx")
MAX_REPORTED_PROBLEMS = 200

ID_ALIASES = ("id", "item_id", "external_id", "sentence_id", "item")
TARGET_ALIASES = ("target", "sentence", "target_sentence", "text")
PRECEDING_ALIASES = ("preceding", "preceding_sentence", "before", "previous", "context_before")
FOLLOWING_ALIASES = ("following", "following_sentence", "after", "next", "context_after")
DEFAULT_LABEL_COLUMN_PATTERN = r"^(?P<annotator>.+?)[_ ]score$"

# PostgreSQL cannot store a NUL in text or JSON; a UTF-16 file without a byte-order mark shows NULs everywhere.
NUL_MESSAGE = ("contains a NUL character (byte 0), which cannot be stored: remove it (a file saved as UTF-16 "
               "without a byte-order mark looks like this; save it as UTF-8)")
NESTED_VALUE_MESSAGE = "a value must be text, a number, true, false or null, not a list or an object"

# Sequences produced when UTF-8 text is decoded as Windows-1252 and saved again ("mojibake").
_MOJIBAKE = re.compile("â€[™œ\u009d“”˜¦]|Ã[©¨¡¢£¤¥§ª«¬®¯°±²³´µ¶·¸¹º»¼½¾¿]|Â[ ©®°±·»«]")


@dataclass(frozen=True)
class ImportProblem:
    """One problem in a file: where (row as a spreadsheet counts it, column name) and what."""

    row: int | None
    column: str | None
    message: str

    def __str__(self) -> str:
        where = []
        if self.row is not None:
            where.append(f"row {self.row}")
        if self.column is not None:
            where.append(f"column '{self.column}'")
        return f"{', '.join(where)}: {self.message}" if where else self.message

    def as_dict(self) -> dict:
        return {"row": self.row, "column": self.column, "message": self.message}


class ItemFileError(Exception):
    """The file cannot be imported; ``problems`` lists every problem found (at most 200 reported)."""

    def __init__(self, problems: list[ImportProblem], total: int | None = None):
        self.problems = problems
        self.total = total if total is not None else len(problems)
        shown = "; ".join(str(p) for p in problems[:5])
        more = f" (and {self.total - 5} more)" if self.total > 5 else ""
        super().__init__(f"{self.total} problem(s), nothing imported: {shown}{more}")


@dataclass(frozen=True)
class ColumnMapping:
    """Which column holds what. ``None`` means: detect from the aliases (case-insensitive).

    ``label_columns`` names the per-annotator label columns explicitly; when ``None`` they are the
    columns matching ``label_column_pattern``, whose ``annotator`` group names the annotator.
    ``use_row_numbers_as_ids`` gives files without an id column the spreadsheet row number as id.
    """

    id: str | None = None
    target: str | None = None
    preceding: str | None = None
    following: str | None = None
    label_columns: tuple[str, ...] | None = None
    label_column_pattern: str = DEFAULT_LABEL_COLUMN_PATTERN
    use_row_numbers_as_ids: bool = False

    @classmethod
    def from_dict(cls, data: dict) -> ColumnMapping:
        known = {k: v for k, v in data.items() if k in cls.__dataclass_fields__ and v not in ("", None)}
        if "label_columns" in known:
            known["label_columns"] = tuple(known["label_columns"])
        return cls(**known)

    def as_dict(self) -> dict:
        data = {name: getattr(self, name) for name in self.__dataclass_fields__}
        if self.label_columns is not None:
            data["label_columns"] = list(self.label_columns)
        return data


@dataclass
class ParsedItem:
    external_id: str
    target: str
    preceding: str
    following: str
    metadata: dict
    row: int


@dataclass
class ParsedFile:
    """A validated file: items in file order, annotators (from label columns), and labels.

    ``labels`` holds ``(item_index, annotator_index, value)`` triples indexing ``items`` and
    ``annotators``; a blank label cell means the annotator did not label that item.
    """

    items: list[ParsedItem]
    annotators: list[str]
    labels: list[tuple[int, int, int]]
    encoding: str
    columns: dict[str, str | None]
    label_columns: dict[str, str]
    warnings: list[str] = field(default_factory=list)


def file_format_from_name(filename: str) -> str:
    """The format named by a file's extension; raises ItemFileError for an unknown one."""
    suffix = filename.rsplit(".", 1)[-1].lower() if "." in filename else ""
    aliases = {"csv": "csv", "tsv": "tsv", "tab": "tsv", "jsonl": "jsonl", "ndjson": "jsonl", "xlsx": "xlsx"}
    if suffix not in aliases:
        raise ItemFileError(
            [ImportProblem(None, None, f"unknown file type '.{suffix}' in '{filename}': use one of "
                           ".csv, .tsv, .jsonl, .xlsx")]
        )
    return aliases[suffix]


def decode_text(content: bytes, *, encoding: str | None = None) -> tuple[str, str, list[str]]:
    """Decode a text file; return (text, encoding used, warnings). See the module docstring."""
    if encoding:
        try:
            return content.decode(encoding), encoding, []
        except (UnicodeDecodeError, LookupError) as exc:
            raise ItemFileError([_decode_problem(content, exc, encoding)]) from exc
    if content.startswith(codecs.BOM_UTF8):
        return content[len(codecs.BOM_UTF8):].decode("utf-8", errors="strict"), "utf-8-sig", []
    if content.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        return content.decode("utf-16"), "utf-16", []
    try:
        return content.decode("utf-8"), "utf-8", []
    except UnicodeDecodeError as utf8_error:
        try:
            text = content.decode("cp1252")
        except UnicodeDecodeError as exc:
            raise ItemFileError([_decode_problem(content, utf8_error, "utf-8 or windows-1252")]) from exc
        line = content.count(b"\n", 0, utf8_error.start) + 1
        return text, "windows-1252", [
            f"The file is not valid UTF-8 (first non-UTF-8 byte on line {line}); it was read as "
            "Windows-1252. Check accented characters and quotation marks, or save the file as UTF-8."
        ]


def _decode_problem(content: bytes, exc: Exception, encoding: str) -> ImportProblem:
    if isinstance(exc, UnicodeDecodeError):
        line = content.count(b"\n", 0, exc.start) + 1
        return ImportProblem(
            None, None, f"the file cannot be read as {encoding}: invalid byte 0x{content[exc.start]:02x} "
            f"on line {line}. Save it as UTF-8 and upload it again."
        )
    return ImportProblem(None, None, f"unknown text encoding '{encoding}'")


def _text_rows(text: str, file_format: str) -> Iterator[tuple[int, list[str]]]:
    """(spreadsheet row number, fields) for each CSV or TSV record; blank records are skipped."""
    delimiter = "\t" if file_format == "tsv" else ","
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=delimiter, strict=True)
    row_number = 0
    try:
        for fields in reader:
            row_number += 1
            if fields and any(f.strip() for f in fields):
                yield row_number, fields
    except csv.Error as exc:
        raise ItemFileError([ImportProblem(row_number + 1, None, f"malformed {file_format.upper()} "
                                           f"(line {reader.line_num}): {exc}")]) from exc


def _item_file_error(error: XlsxError) -> ItemFileError:
    return ItemFileError([ImportProblem(error.row, None, str(error))])


def _uncached_formula_problem(row: int, index: int, cell: UncachedFormula, header: list[str] | None
                              ) -> ImportProblem:
    """A formula cell without a cached value (a workbook written by a program rather than saved by a spreadsheet
    application): read as values it would be an empty cell, which must not pass for a missing value."""
    from openpyxl.utils import get_column_letter

    letter = get_column_letter(index + 1)
    named = header[index] if header and index < len(header) and header[index] else None
    return ImportProblem(row, named or letter, (
        f"cell {letter}{row} holds the formula {cell.formula[:60]} with no computed value saved in the file: open "
        "and save the workbook in a spreadsheet application (which computes it), or write the value itself"))


def _xlsx_rows(content: bytes) -> Iterator[tuple[int, list]]:
    """(spreadsheet row number, values) for each row with a value of the first sheet, read within the limits of
    :mod:`annotation.xlsx_input` whatever the file declares. A formula cell is read as its cached value; one
    without a cached value is a problem, not an empty cell: every such problem is raised once the sheet is read."""
    formula_problems: list[ImportProblem] = []
    header: list[str] | None = None
    width = None  # the header's: each row comes only up to its own last cell
    try:
        with FirstSheet(content) as sheet:
            for row_number, values in sheet.rows():
                for index, value in enumerate(values):
                    if isinstance(value, UncachedFormula):
                        formula_problems.append(_uncached_formula_problem(row_number, index, value, header))
                        values[index] = None
                if not any(v is not None and str(v).strip() for v in values):
                    continue
                if header is None:
                    header = [_spreadsheet_cell_text(v).strip() for v in values]
                if width is None:
                    width = len(values) - _trailing_none_count(values)
                if len(values) < width:
                    values.extend([None] * (width - len(values)))
                elif _trailing_none_count(values) >= len(values) - width:
                    del values[width:]
                yield row_number, values
    except XlsxError as error:
        raise _item_file_error(error) from error
    if formula_problems:
        raise ItemFileError(formula_problems[:MAX_REPORTED_PROBLEMS], len(formula_problems))


def _trailing_none_count(values: list) -> int:
    """How many empty cells end the row (openpyxl reads formatted but empty cells as None)."""
    count = 0
    for value in reversed(values):
        if value is not None:
            break
        count += 1
    return count


def _cell_text(value) -> str:
    """A cell as text, exactly: None is empty, integral floats lose their '.0' (spreadsheet ids and labels)."""
    if value is None:
        return ""
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    if isinstance(value, bool):
        return str(int(value))
    return str(value)


def _spreadsheet_cell_text(value) -> str:
    """A CSV, TSV or XLSX cell as text, without the quote our exports put before a formula-like cell."""
    return formula_escape_removed(_cell_text(value))


def _column_with_nul(row: dict) -> str | None:
    """The first column whose name or value (nested JSON included) holds a NUL character, or None."""
    for column, value in row.items():
        stack = [column, value]
        while stack:
            part = stack.pop()
            if isinstance(part, str) and "\x00" in part:
                return column
            if isinstance(part, dict):
                stack.extend(part.keys())
                stack.extend(part.values())
            elif isinstance(part, list):
                stack.extend(part)
    return None


def _blank(value) -> bool:
    return value is None or (isinstance(value, str) and not value.strip())


def _find_column(header: list[str], wanted: str | None, aliases: tuple[str, ...], role: str,
                 required: bool, problems: list[ImportProblem]) -> str | None:
    by_lower = {h.strip().lower(): h for h in header}
    if wanted:
        if wanted in header:
            return wanted
        if wanted.strip().lower() in by_lower:
            return by_lower[wanted.strip().lower()]
        problems.append(ImportProblem(1, wanted, f"the {role} column '{wanted}' is not in the header"))
        return None
    for alias in aliases:
        if alias in by_lower:
            return by_lower[alias]
    if required:
        problems.append(ImportProblem(1, None, f"no {role} column: name one of {', '.join(aliases)}, "
                                      "or choose the column in the mapping"))
    return None


def _resolve_columns(header: list[str], mapping: ColumnMapping) -> tuple[dict[str, str | None], dict[str, str]]:
    problems: list[ImportProblem] = []
    seen: dict[str, int] = {}
    for position, name in enumerate(header):
        if "\x00" in name:
            problems.append(ImportProblem(1, f"#{position + 1}", f"the column name {NUL_MESSAGE}"))
        elif not name.strip():
            problems.append(ImportProblem(1, f"#{position + 1}", "empty column name in the header"))
        elif name in seen:
            problems.append(ImportProblem(1, name, f"column name appears twice (columns {seen[name] + 1} "
                                          f"and {position + 1})"))
        else:
            seen[name] = position
    columns = {
        "id": None if mapping.use_row_numbers_as_ids else _find_column(
            header, mapping.id, ID_ALIASES, "id", True, problems),
        "target": _find_column(header, mapping.target, TARGET_ALIASES, "target sentence", True, problems),
        "preceding": _find_column(header, mapping.preceding, PRECEDING_ALIASES, "preceding sentence",
                                  False, problems),
        "following": _find_column(header, mapping.following, FOLLOWING_ALIASES, "following sentence",
                                  False, problems),
    }
    if problems and columns["id"] is None and not mapping.use_row_numbers_as_ids and mapping.id is None:
        problems.append(ImportProblem(1, None, "a file without ids can use the spreadsheet row numbers "
                                      "as ids (option 'use row numbers as ids')"))
    label_columns: dict[str, str] = {}
    if mapping.label_columns is not None:
        for name in mapping.label_columns:
            if name not in seen:
                problems.append(ImportProblem(1, name, "the label column is not in the header"))
            else:
                label_columns[name] = _annotator_name(name, mapping.label_column_pattern)
    else:
        try:
            pattern = re.compile(mapping.label_column_pattern, re.IGNORECASE)
        except re.error as exc:
            raise ItemFileError([ImportProblem(None, None, f"invalid label column pattern: {exc}")]) from exc
        used = {c for c in columns.values() if c}
        for name in header:
            if name not in used and pattern.match(name.strip()):
                label_columns[name] = _annotator_name(name, mapping.label_column_pattern)
    names = list(label_columns.values())
    for column, annotator in label_columns.items():
        if names.count(annotator) > 1:
            problems.append(ImportProblem(1, column, f"two label columns name the same annotator '{annotator}'"))
    if problems:
        raise ItemFileError(problems)
    return columns, label_columns


def _annotator_name(column: str, pattern: str) -> str:
    match = re.match(pattern, column.strip(), re.IGNORECASE)
    if match and "annotator" in match.groupdict() and match.group("annotator"):
        return match.group("annotator").strip()
    return column.strip()


def _label_value(raw: str, allowed: frozenset[int]) -> int | str | None:
    """The label in a cell: an int, None for a blank cell, or an error message."""
    if raw == "":
        return None
    try:
        number = float(raw)
    except ValueError:
        return f"label '{raw}' is not a number; use {_values_text(allowed)}"
    if not number.is_integer() or int(number) not in {-1, 0, 1}:
        return f"label '{raw}' is not one of {_values_text(allowed)}"
    value = int(number)
    if value not in allowed:
        return (f"label {value} (unrelated / needs more context) is not allowed by this study's label "
                "scheme (0 / 1); change the study's label scheme to allow it")
    return value


def _values_text(allowed: frozenset[int]) -> str:
    return ", ".join(str(v) for v in sorted(allowed))


def _records(content: bytes, file_format: str, encoding: str | None
             ) -> tuple[list[str] | None, Iterator[tuple[int, str | list]], str, list[str]]:
    """(header or None for JSONL, iterator of (row, fields or a JSON line), encoding, warnings)."""
    if file_format == "xlsx":
        rows = _xlsx_rows(content)
        first = next(rows, None)
        if first is None:
            raise ItemFileError([ImportProblem(None, None, "the workbook's first sheet is empty")])
        return [_spreadsheet_cell_text(v).strip() for v in first[1]], rows, "xlsx", []
    text, used_encoding, warnings = decode_text(content, encoding=encoding)
    if file_format == "jsonl":
        # Lines end at "\n" only: JSON strings may hold U+2028, U+2029 and U+0085 unescaped, which splitlines()
        # would take for line ends.
        return None, ((n, line.removesuffix("\r")) for n, line in enumerate(text.split("\n"), 1) if line.strip()), \
            used_encoding, warnings
    rows = _text_rows(text, file_format)
    first = next(rows, None)
    if first is None:
        raise ItemFileError([ImportProblem(None, None, "the file is empty")])
    if len(first[1]) > MAX_COLUMNS:
        raise ItemFileError([ImportProblem(first[0], None, f"the header has {len(first[1]):,} columns; at most "
                                           f"{MAX_COLUMNS:,} are read")])
    return [_spreadsheet_cell_text(h).strip() for h in first[1]], rows, used_encoding, warnings


def _json_line_records(lines: Iterator[tuple[int, str | list]], encoding: str, warnings: list[str], *, size: int
                       ) -> TableRecords:
    """The rows of a JSON Lines file as :func:`read_table_records` gives them (see there). Keys are read without
    surrounding spaces, as headers are. The table the lines make may hold at most as many cells as the file has
    bytes, as a CSV file of that size could (each cell needs its delimiter): lines whose keys differ widely would
    otherwise fill out a table many times the file's size."""
    problems: list[ImportProblem] = []
    objects: list[tuple[int, dict[str, str]]] = []
    columns: dict[str, None] = {}
    for row_number, line in lines:
        try:
            obj = json_loads_bounded(str(line))
        except json.JSONDecodeError as exc:
            problems.append(ImportProblem(row_number, None, f"not valid JSON: {exc.msg} (character {exc.pos + 1})"))
            continue
        except JSONTooDeepError as exc:
            problems.append(ImportProblem(row_number, None, str(exc)))
            continue
        if not isinstance(obj, dict):
            problems.append(ImportProblem(row_number, None, "each line must be a JSON object"))
            continue
        nested = next((key for key, value in obj.items() if isinstance(value, dict | list)), None)
        if nested is not None:
            problems.append(ImportProblem(row_number, nested, NESTED_VALUE_MESSAGE))
            continue
        row = {str(key).strip(): _cell_text(value) for key, value in obj.items()}
        nul_column = _column_with_nul(row)
        if nul_column is not None:
            problems.append(ImportProblem(row_number, nul_column, NUL_MESSAGE))
            continue
        if len(columns) + len(row.keys() - columns.keys()) > MAX_COLUMNS:
            problems.append(ImportProblem(row_number, None, f"more than {MAX_COLUMNS:,} distinct keys; at most "
                                                            f"{MAX_COLUMNS:,} columns are read"))
            break
        columns.update(dict.fromkeys(row))
        objects.append((row_number, row))
    if not problems and len(objects) * len(columns) > max(size, 1):
        problems.append(ImportProblem(None, None, f"the {len(objects):,} lines name {len(columns):,} keys between "
                                                  f"them: a table of {len(objects) * len(columns):,} cells from "
                                                  f"{size:,} bytes; give the lines the same keys"))
    if problems:
        raise ItemFileError(problems[:MAX_REPORTED_PROBLEMS], len(problems))
    rows = [(row_number, {column: row.get(column, "") for column in columns}) for row_number, row in objects]
    return TableRecords(rows=rows, encoding=encoding, warnings=warnings)


def item_file_reading_cost(content: bytes, *, file_format: str) -> int:
    """How many bytes reading the file means: its size, or for a workbook the uncompressed size its zip
    declares (a member is never inflated past its declared size, so this bounds what a parser reads)."""
    if file_format != "xlsx":
        return len(content)
    try:
        with zipfile.ZipFile(io.BytesIO(content)) as archive:
            return sum(info.file_size for info in archive.infolist())
    except zipfile.BadZipFile:
        return len(content)


def precheck_item_file(content: bytes, *, file_format: str, encoding: str | None = None) -> None:
    """The quick checks of a file too large to validate while the uploader waits; a worker validates the rest.

    Raises ItemFileError for a workbook past a limit of :mod:`annotation.xlsx_input` found without reading its
    rows (its zip's sizes, its sheet's declared size), a text file that cannot be decoded, or one that holds a NUL
    character (named by its line: finding its row would mean parsing the file).
    """
    if file_format == "xlsx":
        try:
            with FirstSheet(content) as sheet:
                sheet.check_declared_size()
        except XlsxError as error:
            raise _item_file_error(error) from error
        return
    text, _, _ = decode_text(content, encoding=encoding)
    position = text.find("\x00")
    if position >= 0:
        line = text.count("\n", 0, position) + 1
        raise ItemFileError([ImportProblem(None, None, f"line {line:,} {NUL_MESSAGE}")])


def parse_item_file(content: bytes, *, file_format: str, mapping: ColumnMapping | None = None,
                    allowed_label_values: frozenset[int] = frozenset({-1, 0, 1}),
                    encoding: str | None = None) -> ParsedFile:
    """Read and validate a whole file of items (and per-annotator labels); all or nothing.

    Raises :class:`ItemFileError` listing every problem (row and column named): a malformed record,
    a row with more or fewer fields than the header, an empty or duplicate id, an empty target
    sentence, a label outside ``allowed_label_values``, an unreadable encoding. An empty file or a
    file with a header and no rows is an error too.
    """
    mapping = mapping or ColumnMapping()
    if file_format not in FORMATS:
        raise ItemFileError([ImportProblem(None, None, f"unknown format '{file_format}'")])
    header, records, used_encoding, warnings = _records(content, file_format, encoding)

    problems: list[ImportProblem] = []
    total_problems = 0

    def report(row: int | None, column: str | None, message: str) -> None:
        nonlocal total_problems
        total_problems += 1
        if len(problems) < MAX_REPORTED_PROBLEMS:
            problems.append(ImportProblem(row, column, message))

    columns: dict[str, str | None] | None = None
    label_columns: dict[str, str] = {}
    if header is not None:
        columns, label_columns = _resolve_columns(header, mapping)

    items: list[ParsedItem] = []
    labels: list[tuple[int, int, int]] = []
    first_row_of_id: dict[str, int] = {}
    mojibake_rows: list[int] = []

    for row_number, record in records:
        if isinstance(record, str):  # a JSON line: JSONL has no header
            try:
                obj = json_loads_bounded(record)
            except json.JSONDecodeError as exc:
                report(row_number, None, f"not valid JSON: {exc.msg} (character {exc.pos + 1})")
                continue
            except JSONTooDeepError as exc:
                report(row_number, None, str(exc))
                continue
            if not isinstance(obj, dict):
                report(row_number, None, "each line must be a JSON object")
                continue
            if columns is None:
                columns, label_columns = _resolve_columns(list(obj.keys()), mapping)
            row = {k: _cell_text(v) if not isinstance(v, (dict, list)) else v for k, v in obj.items()}
        else:
            assert header is not None  # only JSONL lines come without a header
            if len(record) != len(header):
                report(row_number, None, f"{len(record)} fields where the header has {len(header)} "
                       "(a missing or extra delimiter, or an unquoted comma?)")
                continue
            row = {name: _spreadsheet_cell_text(value) for name, value in zip(header, record, strict=True)}
        assert columns is not None  # set from the header, or from the first JSON line above
        # Lists and objects are kept for the metadata; a sentence, an id or a label must be one value.
        nested = next((column for column in (*columns.values(), *label_columns)
                       if column and isinstance(row.get(column), dict | list)), None)
        if nested is not None:
            report(row_number, nested, NESTED_VALUE_MESSAGE)
            continue

        nul_column = _column_with_nul(row)
        if nul_column is not None:
            report(row_number, nul_column, NUL_MESSAGE)
            continue

        if mapping.use_row_numbers_as_ids:
            external_id = str(row_number)
        else:
            id_column = columns["id"]
            external_id = str(row.get(id_column, "")).strip()
            if not external_id:
                report(row_number, id_column, "empty id")
                continue
            if len(external_id) > 200:
                report(row_number, id_column, "id longer than 200 characters")
                continue
            if external_id in first_row_of_id:
                report(row_number, id_column, f"duplicate id '{external_id}' (first on row "
                       f"{first_row_of_id[external_id]})")
                continue
        first_row_of_id[external_id] = row_number

        target = str(row.get(columns["target"], ""))
        if not target.strip():
            report(row_number, columns["target"], "empty target sentence")
            continue
        preceding = str(row.get(columns["preceding"], "")) if columns["preceding"] else ""
        following = str(row.get(columns["following"], "")) if columns["following"] else ""
        if _MOJIBAKE.search(target) or _MOJIBAKE.search(preceding) or _MOJIBAKE.search(following):
            mojibake_rows.append(row_number)

        item_index = len(items)
        row_ok = True
        for annotator_index, column in enumerate(label_columns):
            value = _label_value(str(row.get(column, "")).strip(), allowed_label_values)
            if isinstance(value, str):
                report(row_number, column, value)
                row_ok = False
            elif value is not None:
                labels.append((item_index, annotator_index, value))
        if not row_ok:
            continue

        mapped = set(columns.values()) | set(label_columns)
        metadata = {k: v for k, v in row.items() if k not in mapped and not _blank(v)}
        items.append(ParsedItem(external_id, target, preceding, following, metadata, row_number))

    if columns is None or (not items and not total_problems):
        report(None, None, "the file has no items")
    if total_problems:
        raise ItemFileError(problems, total_problems)
    assert columns is not None  # reported above when None, and the report raised
    if mojibake_rows:
        shown = ", ".join(str(r) for r in mojibake_rows[:10])
        warnings.append(f"Text on {len(mojibake_rows)} row(s) looks double-encoded (e.g. 'â€™' for '’'), "
                        f"first rows: {shown}. The file may have been converted twice; check it.")
    return ParsedFile(items=items, annotators=list(label_columns.values()), labels=labels, encoding=used_encoding,
                      columns=columns, label_columns=label_columns, warnings=warnings)


@dataclass(frozen=True)
class TableRecords:
    """A table's rows as (spreadsheet row number, {header: cell text}), with the encoding read and warnings."""

    rows: list[tuple[int, dict[str, str]]]
    encoding: str
    warnings: list[str]


def read_table_records(content: bytes, *, file_format: str, encoding: str | None = None) -> TableRecords:
    """Every row of a CSV, TSV, XLSX or JSON Lines file under its header, read with the bounds and cell rules of
    item files (for files of another shape, such as a BITS corpus, whose own parser validates the columns).

    A JSON Lines file has no header: each line is an object whose keys are its columns (the header is their union in
    order of first appearance, a key a line lacks an empty cell), numbers as text, null as an empty
    cell (true and false as 1 and 0, as item files read them); its rows are numbered by line.

    Raises :class:`ItemFileError` naming every row with more or fewer fields than the header, a NUL character, or
    (JSON Lines) a line that is not a JSON object of plain values.
    """
    if file_format not in FORMATS:
        raise ItemFileError([ImportProblem(None, None, f"unknown format '{file_format}': use .csv, .tsv, .jsonl or "
                                                       ".xlsx")])
    header, records, used_encoding, warnings = _records(content, file_format, encoding)
    if header is None:
        return _json_line_records(records, used_encoding, warnings, size=len(content))
    problems = [ImportProblem(1, name, "the column appears more than once")
                for name in sorted({h for h in header if h and header.count(h) > 1})]
    rows: list[tuple[int, dict[str, str]]] = []
    for row_number, record in records:
        if len(record) != len(header):
            problems.append(ImportProblem(row_number, None, f"{len(record)} fields where the header has "
                                          f"{len(header)} (a missing or extra delimiter, or an unquoted comma?)"))
            continue
        row = {name: _spreadsheet_cell_text(value) for name, value in zip(header, record, strict=True)}
        nul_column = _column_with_nul(row)
        if nul_column is not None:
            problems.append(ImportProblem(row_number, nul_column, NUL_MESSAGE))
            continue
        rows.append((row_number, row))
    if problems:
        raise ItemFileError(problems[:MAX_REPORTED_PROBLEMS], len(problems))
    return TableRecords(rows=rows, encoding=used_encoding, warnings=warnings)
