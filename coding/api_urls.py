"""The coding rounds' REST API routes, under ``/api/`` in the ``api`` namespace (auditapp/urls.py)."""
from django.urls import path  # noqa: F401  (used as routes are added)

patterns: list = []
