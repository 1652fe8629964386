"""The list view every export endpoint uses: paginated JSON, or every row streamed as CSV; and the export of a
table a paradigm's analysis stored (:func:`stored_analysis_table`).

A view names a selector that returns an ``Export`` (columns, rows, optional transform). JSON pages and the CSV
stream are built from the same columns and the same rows, so the two formats always agree; the CSV
path iterates the queryset in chunks (a server-side cursor on PostgreSQL), so memory stays flat
however many rows there are.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.http import StreamingHttpResponse
from rest_framework import generics
from rest_framework.request import Request
from rest_framework.response import Response

from common.api.csv_export import streaming_csv_response
from common.api.pagination import ExportPagination
from common.export_rows import Export

EXPORT_CHUNK_SIZE = 5000


class ExportListAPIView(generics.ListAPIView):
    """Subclasses implement ``export_rows()`` and ``export_filename()`` and set ``serializer_class``."""

    pagination_class = ExportPagination

    def export_rows(self) -> Export:
        """A ``common.export_rows.Export``: columns, rows, optional per-row transform."""
        raise NotImplementedError

    def export_filename(self) -> str:
        raise NotImplementedError

    def exported(self) -> None:
        """Called once per answer that carries rows (a JSON page or the CSV), before it is sent: where an app writes
        its access log (the teams' ``ExportLogged``). Nothing by default."""

    # A CSV export streams (DRF returns a StreamingHttpResponse as it is); the stubs' ListModelMixin.list
    # promises a Response.
    def list(self, request: Request, *args: Any,  # type: ignore[override]
             **kwargs: Any) -> Response | StreamingHttpResponse:
        paginator = self.paginator
        assert isinstance(paginator, ExportPagination)  # pagination_class: every JSON list is paged
        paginator.check_query(request)
        export = self.export_rows()
        if request.accepted_renderer.format == "csv":
            self.exported()
            return streaming_csv_response(export.columns, export.iterate(EXPORT_CHUNK_SIZE),
                                          filename=self.export_filename())
        page = paginator.paginate_queryset(export.rows, request, view=self)
        assert page is not None  # ExportPagination pages every JSON list (the CSV one was streamed above)
        if export.transform is not None:
            page = [export.transform(row) for row in page]
        records = [dict(zip(export.columns, row, strict=True)) for row in page]
        response = self.get_paginated_response(self.get_serializer(records, many=True).data)
        self.exported()
        return response


class ModelListExportView(ExportListAPIView):
    """A list of model instances: JSON pages through the serializer (nested fields and all), CSV from
    ``export_rows()`` (flat columns, streamed)."""

    # Streams a CSV export as ExportListAPIView.list does (the same stub gap).
    def list(self, request: Request, *args: Any,  # type: ignore[override]
             **kwargs: Any) -> Response | StreamingHttpResponse:
        if request.accepted_renderer.format == "csv":
            return super().list(request, *args, **kwargs)
        page = self.paginate_queryset(self.get_queryset())
        return self.get_paginated_response(self.get_serializer(page, many=True).data)


def stored_analysis_table(name: str) -> Callable:
    """The rows of a table stored in ``Audit.analysis["tables"][name]`` (records; none until analysed), with its
    columns from ``Audit.analysis["columns"][name]`` when it has no row, so an empty table keeps its header."""
    def rows(audit) -> Export:
        analysis = audit.analysis or {}
        records = analysis.get("tables", {}).get(name) or []
        columns = list(records[0]) if records else list(analysis.get("columns", {}).get(name, []))
        return Export(columns, [tuple(record.get(column) for column in columns) for record in records])
    return rows
