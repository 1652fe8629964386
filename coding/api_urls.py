"""The coding rounds' REST API routes, under ``/api/`` in the ``api`` namespace (auditapp/urls.py)."""
from django.urls import path

from coding import api_rounds

patterns: list = [
    # Rounds (coding.api_rounds)
    path("coding-rounds/", api_rounds.RoundListView.as_view(), name="coding-round-list"),
    path("coding-rounds/<int:pk>/", api_rounds.RoundDetailView.as_view(), name="coding-round-detail"),
    path("coding-rounds/<int:pk>/coders/", api_rounds.RoundCodersView.as_view(), name="coding-round-coders"),
    path("coding-rounds/<int:pk>/coders/<int:coder_id>/", api_rounds.RoundCoderView.as_view(),
         name="coding-round-coder"),
    path("coding-rounds/<int:pk>/mappings/", api_rounds.RoundMappingsView.as_view(), name="coding-round-mappings"),
    path("coding-rounds/<int:pk>/excerpts/", api_rounds.RoundExcerptsView.as_view(), name="coding-round-excerpts"),
    path("coding-rounds/<int:pk>/verify/", api_rounds.RoundVerifyView.as_view(), name="coding-round-verify"),
    path("coding-rounds/<int:pk>/<str:action>/", api_rounds.RoundActionView.as_view(), name="coding-round-action"),
]
