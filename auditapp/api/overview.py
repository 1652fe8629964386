"""Audits seen together through the API: an audit's headline table, two or more audits compared, a model's card
(:mod:`auditapp.audit_overview`). Each reads only the audits of the caller's teams."""
from __future__ import annotations

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import status
from rest_framework.response import Response
from rest_framework.views import APIView

from auditapp.api.audits import AuditScoped, ErrorSerializer
from auditapp.audit_overview import (
    MAX_COMPARED,
    AuditsNotFound,
    audits_compared,
    compared_rows,
    headline_of,
    headline_rows,
    model_card,
    model_card_rows,
    model_name_problem,
)
from auditapp.engine.headlines import NotComparable
from auditapp.models import Audit
from teams.scoping import visible


@extend_schema(summary="An audit's headline table", responses={200: dict, 404: ErrorSerializer},
               description="Its paper's first table as rows of model × cell: value, 95% CI where the analysis "
                           "gives one, n and a note (the reason a value is undefined, or its significance). 404 "
                           "before the audit has results. As CSV (?format=csv), one row per model × cell.")
class AuditHeadlineView(AuditScoped, APIView):
    def get(self, request, pk: int):
        headline = headline_of(self.audit)
        if headline is None:
            return Response({"detail": "this audit has no results yet"}, status=status.HTTP_404_NOT_FOUND)
        table = headline.as_json()
        return Response(headline_rows(table) if as_csv(request) else table)


@extend_schema(summary="Compare audits", responses={200: dict, 400: ErrorSerializer, 404: ErrorSerializer},
               parameters=[OpenApiParameter("audits", OpenApiTypes.STR, required=True, pattern=r"^\d+(,\d+)+$",
                                            description=f"Two to {MAX_COMPARED} audit ids, comma-separated (or the "
                                                        "parameter repeated); the first is the baseline.")],
               description="The audits' headline tables side by side: per model × cell each audit's value and "
                           "CI, and its difference from the first audit's with an approximate 95% CI "
                           "(±1.96·√(se₁² + se₂²), each se from its own CI). 400 when the audits measure different "
                           "things or have no results yet; 404 when one is not of your teams. As CSV "
                           "(?format=csv), one row per model × cell × audit.")
class AuditCompareView(APIView):
    def get(self, request):
        try:
            table = audits_compared(visible(request.user, Audit.objects.all()), request.query_params.getlist("audits"))
        except AuditsNotFound as error:
            return Response({"detail": str(error)}, status=status.HTTP_404_NOT_FOUND)
        except NotComparable as error:
            return Response({"detail": str(error)}, status=status.HTTP_400_BAD_REQUEST)
        return Response(compared_rows(table) if as_csv(request) else table)


@extend_schema(summary="A model's card", responses={200: dict, 400: ErrorSerializer},
               parameters=[OpenApiParameter("model", OpenApiTypes.STR, required=True, pattern=r"\S",
                                            description="The model's name at its endpoint.")],
               description="One model across every audit of your teams it took part in: per paradigm, each audit "
                           "with that model's rows of its headline table. As CSV (?format=csv), one row per audit "
                           "× headline row.")
class ModelCardView(APIView):
    def get(self, request):
        model = request.query_params.get("model", "").strip()
        if problem := model_name_problem(model):
            return Response({"detail": problem}, status=status.HTTP_400_BAD_REQUEST)
        card = model_card(visible(request.user, Audit.objects.all()), model)
        return Response(model_card_rows(card) if as_csv(request) else card)


def as_csv(request) -> bool:
    """Whether the answer is rendered as CSV: a table is then its flat rows, every value a column."""
    return request.accepted_renderer.format == "csv"
