"""A database that cannot be reached answers 503 with Retry-After, never a bare "Server Error (500)".

Pages get a short page that says what happened, that every answer already acknowledged is saved, and
that reloads itself; requests from the pages' scripts (JSON) and the API get a JSON body, and the pages'
scripts retry until the server acknowledges. Only connection-level errors (OperationalError,
InterfaceError) are turned into 503: an IntegrityError or DataError is a bug or bad input, not an outage.
"""
from __future__ import annotations

import logging

from django.db import InterfaceError, OperationalError
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.template.loader import render_to_string

logger = logging.getLogger(__name__)

RETRY_AFTER_SECONDS = 10


class DatabaseUnavailableMiddleware:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        return self.get_response(request)

    def process_exception(self, request: HttpRequest, exception: Exception) -> HttpResponse | None:
        if not isinstance(exception, (OperationalError, InterfaceError)):
            return None
        logger.error("Database unavailable for %s %s: %s", request.method, request.path, exception)
        headers = {"Retry-After": str(RETRY_AFTER_SECONDS), "Cache-Control": "no-store"}
        if _wants_json(request):
            return JsonResponse({"error": "The server's database is unavailable; what was acknowledged "
                                          "before is saved, this request may not be. Please retry.", "retry_after": RETRY_AFTER_SECONDS},
                                status=503, headers=headers)
        html = render_to_string("unavailable.html", {"retry_after": RETRY_AFTER_SECONDS})
        return HttpResponse(html, status=503, headers=headers)


def _wants_json(request: HttpRequest) -> bool:
    return (request.path.startswith("/api/") or request.content_type == "application/json"
            or "application/json" in request.headers.get("Accept", ""))
