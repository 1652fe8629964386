"""Content negotiation of the API: an unknown or empty ``?format=`` is a 406 naming the formats offered.

DRF answers an unknown format with a bare 404 ("Not found."), which reads as if the object did not exist,
and ignores an empty one.
"""
from __future__ import annotations

from collections.abc import Iterable

from rest_framework.exceptions import NotAcceptable
from rest_framework.negotiation import DefaultContentNegotiation
from rest_framework.renderers import BaseRenderer
from rest_framework.request import Request


class FormatNegotiation(DefaultContentNegotiation):
    def select_renderer(self, request: Request, renderers: Iterable[BaseRenderer],
                        format_suffix: str | None = None) -> tuple[BaseRenderer, str]:
        if not format_suffix and request.query_params.get(self.settings.URL_FORMAT_OVERRIDE) == "":
            self.filter_renderers(renderers, "")
        return super().select_renderer(request, renderers, format_suffix)

    def filter_renderers(self, renderers: Iterable[BaseRenderer], format: str) -> list[BaseRenderer]:
        offered = [renderer for renderer in renderers if renderer.format == format]
        if not offered:
            names = ", ".join(dict.fromkeys(renderer.format for renderer in renderers))
            raise NotAcceptable(f"format {format!r} is not offered here; use one of: {names}.")
        return offered
