"""Project-level pages: the home page, the health check used by docker-compose, and the answer to a path no route
matches."""
from django.db import connection
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render
from django.urls import Resolver404
from django.views import defaults

from annotation.selectors import study_list
from auditapp.audit_overview import headline_summary, with_headline_data
from auditapp.engine.selectors import finished_counts
from auditapp.models import Audit
from teams.models import Membership
from teams.scoping import visible

HOME_AUDITS = 50  # the latest; the admin lists them all


def home(request: HttpRequest) -> HttpResponse:
    """What the product is; for a researcher, their teams and roles, and the studies and latest audits of their
    teams (none of another team's: :func:`teams.scoping.visible`), each audit with its models, progress and
    headline, and boxes to compare audits."""
    studies = audits = memberships = None
    if request.user.is_active and request.user.is_staff:
        studies = visible(request.user, study_list())
        audits = list(with_headline_data(visible(request.user, Audit.objects.order_by("-created_at", "-id"))
                                         .annotate(**finished_counts()))[:HOME_AUDITS])
        for audit in audits:
            audit.headline = headline_summary(audit)
            audit.model_list = sorted({model.model for model in audit.models.all()})
        memberships = Membership.objects.filter(user_id=request.user.pk).select_related("team").order_by("team__name")
    return render(request, "home.html", {"studies": studies, "audits": audits, "memberships": memberships})


def healthz(request: HttpRequest) -> JsonResponse:
    """200 when the database answers; used by container health checks."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1")
    return JsonResponse({"status": "ok"})


def not_found(request: HttpRequest, exception: Exception) -> HttpResponse:
    """A path no route matches: under ``/api/``, where a script reads the answer, JSON as every API error is; the
    site's page elsewhere."""
    if request.path.startswith("/api/"):
        if not isinstance(exception, Resolver404):
            return JsonResponse({"detail": "Not found."}, status=404)
        return JsonResponse({"detail": f"Not found: no API route is {request.path!r}. The routes are listed at "
                                       "/api/ and described at /api/docs/."}, status=404)
    return defaults.page_not_found(request, exception)
