"""The coding rounds' pages: coders' pages (an invite link or a researcher's account) and the researcher's round
pages."""
from django.urls import path

from coding import result_views

urlpatterns: list = [
    # The round's results (researchers)
    path("coding-rounds/<int:round_id>/results/", result_views.coding_round_results, name="coding-round-results"),
]
