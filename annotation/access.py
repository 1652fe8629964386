"""Participant access in one place: an invite token reaches only its own participant's pages.

Tokens are 192-bit random strings. Requests with unknown tokens are counted per client address; past
BAD_TOKEN_LIMIT within BAD_TOKEN_WINDOW seconds that address gets 429 for every token page, so tokens
cannot be guessed by trying.

A write refused because the participant has withdrawn (ParticipantWithdrawn, raised under the
participant's row lock) is answered here for every page: 410 with the withdraw page, or JSON for the
pages' scripts.
"""
from __future__ import annotations

from functools import wraps

from django.core.cache import cache
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import redirect, render

from annotation.models import Participant
from annotation.participation import ParticipantWithdrawn

BAD_TOKEN_LIMIT = 20
BAD_TOKEN_WINDOW = 15 * 60


def _client_address(request: HttpRequest) -> str:
    return request.META.get("REMOTE_ADDR", "unknown")


def participant_by_token(request: HttpRequest, token: str) -> Participant:
    """The participant whose invite token this is; Http404 otherwise (and the miss is counted)."""
    participant = Participant.objects.select_related("study").filter(invite_token=token).first()
    if participant is None or not token:
        key = f"bad-token:{_client_address(request)}"
        cache.add(key, 0, BAD_TOKEN_WINDOW)
        cache.incr(key)
        raise Http404("No such invitation.")
    return participant


def participant_page(*, step: str | None = None):
    """Decorate a view ``view(request, participant, ...)`` reached by ``/p/<token>/...``.

    With ``step``, a participant who is elsewhere in the flow is sent to where they are, so the flow
    can only be taken in order and a reopened link resumes at the right page.
    """
    def decorate(view):
        @wraps(view)
        def wrapper(request: HttpRequest, token: str, *args, **kwargs):
            if cache.get(f"bad-token:{_client_address(request)}", 0) >= BAD_TOKEN_LIMIT:
                return HttpResponse("Too many invalid links from this address; try again later.", status=429)
            participant = participant_by_token(request, token)
            if step is not None:
                from annotation.participation import next_step, step_url

                current = next_step(participant)
                if current.kind != step:
                    return redirect(step_url(participant, current))
            try:
                return view(request, participant, *args, **kwargs)
            except ParticipantWithdrawn as withdrawn:
                return _withdrawn_response(request, participant, str(withdrawn))
        return wrapper
    return decorate


def _withdrawn_response(request: HttpRequest, participant: Participant, message: str) -> HttpResponse:
    participant.refresh_from_db()
    if request.content_type == "application/json" or "application/json" in request.headers.get("Accept", ""):
        return JsonResponse({"error": message, "withdrawn": True}, status=410)
    return render(request, "participant/withdraw.html", {"participant": participant, "study": participant.study},
                  status=410)
