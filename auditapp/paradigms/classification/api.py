"""REST API of classification audits: the replies item by item for the error browser
(``/api/audits/{id}/judged-replies/``), the metrics export (``/api/audits/{id}/metrics/``, JSON and ``?format=csv``,
under an outcome source ``?outcomes=strict|extraction:<id>``) and the second-pass extractions
(``/api/audits/{id}/extractions/``: record one, list them with their counts, export one's labels)."""
from __future__ import annotations

from django.http import JsonResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers, status
from rest_framework.exceptions import APIException, NotFound, ValidationError
from rest_framework.response import Response
from rest_framework.views import APIView

from auditapp.api.audits import AuditExportView, AuditScoped, TableRowSerializer
from auditapp.models import AuditExtraction, AuditRequest, LLMEndpoint
from auditapp.paradigms.classification.extraction_services import (
    OutcomeSourceError,
    extraction_create,
    extraction_id_of,
)
from auditapp.paradigms.classification.selectors import (
    EXTRACTION_COUNTS,
    JUDGED_GROUPS,
    JUDGED_ORDERINGS,
    METRIC_VALUES,
    ROBUSTNESS_TABLES,
    audit_extraction_labels_export,
    audit_extractions,
    audit_metrics_export,
    audit_robustness_export,
    judged_replies_export,
)
from common.api.parsers import JSONObjectParser
from teams.api import scope_relations

PARADIGM = "classification"


class Conflict(APIException):
    status_code = status.HTTP_409_CONFLICT
    default_detail = "The request conflicts with the state of the resource."
    default_code = "conflict"

OUTCOMES_PARAMETER = OpenApiParameter(
    "outcomes", str, pattern=r"^(strict|extraction:[0-9]{1,18})$", description="Which outcomes the metrics use: \"strict\" (default: the strict parser's labels "
                                 "only) or \"extraction:<id>\" (strict labels kept, unparseable replies take that "
                                 "extraction's label where it gives one). Every row says which. 404 for an extraction the "
                                 "audit does not have, 409 for one that has not completed.")


def _metric_field(name: str) -> serializers.Field:
    if name.endswith("_note"):
        return serializers.CharField(allow_null=True, help_text="Why the value beside it is undefined (null when "
                                                                "it is defined).")
    if name.startswith("n"):
        return serializers.IntegerField(allow_null=True)
    return serializers.FloatField(allow_null=True, help_text="null when undefined (the _note column says why).")


def _metric_fields() -> dict:
    return {name: _metric_field(name) for name in METRIC_VALUES}


MetricRowSerializer = type("MetricRowSerializer", (serializers.Serializer,), {
    "model": serializers.CharField(), "model_label": serializers.CharField(), "condition": serializers.CharField(),
    "reference": serializers.CharField(help_text="weighted (eq. 6) or majority."),
    "unparsed": serializers.CharField(help_text="exclude or wrong: how unparsed items entered every number."),
    **_metric_fields(), "delta_kappa": serializers.FloatField(allow_null=True, help_text="κ(majority) − κ(weighted)"),
    "delta_kappa_note": serializers.CharField(allow_null=True, help_text="Why Δκ is undefined (null when defined)."),
    "outcomes": serializers.CharField(help_text="The outcome source: strict or extraction:<id>."),
    "n_extracted": serializers.IntegerField(allow_null=True, help_text="Replies whose label came from the "
                                                                       "extraction (null under strict outcomes)."),
})


@extend_schema(summary="An audit's metrics", parameters=[OUTCOMES_PARAMETER],
               description="One row per model × condition × reference, every metric with its bootstrap 95% CI (items "
                           "resampled, seeded), counts of each outcome, and Δκ, under the chosen outcome source. A "
                           "metric undefined over its items (n = 0, no predicted or no reference positives, κ with "
                           "one class only) is null (empty in CSV), never 0, with its reason in the <metric>_note "
                           "column.")
class AuditMetricsView(AuditExportView):
    serializer_class = MetricRowSerializer
    export_kind = "metrics"

    def export_rows(self):
        try:
            return audit_metrics_export(audit=self.audit, outcomes=self.request.query_params.get("outcomes"))
        except OutcomeSourceError as error:
            # A 404 or 409 says what went wrong in "detail", as every 404 and 409 of the API does; a 400 names the
            # parameter.
            if error.status in (404, 409):
                raise {404: NotFound, 409: Conflict}[error.status](str(error)) from error
            raise ValidationError({"outcomes": [str(error)]}) from error

    def export_filename(self) -> str:
        return f"audit-{self.audit.id}-metrics.csv"


@extend_schema(
    summary="An audit re-scored against every alternative ground truth",
    parameters=[OpenApiParameter("table", str, enum=list(ROBUSTNESS_TABLES), description=(
        "cells (default): κ and F1 with bootstrap 95% CIs per model × condition × alternative, and Δκ = "
        "κ(alternative) − κ(weighted); ranks: mean κ and rank of each model and condition under each alternative; "
        "tau: Kendall's τ between each alternative's ranking and the paper's; tests: the §4.1 Δκ test against "
        "every alternative (mean Δκ, paired t-test over cells, bootstrap CI); snapshot: per alternative its source "
        "(the audit's snapshot for weighted and majority, else the study's analysis) and, against the snapshot, the "
        "audit's items whose label the study's latest analysis changed or lost, and those without one."))],
    description="Computed when the audit is analysed, from its strict outcomes and the alternative ground truths of "
                "its study's latest analysis (the paper's weighted label and the majority vote are the audit's "
                "snapshot). No model is asked again. Undefined values are null (empty in CSV) with a note. While the "
                "study's alternatives are still being computed (their own task after its analysis) the answer is 202 "
                "with `status: \"computing\"`, when they were asked and a note, in either format; the audit is "
                "re-scored when they are stored.")
class AuditRobustnessView(AuditExportView):
    paradigm = PARADIGM
    serializer_class = TableRowSerializer
    export_kind = "robustness"

    def list(self, request, *args, **kwargs):
        robustness = (self.audit.analysis or {}).get("robustness") or {}
        if robustness.get("pending"):
            # JSON whatever the format asked: an empty table would read as "no alternatives".
            return JsonResponse({"status": "computing", "requested_at": robustness["study_alternatives_requested_at"],
                                 "notes": robustness.get("notes", [])}, status=status.HTTP_202_ACCEPTED)
        return super().list(request, *args, **kwargs)

    def export_rows(self):
        table = self.request.query_params.get("table", "cells")
        if table not in ROBUSTNESS_TABLES:
            raise ValidationError({"table": [f"unknown table {table!r}: one of {', '.join(ROBUSTNESS_TABLES)}"]})
        return audit_robustness_export(audit=self.audit, table=table)

    def export_filename(self) -> str:
        return f"audit-{self.audit.id}-robustness-{self.request.query_params.get('table', 'cells')}.csv"


class ExtractionCreateSerializer(serializers.Serializer):
    mode = serializers.ChoiceField(choices=AuditExtraction.Mode.choices,
                                   help_text="rules (the verbal rules) or model (a chat model asked which label the "
                                             "reply gives).")
    endpoint = serializers.PrimaryKeyRelatedField(queryset=LLMEndpoint.objects.all(), required=False, allow_null=True,
                                                  help_text="model mode: the extractor's endpoint (id).")
    model = serializers.CharField(required=False, allow_blank=True, max_length=200,
                                  help_text="model mode: the extractor model's name at the endpoint.")
    params = serializers.DictField(required=False, help_text="model mode: generation parameters (default none).")

    # extraction_problems: the rules mode takes no endpoint, model or params; the model mode needs an endpoint and a
    # model (a chat endpoint's, which only the database knows).
    schema_rules = {"oneOf": [
        {"properties": {"mode": {"enum": [AuditExtraction.Mode.RULES]}, "endpoint": {"enum": [None]},
                        "model": {"maxLength": 0}, "params": {"maxProperties": 0}}},
        {"properties": {"mode": {"enum": [AuditExtraction.Mode.MODEL]}, "endpoint": {"type": "integer"},
                        "model": {"minLength": 1}},
         "required": ["endpoint", "model"]}]}


ExtractionCountsSerializer = type("ExtractionCountsSerializer", (serializers.Serializer,), {
    **{name: serializers.IntegerField() for name in EXTRACTION_COUNTS},
    "n": serializers.IntegerField(help_text="Replies read.")})


class ExtractionSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    mode = serializers.CharField()
    extractor = serializers.CharField(help_text="Who extracted: rules and version, or model, endpoint, template.")
    version = serializers.CharField()
    endpoint = serializers.IntegerField(allow_null=True)
    endpoint_name = serializers.CharField(allow_null=True)
    model = serializers.CharField(allow_blank=True)
    params = serializers.DictField()
    digest = serializers.CharField(allow_blank=True)
    status = serializers.CharField()
    status_reason = serializers.CharField(allow_blank=True)
    created_at = serializers.DateTimeField()
    finished_at = serializers.DateTimeField(allow_null=True)
    counts = ExtractionCountsSerializer()
    n_to_extract = serializers.IntegerField(help_text="The audit's unparseable replies (what an extraction reads).")
    n_covered = serializers.IntegerField(help_text="Of those, the replies this extraction has an outcome for (its "
                                                   "failed extractor requests not counted).")
    n_labelled = serializers.IntegerField(help_text="Of those, the replies it gave a label (0 or 1); the rest it "
                                                    "read as no label.")
    coverage = serializers.CharField(help_text="The same in words: \"read k of n unparseable replies, labelled m\". "
                                               "POST the same extraction again to bring it up to date.")
    outcomes = serializers.CharField(help_text="The value of ?outcomes= that shows metrics with this extraction.")


class AuditExtractionsView(AuditScoped, APIView):
    paradigm = PARADIGM
    parser_classes = [JSONObjectParser]

    @extend_schema(summary="An audit's second-pass extractions", responses={200: ExtractionSerializer(many=True)})
    def get(self, request, pk: int):
        return Response(ExtractionSerializer(audit_extractions(self.audit), many=True).data)

    @extend_schema(summary="Extract labels from the unparseable replies", request=ExtractionCreateSerializer,
                   responses={202: ExtractionSerializer, 200: ExtractionSerializer, 400: OpenApiTypes.OBJECT},
                   description="Reads the replies the strict parser left unparseable again, by the verbal rules "
                               "({\"mode\": \"rules\"}) or by asking a chat model which label each gives "
                               "({\"mode\": \"model\", \"endpoint\": id, \"model\": \"...\"}), in a worker. 202 with "
                               "the new extraction; 200 with the existing one when the same extraction (mode, "
                               "version, endpoint, model, params) was recorded before: it is not redone, only brought "
                               "up to date (queued again for the unparseable replies it does not cover and its "
                               "failed extractor requests, only those). The strict outcomes never change. 400 names "
                               "every problem (a generation parameter of the wrong type included).")
    def post(self, request, pk: int):
        # The extractor's endpoint is one the user may use (their team's or one shared with it): any other is "does
        # not exist".
        body = scope_relations(ExtractionCreateSerializer(data=request.data), request.user)
        body.is_valid(raise_exception=True)
        data = body.validated_data
        extraction, created = extraction_create(audit=self.audit, mode=data["mode"], endpoint=data.get("endpoint"),
                                                model=data.get("model", ""), params=data.get("params"),
                                                created_by=request.user)
        row = next(row for row in audit_extractions(self.audit) if row["id"] == extraction.id)
        return Response(ExtractionSerializer(row).data, status=status.HTTP_202_ACCEPTED if created else status.HTTP_200_OK)


class ExtractionLabelSerializer(serializers.Serializer):
    request_id = serializers.IntegerField()
    model = serializers.CharField()
    model_label = serializers.CharField()
    condition = serializers.CharField()
    item = serializers.CharField(allow_null=True)
    replicate = serializers.IntegerField()
    strict_outcome = serializers.CharField(help_text="The strict parser's outcome (unchanged by the extraction).")
    strict_reason = serializers.CharField(allow_blank=True)
    reply = serializers.CharField(allow_null=True, help_text="The audited model's raw reply.")
    extraction = serializers.IntegerField()
    mode = serializers.CharField()
    extractor = serializers.CharField()
    outcome = serializers.CharField(help_text="label, none, unparseable (the extractor's answer) or error.")
    label = serializers.IntegerField(allow_null=True, help_text="The extracted label (null: none).")
    reason = serializers.CharField(allow_blank=True)
    key = serializers.CharField(allow_blank=True, help_text="model mode: the extractor request's key.")
    extractor_reply = serializers.CharField(allow_null=True, help_text="model mode: the extractor's raw answer.")


@extend_schema(summary="The labels an extraction read", parameters=[
    OpenApiParameter("extraction_id", int, OpenApiParameter.PATH)],
    description="One row per reply the extraction read: its request, strict outcome and raw reply, and the "
                "extraction's outcome, label and reason (model mode: the extractor request's key and raw answer).")
class AuditExtractionLabelsView(AuditExportView):
    paradigm = PARADIGM
    serializer_class = ExtractionLabelSerializer
    export_kind = "extraction-labels"

    def export_rows(self):
        number = self.kwargs["extraction_id"]
        extraction_id = extraction_id_of(number)
        extraction = (AuditExtraction.objects.filter(audit=self.audit, pk=extraction_id).first()
                      if extraction_id is not None else None)
        if extraction is None:
            raise NotFound(f"audit {self.audit.id} has no extraction {number!r}")
        return audit_extraction_labels_export(extraction=extraction)

    def export_filename(self) -> str:
        return f"audit-{self.audit.id}-extraction-{self.kwargs['extraction_id']}.csv"


class JudgedReplyRowSerializer(serializers.Serializer):
    request_id = serializers.IntegerField(help_text="GET /api/audits/{id}/requests/{request_id}/ gives it whole.")
    model = serializers.CharField()
    model_label = serializers.CharField(help_text="The model's label, or its name when it has none.")
    condition = serializers.CharField()
    replicate = serializers.IntegerField()
    item = serializers.CharField(help_text="The item's external id.")
    preceding = serializers.CharField(allow_blank=True)
    text = serializers.CharField(help_text="The sentence judged.")
    following = serializers.CharField(allow_blank=True)
    weighted_label = serializers.IntegerField(allow_null=True, help_text="The audit's snapshot of the weighted "
                                                                         "ground truth (null: the item has none).")
    majority_label = serializers.IntegerField(allow_null=True)
    group_label = serializers.IntegerField(allow_null=True, help_text="With ?group=: the label the group's "
                                                                      "annotators agreed on (null without a group).")
    label = serializers.IntegerField(allow_null=True, help_text="The model's label (null: none was read).")
    correct = serializers.BooleanField(allow_null=True, help_text="label = weighted_label; null without either.")
    explanation = serializers.CharField(allow_blank=True)
    outcome = serializers.CharField(help_text="label, refusal, unparseable or error.")
    parse_reason = serializers.CharField(allow_blank=True)


class JudgedReplyFilterSerializer(serializers.Serializer):
    """The error browser's filters; any other value is a 400 naming it."""

    model = serializers.IntegerField(required=False, min_value=1, max_value=2 ** 63 - 1,
                                     help_text="Only this audit model (id).")
    condition = serializers.RegexField(r"^[A-Za-z0-9_:-]{1,40}$", required=False, help_text="Only this condition.")
    outcome = serializers.ChoiceField(required=False, choices=AuditRequest.Outcome.values, help_text="Only this outcome.")
    group = serializers.ChoiceField(required=False, choices=JUDGED_GROUPS,
                                    help_text="Only the items of this psychometric group's test set (the items every "
                                              "annotator of the group labelled alike, in the study's latest "
                                              "analysis; \"all\": every annotator), with the group's label.")
    disagrees = serializers.ChoiceField(required=False, choices=["weighted", "majority", "group"],
                                        help_text="Only labelled replies whose label differs from this reference "
                                                  "(\"weighted\": the wrong ones; \"group\": needs ?group=).")
    q = serializers.CharField(required=False, max_length=200, help_text="The sentence or the explanation contains "
                                                                        "this (case-insensitive).")
    ordering = serializers.ChoiceField(required=False, default="item",
                                       choices=[*JUDGED_ORDERINGS, *(f"-{name}" for name in JUDGED_ORDERINGS)],
                                       help_text="Sort by item (default), model, condition or outcome; - reverses.")

    def validate(self, attrs):
        if attrs.get("disagrees") == "group" and "group" not in attrs:
            raise serializers.ValidationError({"disagrees": ["\"group\" needs a group: add ?group= (one of "
                                                             f"{', '.join(JUDGED_GROUPS)})."]})
        return attrs


@extend_schema(summary="An audit's replies item by item (the error browser)", parameters=[JudgedReplyFilterSerializer],
               description="One row per finished request: the sentence and its context, the weighted and majority "
                           "labels (and a psychometric group's, with ?group=), the model's label, whether it is "
                           "right (against the weighted ground truth), its explanation and outcome; filtered and "
                           "sorted. JSON pages, or every row with ?format=csv.")
class AuditJudgedRepliesView(AuditExportView):
    serializer_class = JudgedReplyRowSerializer
    export_kind = "judged replies"
    paradigm = PARADIGM

    def export_rows(self):
        return judged_replies_export(audit=self.audit, **self.validated_filters(JudgedReplyFilterSerializer))

    def export_filename(self) -> str:
        return f"audit-{self.audit.id}-judged-replies.csv"
