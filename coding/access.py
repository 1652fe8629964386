"""Coder access in one place: a coder's invite link (``/c/<token>/``) or a researcher's account
(``/coding/rounds/<round_id>/code/``) reaches only that coder's pages.

Unknown tokens are counted per client address by the same lookup as the annotators' links
(``annotation.access.row_by_token``), so guessing either kind of link uses up one allowance. An account reaches a
round's coding pages only through its own Coder row in that round: anyone else gets 404 (a visitor who is not
logged in is sent to the login page). Excerpts are looked up within the coder's round only.

A researcher who is a coder of a round is kept blind to it while it is open (:func:`blind_reason`): its results,
its exports of codes and the other coders' invite links are refused or left out, since seed 000 §3.4's analysts
coded "independently ... without reconciliation", and a coder who could read the others' codes could still change
their own until the round closes.

A save posted by the page's script after the account's session ended is answered 401 as JSON (not the login
page), and one reaching an account that is not a coder of the round (another account logged in since, in this
browser) 403 as JSON with ``wrong_coder``: the script keeps the change and sends it again once the coder has
logged in.

A closed round shows the "closed" page to every GET and refuses every write: 409, as JSON for the pages' scripts
or as the page otherwise; ``RoundClosed`` raised by a service under the coder's lock is answered the same way.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import wraps

from django.contrib.auth.views import redirect_to_login
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render
from django.urls import reverse

from annotation.access import TooManyBadTokens, row_by_token, too_many_bad_tokens_response
from auditapp.engine.launch import BIGINT_MAX
from coding.coding_services import RoundClosed
from coding.models import Coder, Excerpt

_CODER_WITH_ROUND = Coder.objects.select_related("round", "lens__codebook")
LOGGED_OUT = ("You are logged out, so this change is not saved yet: log in again (in another tab), and this page "
              "sends it.")
WRONG_CODER = ("This page was opened by another account, not the one logged in now in this browser: nothing was "
               "saved. Log in again as the coder who opened it; the page keeps the change and sends it then.")


def blind_reason(user, coding_round) -> str | None:
    """Why ``user`` may not see ``coding_round``'s codes and results yet (a coder of the round while it is open),
    or None."""
    if coding_round.closed_at is not None or not getattr(user, "is_authenticated", False):
        return None
    if not Coder.objects.filter(round=coding_round, user=user).exists():
        return None
    return ("You are a coder of this round: its results and the other coders' codes open to you when the round is "
            "closed, so that each lens is coded independently (seed 000 §3.4).")


@dataclass(frozen=True)
class CoderAccess:
    """The coder a request acts as, and how it reached them (``token`` for an invite link, None for an
    account), so every link on a page stays within the same way in."""

    coder: Coder
    token: str | None

    def url(self, page: str, **kwargs) -> str:
        """The URL of one of the coder's pages: resume, intro, excerpt, save, done."""
        if self.token is not None:
            return reverse(f"coder-link-{page}", kwargs={"token": self.token, **kwargs})
        return reverse(f"coder-account-{page}", kwargs={"round_id": self.coder.round_id, **kwargs})


def coder_of_account(request: HttpRequest, round_id: int) -> Coder:
    """The logged-in user's Coder row in this round, or Http404 (also for an id no database column holds: a
    lookup through a foreign key's column skips Django's range check on ids)."""
    if round_id > BIGINT_MAX:
        raise Http404("You are not a coder of this round.")
    coder = _CODER_WITH_ROUND.filter(round_id=round_id, user_id=request.user.pk).first()
    if coder is None:
        raise Http404("You are not a coder of this round.")
    return coder


def excerpt_of_coder(access: CoderAccess, excerpt_id: int) -> Excerpt:
    """An excerpt of the coder's own round, or Http404 (an excerpt of any other round)."""
    excerpt = Excerpt.objects.filter(pk=excerpt_id, round_id=access.coder.round_id).first()
    if excerpt is None:
        raise Http404("No such excerpt in this round.")
    return excerpt


def wants_json(request: HttpRequest) -> bool:
    return request.content_type == "application/json" or "application/json" in request.headers.get("Accept", "")


def coder_page(view):
    """Decorate a view ``view(request, access, ...)`` reached by ``/c/<token>/...`` or
    ``/coding/rounds/<round_id>/code/...``."""
    @wraps(view)
    def wrapper(request: HttpRequest, *args, token: str | None = None, round_id: int | None = None, **kwargs):
        if token is not None:
            try:
                coder = row_by_token(request, _CODER_WITH_ROUND, token)
            except TooManyBadTokens:
                return too_many_bad_tokens_response()
        elif not request.user.is_authenticated:
            if wants_json(request):  # the page's save, after the session ended: the page keeps the change
                return JsonResponse({"error": LOGGED_OUT, "logged_out": True}, status=401)
            return redirect_to_login(request.get_full_path())
        else:
            try:
                coder = coder_of_account(request, round_id)
            except Http404:
                if wants_json(request):  # a page's save reaching an account that is not a coder of its round
                    return JsonResponse({"error": WRONG_CODER, "wrong_coder": True}, status=403)
                raise
        access = CoderAccess(coder=coder, token=token)
        if coder.round.closed_at is not None:
            return round_closed_response(request, access, status=200 if request.method == "GET" else 409)
        try:
            return view(request, access, *args, **kwargs)
        except RoundClosed:
            return round_closed_response(request, access, status=409)
    return wrapper


def round_closed_response(request: HttpRequest, access: CoderAccess, *, status: int) -> HttpResponse:
    message = "This coding round is closed: no more coding is accepted. Thank you for your work."
    if wants_json(request):
        return JsonResponse({"error": message, "closed": True}, status=status)
    return render(request, "coding/code_message.html", {
        "access": access, "round": access.coder.round, "heading": "This coding round is closed", "message": message},
        status=status)
