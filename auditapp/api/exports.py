"""The list view every export endpoint uses: paginated JSON, or every row streamed as CSV.

A view names a selector that returns ``(columns, values_list queryset)``. JSON pages and the CSV
stream are built from the same columns and the same rows, so the two formats always agree; the CSV
path iterates the queryset in chunks (a server-side cursor on PostgreSQL), so memory stays flat
however many rows there are.
"""
from __future__ import annotations

from rest_framework import generics

from auditapp.api.csv_export import streaming_csv_response

EXPORT_CHUNK_SIZE = 5000


class ExportListAPIView(generics.ListAPIView):
    """Subclasses implement ``export_rows()`` and ``export_filename()`` and set ``serializer_class``."""

    def export_rows(self) -> tuple[list[str], object]:
        raise NotImplementedError

    def export_filename(self) -> str:
        raise NotImplementedError

    def list(self, request, *args, **kwargs):
        columns, queryset = self.export_rows()
        if request.accepted_renderer.format == "csv":
            return streaming_csv_response(columns, queryset.iterator(chunk_size=EXPORT_CHUNK_SIZE),
                                          filename=self.export_filename())
        page = self.paginate_queryset(queryset)
        records = [dict(zip(columns, row, strict=True)) for row in page]
        return self.get_paginated_response(self.get_serializer(records, many=True).data)
