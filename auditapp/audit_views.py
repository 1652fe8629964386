"""The audit dashboard (staff only): one page per paradigm under the same header (its template extends
``auditapp/audit_dashboard_base.html``), live progress with pause / resume / cancel, and drill-down from a row to
its replies.

Thin: the page renders the paradigm's ``dashboard_template`` with its ``dashboard_data(audit)``
(:mod:`auditapp.engine.registry`); progress, control and the drill-down go through the REST API with the
researcher's session, which the API scopes the same way.

Beside it, two pages over several audits (:mod:`auditapp.audit_overview`): audits compared side by side, and one
model's card across every audit it took part in.

The page is for the audit's team (a viewer reads it; an audit of another team is not found, 404, as in
:mod:`teams.pages`); it lists only the error-analysis rounds the user may see, and offers the controls and a new round to an editor.
"""
from __future__ import annotations

from django.contrib.admin.views.decorators import staff_member_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from auditapp.audit_overview import AuditsNotFound, audits_compared, model_card, model_name_problem
from auditapp.engine import registry
from auditapp.engine.headlines import NotComparable
from auditapp.models import Audit
from coding.models import CodingRound
from teams import roles
from teams.pages import can, get_visible_or_404
from teams.scoping import visible


@require_GET
@staff_member_required
def audit_dashboard(request: HttpRequest, audit_id: int) -> HttpResponse:
    audit = get_visible_or_404(request.user, Audit.objects.select_related("study", "corpus"), pk=audit_id)
    paradigm = registry.get(audit.paradigm)
    query = {name: request.GET[name] for name in paradigm.dashboard_query if name in request.GET}
    # Error-analysis rounds (coding/) are drawn from completed audits whose paradigm explains its labels.
    can_control = can(request.user, audit, roles.EDITOR)
    can_draw_round = (paradigm.explained_replies is not None and audit.status == Audit.Status.COMPLETED
                      and can_control)
    coding_rounds = visible(request.user, CodingRound.objects.filter(audit=audit))
    return render(request, paradigm.dashboard_template, {"audit": audit, "can_control": can_control,
                                                         "can_draw_round": can_draw_round,
                                                         "coding_rounds": coding_rounds,
                                                         "data": paradigm.dashboard_data(audit, **query)})


@require_GET
@staff_member_required
def audit_compare(request: HttpRequest) -> HttpResponse:
    """Two or more audits' headline tables side by side (``?audits=1&audits=2``, the first the baseline); what
    cannot be compared is said on the page, with a 400; an audit of another team is not found (404)."""
    audits = visible(request.user, Audit.objects.all())
    try:
        table = audits_compared(audits, request.GET.getlist("audits"))
    except AuditsNotFound as error:
        raise Http404(str(error)) from error
    except NotComparable as error:
        return render(request, "auditapp/audit_compare.html", {"problem": str(error)}, status=400)
    return render(request, "auditapp/audit_compare.html", {"table": table})


@require_GET
@staff_member_required
def model_card_page(request: HttpRequest) -> HttpResponse:
    """One model (``?model=`` its name at the endpoint) across every audit of the user's teams."""
    model = request.GET.get("model", "").strip()
    if problem := model_name_problem(model):
        return render(request, "auditapp/model_card.html", {"problem": f"{problem[0].upper()}{problem[1:]}."},
                      status=400)
    return render(request, "auditapp/model_card.html",
                  {"card": model_card(visible(request.user, Audit.objects.all()), model)})
