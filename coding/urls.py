"""The coding rounds' pages: coders' pages (an invite link or a researcher's account) and the researcher's round
pages."""
from django.urls import path

from coding import result_views
from coding import views as coder_views

# Coders' pages: the same views by an invite link (/c/<token>/) and by a researcher's account.
_coder_pages = [
    ("", coder_views.resume, "resume"),
    ("intro/", coder_views.intro, "intro"),
    ("excerpts/<int:excerpt_id>/", coder_views.excerpt, "excerpt"),
    ("excerpts/<int:excerpt_id>/save/", coder_views.save, "save"),
    ("done/", coder_views.done, "done"),
]

urlpatterns: list = [
    *(path(f"c/<str:token>/{route}", view, name=f"coder-link-{name}") for route, view, name in _coder_pages),
    *(path(f"coding/rounds/<int:round_id>/code/{route}", view, name=f"coder-account-{name}")
      for route, view, name in _coder_pages),
    # The round's results (researchers)
    path("coding/rounds/<int:round_id>/results/", result_views.coding_round_results, name="coding-round-results"),
]
