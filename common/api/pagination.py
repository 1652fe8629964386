"""Pagination of JSON list responses; CSV responses are never paginated."""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from django.db.models import QuerySet
from rest_framework.exceptions import ValidationError
from rest_framework.pagination import PageNumberPagination
from rest_framework.request import Request
from rest_framework.views import APIView


class ExportPagination(PageNumberPagination):
    """1,000 rows a page by default; ``?page_size=`` up to 10,000 (more is served as 10,000). ``?format=csv``
    gives every row. A ``page`` or ``page_size`` that is not a whole number of at least 1 is a 400 naming it,
    in every format (a CSV export ignores them, but a script that sends nonsense should hear about it); a page
    past the last is a 404."""

    page_size = 1000
    page_size_query_param = "page_size"
    max_page_size = 10_000

    def get_page_size(self, request: Request) -> int:
        size = _positive_integer(request, self.page_size_query_param)
        return self.page_size if size is None else min(size, self.max_page_size)

    def check_query(self, request: Request) -> None:
        """A 400 naming ``page`` or ``page_size`` if either is not a whole number of at least 1."""
        self.get_page_size(request)
        if request.query_params.get(self.page_query_param) not in self.last_page_strings:
            _positive_integer(request, self.page_query_param)

    def paginate_queryset(self, queryset: QuerySet | Sequence[Any], request: Request,
                          view: APIView | None = None) -> list | None:
        self.check_query(request)
        renderer = getattr(request, "accepted_renderer", None)
        if renderer is not None and renderer.format == "csv":
            return None
        # DRF pages a list as well as a queryset (Django's Paginator takes either); its stubs (3.16.9) name only
        # QuerySet, and an export's rows may be a list (common.export_rows.Export).
        return super().paginate_queryset(queryset, request, view)  # type: ignore[arg-type]

    def get_schema_operation_parameters(self, view: APIView) -> list[dict[str, Any]]:
        parameters = super().get_schema_operation_parameters(view)
        for parameter in parameters:
            parameter["schema"]["minimum"] = 1
            if parameter["name"] == self.page_size_query_param:
                parameter["description"] = (f"Rows per page, {self.page_size:,} by default; more than "
                                            f"{self.max_page_size:,} is served as {self.max_page_size:,}.")
        return parameters


def _positive_integer(request: Request, name: str) -> int | None:
    """The query parameter ``name`` as a whole number of at least 1, None if absent; a 400 naming it otherwise."""
    raw = request.query_params.get(name)
    if raw is None:
        return None
    if not (raw.isascii() and raw.isdigit()) or int(raw) < 1:
        raise ValidationError({name: [f"must be a whole number of at least 1, not {raw!r}."]})
    return int(raw)
