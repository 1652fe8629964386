"""The coding rounds' pages: coders' pages (an invite link or a researcher's account) and the researcher's round
pages."""
from django.urls import path  # noqa: F401  (used as routes are added)

urlpatterns: list = []
