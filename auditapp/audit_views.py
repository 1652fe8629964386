"""The audit dashboard (staff only), one page per paradigm under the same header, live progress with
pause / resume / cancel, and drill-down from a row to its replies:

- classification: seed 000's Tables 1–2 as heatmaps, Figure 1 (Δκ per model), recall vs precision per cell;
- self-report: Figure 2 per instrument (each model's original and masked score, tiers, change as % of the
  scale maximum, threshold crossings), the paired comparison, and the validity table with its rule.

Thin: the page embeds :func:`auditapp.audit_selectors.audit_dashboard_data` or
:func:`auditapp.audit_selectors.self_report_dashboard_data`; progress, control and the drill-down go through
the REST API with the researcher's session.
"""
from __future__ import annotations

from django.contrib.admin.views.decorators import staff_member_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, render
from django.views.decorators.http import require_GET

from auditapp.audit_selectors import audit_dashboard_data, self_report_dashboard_data
from auditapp.models import Audit


@require_GET
@staff_member_required
def audit_dashboard(request: HttpRequest, audit_id: int) -> HttpResponse:
    audit = get_object_or_404(Audit.objects.select_related("study"), pk=audit_id)
    if audit.paradigm == "self_report":
        return render(request, "auditapp/self_report_dashboard.html",
                      {"audit": audit, "data": self_report_dashboard_data(audit)})
    return render(request, "auditapp/audit_dashboard.html", {"audit": audit, "data": audit_dashboard_data(audit)})
