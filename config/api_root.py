"""The API's root, ``GET /api/``: its top-level resources, each with its address, the paradigms an audit may be
launched with, and where the schema and its documentation are: where a script starts."""
from __future__ import annotations

from django.urls import NoReverseMatch, reverse
from drf_spectacular.utils import extend_schema, inline_serializer
from rest_framework import serializers
from rest_framework.permissions import AllowAny
from rest_framework.response import Response
from rest_framework.views import APIView

from auditapp.engine import registry

RESOURCES = (
    ("studies", "api:study-list", "annotator studies: items, participants, labels, ground truths"),
    ("instruments", "api:instrument-list", "questionnaires (AQ-50, SATA and uploaded ones) a study or a "
                                           "self-report audit uses"),
    ("endpoints", "api:endpoint-list", "LLM endpoints and scorers an audit sends to"),
    ("corpora", "api:corpus-list", "the material an audit judges when it is not a study's items"),
    ("audits", "api:audit-list", "model audits of every paradigm; POST launches one"),
    ("codebooks", "api:codebook-list", "codebooks of coding rounds"),
    ("coding_rounds", "api:coding-round-list", "error analysis by people"),
    ("teams", "api:team-list", "teams, their members and access logs"),
    ("schema", "api:schema", "the OpenAPI schema of every route"),
    ("docs", "api:docs", "the schema, browsable"),
)


class ApiRootView(APIView):
    """Every top-level resource with its address, and the paradigms ``POST /api/audits/`` takes. Anyone may read
    it: it names routes, not data (each route asks for a token or a session itself)."""

    permission_classes = [AllowAny]

    @extend_schema(summary="The API's resources and the paradigms an audit may be launched with",
                   responses=inline_serializer("ApiRoot", {
                       "resources": serializers.DictField(child=serializers.DictField()),
                       "paradigms": serializers.ListField(child=serializers.DictField())}))
    def get(self, request):
        resources = {}
        for name, route, description in RESOURCES:
            try:
                resources[name] = {"url": request.build_absolute_uri(reverse(route)), "description": description}
            except NoReverseMatch:
                continue
        return Response({"resources": resources,
                         "paradigms": [{"name": paradigm.name, "label": paradigm.label}
                                       for paradigm in registry.every()]})
