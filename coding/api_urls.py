"""The coding rounds' REST API routes, under ``/api/`` in the ``api`` namespace (auditapp/urls.py)."""
from django.urls import path

from coding import api_exports

patterns: list = [
    # Exports (analysis and codings)
    path("coding-rounds/<int:pk>/codings/", api_exports.RoundCodingsView.as_view(), name="coding-round-codings"),
    path("coding-rounds/<int:pk>/analysis/", api_exports.RoundAnalysisView.as_view(), name="coding-round-analysis"),
]
