"""Project-level pages: the home page and the health check used by docker-compose."""
from django.db import connection
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render

from annotation.selectors import study_list


def home(request: HttpRequest) -> HttpResponse:
    """What the product is; for a researcher, the studies with their counts."""
    studies = study_list() if request.user.is_active and request.user.is_staff else None
    return render(request, "home.html", {"studies": studies})


def healthz(request: HttpRequest) -> JsonResponse:
    """200 when the database answers; used by container health checks."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1")
    return JsonResponse({"status": "ok"})
