"""Exports of a coding round (researchers only, like every API route): its codings and its analysis, as JSON or
``?format=csv`` (streamed).

- ``GET /api/coding-rounds/{id}/codings/``: one row per coder × excerpt the coder has opened. JSON pages hold the
  given codes as a list of names; the CSV is wide, one 0/1 column per code of every lens (``lens1:WORDING``), as
  R's ``read.csv`` and ``pandas.read_csv`` take it for a crosstab or a kappa: a coder's cells under another lens's
  codes are empty (NA), not 0. ``confirmed`` tells finished excerpts from ones still being coded; the analysis
  counts only confirmed ones.
- ``GET /api/coding-rounds/{id}/analysis/``: the figures of :mod:`coding.analysis` (JSON); the CSV holds their
  long frequency table: per lens, coder and code, the count and share over the whole sample, then per condition
  and per model (``breakdown`` = all / condition / model).

A researcher who is a coder of the open round gets 403 on both (``coding.access.blind_reason``).
"""
from __future__ import annotations

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import generics, serializers
from rest_framework.response import Response
from rest_framework.views import APIView

from coding.api_rounds import RoundScoped
from coding.selectors import round_analysis, round_analysis_frequency_rows, round_codings_export, round_codings_rows
from common.api.csv_export import streaming_csv_response
from common.api.exports import EXPORT_CHUNK_SIZE
from teams.api import record_export


class CodingRowSerializer(serializers.Serializer):
    coder = serializers.CharField(help_text="The coder's name in the round (never an account's name or email).")
    lens = serializers.IntegerField(help_text="The lens's number in the round, from 1.")
    lens_name = serializers.CharField(help_text="The lens's codebook and version.")
    excerpt = serializers.IntegerField(help_text="The excerpt's number, from 1, in the order coders see them.")
    request = serializers.IntegerField(help_text="The audit request the excerpt was drawn from.")
    model = serializers.CharField()
    condition = serializers.CharField()
    confirmed = serializers.BooleanField(help_text="The coder finished the excerpt (the analysis counts only these).")
    confirmed_at = serializers.DateTimeField(allow_null=True)
    memo = serializers.CharField(allow_blank=True)
    codes = serializers.ListField(child=serializers.CharField(),
                                 help_text="The codes given, in codebook order (CSV: one 0/1 column per code).")


@extend_schema(summary="A coding round's codings", responses={200: CodingRowSerializer(many=True)},
               description="One row per coder × excerpt opened, JSON pages or every row as CSV (?format=csv: one "
                           "0/1 column per code of every lens, `lens<n>:<code>`, empty under other lenses' codes; on an "
                           "excerpt not yet confirmed, 1 for a code ticked so far and empty, not 0, for the others).")
class RoundCodingsView(RoundScoped, generics.ListAPIView):
    serializer_class = CodingRowSerializer
    hidden_from_its_coders = True

    def list(self, request, *args, **kwargs):
        self.paginator.check_query(request)
        if request.accepted_renderer.format == "csv":
            export = round_codings_export(self.coding_round)
            record_export(request, self.coding_round, "codings")
            return streaming_csv_response(export.columns, export.iterate(EXPORT_CHUNK_SIZE),
                                          filename=f"coding-round-{self.coding_round.id}-codings.csv")
        _, records = round_codings_rows(self.coding_round)
        page = self.paginate_queryset(records)
        answer = self.get_paginated_response(self.get_serializer(page, many=True).data)
        record_export(request, self.coding_round, "codings")
        return answer


class RoundAnalysisView(RoundScoped, APIView):
    hidden_from_its_coders = True

    @extend_schema(summary="A coding round's analysis", responses={200: OpenApiResponse(
        response=OpenApiTypes.OBJECT, description="Per lens and coder: frequencies, the share with two or more codes, co-occurrences, by "
                    "condition and by model; mapping convergence; agreement per code where coders share a lens "
                    "(α, κ; null with a note where undefined); `partial` while coders are still coding. "
                    "?format=csv: the long frequency table (lens, coder, breakdown, level, code, count, n, share).")})
    def get(self, request, pk: int):
        payload = round_analysis(self.coding_round)
        record_export(request, self.coding_round, "analysis")
        if request.accepted_renderer.format == "csv":
            export = round_analysis_frequency_rows(payload)
            return streaming_csv_response(export.columns, export.iterate(EXPORT_CHUNK_SIZE),
                                          filename=f"coding-round-{self.coding_round.id}-analysis.csv")
        return Response(payload)
