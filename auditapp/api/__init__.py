"""Shared REST API machinery: the streamed CSV export, pagination, and the export list view."""
