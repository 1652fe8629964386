"""Pagination of JSON list responses (CSV exports are never paginated)."""
from rest_framework.pagination import PageNumberPagination


class ExportPagination(PageNumberPagination):
    """1,000 rows a page by default; ``?page_size=`` up to 10,000. ``?format=csv`` gives every row."""

    page_size = 1000
    page_size_query_param = "page_size"
    max_page_size = 10_000
