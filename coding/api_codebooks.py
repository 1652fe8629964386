"""REST API of codebooks (researchers only): the latest version of each, a version with its codes, its versions,
its REFI-QDA export; creation from JSON or a ``.qdc`` upload; an edit with PUT.

A version a round uses, or one the app shipped, is never changed: PUT on it answers 201 with the new version (and
its URL in ``Location``); on any other version the edit is made in place (200). Bad input is a 400 naming every
problem by its path (``codes[3].shortcut``) or its place in the uploaded file; nothing is stored.

A researcher sees the codebooks of their teams and those shipped with the app (no team); a new codebook goes to the
team named by ``team`` (or their only team where they edit); an edit needs the editor role in the codebook's team
(a shipped codebook is never changed in place: an edit of it is a new version in the editor's team), and its new
version stays in that team.
"""
from __future__ import annotations

from xml.sax.saxutils import escape

from django.conf import settings
from django.core.validators import RegexValidator
from django.db.models import QuerySet
from django.http import HttpResponse
from django.shortcuts import get_object_or_404
from django.urls import reverse
from django.utils.text import slugify
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import generics, serializers, status
from rest_framework.parsers import MultiPartParser
from rest_framework.renderers import BaseRenderer, JSONRenderer
from rest_framework.response import Response
from rest_framework.views import APIView

from coding import codebooks as rules
from coding.codebook_selectors import (
    codebook_latest_versions,
    codebook_lineage_versions,
    codebook_versions_annotated,
)
from coding.codebook_services import (
    codebook_create_from_json,
    codebook_import_qdc,
    codebook_save,
    codebook_spec,
)
from coding.codebooks import CodebookInvalid, codebook_parse
from coding.models import Codebook
from coding.qdc import QDC_MAX_BYTES, codebook_to_qdc
from common.api.exports import ModelListExportView
from common.api.parsers import JSONObjectParser
from common.export_rows import Export
from teams import roles
from teams.api import TeamScopedMixin, check_role, new_object_team, record_export
from teams.models import Team
from teams.scoping import new_objects_in, visible

LIST_COLUMNS = ["id", "lineage", "version", "name", "description", "source", "shipped", "in_use", "n_codes",
                "created_by", "created_at"]


# A code's shortcut: one digit or letter, either case, but the coding page's own keys (n, p, m).
SHORTCUT_PATTERN = "^[0-9a-loq-zA-LOQ-Z]$"
# An example: text on one line once its ends are trimmed.
EXAMPLE_PATTERN = r"^\s*[^\r\n\u0000\ud800-\udfff]*[^\s\u0000\ud800-\udfff][^\r\n\u0000\ud800-\udfff]*\s*$"


class CodeSerializer(serializers.Serializer):
    """A code (documentation of :func:`coding.codebooks.codebook_parse`, which refuses any other key)."""

    refuses_unknown_fields = True

    id = serializers.IntegerField(read_only=True)
    name = serializers.CharField(max_length=rules.CODE_NAME_MAX)
    definition = serializers.CharField(max_length=rules.TEXT_MAX, allow_blank=True, required=False)
    examples = serializers.ListField(child=serializers.CharField(max_length=rules.EXAMPLE_MAX,
                                                                 validators=[RegexValidator(EXAMPLE_PATTERN)]),
                                     max_length=rules.EXAMPLES_MAX, required=False)
    shortcut = serializers.CharField(max_length=1, allow_blank=True, required=False,
                                     validators=[RegexValidator(SHORTCUT_PATTERN)],
                                     help_text="The key that toggles the code while coding: a digit or a letter, "
                                               "never n, p, m or ?. Omitted: the next free key (1-9, then a-z).")
    definition_is_ours = serializers.BooleanField(required=False, default=False,
                                                  help_text="The definition was written by this project, not by "
                                                            "the paper the code comes from.")
    position = serializers.IntegerField(read_only=True)


class CodebookSerializer(serializers.ModelSerializer):
    shipped = serializers.BooleanField(read_only=True, help_text="One of the defaults this app ships.")
    in_use = serializers.BooleanField(read_only=True, help_text="A round's lens uses this version: an edit makes "
                                                                "the next version.")
    n_codes = serializers.IntegerField(read_only=True)
    created_by = serializers.CharField(source="created_by.username", allow_null=True, read_only=True)

    class Meta:
        model = Codebook
        fields = LIST_COLUMNS


class CodebookDetailSerializer(CodebookSerializer):
    codes = CodeSerializer(many=True, read_only=True)

    class Meta(CodebookSerializer.Meta):
        fields = (*LIST_COLUMNS, "codes")


class CodebookWriteSerializer(serializers.Serializer):
    """The JSON body of ``POST /api/codebooks/`` and ``PUT /api/codebooks/{id}/`` (documentation: the body is
    validated by :func:`coding.codebooks.codebook_parse`, which names every problem at once, an unknown key too)."""

    refuses_unknown_fields = True

    name = serializers.CharField(max_length=rules.CODEBOOK_NAME_MAX)
    description = serializers.CharField(max_length=rules.TEXT_MAX, allow_blank=True, required=False)
    source = serializers.CharField(max_length=rules.TEXT_MAX, allow_blank=True, required=False,
                                   help_text="Where the codes and their definitions come from.")
    codes = CodeSerializer(many=True, min_length=1, max_length=rules.MAX_CODES)


class CodebookUploadSerializer(serializers.Serializer):
    file = serializers.FileField(help_text=f"A REFI-QDA codebook (.qdc) from ATLAS.ti, MAXQDA, NVivo, QualCoder, "
                                           f"Taguette...; at most {QDC_MAX_BYTES:,} bytes, no DOCTYPE.")
    name = serializers.CharField(max_length=rules.CODEBOOK_NAME_MAX, required=False, allow_blank=True,
                                 help_text="The codebook's name; omitted, the file's one set's name, else the "
                                           "file's name.")


class CodebookProblemSerializer(serializers.Serializer):
    path = serializers.CharField(help_text="Where: a JSON path (codes[3].name) or a place in the file "
                                           "(/CodeBook/Codes/Code[2]@guid).")
    message = serializers.CharField()


class CodebookRejectedSerializer(serializers.Serializer):
    detail = serializers.CharField()
    problems = CodebookProblemSerializer(many=True, required=False,
                                         help_text="Every problem; absent when the body itself cannot be read.")


def rejected_response(invalid: CodebookInvalid) -> Response:
    return Response({"detail": f"invalid codebook: {invalid}",
                     "problems": [problem.as_dict() for problem in invalid.problems]},
                    status=status.HTTP_400_BAD_REQUEST)


def detail_response(codebook: Codebook, code: int, **headers) -> Response:
    codebook = codebook_versions_annotated().prefetch_related("codes").get(pk=codebook.pk)
    return Response(CodebookDetailSerializer(codebook).data, status=code, headers=headers)


def visible_codebooks(request) -> QuerySet[Codebook]:
    return visible(request.user, Codebook.objects.all())


def requested_team(request) -> Team:
    """The team a new codebook goes to: ``team`` in the body (the id of one where the user is an editor), else their
    only such team; a 400 naming ``team`` otherwise."""
    value = request.data.get("team") if hasattr(request.data, "get") else None
    if value in (None, ""):
        return new_object_team(request.user)
    if isinstance(value, bool) or not isinstance(value, int | str) or not str(value).isdigit():
        raise serializers.ValidationError({"team": [f"not a team's id: {value!r}"]})
    return new_object_team(request.user, int(value))


class CodebookListView(ModelListExportView):
    """The latest version of each codebook you see; POST creates one."""

    serializer_class = CodebookSerializer
    parser_classes = [JSONObjectParser, MultiPartParser]

    def get_queryset(self):
        return codebook_latest_versions(among=visible_codebooks(self.request))

    def export_rows(self):
        fields = [("created_by__username" if column == "created_by" else column) for column in LIST_COLUMNS]
        return Export(LIST_COLUMNS, self.get_queryset().values_list(*fields))

    def export_filename(self) -> str:
        return "codebooks.csv"

    @extend_schema(request={"application/json": CodebookWriteSerializer,
                            "multipart/form-data": CodebookUploadSerializer},
                   responses={201: CodebookDetailSerializer, 400: CodebookRejectedSerializer},
                   summary="Create a codebook",
                   description="From JSON (name, description, source, codes [{name, definition, examples, "
                               "shortcut}]) or a REFI-QDA .qdc upload (multipart: file, optional name). A code "
                               "without a shortcut gets the next free key. 400 names every problem; nothing is "
                               "stored.")
    def post(self, request):
        team = requested_team(request)
        try:
            with new_objects_in(team):
                if request.content_type.startswith("multipart/form-data"):
                    upload = CodebookUploadSerializer(data=request.data)
                    if not upload.is_valid():
                        return rejected_response(CodebookInvalid([
                            rules.CodebookProblem(field, " ".join(str(message) for message in messages))
                            for field, messages in upload.errors.items()]))
                    file = upload.validated_data["file"]
                    if file.size > QDC_MAX_BYTES:
                        return rejected_response(CodebookInvalid([rules.CodebookProblem(
                            "file", f"{file.size:,} bytes: at most {QDC_MAX_BYTES:,}")]))
                    codebook = codebook_import_qdc(content=file.read(), filename=file.name,
                                                   name=upload.validated_data.get("name", "").strip(),
                                                   created_by=request.user)
                else:
                    # The codebook's own fields are parsed strictly (an unknown key is a problem): the team is not one.
                    data = ({key: value for key, value in request.data.items() if key != "team"}
                            if isinstance(request.data, dict) else request.data)
                    codebook = codebook_create_from_json(data=data, created_by=request.user)
        except CodebookInvalid as invalid:
            return rejected_response(invalid)
        return detail_response(codebook, status.HTTP_201_CREATED)


class CodebookDetailView(TeamScopedMixin, generics.RetrieveAPIView):
    """One codebook version with its codes; PUT saves an edit (editors of its team)."""

    serializer_class = CodebookDetailSerializer
    parser_classes = [JSONObjectParser]
    queryset = codebook_versions_annotated().prefetch_related("codes")  # narrowed by TeamScopedMixin

    @extend_schema(request=CodebookWriteSerializer,
                   responses={200: CodebookDetailSerializer, 201: CodebookDetailSerializer,
                              400: CodebookRejectedSerializer},
                   summary="Edit a codebook",
                   description="The whole codebook as in POST. A version a round uses, or one the app shipped, is "
                               "never changed: the edit becomes the lineage's next version (201, Location: its URL). "
                               "Any other version is edited in place (200). An edit that changes nothing stores "
                               "nothing (200).")
    def put(self, request, pk: int):
        codebook = get_object_or_404(self.get_queryset(), pk=pk)
        if codebook.team_id is None:
            # A shipped codebook is never changed in place: the edit is a new version in the editor's own team.
            team = new_object_team(request.user)
        else:
            check_role(request.user, codebook, roles.EDITOR)
            team = codebook.team  # a new version stays in the codebook's team
        try:
            spec = codebook_parse(request.data)
        except CodebookInvalid as invalid:
            return rejected_response(invalid)
        with new_objects_in(team):
            saved = codebook_save(codebook=codebook, spec=spec, saved_by=request.user)
        if saved.new_version:
            return detail_response(saved.codebook, status.HTTP_201_CREATED,
                                   Location=reverse("api:codebook-detail", args=[saved.codebook.pk]))
        return detail_response(saved.codebook, status.HTTP_200_OK)


class CodebookVersionsView(ModelListExportView):
    """Every version of a codebook's lineage, newest first."""

    serializer_class = CodebookSerializer

    def get_queryset(self):
        codebook = get_object_or_404(visible_codebooks(self.request), pk=self.kwargs["pk"])
        return visible(self.request.user, codebook_lineage_versions(codebook))

    def export_rows(self):
        fields = [("created_by__username" if column == "created_by" else column) for column in LIST_COLUMNS]
        return Export(LIST_COLUMNS, self.get_queryset().values_list(*fields))

    def export_filename(self) -> str:
        return f"codebook-{self.kwargs['pk']}-versions.csv"


class QDCRenderer(BaseRenderer):
    """Lets a client ask for ``application/xml``; the export itself is written by the view, so this renders only
    the errors (a 404) a client that asked for XML gets."""

    media_type = "application/xml"
    format = "qdc"
    charset = "utf-8"

    def render(self, data, accepted_media_type=None, renderer_context=None) -> bytes:
        detail = data.get("detail", "") if isinstance(data, dict) else str(data or "")
        return f'<?xml version="1.0" encoding="utf-8"?>\n<error>{escape(str(detail))}</error>\n'.encode()


class CodebookQDCView(APIView):
    renderer_classes = [JSONRenderer, QDCRenderer]

    @extend_schema(responses={(200, "application/xml"): OpenApiResponse(
                       response=OpenApiTypes.STR, description="The REFI-QDA codebook file, as an attachment.")},
                   summary="A codebook as a REFI-QDA file (.qdc)",
                   description="The REFI-QDA codebook standard 1.0 file (namespace urn:QDA-XML:codebook:1.0) that "
                               "ATLAS.ti, MAXQDA and NVivo import. A code's GUID is the same in every export of "
                               "any version of the codebook; its examples follow its definition in Description; "
                               "one Set named after the codebook carries its description and source.")
    def get(self, request, pk: int):
        codebook = get_object_or_404(visible_codebooks(request), pk=pk)
        content = codebook_to_qdc(codebook_spec(codebook), lineage=codebook.lineage,
                                  origin=f"auditapp {settings.APP_VERSION}")
        response = HttpResponse(content, content_type="application/xml; charset=utf-8")
        filename = f"{slugify(codebook.name) or 'codebook'}-v{codebook.version}.qdc"
        response["Content-Disposition"] = f'attachment; filename="{filename}"'
        record_export(request, codebook, "qdc")
        return response
