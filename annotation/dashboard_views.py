"""A study's weighted-vs-majority dashboard (staff only): the page, and the button that queues a recomputation.

Thin: the page reads the stored latest analysis through ``annotation.dashboard``; a GET never computes
anything. The recomputation runs in the Celery worker (``tasks.analysis``), so the page stays fast.
"""
from __future__ import annotations

from django.contrib import messages
from django.contrib.admin.views.decorators import staff_member_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_GET, require_POST

from annotation.dashboard import study_dashboard_context
from annotation.models import Study
from annotation.study_analysis import study_analysis_request


@require_GET
@staff_member_required
def study_dashboard(request: HttpRequest, study_id: int) -> HttpResponse:
    study = get_object_or_404(Study, pk=study_id)
    return render(request, "annotation/dashboard.html", study_dashboard_context(study=study))


@require_POST
@staff_member_required
def study_dashboard_recompute(request: HttpRequest, study_id: int) -> HttpResponse:
    study = get_object_or_404(Study, pk=study_id)
    # A recomputation already waiting or running covers this request (it runs once more if one is running).
    study_analysis_request(study_id=study.id)
    messages.success(request, "Recomputation queued: reload this page in a moment to see the new results.")
    return redirect("study-dashboard", study_id=study.id)
