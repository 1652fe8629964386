"""Pagination of JSON list responses; CSV responses are never paginated."""
from rest_framework.pagination import PageNumberPagination


class ExportPagination(PageNumberPagination):
    """1,000 rows a page by default; ``?page_size=`` up to 10,000. ``?format=csv`` gives every row."""

    page_size = 1000
    page_size_query_param = "page_size"
    max_page_size = 10_000

    def paginate_queryset(self, queryset, request, view=None):
        renderer = getattr(request, "accepted_renderer", None)
        if renderer is not None and renderer.format == "csv":
            return None
        return super().paginate_queryset(queryset, request, view)
