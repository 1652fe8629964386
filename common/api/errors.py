"""The API's one handler of application errors (settings ``REST_FRAMEWORK["EXCEPTION_HANDLER"]``): a refusal a
service raises with its reason (:class:`common.errors.ApplicationError`) becomes a JSON answer with that reason,
so no view catches it by hand."""
from __future__ import annotations

from typing import Any

from rest_framework import status
from rest_framework.response import Response
from rest_framework.views import exception_handler as drf_exception_handler
from rest_framework.views import set_rollback

from common.errors import ApplicationError, StateConflict

# Most specific first: a refusal in the present state is a conflict, any other refusal a bad request.
STATUS_OF = ((StateConflict, status.HTTP_409_CONFLICT), (ApplicationError, status.HTTP_400_BAD_REQUEST))


def exception_handler(exc: Exception, context: dict[str, Any]) -> Response | None:
    """DRF's handler for its own exceptions; an application error answers ``{"detail": its reason}`` with its
    status, and the request's transaction (if any) is rolled back as for DRF's own errors."""
    for error_type, code in STATUS_OF:
        if isinstance(exc, error_type):
            set_rollback()
            return Response({"detail": str(exc)}, status=code)
    return drf_exception_handler(exc, context)
