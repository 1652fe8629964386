"""CSV for every list endpoint (``?format=csv`` or ``Accept: text/csv``), streamed in constant memory.

List views stream their rows straight from a database cursor (see ``ExportListAPIView``); the
renderer here serves everything else that asks for CSV (a detail object, an error), so content
negotiation never fails. Datetimes are written in ISO 8601 UTC with a ``Z``, as in the JSON;
dicts and lists (metadata) as JSON text; ``None`` as an empty cell (``""``). Every text cell, the header included,
goes through ``common.spreadsheet_cells.formula_safe_cell``, so no cell runs as a spreadsheet formula,
and every text cell of a row is quoted, so no separator inside it splits it.
"""
from __future__ import annotations

import csv
import datetime as dt
import io
import json
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any

from django.http import StreamingHttpResponse
from rest_framework.renderers import BaseRenderer

from common.spreadsheet_cells import formula_safe_cell

ROWS_PER_CHUNK = 2000


def csv_cell(value: object) -> object:
    """A value as it is written in a CSV cell (see the module docstring)."""
    if value is None:
        return ""
    if isinstance(value, dt.datetime):
        return value.astimezone(dt.UTC).isoformat().replace("+00:00", "Z")
    if isinstance(value, (dict, list)):
        return json.dumps(value, ensure_ascii=False, sort_keys=True)
    return formula_safe_cell(value)


def csv_chunks(header: list[str], rows: Iterable[Sequence[object]]) -> Iterator[str]:
    """The CSV text of ``header`` and ``rows``, yielded in chunks of ROWS_PER_CHUNK rows."""
    buffer = io.StringIO()
    csv.writer(buffer, lineterminator="\n").writerow([formula_safe_cell(name) for name in header])
    # Every text cell in quotes (OWASP): a spreadsheet whose list separator is ";" or a tab would otherwise
    # split "ok;=HYPERLINK(…)" and run its second half. Numbers stay bare, so they stay numbers.
    writer = csv.writer(buffer, lineterminator="\n", quoting=csv.QUOTE_NONNUMERIC)
    pending = 0
    for row in rows:
        writer.writerow([csv_cell(v) for v in row])
        pending += 1
        if pending == ROWS_PER_CHUNK:
            yield buffer.getvalue()
            buffer.seek(0)
            buffer.truncate(0)
            pending = 0
    yield buffer.getvalue()


def streaming_csv_response(header: list[str], rows: Iterable[Sequence[object]], *,
                           filename: str) -> StreamingHttpResponse:
    response = StreamingHttpResponse(csv_chunks(header, rows), content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{filename}"'
    return response


class CSVRenderer(BaseRenderer):
    """CSV for non-streamed responses: a list of objects, a page of them, one object, or an error."""

    media_type = "text/csv"
    format = "csv"
    charset = "utf-8"

    def render(self, data: Any, accepted_media_type: str | None = None,
               renderer_context: Mapping[str, Any] | None = None) -> bytes:
        if data is None:
            return b""
        if isinstance(data, dict) and isinstance(data.get("results"), list):
            data = data["results"]
        records = data if isinstance(data, list) else [data]
        records = [r if isinstance(r, dict) else {"value": r} for r in records]
        header: list[str] = []
        for record in records:
            header.extend(k for k in record if k not in header)
        return "".join(csv_chunks(header, ([r.get(k) for k in header] for r in records))).encode("utf-8")
