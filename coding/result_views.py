"""A coding round's results page (staff only, like the study and audit dashboards): its settings and draw, its
lenses with coders and their progress, and the figures of :mod:`coding.analysis`, marked partial while coders
are still coding. A researcher who is a coder of the open round is refused (403, ``coding.access.blind_reason``).
The page is for the round's team (a viewer reads it; a round of another team is not found, 404, as in
:mod:`teams.pages`).

Thin: the page renders ``coding.selectors.round_results``; a GET writes nothing.
"""
from __future__ import annotations

from django.contrib.admin.views.decorators import staff_member_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from coding.access import blind_reason
from coding.models import CodingRound
from coding.selectors import round_results
from teams.pages import get_visible_or_404


@require_GET
@staff_member_required
def coding_round_results(request: HttpRequest, round_id: int) -> HttpResponse:
    coding_round = get_visible_or_404(request.user, CodingRound.objects.select_related("audit"), pk=round_id)
    if reason := blind_reason(request.user, coding_round):
        return render(request, "coding/round_blind.html", {"round": coding_round, "reason": reason}, status=403)
    return render(request, "coding/round_results.html", {"round": coding_round, "data": round_results(coding_round)})
