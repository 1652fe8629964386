"""The first sheet of an uploaded XLSX workbook, read within fixed limits whatever the file declares; pure Python.

A workbook is a zip of XML parts, and its size says little about the work of reading it: 441 KB inflate to
300 MB of ``<row/>`` elements, and the sheet's ``<dimension>`` may be missing or lie. openpyxl cannot stop early
(opening a workbook, even read-only, parses a sheet without a dimension to its end and keeps every row element
in memory), so this module parses the parts itself, with expat, as they are inflated, and stops at its limits:

- before any XML is parsed, the zip: at most MAX_UNCOMPRESSED_BYTES in all its parts, and no part above
  RATIO_CHECKED_ABOVE_BYTES that inflates more than MAX_COMPRESSION_RATIO times (real sheets inflate 10 to 30
  times; a zip bomb or a sheet of empty rows, hundreds). Python's zipfile never inflates a part past the size the
  zip declares (a part that lies fails its CRC), so the declared sizes bound what is parsed;
- the small parts openpyxl reads whole (content types, workbook, its relationships, styles): MAX_PART_BYTES each;
- the sheet and its shared strings, streamed: the declared dimension, row numbers, row elements, columns, cells
  (gaps within a row included), strings and XML elements are each bounded; only the cell or string being read
  is kept as elements (at most MAX_CELL_ELEMENTS of them), so memory holds one row and the shared strings (at most
  MAX_SHARED_STRING_CHARACTERS, counting an object's overhead for each string); a DTD is refused;
- :meth:`FirstSheet.check_declared_size` (the bounded check while an uploader waits) reads the sheet only up to
  its data, at most MAX_PRELUDE_BYTES.

Values are those openpyxl's read-only mode gives (its cell parser reads each cell: shared and inline strings,
numbers, dates by the workbook's styles and epoch, booleans, errors), except that a formula cell without a value
saved in the file is an :class:`UncachedFormula`, not an empty cell.
"""
from __future__ import annotations

import io
import math
import zipfile
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pyexpat import ExpatError, ParserCreate
from xml.etree.ElementTree import TreeBuilder

MAX_ROWS = 1_048_576
MAX_COLUMNS = 1_000
MAX_CELLS = 20_000_000
MAX_ELEMENTS = 3 * MAX_CELLS   # of one part: a cell is two to four (its value, a string and its text)
MAX_UNCOMPRESSED_BYTES = 256 * 2**20
MAX_COMPRESSION_RATIO = 100
RATIO_CHECKED_ABOVE_BYTES = 2**20
MAX_PART_BYTES = 8 * 2**20
MAX_PRELUDE_BYTES = 2**20
MAX_DEPTH = 64
MAX_CELL_ELEMENTS = 1_000
# The shared strings are held whole while a sheet is read: their characters, plus this much for each string's Python
# object, are bounded (64 Mi characters: a few hundred MB at most, whatever the strings' count and length).
MAX_SHARED_STRING_CHARACTERS = 64 * 2**20
SHARED_STRING_OVERHEAD = 50
SHRINK_ADVICE = "Delete the empty rows and columns after your data, or save the sheet as CSV."

_MAIN = "http://schemas.openxmlformats.org/spreadsheetml/2006/main}"
_ROW, _CELL, _DATA, _DIMENSION, _STRING = (f"{_MAIN}{tag}" for tag in ("row", "c", "sheetData", "dimension", "si"))
_CHUNK_BYTES = 64 * 1024


class XlsxError(ValueError):
    """The workbook cannot be read, or reading it would pass a limit (named in the message); ``row`` is the sheet's
    row where reading stopped, if it stopped in one."""

    def __init__(self, message: str, *, row: int | None = None):
        self.row = row
        super().__init__(message)


@dataclass(frozen=True)
class UncachedFormula:
    """A formula cell with no computed value saved (a workbook written by a program, not saved by a spreadsheet
    application): not an empty cell. ``formula`` is its text (``=A1+1``)."""

    formula: str


class _PartsReadWhole:
    """The zip as openpyxl reads the small parts it needs: each read whole, so each at most MAX_PART_BYTES."""

    def __init__(self, archive: zipfile.ZipFile):
        self._archive = archive

    def read(self, name: str) -> bytes:
        size = self._archive.getinfo(name).file_size
        if size > MAX_PART_BYTES:
            raise XlsxError(f"the workbook's part {name} is {size:,} bytes; at most {MAX_PART_BYTES:,} are read")
        return self._archive.read(name)

    def namelist(self) -> list[str]:
        return self._archive.namelist()


class _Part:
    """expat events of one part, counted and checked; the subtree of each ``kept`` element (a cell, a string) is
    built as elements and passed to ``on_kept``, every other element only to ``on_start`` / ``on_end``. A callback
    sets ``done`` when the rest of the part is not needed."""

    def __init__(self, what: str, kept: str, on_start: Callable, on_end: Callable, on_kept: Callable):
        self.what, self._kept = what, kept
        self.done = False
        self._on_start, self._on_end, self._on_kept = on_start, on_end, on_kept
        self.depth = self.elements = 0
        self._builder: TreeBuilder | None = None
        self._kept_depth = self._kept_elements = 0

    def start(self, name: str, attributes: dict) -> None:
        self.depth += 1
        self.elements += 1
        if self.depth > MAX_DEPTH:
            raise XlsxError(f"{self.what} nests XML elements more than {MAX_DEPTH} deep")
        if self.elements > MAX_ELEMENTS:
            raise XlsxError(f"{self.what} holds more than {MAX_ELEMENTS:,} XML elements; at most "
                            f"{MAX_ELEMENTS:,} are read. {SHRINK_ADVICE}")
        if self._builder is None and name == self._kept:
            self._builder, self._kept_depth, self._kept_elements = TreeBuilder(), self.depth, 0
        if self._builder is None:
            self._on_start(name, attributes)
            return
        self._kept_elements += 1
        if self._kept_elements > MAX_CELL_ELEMENTS:
            raise XlsxError(f"{self.what}: a cell or string holds more than {MAX_CELL_ELEMENTS:,} XML elements")
        self._builder.start(_tag(name), {_tag(key): value for key, value in attributes.items()})

    def end(self, name: str) -> None:
        self.depth -= 1
        if self._builder is None:
            self._on_end(name)
            return
        self._builder.end(_tag(name))
        if self.depth < self._kept_depth:
            element, self._builder = self._builder.close(), None
            self._on_kept(element)

    def data(self, text: str) -> None:
        if self._builder is not None:
            self._builder.data(text)


def _tag(name: str) -> str:
    """expat's ``namespace}name`` as ElementTree's ``{namespace}name``, which openpyxl's parsers expect."""
    return "{" + name if "}" in name else name


def _refuse_dtd(*_) -> None:
    raise XlsxError("the workbook declares a DTD or an entity, which no spreadsheet application writes")


def _ignore(*_) -> None:
    """Events of elements the reading does not use."""


class FirstSheet:
    """The first worksheet of a workbook (``with FirstSheet(content) as sheet``), checked as the module says.

    Opening it checks the zip and reads the small parts; :meth:`rows` streams the sheet. What was read is counted:
    ``bytes_read`` (XML of the sheet and its shared strings, uncompressed), ``rows_read`` (row elements),
    ``cells_read`` (cells, gaps within a row included). Raises :class:`XlsxError`.
    """

    def __init__(self, content: bytes):
        self.bytes_read = self.rows_read = self.cells_read = 0
        self._row: int | None = None   # the row being read, named by an error in it
        try:
            from openpyxl.reader.excel import ExcelReader
            from openpyxl.xml.constants import SHARED_STRINGS

            self._reader = ExcelReader(io.BytesIO(content), read_only=True, data_only=True, keep_links=False)
            self._archive = self._reader.archive
            # duck-typed: openpyxl calls only read() and namelist() on it
            self._reader.archive = _PartsReadWhole(self._archive)  # type: ignore[assignment]
            self._reader.read_manifest()
            self._reader.read_workbook()
            self.name, self._path = self._first_worksheet(self._reader)
            self.label = f"the first sheet ('{self.name[:31]}')"
            self._check_zip()
            strings = self._reader.package.find(SHARED_STRINGS)
            self._strings_path = strings.PartName[1:] if strings is not None else None
        except XlsxError:
            raise
        except Exception as exc:  # openpyxl and zipfile raise many types for a file that is not a workbook
            raise XlsxError(f"not a readable .xlsx workbook: {exc}") from exc

    def __enter__(self) -> FirstSheet:
        return self

    def __exit__(self, *exc_info) -> None:
        self._archive.close()

    @staticmethod
    def _first_worksheet(reader) -> tuple[str, str]:
        """(name, part) of the first sheet that is a worksheet (not a chart), as openpyxl's ``worksheets[0]``."""
        for sheet, relation in reader.parser.find_sheets():
            if relation.target in reader.valid_files and "chartsheet" not in relation.Type:
                return sheet.name, relation.target
        raise XlsxError("the workbook has no worksheet")

    def _check_zip(self) -> None:
        parts = self._archive.infolist()
        total = sum(info.file_size for info in parts)
        if total > MAX_UNCOMPRESSED_BYTES:
            sheet = self._archive.getinfo(self._path).file_size
            raise XlsxError(f"the workbook inflates to {total:,} bytes ({self.label}: {sheet:,}); at most "
                            f"{MAX_UNCOMPRESSED_BYTES:,} are read. {SHRINK_ADVICE}")
        for info in parts:
            ratio = info.file_size / max(info.compress_size, 1)
            if info.file_size > RATIO_CHECKED_ABOVE_BYTES and ratio > MAX_COMPRESSION_RATIO:
                part = (f"{self.label} ({info.filename})" if info.filename == self._path
                        else f"the workbook's part {info.filename}")
                raise XlsxError(
                    f"{part} inflates from {info.compress_size:,} to {info.file_size:,} bytes ({ratio:,.0f} times); "
                    f"a part above {RATIO_CHECKED_ABOVE_BYTES:,} bytes may inflate at most {MAX_COMPRESSION_RATIO} "
                    f"times (a file this compressible is mostly empty rows or cells, or a zip bomb). {SHRINK_ADVICE}")

    def _parse(self, path: str, part: _Part, ready: list, *, budget: int | None = None) -> Iterator:
        """Parse a part as it is inflated, yielding what ``part``'s callbacks put in ``ready`` after each chunk;
        stops once ``part`` is done or, given a ``budget``, once more than that many bytes are read."""
        parser = ParserCreate(namespace_separator="}")
        parser.buffer_text = True
        parser.StartDoctypeDeclHandler = parser.EntityDeclHandler = _refuse_dtd
        parser.StartElementHandler, parser.EndElementHandler = part.start, part.end
        parser.CharacterDataHandler = part.data
        try:
            with self._archive.open(path) as member:
                while chunk := member.read(_CHUNK_BYTES):
                    self.bytes_read += len(chunk)
                    parser.Parse(chunk, False)
                    yield from ready
                    ready.clear()
                    if part.done or (budget is not None and self.bytes_read > budget):
                        return
                parser.Parse(b"", True)
                yield from ready
        except ExpatError as exc:
            raise XlsxError(f"{part.what} is not well-formed XML: {exc}", row=self._row) from exc
        except (zipfile.BadZipFile, zlib.error, EOFError) as exc:
            raise XlsxError(f"not a readable .xlsx workbook: {part.what}: {exc}") from exc

    def check_declared_size(self) -> None:
        """The bounded check: the sheet's declared dimension, if it comes within MAX_PRELUDE_BYTES of its start."""
        def on_start(name: str, attributes: dict) -> None:
            if name == _DIMENSION:
                self._check_dimension(attributes.get("ref", ""))
            elif name == _DATA:
                part.done = True

        part = _Part(self.label, _CELL, on_start, _ignore, _ignore)
        for _ in self._parse(self._path, part, [], budget=MAX_PRELUDE_BYTES):
            pass

    def _check_dimension(self, ref: str) -> None:
        from openpyxl.utils.cell import range_boundaries

        try:
            _, _, columns, rows = range_boundaries(ref)
        except (ValueError, TypeError):
            return   # not a size: the reading is bounded anyway
        columns, rows = columns or 0, rows or 0
        if rows > MAX_ROWS or columns > MAX_COLUMNS or rows * columns > MAX_CELLS:
            raise XlsxError(f"{self.label} declares {rows:,} rows × {columns:,} columns ({ref[:40]}); at most "
                            f"{MAX_ROWS:,} rows, {MAX_COLUMNS:,} columns and {MAX_CELLS:,} cells are read. "
                            f"{SHRINK_ADVICE}")

    def rows(self) -> Iterator[tuple[int, list]]:
        """(row number, values) for each row of the sheet holding a cell, values up to the row's last cell (None
        for a gap), as openpyxl's read-only ``iter_rows(values_only=True)`` gives them once its dimensions are
        reset. Reading stops at the end of the sheet's data."""
        parser = self._cell_parser()
        ready: list[tuple[int, list]] = []
        cells: list[tuple[int, object]] = []

        def on_start(name: str, attributes: dict) -> None:
            if name == _ROW:
                number = self._row_started(attributes.get("r"), parser.row_counter)
                parser.row_counter, parser.col_counter = number, 0
                cells.clear()
            elif name == _DIMENSION:
                self._check_dimension(attributes.get("ref", ""))

        def on_end(name: str) -> None:
            if name == _ROW and cells:
                ready.append((parser.row_counter, self._row_values(cells, parser.row_counter)))
            elif name == _DATA:
                part.done = True   # what follows the data (merged cells, print settings, ...) is not read

        def on_cell(element) -> None:
            cells.append(self._cell(parser, element, parser.row_counter, len(cells)))

        part = _Part(self.label, _CELL, on_start, on_end, on_cell)
        yield from self._parse(self._path, part, ready)

    def _cell_parser(self):
        """openpyxl's parser of a sheet's cells, given the workbook's epoch and date styles; reads the styles."""
        from openpyxl.styles.stylesheet import apply_stylesheet
        from openpyxl.worksheet._reader import WorkSheetParser

        workbook = self._reader.wb
        try:
            apply_stylesheet(self._reader.archive, workbook)
        except XlsxError:
            raise
        except Exception as exc:  # openpyxl raises many types for a stylesheet it cannot read
            raise XlsxError(f"not a readable .xlsx workbook: its styles: {exc}") from exc
        # openpyxl's read-only sheets pass the same private attributes: the styles that make a number a date.
        # (types-openpyxl types the source and the shared strings as required and omits the private attributes)
        return WorkSheetParser(None, None, data_only=True, epoch=workbook.epoch,  # type: ignore[arg-type]
                               date_formats=workbook._date_formats,  # type: ignore[attr-defined]
                               timedelta_formats=workbook._timedelta_formats)  # type: ignore[attr-defined]

    def _row_started(self, declared: str | None, previous: int) -> int:
        """The row's number (its ``r``, else the one after the previous row), checked against the limits."""
        self.rows_read += 1
        number = previous + 1
        if declared is not None:
            try:
                as_float = float(declared)
            except ValueError:
                as_float = math.nan
            if not as_float.is_integer():
                raise XlsxError(f"{self.label}: the row after row {previous:,} is numbered '{declared[:20]}'",
                                row=previous or None)
            number = int(as_float)
        if number <= previous:
            raise XlsxError(f"{self.label}: row {number:,} comes after row {previous:,} (rows out of order: not a "
                            "workbook a spreadsheet application saved)", row=number)
        if number > MAX_ROWS or self.rows_read > MAX_ROWS:
            raise XlsxError(f"reading stopped at row {number:,} of {self.label}: at most {MAX_ROWS:,} rows are "
                            f"read. {SHRINK_ADVICE}", row=number)
        self._row = number
        return number

    def _cell(self, parser, element, row_number: int, before: int) -> tuple[int, object]:
        """(column, value) of a cell element by openpyxl's parser, the row having ``before`` cells before it; a
        formula without a saved value is flagged."""
        from openpyxl.utils.cell import get_column_letter
        from openpyxl.worksheet.formula import ArrayFormula

        try:
            if element.get("t") == "s" and parser.shared_strings is None:
                parser.shared_strings = self._shared_strings()
            formula = parser.parse_formula(element) if element.find("{" + _MAIN + "f") is not None else None
            cell = parser.parse_cell(element)
        except XlsxError:
            raise
        except (ValueError, IndexError, KeyError, TypeError, OverflowError) as exc:
            raise XlsxError(f"{self.label}: the cell {element.get('r', '')[:20]} in row {row_number:,} cannot be "
                            f"read: {exc!r}", row=row_number) from exc
        column, value = cell["column"], cell["value"]
        if column > MAX_COLUMNS or before >= MAX_COLUMNS:
            where = (f"a cell in column {get_column_letter(column)} ({column:,})" if column > MAX_COLUMNS
                     else f"more than {MAX_COLUMNS:,} cells")
            raise XlsxError(f"reading stopped at row {row_number:,} of {self.label}: it has {where}; at most "
                            f"{MAX_COLUMNS:,} columns are read. {SHRINK_ADVICE}", row=row_number)
        if value is None and formula is not None:
            value = UncachedFormula((formula.text or "") if isinstance(formula, ArrayFormula) else str(formula))
        return column, value

    def _row_values(self, cells: list[tuple[int, object]], row_number: int) -> list:
        """The row's values up to its last cell (openpyxl's width of a row), None in the gaps; counts its cells."""
        width = cells[-1][0]
        self.cells_read += max(width, len(cells))
        if self.cells_read > MAX_CELLS:
            raise XlsxError(f"reading stopped at row {row_number:,} of {self.label}: {self.cells_read:,} cells so "
                            f"far; at most {MAX_CELLS:,} cells are read. {SHRINK_ADVICE}", row=row_number)
        values: list = [None] * width
        for column, value in cells:
            if column <= width:
                values[column - 1] = value
        return values

    def _shared_strings(self) -> list:
        """The workbook's shared strings as openpyxl reads them, streamed: at most MAX_CELLS strings."""
        from openpyxl.cell.text import Text

        strings: list = []
        if self._strings_path is None:
            return strings
        what = f"the workbook's shared strings ({self._strings_path})"

        characters = 0

        def on_string(element) -> None:
            nonlocal characters
            if len(strings) >= MAX_CELLS:
                raise XlsxError(f"{what} hold more than {MAX_CELLS:,} strings; at most {MAX_CELLS:,} are read")
            # types-openpyxl: from_tree may give None; openpyxl's Serialisable.from_tree always returns an object
            text = Text.from_tree(element).content.replace("x005F_", "")  # type: ignore[union-attr]
            # Held whole while the sheet is read (a cell names one by its index): each string costs its characters
            # and a Python object of some 50 bytes, so both are bounded.
            characters += len(text) + SHARED_STRING_OVERHEAD
            if characters > MAX_SHARED_STRING_CHARACTERS:
                raise XlsxError(f"{what} hold more than {MAX_SHARED_STRING_CHARACTERS:,} characters (counting "
                                f"{SHARED_STRING_OVERHEAD} for each string); at most that many are read. {SHRINK_ADVICE}")
            strings.append(text)

        for _ in self._parse(self._strings_path, _Part(what, _STRING, _ignore, _ignore, on_string), []):
            pass
        return strings
