"""REST API of annotator data imports (researchers only): a study's imports listed, and a file uploaded."""
from __future__ import annotations

from django.core.validators import RegexValidator
from drf_spectacular.utils import extend_schema
from rest_framework import generics, serializers, status
from rest_framework.parsers import FormParser, MultiPartParser
from rest_framework.response import Response

from annotation.api import ImportRejectedSerializer, StudyScoped, upload_file_rejected, upload_form_rejected
from annotation.item_files import ItemFileError
from common.api.parsers import JSONObjectParser
from psychometrics.annotator_imports import annotator_import_submit
from psychometrics.forms import ENCODING_CHOICES, AnnotatorImportForm
from psychometrics.models import AnnotatorImport, Instrument, StudyInstrument
from psychometrics.selectors import study_annotator_imports, study_weights_gap
from psychometrics.services import StudyInstrumentChoice, study_instruments_check, study_instruments_set
from teams.api import TeamScopedMixin

# AnnotatorImportForm.clean_columns: parts separated by commas or lines, each blank or "field=column" with neither
# side blank.
_PART = r"(?:[^\S\n]*|[^=,\n\u0000]*[^\s=,\u0000][^=,\n\u0000]*=[^,\n\u0000]*[^\s,\u0000][^,\n\u0000]*)"
COLUMNS_PATTERN = rf"^{_PART}(?:[,\n]{_PART})*$"


class AnnotatorImportUploadSerializer(serializers.Serializer):
    """The multipart fields of an upload (see AnnotatorImportForm)."""

    kind = serializers.ChoiceField(choices=AnnotatorImport.Kind.choices)
    file = serializers.FileField()
    columns = serializers.CharField(required=False, allow_blank=True, validators=[RegexValidator(COLUMNS_PATTERN)],
                                    help_text="field=column, separated by commas or lines, where names differ.")
    consistent_first = serializers.ChoiceField(choices=["yes", "no"], required=False, allow_blank=True,
                                               help_text="IAT trials without a pairing column.")
    encoding = serializers.ChoiceField(choices=ENCODING_CHOICES, required=False, allow_blank=True)


class AnnotatorImportSerializer(serializers.ModelSerializer):
    class Meta:
        model = AnnotatorImport
        fields = ("id", "study", "kind", "filename", "file_format", "sha256", "options", "columns", "encoding",
                  "warnings", "n_rows", "n_annotators", "counts", "team_changes", "created_at")


class StudyAnnotatorImportsView(StudyScoped, generics.ListAPIView):
    """A study's annotator data imports, newest first; POST uploads a file (multipart) and imports it."""

    serializer_class = AnnotatorImportSerializer
    parser_classes = [MultiPartParser, FormParser]

    def get_queryset(self):
        return study_annotator_imports(study=self.study)

    @extend_schema(
        request={"multipart/form-data": AnnotatorImportUploadSerializer},
        responses={201: AnnotatorImportSerializer, 400: ImportRejectedSerializer},
        summary="Import annotators' scores, raw questionnaire answers or raw IAT trials",
        description="`kind` is `scores`, `answers` or `iat`. The file is checked against the study and imported "
                    "at once: if anything is wrong the answer is 400 with every problem (row and column) and "
                    "nothing is stored; an annotator the study does not know is a problem, never a new participant. "
                    "A successful import asks for the study's analysis to be recomputed.",
    )
    def post(self, request, *args, **kwargs):
        form = AnnotatorImportForm(request.data, request.FILES)
        if not form.is_valid():
            return upload_form_rejected(form)
        upload = form.cleaned_data["file"]
        try:
            annotator_import = annotator_import_submit(
                study=self.study, kind=form.cleaned_data["kind"], filename=upload.name, content=upload.read(),
                options=form.import_options(), uploaded_by=request.user)
        except ItemFileError as error:
            return upload_file_rejected(error)
        return Response(AnnotatorImportSerializer(annotator_import).data, status=status.HTTP_201_CREATED)


class AnnotatorImportDetailView(TeamScopedMixin, generics.RetrieveAPIView):
    """One annotator data import: its kind, file hash, mapping, counts and warnings."""

    serializer_class = AnnotatorImportSerializer
    queryset = AnnotatorImport.objects.defer("content")


class StudyInstrumentSerializer(serializers.Serializer):
    instrument = serializers.PrimaryKeyRelatedField(queryset=Instrument.objects.all(),
                                                    help_text="An instrument's id (GET /api/instruments/).")
    slug = serializers.CharField(source="instrument.slug", read_only=True)
    name = serializers.CharField(source="instrument.name", read_only=True)
    role = serializers.ChoiceField(choices=StudyInstrument.Role.choices, required=False,
                                   help_text="Which score the analysis reads it as: aq and sata feed the trust "
                                             "weights; at most one instrument of each, and an AQ or SATA instrument "
                                             "never with the other's role. Default: what the instrument is (aq for "
                                             "an AQ, sata for a SATA, else other).")
    position = serializers.IntegerField(min_value=0, max_value=1000, required=False,
                                        help_text="Its place in the flow (default: its place in the list).")
    randomise_items = serializers.BooleanField(default=False, help_text="A new item order for every participant.")


class StudyInstrumentsBodySerializer(serializers.Serializer):
    instruments = StudyInstrumentSerializer(many=True, max_length=50,
                                            help_text="The study's instruments in flow order.")

    def validate_instruments(self, entries: list[dict]) -> list[StudyInstrumentChoice]:
        """The entries as the service's choices, checked by its rules (``study_instruments_check``); the problems
        by entry index."""
        choices = [StudyInstrumentChoice(instrument=entry["instrument"], role=entry.get("role"),
                                         position=entry.get("position", index),
                                         randomise_items=entry["randomise_items"])
                   for index, entry in enumerate(entries)]
        problems = study_instruments_check(choices=choices)
        if problems:
            raise serializers.ValidationError({str(index): messages for index, messages in problems.items()})
        return choices


class StudyInstrumentsReplySerializer(serializers.Serializer):
    instruments = StudyInstrumentSerializer(many=True, help_text="The study's instruments as stored, in flow order.")
    warnings = serializers.ListField(child=serializers.CharField(),
                                     help_text="What the trust weights will lack with these roles (no AQ or no SATA "
                                               "role, the IAT off) and what they then use; empty when nothing.")


class StudyInstrumentsView(StudyScoped, generics.ListAPIView):
    """The questionnaires of a study's flow, in order, with the role the analysis reads each as; PUT replaces them
    (a JSON body only: a list of objects has no form encoding)."""

    serializer_class = StudyInstrumentSerializer
    parser_classes = [JSONObjectParser]

    def get_queryset(self):
        return StudyInstrument.objects.filter(study=self.study).select_related("instrument").order_by("position", "id")

    @extend_schema(request=StudyInstrumentsBodySerializer, responses={200: StudyInstrumentsReplySerializer},
                   summary="Replace a study's instruments",
                   description="`{\"instruments\": [...]}`, the whole list in flow order: each instrument at most "
                               "once, at most one with role aq and one with sata, an AQ or SATA instrument never "
                               "with the other's role (400 naming the entry and the instrument otherwise); an entry "
                               "without a role gets what its instrument is. "
                               "Refused with 409 once a participant has answers or scores on the study's "
                               "instruments.")
    def put(self, request, *args, **kwargs):
        body = StudyInstrumentsBodySerializer(data=request.data)
        body.is_valid(raise_exception=True)
        stored = study_instruments_set(study=self.study, choices=body.validated_data["instruments"])
        gap = study_weights_gap(study=self.study)
        return Response({"instruments": StudyInstrumentSerializer(stored, many=True).data,
                         "warnings": [gap] if gap else []})
