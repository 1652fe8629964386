"""The coding rounds' REST API routes, under ``/api/`` in the ``api`` namespace (config/urls.py)."""
from django.urls import path

from coding import api_codebooks, api_exports, api_rounds

patterns: list = [
    path("codebooks/", api_codebooks.CodebookListView.as_view(), name="codebook-list"),
    path("codebooks/<int:pk>/", api_codebooks.CodebookDetailView.as_view(), name="codebook-detail"),
    path("codebooks/<int:pk>/versions/", api_codebooks.CodebookVersionsView.as_view(), name="codebook-versions"),
    path("codebooks/<int:pk>/qdc/", api_codebooks.CodebookQDCView.as_view(), name="codebook-qdc"),
    path("coding-rounds/", api_rounds.RoundListView.as_view(), name="coding-round-list"),
    path("coding-rounds/<int:pk>/", api_rounds.RoundDetailView.as_view(), name="coding-round-detail"),
    path("coding-rounds/<int:pk>/coders/", api_rounds.RoundCodersView.as_view(), name="coding-round-coders"),
    path("coding-rounds/<int:pk>/coders/<int:coder_id>/", api_rounds.RoundCoderView.as_view(),
         name="coding-round-coder"),
    path("coding-rounds/<int:pk>/mappings/", api_rounds.RoundMappingsView.as_view(), name="coding-round-mappings"),
    path("coding-rounds/<int:pk>/excerpts/", api_rounds.RoundExcerptsView.as_view(), name="coding-round-excerpts"),
    path("coding-rounds/<int:pk>/codings/", api_exports.RoundCodingsView.as_view(), name="coding-round-codings"),
    path("coding-rounds/<int:pk>/analysis/", api_exports.RoundAnalysisView.as_view(), name="coding-round-analysis"),
    path("coding-rounds/<int:pk>/verify/", api_rounds.RoundVerifyView.as_view(), name="coding-round-verify"),
    path("coding-rounds/<int:pk>/<str:action>/", api_rounds.RoundActionView.as_view(), name="coding-round-action"),
]
