"""The audit dashboard (staff only): one page per paradigm under the same header (its template extends
``auditapp/audit_dashboard_base.html``), live progress with pause / resume / cancel, and drill-down from a row to
its replies.

Thin: the page renders the paradigm's ``dashboard_template`` with its ``dashboard_data(audit)``
(:mod:`auditapp.engine.registry`); progress, control and the drill-down go through the REST API with the
researcher's session.
"""
from __future__ import annotations

from django.contrib.admin.views.decorators import staff_member_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, render
from django.views.decorators.http import require_GET

from auditapp.engine import registry
from auditapp.models import Audit


@require_GET
@staff_member_required
def audit_dashboard(request: HttpRequest, audit_id: int) -> HttpResponse:
    audit = get_object_or_404(Audit.objects.select_related("study", "corpus"), pk=audit_id)
    paradigm = registry.get(audit.paradigm)
    query = {name: request.GET[name] for name in paradigm.dashboard_query if name in request.GET}
    # Error-analysis rounds (coding/) are drawn from completed audits whose paradigm explains its labels.
    can_draw_round = paradigm.explained_replies is not None and audit.status == Audit.Status.COMPLETED
    return render(request, paradigm.dashboard_template, {"audit": audit, "can_draw_round": can_draw_round,
                                                         "data": paradigm.dashboard_data(audit, **query)})
