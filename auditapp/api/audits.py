"""REST API of audits shared by every paradigm (researchers only): endpoints and their models, launching (the
body is the paradigm's own: :mod:`auditapp.engine.registry`) and controlling audits, live progress, the
parse-quality report, the responses, the manifest and the paradigms' named tables. A paradigm's own routes come from its adapter.

Every list also answers ``?format=csv`` (streamed, never paginated).
"""
from __future__ import annotations

from collections.abc import Collection
from functools import cached_property

from django.db import transaction
from django.shortcuts import get_object_or_404
from django.urls import reverse
from drf_spectacular.extensions import OpenApiSerializerExtension
from drf_spectacular.utils import (
    OpenApiParameter,
    PolymorphicProxySerializer,
    extend_schema,
    extend_schema_view,
)
from rest_framework import generics, serializers, status
from rest_framework.exceptions import NotFound
from rest_framework.response import Response
from rest_framework.views import APIView

from auditapp import scorer_kinds
from auditapp.endpoint_keys import KEY_VARIABLE_PREFIX, EndpointRefused
from auditapp.engine import analysis as engine_analysis
from auditapp.engine import control, launch, registry
from auditapp.engine import endpoints as engine_endpoints
from auditapp.engine.launch import BIGINT_MAX
from auditapp.engine.selectors import (
    SHAPE_SAMPLE,
    audit_list,
    audit_parse_quality,
    audit_progress,
    audit_request_detail,
    audit_responses_export,
)
from auditapp.llm_clients import STRUCTURED_OUTPUT_FORMS, EndpointError
from auditapp.models import MAX_ENDPOINT_SECONDS, Audit, AuditRequest, LLMEndpoint
from common.api.exports import ExportListAPIView, ModelListExportView
from common.api.fields import storable_json
from common.api.parsers import JSONObjectParser
from common.export_rows import Export
from teams import roles
from teams.api import (
    EditableTeamField,
    ExportLogged,
    TeamScopedMixin,
    TeamScopedParentMixin,
    check_role,
    new_object_team,
    record_export,
    scope_relations,
)
from teams.scoping import new_objects_in, teams_of, visible


class ErrorSerializer(serializers.Serializer):
    detail = serializers.CharField(help_text="What went wrong.")


def endpoint_kind_rules() -> dict:
    """What :func:`auditapp.scorer_kinds.endpoint_problems` checks across fields, as the schema says it: per kind
    (``protocol``, default openai) whether it has a base URL, which structured-output forms it takes, and for an
    HTTP JSON scorer the fields it needs (what it needs of them beyond that, a template with "{{text}}" once and a
    valid JMESPath, is checked only when sent)."""
    default = LLMEndpoint._meta.get_field("protocol").get_default()
    branches = []
    for kind, spec in scorer_kinds.KINDS.items():
        forms = [form for form, protocol in STRUCTURED_OUTPUT_FORMS.items() if protocol == kind]
        branch = {"properties": {"protocol": {"enum": [kind]},
                                 "base_url": {"minLength": 1} if spec.networked else {"maxLength": 0},
                                 "structured_output": {"enum": ["", *forms]}},
                  "required": ([] if kind == default else ["protocol"]) + (["base_url"] if spec.networked else [])}
        if kind == "http_json":
            branch["properties"]["request_template"] = {"not": {"enum": [None]}}
            branch["required"] += ["request_template", "score_path", "score_min", "score_max"]
        branches.append(branch)
    return {"anyOf": branches}


class EndpointSerializer(serializers.ModelSerializer):
    """An endpoint of any kind (``protocol``), its settings checked for that kind
    (:func:`auditapp.scorer_kinds.endpoint_problems`): a local scorer has no ``base_url``; an HTTP JSON scorer
    needs ``request_template``, ``score_path`` and a finite ``score_min`` < ``score_max``. The models of a kind
    that needs no server to list them are listed when the endpoint is registered."""

    api_key_set = serializers.SerializerMethodField(
        help_text=f"Whether the named environment variable is set (always false for a name not starting with "
                  f"{KEY_VARIABLE_PREFIX}: no other variable is looked up).")
    team = EditableTeamField(
        required=False,
        help_text="The id of the team that owns the endpoint (its editors alone see and set its key's variable). On "
                  "creation, optional: one where you are an editor (default: your only such team, or a new team of "
                  "your own).")
    shared_with = serializers.PrimaryKeyRelatedField(
        many=True, read_only=True, help_text="The teams that may also use it (set in the admin by its owners).")

    class Meta:
        model = LLMEndpoint
        fields = ("id", "name", "protocol", "base_url", "api_key_env", "api_key_set", "max_concurrency",
                  "requests_per_minute", "attempt_timeout_s", "deadline_s", "max_attempts", "structured_output",
                  "request_template",
                  "score_path", "score_min", "score_max", "team", "shared_with", "listed_models", "listed_at",
                  "created_at")
        read_only_fields = ("listed_models", "listed_at", "created_at")
        extra_kwargs = {"base_url": {"required": False, "allow_blank": True,
                                     "help_text": "The server's URL (an HTTP JSON scorer's: the whole URL it is "
                                                  "POSTed to); empty for a local scorer."},
                        "request_template": {"validators": [storable_json]}}

    schema_field_rules = {name: {"minimum": 0, "exclusiveMinimum": True, "maximum": MAX_ENDPOINT_SECONDS}
                          for name in ("attempt_timeout_s", "deadline_s")}
    schema_rules = staticmethod(endpoint_kind_rules)

    def get_api_key_set(self, endpoint: LLMEndpoint) -> bool:
        return endpoint.api_key() is not None

    def _editor_teams(self) -> set[int] | None:
        """The teams whose endpoints' key settings the request's user may see (None: every team's)."""
        if "editor_teams" not in self.context:
            user = getattr(self.context.get("request"), "user", None)
            self.context["editor_teams"] = (None if user is not None and user.is_superuser else
                                            set(teams_of(user, roles.EDITOR).values_list("team_id", flat=True)))
        return self.context["editor_teams"]

    def to_representation(self, endpoint: LLMEndpoint) -> dict:
        # A team the endpoint is shared with uses it without learning where its key lives: the variable's name is
        # the owning team's editors' business (api_key_set still says whether it can be used).
        data = super().to_representation(endpoint)
        editor_teams = self._editor_teams()
        if editor_teams is not None and endpoint.team_id not in editor_teams:
            data["api_key_env"] = None
        return data

    def validate_team(self, team):
        if self.instance is not None and team != self.instance.team:
            raise serializers.ValidationError("An endpoint's team is not changed through the API.")
        return team

    def validate(self, attrs: dict) -> dict:
        def value(name: str):
            return attrs[name] if name in attrs else getattr(self.instance, name, LLMEndpoint._meta.get_field(name)
                                                             .get_default())

        problems = scorer_kinds.endpoint_problems(
            kind=value("protocol"), base_url=value("base_url") or "", request_template=value("request_template"),
            score_path=value("score_path"), score_min=value("score_min"), score_max=value("score_max"),
            structured_output=value("structured_output"))
        if problems:
            raise serializers.ValidationError(problems)
        return attrs

    def create(self, validated_data: dict) -> LLMEndpoint:
        validated_data["team"] = new_object_team(self.context["request"].user, validated_data.pop("team", None))
        endpoint = super().create(validated_data)
        if scorer_kinds.scorer_kind(endpoint.protocol).models_known:
            engine_endpoints.endpoint_list_models(endpoint)
        return endpoint

    def update(self, endpoint: LLMEndpoint, validated_data: dict) -> LLMEndpoint:
        validated_data.pop("team", None)  # unchanged (validate_team)
        return engine_endpoints.endpoint_update(endpoint=endpoint, changes=validated_data)


class EndpointListView(TeamScopedMixin, generics.ListCreateAPIView):
    """The LLM endpoints of your teams and those shared with them; POST registers one in a team where you are an
    editor (the API key is named by an environment variable, never sent here)."""

    serializer_class = EndpointSerializer
    queryset = LLMEndpoint.objects.all()


@extend_schema_view(
    put=extend_schema(responses={200: EndpointSerializer, 409: ErrorSerializer}),
    patch=extend_schema(responses={200: EndpointSerializer, 409: ErrorSerializer}),
    delete=extend_schema(responses={204: None, 409: ErrorSerializer}))
class EndpointDetailView(TeamScopedMixin, generics.RetrieveUpdateDestroyAPIView):
    """One endpoint of your teams or shared with them. PUT and PATCH change its settings (editors and owners of its
    team; 409 when the change would alter the keys of requests an audit still has to send: its kind, base URL or
    scoring settings). DELETE removes one that no audit names (owners; 409 otherwise)."""

    serializer_class = EndpointSerializer
    queryset = LLMEndpoint.objects.all()
    parser_classes = [JSONObjectParser]

    def perform_destroy(self, endpoint: LLMEndpoint) -> None:
        engine_endpoints.endpoint_delete(endpoint=endpoint)


class ModelInfoSerializer(serializers.Serializer):
    name = serializers.CharField()
    digest = serializers.CharField(allow_null=True)
    details = serializers.JSONField()


@extend_schema(summary="The models an endpoint offers",
               responses={200: ModelInfoSerializer(many=True), 400: ErrorSerializer, 502: ErrorSerializer},
               description="Asks the endpoint now (GET /v1/models or /api/tags); 502 with the reason if it fails. "
                           "The server itself fetches the registered URL, so registering endpoints is for trusted "
                           "staff only; 400 when the endpoint's host is, or now resolves to, a link-local or cloud "
                           "metadata address (or a private one, when LLM_ENDPOINTS_ALLOW_PRIVATE is off), or its key "
                           f"variable does not start with {KEY_VARIABLE_PREFIX} (named before names were restricted).")
class EndpointModelsView(APIView):
    def get(self, request, pk: int):
        endpoint = get_object_or_404(visible(request.user, LLMEndpoint.objects.all()), pk=pk)
        try:
            models = engine_endpoints.endpoint_list_models(endpoint)
        except EndpointRefused as error:
            return Response({"detail": f"{endpoint} is not asked: {error}"}, status=status.HTTP_400_BAD_REQUEST)
        except EndpointError as error:
            return Response({"detail": f"{endpoint}: {error}"}, status=status.HTTP_502_BAD_GATEWAY)
        return Response(ModelInfoSerializer(models, many=True).data)


class AuditModelSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    model = serializers.CharField()
    label = serializers.CharField(source="display_name")
    endpoint = serializers.CharField(source="endpoint.name")
    params = serializers.JSONField()
    digest = serializers.CharField()


class AuditSerializer(serializers.ModelSerializer):
    study_slug = serializers.CharField(source="study.slug", read_only=True, allow_null=True,
                                       help_text="null for a self-report audit, which has no study.")
    models = AuditModelSerializer(many=True, read_only=True)
    conditions = serializers.SerializerMethodField()
    n_answered = serializers.IntegerField(read_only=True)
    n_failed = serializers.IntegerField(read_only=True)
    dashboard = serializers.SerializerMethodField()
    design = serializers.SerializerMethodField(help_text="Self-report: instruments, forms, mode, labels, title and "
                                                         "the validity rule (the questionnaires are in the "
                                                         "manifest); {} for a classification audit.")

    class Meta:
        model = Audit
        fields = ("id", "name", "paradigm", "study", "study_slug", "corpus", "status", "status_reason", "models",
                  "conditions", "design", "replicates", "seed", "use_cache", "structured_output", "error_budget",
                  "unparsed", "n_resamples", "parallel_tasks", "n_requests", "n_answered", "n_failed", "created_at",
                  "started_at", "resumed_at", "finished_at", "analysed_at", "dashboard")

    def get_conditions(self, audit: Audit) -> list[str]:
        return [c.condition for c in audit.conditions.all()]

    def get_dashboard(self, audit: Audit) -> str:
        return reverse("audit-dashboard", args=[audit.id])

    def get_design(self, audit: Audit) -> dict:
        return {key: value for key, value in audit.design.items() if key != "questionnaires"}


class AuditDetailSerializer(AuditSerializer):
    class Meta(AuditSerializer.Meta):
        fields = (*AuditSerializer.Meta.fields, "analysis")


class AuditListView(ModelListExportView):
    """The audits of your teams, newest first; POST launches one."""

    serializer_class = AuditSerializer

    def get_queryset(self):
        return visible(self.request.user, audit_list()).prefetch_related("models__endpoint", "conditions")

    def export_rows(self):
        columns = ["id", "name", "paradigm", "study", "status", "status_reason", "replicates", "seed", "use_cache",
                   "error_budget", "unparsed", "n_requests", "n_answered", "n_failed", "created_at", "started_at",
                   "resumed_at", "finished_at"]
        rows = self.get_queryset().values_list(*[("study__slug" if c == "study" else c) for c in columns])
        return Export(columns, rows)

    def export_filename(self) -> str:
        return "audits.csv"

    @extend_schema(request=PolymorphicProxySerializer(
        component_name="AuditLaunch", resource_type_field_name="paradigm",
        serializers=lambda: {paradigm.name: paradigm.launch_serializer for paradigm in registry.every()}),
        responses={201: AuditDetailSerializer}, summary="Launch an audit",
        description="The body's \"paradigm\" (default \"classification\") picks the paradigm and its fields: "
                    "a classification audit is recorded against the study's current ground truth; a self-report "
                    "audit asks the instruments in the chosen forms; a perturbation-sensitivity (BITS) audit has "
                    "scorers score a corpus. A worker prepares it (lists the models, builds every request and its "
                    "key) and runs it. 400 names every problem.")
    def post(self, request):
        name = request.data.get("paradigm", registry.DEFAULT) if isinstance(request.data, dict) else None
        try:
            paradigm = registry.get(name)
        except (registry.UnknownParadigm, TypeError):
            return Response({"paradigm": [f"unknown paradigm {name!r}; choose one of: "
                                          f"{', '.join(registry.PARADIGMS)}"]}, status=status.HTTP_400_BAD_REQUEST)
        # Every id the body names (a study, a corpus, an endpoint, recorded scorers) is looked up among what the user
        # sees: another team's is "does not exist", as one that exists nowhere.
        data = scope_relations(paradigm.launch_serializer(data=request.data, context={"request": request}),
                               request.user)
        data.is_valid(raise_exception=True)
        values = dict(data.validated_data)
        structured_output = values.pop("structured_output")
        team = launch_team(request.user, values)
        with transaction.atomic(), new_objects_in(team):
            audit = paradigm.launch(values, created_by=request.user)
            launch.audit_structured_output_set(audit=audit, enabled=structured_output)
        return Response(AuditDetailSerializer(audit_list().get(pk=audit.pk)).data, status=status.HTTP_201_CREATED)


def launch_team(user, values: dict):
    """The team of an audit ``user`` launches (``team`` popped from the body's ``values``): its study's, for an audit
    of a study (another team named is a 400); else the one named, or the user's only team where they edit. The user
    must be an editor there: 403 for a viewer of the study's team, 400 naming ``team`` for any other team."""
    requested = values.pop("team", None)
    study = values.get("study")
    if study is None:
        return new_object_team(user, requested)
    if requested is not None and requested.pk != study.team_id:
        raise serializers.ValidationError({"team": ["an audit of a study belongs to the study's team"]})
    check_role(user, study, roles.EDITOR)
    return study.team


class AuditScoped(TeamScopedParentMixin):
    """A view of one audit (``pk`` in the URL) of your teams, looked up before the handler runs (404 for another
    team's, 403 for a write below the editor role); with ``paradigm`` set (or :meth:`served_paradigms`), an audit
    of another paradigm is a 404."""

    parent_model = Audit
    paradigm: str | None = None

    def served_paradigms(self) -> Collection[str] | None:
        """The paradigms whose audits the view serves (None: any); ``paradigm``'s by default. A route that paradigms
        share (their common module's) names them all."""
        return None if self.paradigm is None else (self.paradigm,)

    @cached_property
    def scoped_object(self) -> Audit:
        served = self.served_paradigms()
        audits = Audit.objects.all() if served is None else Audit.objects.filter(paradigm__in=served)
        return get_object_or_404(visible(self.request.user, audits), pk=self.kwargs["pk"])

    @property
    def audit(self) -> Audit:
        return self.scoped_object


class AuditExportView(AuditScoped, ExportLogged, ExportListAPIView):
    """An export of one audit's rows: each answer with rows writes the access log (``export_kind``)."""

    PAGING_PARAMETERS = ("page", "page_size", "format")
    """Query parameters of every export's pages and format, never a filter."""

    def validated_filters(self, serializer_class, **context) -> dict:
        """The request's filters (its query parameters but the paging and format ones), validated by
        ``serializer_class`` with ``context``: a 400 naming each value it refuses."""
        filters = serializer_class(data={key: value for key, value in self.request.query_params.items()
                                         if key not in self.PAGING_PARAMETERS}, context=context)
        filters.is_valid(raise_exception=True)
        return filters.validated_data


class AuditDetailView(TeamScopedMixin, generics.RetrieveAPIView):
    serializer_class = AuditDetailSerializer
    queryset = audit_list().prefetch_related("models__endpoint", "conditions")  # narrowed by TeamScopedMixin


@extend_schema(summary="Live progress of an audit", responses={200: dict})
class AuditProgressView(AuditScoped, APIView):
    def get(self, request, pk: int):
        return Response(audit_progress(self.audit))


@extend_schema(summary="An audit's manifest", responses={200: dict},
               description="Paradigm, templates and their hashes, models with parameters and digests, seeds, "
                           "data version, app version and git commit.")
class AuditManifestView(AuditScoped, APIView):
    def get(self, request, pk: int):
        answer = Response(self.audit.manifest)
        record_export(request, self.audit, "manifest")
        return answer


class FinishReasonSerializer(serializers.Serializer):
    finish_reason = serializers.CharField(allow_blank=True, help_text="As the server reported it (\"\" if none).")
    n = serializers.IntegerField()
    truncated = serializers.BooleanField(help_text="The server stopped the reply at its token limit.")


class ReplyShapeSerializer(serializers.Serializer):
    shape = serializers.CharField(help_text="Opening, first words, length bucket, cut off (auditapp.engine.parse_quality).")
    n = serializers.IntegerField()
    example = serializers.CharField(allow_blank=True, help_text="The first 200 characters of one reply of it.")


def _outcome_fields() -> dict:
    fields = {}
    for outcome in [*AuditRequest.Outcome.values, "pending"]:
        fields[f"n_{outcome}"] = serializers.IntegerField()
        fields[f"share_{outcome}"] = serializers.FloatField(
            allow_null=True, help_text=f"n_{outcome} / n_requests (null when the cell has no requests).")
    return fields


ParseQualityRowSerializer = type("ParseQualityRowSerializer", (serializers.Serializer,), {
    "__doc__": "One model × condition's parse quality.",
    "model_id": serializers.IntegerField(), "model": serializers.CharField(), "condition": serializers.CharField(),
    "condition_name": serializers.CharField(), "n_requests": serializers.IntegerField(),
    "answered": serializers.IntegerField(), "failed": serializers.IntegerField(), "pending": serializers.IntegerField(),
    **_outcome_fields(),
    "n_units": serializers.IntegerField(help_text="The units (texts, words, items) the cell's answered requests asked "
                                                  "about: a batch request asks about many."),
    "n_units_answered": serializers.IntegerField(help_text="Of those, the units with a label or score."),
    "share_units_answered": serializers.FloatField(allow_null=True, help_text="n_units_answered / n_units (null "
                                                                              "without units)."),
    "truncated": serializers.IntegerField(help_text="Answered replies cut off at the token limit."),
    "truncated_note": serializers.CharField(allow_blank=True),
    "finish_reasons": FinishReasonSerializer(many=True),
    "unparseable_shapes": ReplyShapeSerializer(many=True, help_text="The five most frequent, most frequent first."),
    "shapes_sampled": serializers.IntegerField(help_text=f"Unparseable replies read for the shapes (at most "
                                                         f"{SHAPE_SAMPLE:,}, the most recent)."),
    "shapes_note": serializers.CharField(allow_blank=True, help_text="Says so when the shapes are of a sample."),
    "warning": serializers.CharField(allow_blank=True, help_text="Set once 20 replies are answered and more than "
                                                                 "half are unparseable or cut off."),
    "unparseable_replies_url": serializers.CharField(help_text="The cell's unparseable replies, raw."),
})


@extend_schema(summary="Parse quality of an audit's replies, per model × condition",
               description="Outcome counts and shares, finish reasons (replies cut off at the token limit flagged: "
                           "raise max_tokens), the most frequent shapes of the unparseable replies (of the "
                           f"{SHAPE_SAMPLE:,} most recent per cell), a warning when most replies of a cell are "
                           "unparseable or cut off, and the link to the raw unparseable replies. Any paradigm; "
                           "live while the audit runs.")
class AuditParseQualityView(AuditExportView):
    serializer_class = ParseQualityRowSerializer
    export_kind = "parse-quality"

    def export_rows(self):
        return audit_parse_quality(self.audit)

    def export_filename(self) -> str:
        return f"audit-{self.audit.id}-parse-quality.csv"


class ResponseRowSerializer(serializers.Serializer):
    key = serializers.CharField(help_text="sha256 of endpoint model, digest, parameters, messages, replicate.")
    model = serializers.CharField()
    model_label = serializers.CharField(allow_blank=True, help_text="The model's label, or its name when it has none.")
    condition = serializers.CharField()
    item = serializers.CharField(allow_null=True, help_text="The item's external id (classification).")
    unit = serializers.CharField(allow_blank=True, help_text="Self-report: item:<position> or batch (the condition "
                                                             "is the form).")
    replicate = serializers.IntegerField()
    turn = serializers.IntegerField(help_text="0, or n for the (n+1)th turn of a conversation (multi-turn requests).")
    state = serializers.ChoiceField(choices=AuditRequest.State.choices)
    outcome = serializers.CharField(help_text="label, refusal, unparseable, error or pending.")
    label = serializers.IntegerField(allow_null=True)
    explanation = serializers.CharField(allow_blank=True)
    parse_reason = serializers.CharField(allow_blank=True)
    reply = serializers.CharField(allow_null=True, help_text="The raw reply text.")
    finish_reason = serializers.CharField(allow_null=True)
    latency_ms = serializers.FloatField(allow_null=True)
    prompt_tokens = serializers.IntegerField(allow_null=True)
    completion_tokens = serializers.IntegerField(allow_null=True)
    attempts = serializers.IntegerField(help_text="Attempts this audit made (0 for a reply from the cache).")
    error = serializers.CharField(allow_blank=True)
    from_cache = serializers.BooleanField()
    model_reported = serializers.CharField(allow_null=True)
    finished_at = serializers.DateTimeField(allow_null=True)
    request_id = serializers.IntegerField(help_text="GET /api/audits/{id}/requests/{request_id}/ gives it whole.")


class ResponseFilterSerializer(serializers.Serializer):
    """The query parameters that narrow an audit's responses; any other value is a 400 naming it."""

    model = serializers.IntegerField(required=False, min_value=1, max_value=BIGINT_MAX,
                                     help_text="Only this audit model (id).")
    condition = serializers.RegexField(r"^[A-Za-z0-9_:-]{1,40}$", required=False,
                                       help_text="Only this condition (self-report: this form, e.g. masked).")
    outcome = serializers.ChoiceField(required=False, choices=[*AuditRequest.Outcome.values, "pending"],
                                      help_text="Only this outcome.")


@extend_schema(summary="An audit's requests and replies", parameters=[ResponseFilterSerializer])
class AuditResponsesView(AuditExportView):
    serializer_class = ResponseRowSerializer
    export_kind = "responses"

    def export_rows(self):
        # A plain dict, so an empty value is a 400 too (a form's QueryDict would read it as "not given").
        filters = ResponseFilterSerializer(data=self.request.query_params.dict())
        filters.is_valid(raise_exception=True)
        return audit_responses_export(audit=self.audit, **filters.validated_data)

    def export_filename(self) -> str:
        return f"audit-{self.audit.id}-responses.csv"


@extend_schema(summary="One request of an audit, whole", responses={200: dict},
               parameters=[OpenApiParameter("request_id", int, OpenApiParameter.PATH,
                                            description="The request's id (request_id in the responses export).")],
               description="What was sent (rebuilt from the design; key_matches proves it is what was sent), the "
                           "stored reply, the parse and each judgment: the drill-down of any cell.")
class AuditRequestDetailView(AuditScoped, APIView):
    def get(self, request, pk: int, request_id: int):
        detail = audit_request_detail(audit=self.audit, request_id=request_id)
        if detail is None:
            raise NotFound(f"audit {self.audit.id} has no request {request_id}")
        answer = Response(detail)
        record_export(request, self.audit, "request")
        return answer


class TableRowSerializer(serializers.Serializer):
    """A row of a paradigm's named table, as its columns say (they differ from table to table; GET
    /api/audits/{id}/tables/ describes each table)."""

    def to_representation(self, instance: dict) -> dict:
        return instance


class TableRowSchema(OpenApiSerializerExtension):
    """In the schema a table's row is an object with one member per column (a serializer without fields would
    be documented as no body)."""

    target_class = TableRowSerializer

    def map_serializer(self, auto_schema, direction):
        return {"type": "object", "additionalProperties": {},
                "description": "One member per column of the table (GET /api/audits/{id}/tables/ lists them)."}


@extend_schema_view(get=extend_schema(summary="A named table of an audit's results", operation_id="audits_table_rows",
                                      responses={200: TableRowSerializer(many=True)},
               parameters=[OpenApiParameter("name", str, OpenApiParameter.PATH,
                                            description="The table's name; GET /api/audits/{id}/tables/ lists them.")],
               description="A table the audit's paradigm declares (e.g. a BITS audit's score_sense, Table 7 of "
                           "seed 001), JSON pages or every row as CSV (?format=csv). 404 names the audit's tables."))
class AuditTableView(AuditExportView):
    serializer_class = TableRowSerializer

    @property
    def export_kind(self) -> str:  # type: ignore[override]
        return f"table:{self.kwargs['name']}"

    def export_rows(self):
        tables = registry.get(self.audit.paradigm).tables
        table = tables.get(self.kwargs["name"])
        if table is None:
            raise NotFound(f"audit {self.audit.id} has no table {self.kwargs['name']!r}; its tables: "
                           f"{', '.join(tables) or 'none'}")
        return table.rows(self.audit)

    def export_filename(self) -> str:
        return f"audit-{self.audit.id}-{self.kwargs['name']}.csv"


class TableEntrySerializer(serializers.Serializer):
    name = serializers.CharField()
    description = serializers.CharField()
    url = serializers.CharField(help_text="JSON pages; add ?format=csv for every row as CSV.")


class AuditTablesView(AuditScoped, APIView):
    @extend_schema(summary="The named tables of an audit's results", responses={200: TableEntrySerializer(many=True)},
                   operation_id="audits_tables_index")
    def get(self, request, pk: int):
        return Response([{"name": table.name, "description": table.description,
                          "url": reverse("api:audit-table", args=[self.audit.id, table.name])}
                         for table in registry.get(self.audit.paradigm).tables.values()])


class AuditActionView(AuditScoped, APIView):
    """POST pause / resume / cancel / retry-failed / reparse."""

    actions = {
        "pause": lambda audit: control.audit_pause(audit=audit),
        "resume": lambda audit: control.audit_resume(audit=audit),
        "cancel": lambda audit: control.audit_cancel(audit=audit),
        "retry-failed": lambda audit: control.audit_retry_failed(audit=audit),
        "reparse": lambda audit: engine_analysis.audit_reparse_and_analyse(audit=audit),
    }

    @extend_schema(request=None, responses={200: AuditDetailSerializer, 409: ErrorSerializer},
                   operation_id="audits_action", summary="Pause, resume, cancel, retry failed requests, re-parse",
                   parameters=[OpenApiParameter("action", str, OpenApiParameter.PATH, enum=list(actions))],
                   description="409 with the reason if the audit's state does not allow the action.")
    def post(self, request, pk: int, action: str):
        if action not in self.actions:
            return Response({"detail": f"unknown action {action!r}; use one of: {', '.join(self.actions)}."},
                            status=status.HTTP_404_NOT_FOUND)
        self.actions[action](self.audit)
        return Response(AuditDetailSerializer(audit_list().get(pk=self.audit.pk)).data)
