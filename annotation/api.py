"""REST API of the annotation domain (researchers only): studies, their items, participants and labels,
item imports, and the state of a study's analysis (with a way to ask for a recomputation).

Participants appear only by pseudonym in a column ``participant``; items by external id in a column
``item``; so every export joins on those two columns.
"""
from __future__ import annotations

from dataclasses import asdict
from functools import cached_property

from django.db import models
from django.http import JsonResponse
from django.urls import reverse
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import generics, serializers, status
from rest_framework.parsers import FormParser, MultiPartParser
from rest_framework.response import Response
from rest_framework.views import APIView

from annotation.duration import STATED_MINUTES_MAX, STATED_MINUTES_MIN
from annotation.forms import ENCODING_CHOICES, ItemImportForm
from annotation.item_files import ItemFileError
from annotation.models import ItemImport, LabelValue, Participant, Study
from annotation.selectors import (
    ALTERNATIVE_TABLES,
    study_alternatives_status,
    study_analysis_status,
    study_ground_truth_alternatives_export,
    study_ground_truth_export,
    study_iat_trials_export,
    study_instrument_responses_export,
    study_item_sets_export,
    study_items_export,
    study_label_changes_export,
    study_labels_export,
    study_list,
    study_participants_export,
    study_skips_and_flags_export,
)
from annotation.services import item_import_submit
from annotation.study_analysis import study_analysis_request
from auditapp.api.audits import TableRowSerializer
from common.api.exports import ExportListAPIView
from common.api.fields import StrictCharField, StrictSlugField
from common.api.parsers import JSONObjectParser
from teams.api import EditableTeamField, ExportLogged, TeamScopedMixin, TeamScopedParentMixin, record_export
from teams.scoping import TeamChoiceError, team_for_new_object

MAX_ANNOTATORS_PER_ITEM = 1000


class StudySerializer(serializers.ModelSerializer):
    # Text fields take text only, and the annotators per item a number the database stores on every backend (SQLite
    # would store 4,055,614,977 in a small integer column that PostgreSQL refuses).
    serializer_field_mapping = {**serializers.ModelSerializer.serializer_field_mapping,
                                models.CharField: StrictCharField, models.TextField: StrictCharField,
                                models.SlugField: StrictSlugField}
    n_items = serializers.IntegerField(read_only=True)
    n_participants = serializers.IntegerField(read_only=True)
    n_labels = serializers.IntegerField(read_only=True)
    team = EditableTeamField(
        required=False,
        help_text="The id of the team the study belongs to. On creation, optional: one where you are an editor "
                  "(default: your only such team, or a new team of your own); it is not changed afterwards.")

    class Meta:
        model = Study
        fields = ("id", "slug", "name", "description", "status", "label_scheme", "annotators_per_item",
                  "content_warning", "consent_text", "skipping", "no_consent_url", "estimated_minutes", "team",
                  "n_items", "n_participants", "n_labels", "created_at", "updated_at")
        read_only_fields = ("status",)
        extra_kwargs = {"annotators_per_item": {"min_value": 1, "max_value": MAX_ANNOTATORS_PER_ITEM},
                        "estimated_minutes": {"min_value": STATED_MINUTES_MIN, "max_value": STATED_MINUTES_MAX}}

    def validate_team(self, team):
        if self.instance is not None and team != self.instance.team:
            raise serializers.ValidationError("A study's team is not changed through the API.")
        return team


class ItemRowSerializer(serializers.Serializer):
    item = serializers.CharField(help_text="The item's external id.")
    target = serializers.CharField()
    preceding = serializers.CharField(allow_blank=True)
    following = serializers.CharField(allow_blank=True)
    position = serializers.IntegerField()
    attention_check_answer = serializers.IntegerField(allow_null=True)
    metadata = serializers.JSONField()
    created_at = serializers.DateTimeField()


class ParticipantRowSerializer(serializers.Serializer):
    participant = serializers.CharField(help_text="The participant's pseudonym.")
    team = serializers.CharField()
    status = serializers.ChoiceField(choices=Participant.Status.choices)
    n_labels = serializers.IntegerField()
    created_at = serializers.DateTimeField()
    opened_at = serializers.DateTimeField(allow_null=True, help_text="When a page of their link was first loaded "
                                                                     "(empty for participants from before it was kept).")
    consented_at = serializers.DateTimeField(allow_null=True)
    completed_at = serializers.DateTimeField(allow_null=True)
    withdrawn_at = serializers.DateTimeField(allow_null=True)
    declined_at = serializers.DateTimeField(allow_null=True, help_text="When consent was declined (nothing else is "
                                                                       "kept of a participant who declined).")
    aq = serializers.FloatField(allow_null=True, help_text="Total of the study's AQ instrument.")
    aq_social_skill = serializers.FloatField(allow_null=True)
    aq_attention_switching = serializers.FloatField(allow_null=True)
    aq_attention_to_detail = serializers.FloatField(allow_null=True)
    aq_communication = serializers.FloatField(allow_null=True)
    aq_imagination = serializers.FloatField(allow_null=True)
    aq_tier = serializers.CharField(allow_null=True)
    sata = serializers.FloatField(allow_null=True, help_text="Total of the study's SATA instrument.")
    sata_tier = serializers.CharField(allow_null=True)
    iat_d = serializers.FloatField(allow_null=True, help_text="D score, built-in error penalty; positive = more "
                                                               "implicit bias (Greenwald, Nosek & Banaji 2003).")
    iat_d600 = serializers.FloatField(allow_null=True)
    iat_error_rate = serializers.FloatField(allow_null=True)
    iat_fast_fraction = serializers.FloatField(allow_null=True)
    iat_flagged_fast = serializers.BooleanField(allow_null=True, help_text="Over 10% of trials under 300 ms.")
    iat_condition = serializers.IntegerField(allow_null=True, help_text="Counterbalancing condition 0–3.")
    iat_modality = serializers.CharField(
        allow_null=True, allow_blank=True,
        help_text="How the IAT was answered: keyboard, touch or mixed (empty when imported). A touch D is measured "
                  "from tap latencies, which are longer than key latencies.")
    attention_check_score = serializers.FloatField(allow_null=True)
    attention_checks_passed = serializers.BooleanField(allow_null=True)
    trust_raw = serializers.FloatField(allow_null=True, help_text="R, seed 000 Appendix B eq. 4 (latest analysis).")
    weight = serializers.FloatField(allow_null=True, help_text="W, seed 000 Appendix B eq. 5 (latest analysis).")


class GroundTruthRowSerializer(serializers.Serializer):
    item = serializers.CharField()
    n_labels = serializers.IntegerField(help_text="0/1 labels.")
    n_excluded = serializers.IntegerField(help_text="Other labels (e.g. unrelated), left out of both aggregations.")
    majority_label = serializers.IntegerField(allow_null=True)
    majority_tie = serializers.BooleanField()
    n_weighted = serializers.IntegerField(help_text="Labels from annotators with a weight.")
    weighted_score = serializers.FloatField(allow_null=True, help_text="ŷ, seed 000 Appendix B eq. 6.")
    weighted_label = serializers.IntegerField(allow_null=True)
    weighted_tie = serializers.BooleanField(help_text="ŷ equals the threshold; the tie rule decided the label.")


class ItemSetRowSerializer(serializers.Serializer):
    set = serializers.CharField(help_text="all, high_aq, low_aq, low_bias, high_bias (test sets), icl_a, icl_b.")
    item = serializers.CharField()
    label = serializers.IntegerField()


class InstrumentResponseRowSerializer(serializers.Serializer):
    participant = serializers.CharField()
    instrument = serializers.CharField(help_text="The instrument's slug.")
    item_number = serializers.IntegerField()
    response_index = serializers.IntegerField(help_text="0-based index into the instrument's response options.")
    response_text = serializers.CharField()
    position = serializers.IntegerField(help_text="0-based position of the item as shown.")
    rt_ms = serializers.IntegerField(allow_null=True)
    answered_at = serializers.DateTimeField()


class IATTrialRowSerializer(serializers.Serializer):
    participant = serializers.CharField()
    block = serializers.IntegerField()
    trial = serializers.IntegerField()
    stimulus = serializers.CharField()
    stimulus_category = serializers.CharField()
    pairing = serializers.CharField(allow_blank=True)
    correct_side = serializers.CharField()
    first_key = serializers.CharField(help_text="e (left) or i (right); for touch, the half tapped first.")
    modality = serializers.CharField(allow_blank=True, help_text="keyboard or touch; empty for an imported trial.")
    error = serializers.BooleanField()
    latency_first_ms = serializers.FloatField(allow_null=True, help_text="Empty only for a legacy non-finite value.")
    latency_correct_ms = serializers.FloatField(allow_null=True, help_text="Empty only for a legacy non-finite value.")


class LabelRowSerializer(serializers.Serializer):
    participant = serializers.CharField(help_text="The participant's pseudonym.")
    item = serializers.CharField(help_text="The item's external id.")
    value = serializers.ChoiceField(choices=LabelValue.choices)
    rationale = serializers.CharField(allow_blank=True)
    created_at = serializers.DateTimeField()
    updated_at = serializers.DateTimeField(help_text="When the current value was given.")
    n_changes = serializers.IntegerField(help_text="How often the annotator went back and changed it.")
    first_value = serializers.ChoiceField(choices=LabelValue.choices, help_text="The value first given.")


class LabelChangeRowSerializer(serializers.Serializer):
    participant = serializers.CharField(help_text="The participant's pseudonym.")
    item = serializers.CharField(help_text="The item's external id.")
    previous_value = serializers.ChoiceField(choices=LabelValue.choices, help_text="The value replaced.")
    previous_rationale = serializers.CharField(allow_blank=True)
    previous_at = serializers.DateTimeField(help_text="When the replaced value was given.")
    changed_at = serializers.DateTimeField(help_text="When it was replaced.")


class SkipAndFlagRowSerializer(serializers.Serializer):
    participant = serializers.CharField(help_text="The participant's pseudonym.")
    item = serializers.CharField(help_text="The item's external id.")
    skipped_at = serializers.DateTimeField(allow_null=True, help_text="Empty: not skipped (labelled, or not yet).")
    skip_reason = serializers.CharField(allow_blank=True)
    flagged_at = serializers.DateTimeField(allow_null=True)
    flag_reason = serializers.CharField(allow_blank=True)


class ItemImportUploadSerializer(serializers.Serializer):
    """The multipart fields of an upload (see ItemImportForm for their defaults)."""

    file = serializers.FileField()
    id_column = serializers.CharField(required=False, allow_blank=True)
    target_column = serializers.CharField(required=False, allow_blank=True)
    preceding_column = serializers.CharField(required=False, allow_blank=True)
    following_column = serializers.CharField(required=False, allow_blank=True)
    label_columns = serializers.CharField(required=False, allow_blank=True, help_text="Comma-separated.")
    use_row_numbers_as_ids = serializers.BooleanField(required=False)
    encoding = serializers.ChoiceField(choices=ENCODING_CHOICES, required=False, allow_blank=True)


class ItemImportSerializer(serializers.ModelSerializer):
    class Meta:
        model = ItemImport
        fields = ("id", "study", "filename", "file_format", "sha256", "options", "status", "errors", "warnings",
                  "encoding", "n_items", "n_labels", "n_participants", "created_at", "started_at", "finished_at")


class StudyAnalysisSerializer(serializers.Serializer):
    state = serializers.ChoiceField(
        choices=["queued", "running", "done", "failed", "not_computed"],
        help_text="queued: waiting for a worker; running: being computed; done: the stored results are the last "
                  "run's; failed: the last run failed (see `error`; the results before it are still served); "
                  "not_computed: never computed.")
    rerun_requested = serializers.BooleanField(help_text="Asked for again while running: one more run follows.")
    requested_at = serializers.DateTimeField(allow_null=True, help_text="When the current or last run was queued.")
    started_at = serializers.DateTimeField(allow_null=True, help_text="When the current or last run started.")
    finished_at = serializers.DateTimeField(allow_null=True, help_text="When the last run ended.")
    error = serializers.CharField(allow_null=True, help_text="Why the last run failed; null when it succeeded.")
    computed_at = serializers.DateTimeField(allow_null=True, help_text="When the stored results were computed.")
    duration_ms = serializers.IntegerField(allow_null=True)
    notes = serializers.ListField(child=serializers.CharField(), help_text="The analysis's own notes (annotators "
                                  "without a weight and why, item sets smaller than asked for…).")
    ground_truth_url = serializers.CharField(help_text="The export of the majority and weighted labels.")
    item_sets_url = serializers.CharField(help_text="The export of the test sets and ICL example sets.")
    participants_url = serializers.CharField(help_text="The export of the annotators with their scores and weights.")
    dashboard_url = serializers.CharField(help_text="The weighted-vs-majority dashboard (a page, staff login).")


class ProblemSerializer(serializers.Serializer):
    row = serializers.IntegerField(allow_null=True, help_text="As a spreadsheet numbers it: the header is row 1.")
    column = serializers.CharField(allow_null=True)
    message = serializers.CharField()


class ImportRejectedSerializer(serializers.Serializer):
    detail = serializers.CharField()
    problems = ProblemSerializer(many=True)


class StudyListView(TeamScopedMixin, generics.ListCreateAPIView):
    """The studies of your teams with their counts of items, participants and labels; POST creates a study in a team
    where you are an editor."""

    serializer_class = StudySerializer
    queryset = study_list()

    def perform_create(self, serializer):
        try:
            team = team_for_new_object(self.request.user, serializer.validated_data.pop("team", None))
        except TeamChoiceError as error:
            raise serializers.ValidationError({"team": [str(error)]}) from error
        serializer.instance = study_list().get(pk=serializer.save(team=team).pk)


class StudyDetailView(TeamScopedMixin, generics.RetrieveUpdateAPIView):
    """One study of your teams; PUT and PATCH change its settings (editors and owners of its team)."""

    serializer_class = StudySerializer
    queryset = study_list()
    # Settings are JSON: a form body holding no field would be an accepted change of nothing.
    parser_classes = [JSONObjectParser]


class StudyScoped(TeamScopedParentMixin):
    """For views under ``/api/studies/{pk}/``: the study, looked up once among your teams' before the handler runs
    (404 if you see none; 403 for a write below the editor role)."""

    parent_model = Study

    @property
    def study(self) -> Study:
        return self.scoped_object


class StudyExportView(StudyScoped, ExportLogged, ExportListAPIView):
    """An export of one study: ``export_selector(study=...)`` gives the rows, ``export_name`` the file name and the
    kind the access log records for each answer with rows (every JSON page and every CSV is an export)."""

    export_selector = None
    export_name = ""

    @property
    def export_kind(self) -> str:  # type: ignore[override]
        return self.export_name

    def export_rows(self):
        return type(self).export_selector(study=self.study)

    def export_filename(self) -> str:
        return f"{self.study.slug}-{self.export_name}.csv"


@extend_schema(summary="A study's items", description="One row per item, in study order.")
class StudyItemsView(StudyExportView):
    serializer_class = ItemRowSerializer
    export_selector = study_items_export
    export_name = "items"


@extend_schema(summary="A study's participants", description="One row per participant, named by pseudonym.")
class StudyParticipantsView(StudyExportView):
    serializer_class = ParticipantRowSerializer
    export_selector = study_participants_export
    export_name = "participants"


@extend_schema(summary="A study's questionnaire answers", description="One row per answer, as given.")
class StudyInstrumentResponsesView(StudyExportView):
    serializer_class = InstrumentResponseRowSerializer
    export_selector = study_instrument_responses_export
    export_name = "instrument-responses"


@extend_schema(summary="A study's IAT trials", description="One row per trial of every participant's IAT.")
class StudyIATTrialsView(StudyExportView):
    serializer_class = IATTrialRowSerializer
    export_selector = study_iat_trials_export
    export_name = "iat-trials"


@extend_schema(summary="A study's weighted ground truth",
               description="The latest analysis: majority vote and the weighted label per item.")
class StudyGroundTruthView(StudyExportView):
    serializer_class = GroundTruthRowSerializer
    export_selector = study_ground_truth_export
    export_name = "ground-truth"


@extend_schema(
    summary="A study's alternative ground truths (robustness of the weighted label)",
    parameters=[OpenApiParameter("table", str, enum=list(ALTERNATIVE_TABLES), description=(
        "labels (default): one row per item, one column per alternative (1/0, null = no label; soft is the "
        "weighted score ŷ); summary: one row per alternative against the paper's weighted label (share of items "
        "that differ, Cohen's κ); agreement: κ between every pair of alternatives; flipped: the items whose label "
        "differs from the paper's; weights: W per annotator under each weighting."))],
    description="Computed by their own task after each study analysis (crowd-kit's models take seconds). Until "
                "they are stored the answer is not a table but a JSON object with `status`: 202 `computing` (with "
                "`requested_at`, when the analysis asked for them), 409 `failed` (with `error`, the reason), 404 "
                "`none` (no analysis, or one from before they existed), in either format. The alternatives and "
                "their settings are described in annotation/alternatives.py and the summary table.")
class StudyGroundTruthAlternativesView(StudyExportView):
    serializer_class = TableRowSerializer
    export_name = "ground-truth-alternatives"
    not_ready_status = {"computing": status.HTTP_202_ACCEPTED, "failed": status.HTTP_409_CONFLICT,
                        "none": status.HTTP_404_NOT_FOUND}

    def list(self, request, *args, **kwargs):
        self.table  # noqa: B018 - an unknown table is a 400 whatever the state
        state = study_alternatives_status(study=self.study)
        if state["status"] != "ready":
            # JSON whatever the format asked: a CSV consumer must not read an empty table as "no alternatives".
            return JsonResponse(state, status=self.not_ready_status[state["status"]])
        return super().list(request, *args, **kwargs)

    @cached_property
    def table(self) -> str:
        table = self.request.query_params.get("table", "labels")
        if table not in ALTERNATIVE_TABLES:
            raise serializers.ValidationError(
                {"table": [f"unknown table {table!r}: one of {', '.join(ALTERNATIVE_TABLES)}"]})
        return table

    def export_rows(self):
        return study_ground_truth_alternatives_export(study=self.study, table=self.table)

    def export_filename(self) -> str:
        return f"{self.study.slug}-ground-truth-alternatives-{self.table}.csv"


@extend_schema(summary="A study's test sets and ICL example sets")
class StudyItemSetsView(StudyExportView):
    serializer_class = ItemSetRowSerializer
    export_selector = study_item_sets_export
    export_name = "item-sets"


@extend_schema(summary="A study's labels", description="One row per label given by a participant to an item.")
class StudyLabelsView(StudyExportView):
    serializer_class = LabelRowSerializer
    export_selector = study_labels_export
    export_name = "labels"


@extend_schema(summary="A study's changed labels",
               description="One row per change an annotator made by going back to a sentence: the value replaced.")
class StudyLabelChangesView(StudyExportView):
    serializer_class = LabelChangeRowSerializer
    export_selector = study_label_changes_export
    export_name = "label-changes"


@extend_schema(summary="A study's skipped and flagged sentences",
               description="One row per annotator and sentence they skipped or flagged, with their reasons.")
class StudySkipsAndFlagsView(StudyExportView):
    serializer_class = SkipAndFlagRowSerializer
    export_selector = study_skips_and_flags_export
    export_name = "skips-and-flags"


def upload_form_rejected(form) -> Response:
    """400 for an upload whose form is wrong (no file, an unknown option): each field's problems."""
    return Response({"detail": "invalid upload", "problems": [
        {"row": None, "column": field, "message": " ".join(errors)} for field, errors in form.errors.items()]},
        status=status.HTTP_400_BAD_REQUEST)


def upload_file_rejected(error: ItemFileError) -> Response:
    """400 for an uploaded file that cannot be imported: every problem with its row and column."""
    return Response({"detail": str(error), "problems": [p.as_dict() for p in error.problems]},
                    status=status.HTTP_400_BAD_REQUEST)


class StudyImportsView(StudyScoped, generics.ListAPIView):
    """A study's item imports, newest first; POST uploads a file (multipart) to import."""

    serializer_class = ItemImportSerializer
    parser_classes = [MultiPartParser, FormParser]

    def get_queryset(self):
        return ItemImport.objects.filter(study=self.study).defer("content").order_by("-created_at", "-id")

    @extend_schema(
        request={"multipart/form-data": ItemImportUploadSerializer},
        responses={202: ItemImportSerializer, 400: ImportRejectedSerializer},
        summary="Upload an item file",
        description="The file is validated at once: if any row is wrong the answer is 400 with every problem "
                    "(row and column) and nothing is stored. A valid file is recorded and imported by a worker; "
                    "poll `/api/imports/{id}/` until `status` is `succeeded` or `failed`.",
    )
    def post(self, request, *args, **kwargs):
        form = ItemImportForm(request.data, request.FILES)
        if not form.is_valid():
            return upload_form_rejected(form)
        upload = form.cleaned_data["file"]
        try:
            item_import = item_import_submit(study=self.study, filename=upload.name, content=upload.read(),
                                             options=form.import_options(), uploaded_by=request.user)
        except ItemFileError as error:
            return upload_file_rejected(error)
        return Response(ItemImportSerializer(item_import).data, status=status.HTTP_202_ACCEPTED)


class ItemImportDetailView(TeamScopedMixin, generics.RetrieveAPIView):
    """One item import: its status, counts, warnings and errors (row, column, message)."""

    serializer_class = ItemImportSerializer
    queryset = ItemImport.objects.defer("content")


class StudyAnalysisView(StudyScoped, APIView):
    """The state of a study's analysis (trust weights, ground truth, agreement, item sets); POST asks for one."""

    def _answer(self, request, status_code: int) -> Response:
        body = asdict(study_analysis_status(study=self.study))
        links = {"ground_truth_url": "api:study-ground-truth", "item_sets_url": "api:study-item-sets",
                 "participants_url": "api:study-participants"}
        body.update({key: request.build_absolute_uri(reverse(name, args=[self.study.id]))
                     for key, name in links.items()})
        body["dashboard_url"] = request.build_absolute_uri(reverse("study-dashboard", args=[self.study.id]))
        return Response(StudyAnalysisSerializer(body).data, status=status_code)

    @extend_schema(responses={200: StudyAnalysisSerializer}, summary="A study's analysis: its state and notes")
    def get(self, request, pk: int):
        answer = self._answer(request, status.HTTP_200_OK)
        record_export(request, self.study, "analysis")
        return answer

    @extend_schema(request=None, responses={202: StudyAnalysisSerializer}, summary="Recompute a study's analysis",
                   description="A worker recomputes the analysis from everything stored. Idempotent: while a run "
                               "is queued, asking again changes nothing; while one is running, exactly one more "
                               "run follows it. Poll the GET until `state` is `done` or `failed`.")
    def post(self, request, pk: int):
        study_analysis_request(study_id=self.study.id)
        return self._answer(request, status.HTTP_202_ACCEPTED)
