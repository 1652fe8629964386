"""REST API of error-analysis rounds (researchers only, as the whole API; bodies are JSON objects): create a round from a completed audit,
list and read rounds, add and remove coders, replace the cross-lens mappings, close and reopen, check the draw,
and export the sample (JSON pages or ``?format=csv``). A refused write is a 400 naming every problem in ``detail``
(and one by one in ``problems``); nothing is stored."""
from __future__ import annotations

from functools import cached_property

from django.shortcuts import get_object_or_404
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import generics, serializers, status
from rest_framework.exceptions import PermissionDenied
from rest_framework.response import Response
from rest_framework.views import APIView

from auditapp.engine.launch import BIGINT_MAX
from auditapp.models import Audit
from coding import round_services as services
from coding.access import blind_reason
from coding.models import Codebook, CodingRound
from coding.round_selectors import round_detail, round_excerpts_export, round_list
from common.api.exports import ExportListAPIView
from common.api.parsers import JSONObjectParser
from teams import roles
from teams.api import ExportLogged, TeamScopedParentMixin, check_role
from teams.scoping import visible

BIGINT_MIN = -BIGINT_MAX - 1


class ProblemsSerializer(serializers.Serializer):
    detail = serializers.CharField(help_text="Every problem, separated by “; ”.")
    problems = serializers.ListField(child=serializers.CharField(), help_text="The problems one by one.")


def refused(error: services.RoundError, code: int = status.HTTP_400_BAD_REQUEST) -> Response:
    return Response({"detail": str(error), "problems": error.problems}, status=code)


class MappingSerializer(serializers.Serializer):
    name = serializers.CharField(max_length=200, help_text="What the mapped codes say together, e.g. Stereotypes.")
    codes = serializers.ListField(child=serializers.IntegerField(min_value=1, max_value=BIGINT_MAX), min_length=2,
                                  max_length=100, help_text="Code ids from at least two of the round's lenses.")


def mapping_specs(values: list[dict]) -> list[services.MappingSpec]:
    return [services.MappingSpec(value["name"], tuple(value["codes"])) for value in values]


class RoundCreateSerializer(serializers.Serializer):
    """The body of ``POST /api/coding-rounds/``."""

    audit = serializers.IntegerField(min_value=1, max_value=BIGINT_MAX,
                                     help_text="A completed audit whose paradigm gives explained replies.")
    name = serializers.CharField(max_length=200, required=False, default="", allow_blank=True,
                                 help_text="Default: “Error analysis of <audit name>”.")
    sample_size = serializers.IntegerField(default=99, min_value=1, max_value=1_000_000)
    allocation = serializers.ChoiceField(choices=CodingRound.Allocation.choices,
                                         default=CodingRound.Allocation.PROPORTIONAL)
    eligible = serializers.ChoiceField(choices=CodingRound.Eligible.choices, default=CodingRound.Eligible.PARSED)
    models_included = serializers.ListField(child=serializers.IntegerField(min_value=1, max_value=BIGINT_MAX),
                                            default=list, max_length=1000,
                                            help_text="Audit model ids to sample from; empty: every model.")
    conditions_included = serializers.ListField(child=serializers.CharField(max_length=40), default=list,
                                                max_length=1000,
                                                help_text="Conditions to sample from; empty: every condition.")
    seed = serializers.IntegerField(required=False, allow_null=True, default=None, min_value=BIGINT_MIN,
                                    max_value=BIGINT_MAX, help_text="Default: drawn at random (and recorded).")
    show_model = serializers.BooleanField(default=False)
    show_condition = serializers.BooleanField(default=False)
    show_reference = serializers.BooleanField(default=False)
    codebooks = serializers.ListField(child=serializers.IntegerField(min_value=1, max_value=BIGINT_MAX),
                                      min_length=1, max_length=services.MAX_LENSES,
                                      help_text="One codebook id per lens, in the lenses' order.")
    mappings = MappingSerializer(many=True, required=False, default=list)


class RoundSerializer(serializers.ModelSerializer):
    n_excerpts = serializers.IntegerField(read_only=True)
    n_lenses = serializers.IntegerField(read_only=True)
    n_coders = serializers.IntegerField(read_only=True)

    class Meta:
        model = CodingRound
        fields = ("id", "audit", "name", "sample_size", "allocation", "eligible", "models_included",
                  "conditions_included", "seed", "show_model", "show_condition", "show_reference", "created_at",
                  "closed_at", "n_excerpts", "n_lenses", "n_coders")


class StratumSerializer(serializers.Serializer):
    model = serializers.IntegerField(help_text="The audit model's id.")
    model_name = serializers.CharField(allow_null=True, help_text="Null for a stratum none was drawn from.")
    condition = serializers.CharField()
    eligible = serializers.IntegerField()
    allocated = serializers.IntegerField()


class DrawSerializer(serializers.Serializer):
    algorithm = serializers.CharField(allow_null=True)
    seed = serializers.IntegerField(allow_null=True)
    allocation = serializers.CharField(allow_null=True)
    n = serializers.IntegerField(allow_null=True)
    n_eligible = serializers.IntegerField(allow_null=True)
    strata = StratumSerializer(many=True)


class LensSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    position = serializers.IntegerField(help_text="0 for lens 1.")
    codebook = serializers.IntegerField()
    codebook_name = serializers.CharField()
    codebook_version = serializers.IntegerField()
    n_codes = serializers.IntegerField()


class CoderSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    name = serializers.CharField()
    lens = serializers.IntegerField()
    lens_position = serializers.IntegerField()
    user = serializers.IntegerField(allow_null=True, help_text="The researcher's account; null for an outside coder.")
    invite_link = serializers.SerializerMethodField(
        help_text="The coder's own link to the coding pages; null for a reader who is another coder of the open round.")
    n_confirmed = serializers.IntegerField(help_text="Excerpts the coder has finished.")
    n_excerpts = serializers.IntegerField()
    started_at = serializers.DateTimeField(allow_null=True)
    completed_at = serializers.DateTimeField(allow_null=True)

    def get_invite_link(self, coder: dict) -> str | None:
        blind_coder = self.context.get("blind_coder")
        if blind_coder is not None and coder["user"] != blind_coder:
            return None
        request = self.context.get("request")
        return request.build_absolute_uri(coder["invite_path"]) if request else coder["invite_path"]


class MappedCodeSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    name = serializers.CharField()
    lens_position = serializers.IntegerField(allow_null=True)


class MappingDetailSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    name = serializers.CharField()
    codes = MappedCodeSerializer(many=True)


class RoundDetailSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    audit = serializers.IntegerField()
    name = serializers.CharField()
    sample_size = serializers.IntegerField()
    allocation = serializers.CharField()
    eligible = serializers.CharField()
    models_included = serializers.ListField(child=serializers.IntegerField())
    conditions_included = serializers.ListField(child=serializers.CharField())
    seed = serializers.IntegerField()
    show_model = serializers.BooleanField()
    show_condition = serializers.BooleanField()
    show_reference = serializers.BooleanField()
    created_at = serializers.DateTimeField()
    closed_at = serializers.DateTimeField(allow_null=True)
    draw = DrawSerializer()
    lenses = LensSerializer(many=True)
    coders = CoderSerializer(many=True)
    mappings = MappingDetailSerializer(many=True)


def coder_context(request, coding_round: CodingRound) -> dict:
    """The coder serializer's context: a coder of the open round sees only their own invite link (another coder's
    would open that coder's pages and codes), also of a coder they add."""
    return {"request": request, "blind_coder": request.user.id if blind_reason(request.user, coding_round) else None}


def detail_response(request, coding_round: CodingRound, code: int = status.HTTP_200_OK) -> Response:
    """The round's detail, with :func:`coder_context`."""
    return Response(RoundDetailSerializer(round_detail(coding_round), context=coder_context(request, coding_round)).data,
                    status=code)


class RoundFilterSerializer(serializers.Serializer):
    audit = serializers.IntegerField(required=False, min_value=1, max_value=BIGINT_MAX,
                                     help_text="Only this audit's rounds.")


@extend_schema(parameters=[RoundFilterSerializer])
class RoundListView(generics.ListAPIView):
    """The error-analysis rounds of your teams, newest first (``?audit=`` for one audit's); POST draws a new one
    (an editor of the audit's team, with codebooks your teams see; the round belongs to the audit's team)."""

    serializer_class = RoundSerializer
    parser_classes = [JSONObjectParser]

    def get_queryset(self):
        filters = RoundFilterSerializer(data=self.request.query_params.dict())
        filters.is_valid(raise_exception=True)
        return visible(self.request.user, round_list(audit_id=filters.validated_data.get("audit")))

    @extend_schema(request=RoundCreateSerializer, responses={201: RoundDetailSerializer},
                   summary="Draw an error-analysis round from a completed audit", parameters=[],
                   description="A stratified (model × condition), seeded sample of the audit's replies that carry a "
                               "label and an explanation (eligible \"parsed\"), or only of those that differ from the "
                               "weighted ground truth (\"disagree\"), snapshot as excerpts; one codebook per lens "
                               "(1–6). 400 names every problem (an audit that is not completed, a paradigm without "
                               "explained replies, unknown models, conditions, codebooks or codes, a sample larger "
                               "than the eligible replies).")
    def post(self, request):
        data = RoundCreateSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        values = dict(data.validated_data)
        # Another team's audit or codebook is "no such id", as one that exists nowhere.
        audit = visible(request.user, Audit.objects.all()).filter(pk=values.pop("audit")).first()
        if audit is None:
            return Response({"audit": [f"no audit with id {data.validated_data['audit']}"]},
                            status=status.HTTP_400_BAD_REQUEST)
        seen = set(visible(request.user, Codebook.objects.filter(pk__in=values["codebooks"]))
                   .values_list("pk", flat=True))
        if unseen := [pk for pk in values["codebooks"] if pk not in seen]:
            return Response({"codebooks": [f"no codebook with id {pk}" for pk in unseen]},
                            status=status.HTTP_400_BAD_REQUEST)
        check_role(request.user, audit, roles.EDITOR)
        values["mappings"] = mapping_specs(values["mappings"])
        try:
            coding_round = services.round_create(audit=audit, created_by=request.user, **values)
        except services.RoundError as error:
            return refused(error)
        return detail_response(request, coding_round, status.HTTP_201_CREATED)


class RoundScoped(TeamScopedParentMixin):
    """A view of one round (``pk`` in the URL) of your teams; another team's, or an unknown one, is a 404, and a
    write below the editor role a 403 (before the handler runs). A view ``hidden_from_its_coders`` (the codes, or
    the sample with what the round may hide from coders: model, condition, ground truth) refuses a coder of the
    round while it is open (403 with the reason: ``coding.access.blind_reason``)."""

    parent_model = CodingRound
    hidden_from_its_coders = False

    @cached_property
    def coding_round(self) -> CodingRound:
        coding_round = self.scoped_object
        if self.hidden_from_its_coders and (reason := blind_reason(self.request.user, coding_round)):
            raise PermissionDenied(reason)
        return coding_round


@extend_schema(summary="An error-analysis round", responses={200: RoundDetailSerializer},
               description="Settings, the draw (eligible and allocated replies per stratum), lenses, coders with "
                           "their progress and invite links, and the cross-lens mappings.")
class RoundDetailView(RoundScoped, APIView):
    def get(self, request, pk: int):
        return detail_response(request, self.coding_round)


class CoderAddSerializer(serializers.Serializer):
    lens = serializers.IntegerField(min_value=1, max_value=BIGINT_MAX, help_text="The round's lens id.")
    user = serializers.IntegerField(required=False, allow_null=True, default=None, min_value=1,
                                    max_value=BIGINT_MAX, help_text="A researcher's (staff) account; or give name.")
    name = serializers.CharField(required=False, default="", allow_blank=True, max_length=100,
                                 help_text="How the coder appears in exports (unique in the round); an outside "
                                           "coder's is required.")

    # coder_add: a researcher's account, or a name (an outside coder's) that is not blank.
    schema_rules = {"anyOf": [{"properties": {"user": {"type": "integer"}}, "required": ["user"]},
                              {"properties": {"name": {"pattern": r"\S"}}, "required": ["name"]}]}


@extend_schema(request=CoderAddSerializer, responses={201: CoderSerializer},
               summary="Add a coder to a lens of a round",
               description="A researcher's account, or an outside coder by name who reaches only their own coding "
                           "pages through the invite link in the answer (null when the caller codes in the open "
                           "round: the link would later open that coder's codes to them; another researcher "
                           "sends it).")
class RoundCodersView(RoundScoped, APIView):
    parser_classes = [JSONObjectParser]

    def post(self, request, pk: int):
        data = CoderAddSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        try:
            coder = services.coder_add(coding_round=self.coding_round, lens_id=data.validated_data["lens"],
                                       user_id=data.validated_data["user"], name=data.validated_data["name"])
        except services.RoundError as error:
            return refused(error)
        added = next(c for c in round_detail(self.coding_round)["coders"] if c["id"] == coder.id)
        return Response(CoderSerializer(added, context=coder_context(request, self.coding_round)).data,
                        status=status.HTTP_201_CREATED)


@extend_schema(summary="Remove a coder who has coded nothing", request=None,
               responses={204: None, 403: ProblemsSerializer, 409: ProblemsSerializer},
               parameters=[OpenApiParameter("coder_id", int, OpenApiParameter.PATH, description="The coder's id.")],
               description="409 when the coder has coded excerpts: their codes are the round's data. 403 for a "
                           "researcher removing themselves from an open round (they could then read the others' "
                           "codes).")
class RoundCoderView(RoundScoped, APIView):
    delete_role = roles.EDITOR  # removing a coder changes the round's settings; it deletes no data of the team
    def delete(self, request, pk: int, coder_id: int):
        coder = get_object_or_404(self.coding_round.coders, pk=coder_id)
        try:
            services.coder_remove(coder=coder, by=request.user)
        except services.RoundRefusedToCoder as error:
            return refused(error, status.HTTP_403_FORBIDDEN)
        except services.RoundError as error:
            return refused(error, status.HTTP_409_CONFLICT)
        return Response(status=status.HTTP_204_NO_CONTENT)


class MappingsReplaceSerializer(serializers.Serializer):
    mappings = MappingSerializer(many=True, max_length=200)


@extend_schema(request=MappingsReplaceSerializer, responses={200: RoundDetailSerializer},
               summary="Replace a round's cross-lens mappings",
               description="Each mapping joins codes of at least two of the round's lenses (e.g. STEREOTYPES of "
                           "lens 1 and lens 2) for the convergence table; an empty list removes them all.")
class RoundMappingsView(RoundScoped, APIView):
    parser_classes = [JSONObjectParser]

    def put(self, request, pk: int):
        data = MappingsReplaceSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        try:
            services.mappings_replace(coding_round=self.coding_round,
                                      mappings=mapping_specs(data.validated_data["mappings"]))
        except services.RoundError as error:
            return refused(error)
        return detail_response(request, self.coding_round)


class RoundActionView(RoundScoped, APIView):
    """POST close / reopen."""

    actions = {"close": services.round_close, "reopen": services.round_reopen}

    @extend_schema(request=None, responses={200: RoundDetailSerializer, 403: ProblemsSerializer},
                   operation_id="coding_rounds_action", summary="Close a round (no more coding) or reopen it",
                   parameters=[OpenApiParameter("action", str, OpenApiParameter.PATH, enum=list(actions))],
                   description="Closing a closed round, or reopening an open one, changes nothing. A researcher who "
                               "codes in the round may close it only once every coder has finished, and never "
                               "reopen it (403): closing opens the other coders' codes to them.")
    def post(self, request, pk: int, action: str):
        if action not in self.actions:
            return Response({"detail": f"unknown action {action!r}; use one of: {', '.join(self.actions)}."},
                            status=status.HTTP_404_NOT_FOUND)
        try:
            self.actions[action](coding_round=self.coding_round, by=request.user)
        except services.RoundRefusedToCoder as error:
            return refused(error, status.HTTP_403_FORBIDDEN)
        return detail_response(request, self.coding_round)


class DrawCheckSerializer(serializers.Serializer):
    matches = serializers.BooleanField()
    detail = serializers.CharField()


@extend_schema(summary="Check that a round's draw rebuilds", responses={200: DrawCheckSerializer},
               description="Draws the sample again from the audit's replies now with the recorded seed and settings "
                           "and compares it with the recorded draw and the stored excerpts.")
class RoundVerifyView(RoundScoped, APIView):
    def get(self, request, pk: int):
        check = services.round_verify(coding_round=self.coding_round)
        return Response({"matches": check.matches, "detail": check.detail})


class ExcerptRowSerializer(serializers.Serializer):
    position = serializers.IntegerField(help_text="The order coders see the sample in (0 first).")
    excerpt = serializers.IntegerField(help_text="The excerpt's id.")
    request_id = serializers.IntegerField(help_text="The audit request it snapshots.")
    model = serializers.IntegerField(help_text="Stratum: the audit model's id.")
    model_name = serializers.CharField()
    condition = serializers.CharField(help_text="Stratum: the prompting condition.")
    target = serializers.CharField()
    preceding = serializers.CharField(allow_blank=True)
    following = serializers.CharField(allow_blank=True)
    label = serializers.IntegerField(help_text="The model's label.")
    explanation = serializers.CharField(allow_blank=True)
    reference_label = serializers.IntegerField(allow_null=True, help_text="The weighted ground truth.")
    majority_label = serializers.IntegerField(allow_null=True)


@extend_schema(summary="A round's sample, with its strata",
               description="403 for a researcher who codes in the open round: it names the model, the condition "
                           "and the ground truth the round may hide from its coders.")
class RoundExcerptsView(RoundScoped, ExportLogged, ExportListAPIView):
    serializer_class = ExcerptRowSerializer
    hidden_from_its_coders = True
    export_kind = "excerpts"

    def export_rows(self):
        return round_excerpts_export(coding_round=self.coding_round)

    def export_filename(self) -> str:
        return f"coding-round-{self.coding_round.id}-excerpts.csv"
