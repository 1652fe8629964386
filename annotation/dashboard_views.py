"""A study's dashboard (staff only): the study monitor on top, then the weighted-vs-majority analysis; the button
that queues a recomputation, and the state of the analysis that the page polls until the recomputation is done.

The page is for the study's team (a viewer reads it; a study of another team is not found, 404); the recomputation
needs an editor (403 for a viewer, and nothing is queued), as in :mod:`teams.pages`.

Thin: the page reads the monitor's counts and the stored latest analysis through ``annotation.dashboard``; a GET
never computes anything. The recomputation runs in the Celery worker (``tasks.analysis``), so the page stays fast;
while it waits or runs (or the alternative ground truths that follow it are being computed), the page asks
``dashboard/status/`` every few seconds and reloads itself once they are done (``static/annotation/monitor.js``).

Each long list of items is paged on the server: ``<list>_page`` (from 1) and ``<list>_q`` (a text the item's
id or sentence contains) for ``disagreements`` and ``ties``; a page link or filter keeps the other list's.
A malformed page, a text of more than 200 characters, or a page beyond the last answers 400 naming it.
"""
from __future__ import annotations

from django.contrib import messages
from django.contrib.admin.views.decorators import staff_member_required
from django.http import HttpRequest, HttpResponse, HttpResponseBadRequest, JsonResponse, QueryDict
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_POST

from annotation.dashboard import ITEM_LIST_IDS, ItemListQuery, ItemListQueryError, study_dashboard_context
from annotation.models import Study
from annotation.selectors import study_alternatives_status, study_analysis_status
from annotation.study_analysis import study_analysis_request
from teams import roles
from teams.pages import can, get_visible_or_404


@require_GET
@staff_member_required
def study_dashboard(request: HttpRequest, study_id: int) -> HttpResponse:
    study = get_visible_or_404(request.user, Study.objects.all(), pk=study_id)
    try:
        queries = _item_list_queries(request.GET)
        context = study_dashboard_context(study=study, queries=queries)
        context["can_recompute"] = can(request.user, study, roles.EDITOR)
    except (ValueError, ItemListQueryError) as error:
        return HttpResponseBadRequest(str(error), content_type="text/plain; charset=utf-8")
    for item_list in context.get("item_lists", []):
        item_list.update(_paging_links(request.GET, item_list["id"], item_list["items"].page,
                                       item_list["items"].n_pages))
        item_list["open"] = any(f"{item_list['id']}_{name}" in request.GET for name in ("page", "q"))
    return render(request, "annotation/dashboard.html", context)


MAX_FILTER_LENGTH = 200


def _item_list_queries(params: QueryDict) -> dict[str, ItemListQuery]:
    queries = {}
    for list_id in ITEM_LIST_IDS:
        page = params.get(f"{list_id}_page", "1")
        if not (page.isascii() and page.isdigit() and int(page) >= 1):
            raise ValueError(f"{list_id}_page must be a whole number from 1, not {page[:20]!r}.")
        text = params.get(f"{list_id}_q", "").strip()
        if len(text) > MAX_FILTER_LENGTH or "\x00" in text:
            raise ValueError(f"{list_id}_q must be at most {MAX_FILTER_LENGTH} characters of text.")
        queries[list_id] = ItemListQuery(int(page), text)
    return queries


def _paging_links(params: QueryDict, list_id: str, page: int, n_pages: int) -> dict:
    """The query strings of a list's previous and next pages, and the other parameters its filter form keeps."""
    def with_page(number: int) -> str:
        changed = params.copy()
        changed[f"{list_id}_page"] = str(number)
        return changed.urlencode()
    return {"previous_query": with_page(page - 1) if page > 1 else None,
            "next_query": with_page(page + 1) if page < n_pages else None,
            "kept_params": [(name, value) for name, value in params.items()
                            if name not in (f"{list_id}_page", f"{list_id}_q")]}


@require_POST
@staff_member_required
def study_dashboard_recompute(request: HttpRequest, study_id: int) -> HttpResponse:
    study = get_visible_or_404(request.user, Study.objects.all(), at_least=roles.EDITOR, pk=study_id)
    # A recomputation already waiting or running covers this request (it runs once more if one is running).
    study_analysis_request(study_id=study.id)
    messages.success(request, "Recomputation queued: this page refreshes itself when it is done.")
    return redirect("study-dashboard", study_id=study.id)


@require_GET
@staff_member_required
def study_dashboard_status(request: HttpRequest, study_id: int) -> JsonResponse:
    """Where the study's analysis stands (``state``: queued, running, done, failed, not_computed; ``computed_at`` of
    the stored results) and its alternative ground truths' status (``alternatives``): what the page polls."""
    study = get_visible_or_404(request.user, Study.objects.all(), pk=study_id)
    analysis = study_analysis_status(study=study)
    return JsonResponse({"state": analysis.state, "error": analysis.error,
                         "computed_at": analysis.computed_at.isoformat() if analysis.computed_at else None,
                         "alternatives": study_alternatives_status(study=study)["status"]})
