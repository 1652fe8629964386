"""The coding rounds' REST API routes, under ``/api/`` in the ``api`` namespace (auditapp/urls.py)."""
from django.urls import path

from coding import api_codebooks, api_exports

patterns: list = [
    path("codebooks/", api_codebooks.CodebookListView.as_view(), name="codebook-list"),
    path("codebooks/<int:pk>/", api_codebooks.CodebookDetailView.as_view(), name="codebook-detail"),
    path("codebooks/<int:pk>/versions/", api_codebooks.CodebookVersionsView.as_view(), name="codebook-versions"),
    path("codebooks/<int:pk>/qdc/", api_codebooks.CodebookQDCView.as_view(), name="codebook-qdc"),
    # Exports (analysis and codings)
    path("coding-rounds/<int:pk>/codings/", api_exports.RoundCodingsView.as_view(), name="coding-round-codings"),
    path("coding-rounds/<int:pk>/analysis/", api_exports.RoundAnalysisView.as_view(), name="coding-round-analysis"),
]
