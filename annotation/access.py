"""Participant access in one place: an invite token reaches only its own participant's pages.

Tokens are 192-bit random strings. Requests with unknown tokens are counted per client address; past
BAD_TOKEN_LIMIT within BAD_TOKEN_WINDOW seconds that address gets 429 for every unknown token, so tokens
cannot be guessed by trying. A valid token is always served: the token is looked up first (an indexed
query), so one guesser behind a shared address (a university, a panel provider's proxy) does not lock out
the participants who share it. ``row_by_token`` is that lookup for any invite token (a coder's link in
``coding.access`` uses it); a participant's link is read with its study by ``page_reads``, and its misses
are counted the same way, so one count covers every kind of link. The count lives in the cache (Redis in
production); while that is unreachable, unknown links are answered 404 uncounted.

A write refused because the participant has withdrawn or declined consent (ParticipantWithdrawn, raised under the
participant's row lock, or a POST to a page of the flow once it has ended that way) is answered here for every
page: 410 with the withdraw (or declined) page, or JSON for the pages' scripts.
"""
from __future__ import annotations

import logging
from functools import wraps
from typing import NoReturn, TypeVar

import redis
from django.core.cache import cache
from django.db.models import Model, QuerySet
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import redirect, render

from annotation import page_reads
from annotation.models import Participant
from annotation.participation import (
    ParticipantWithdrawn,
    flow_facts_read_with,
    participant_opened,
)

RowT = TypeVar("RowT", bound=Model)

logger = logging.getLogger(__name__)

BAD_TOKEN_LIMIT = 20
BAD_TOKEN_WINDOW = 15 * 60


def _client_address(request: HttpRequest) -> str:
    return request.META.get("REMOTE_ADDR", "unknown")


class TooManyBadTokens(Exception):
    """This address has tried BAD_TOKEN_LIMIT unknown tokens within BAD_TOKEN_WINDOW seconds."""


def row_by_token(request: HttpRequest, queryset: QuerySet[RowT], token: str) -> RowT:
    """The row of ``queryset`` whose ``invite_token`` this is. Otherwise the miss is counted for the client's
    address (one count for every kind of invite link) and Http404 is raised, or TooManyBadTokens once the
    address is over the limit."""
    row = queryset.filter(invite_token=token).first() if token else None
    if row is None:
        _unknown_token(request)
    return row


def _unknown_token(request: HttpRequest) -> NoReturn:
    """Count an unknown invite link for the client's address; raise Http404, or TooManyBadTokens over the limit."""
    key = f"bad-token:{_client_address(request)}"
    try:
        over_limit = cache.get(key, 0) >= BAD_TOKEN_LIMIT
        if not over_limit:
            cache.add(key, 0, BAD_TOKEN_WINDOW)
            try:
                cache.incr(key)
            except ValueError:  # the window ended between add and incr: this miss opens the next one
                cache.add(key, 1, BAD_TOKEN_WINDOW)
    except redis.RedisError as error:
        # The unknown link is still unknown: it gets its 404, uncounted, rather than a 500 for every link mistyped
        # while the cache is down.
        logger.warning("unknown invite links are not counted: the cache is unreachable (%s)", error)
        over_limit = False
    if over_limit:
        raise TooManyBadTokens()
    raise Http404("No such invitation.")


def too_many_bad_tokens_response() -> HttpResponse:
    return HttpResponse("Too many invalid links from this address; try again later.", status=429,
                        headers={"Retry-After": str(BAD_TOKEN_WINDOW)})


def participant_by_token(request: HttpRequest, token: str) -> Participant:
    """The participant whose invite token this is, with their study and what
    :func:`~annotation.participation.next_step` asks the database (``page_reads.participant_for_page``); an
    unknown token is counted as ``row_by_token`` counts it."""
    participant = page_reads.participant_for_page(token) if token else None
    if participant is None:
        _unknown_token(request)
    return participant


def participant_page(*, step: str | None = None):
    """Decorate a view ``view(request, participant, ...)`` reached by ``/p/<token>/...``.

    With ``step``, a participant who is elsewhere in the flow is sent to where they are, so the flow
    can only be taken in order and a reopened link resumes at the right page. Every page records the first time the
    link was opened (``participant_opened``), for the study monitor's recruitment funnel.
    """
    def decorate(view):
        @wraps(view)
        def wrapper(request: HttpRequest, token: str, *args, **kwargs):
            try:
                participant = participant_by_token(request, token)
            except TooManyBadTokens:
                return too_many_bad_tokens_response()
            participant_opened(participant=participant)
            if step is not None:
                from annotation.participation import next_step, step_url

                current = next_step(participant, facts=flow_facts_read_with(participant))
                if current.kind in ("withdrawn", "declined") and request.method == "POST":
                    # A write answered with a redirect would look stored to a page's script (fetch follows it).
                    return _withdrawn_response(request, participant, str(ParticipantWithdrawn(
                        declined=current.kind == "declined")))
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
    template = ("participant/declined.html" if participant.status == Participant.Status.DECLINED
                else "participant/withdraw.html")
    return render(request, template, {"participant": participant, "study": participant.study}, status=410)
