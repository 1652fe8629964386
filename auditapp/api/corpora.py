"""REST API of corpora (researchers only): list, generate a BITS corpus from seed 001's tables or a spec, upload
one in the public BITS repository's shape, a corpus's provenance and counts, and its units.

A corpus identical to one its team already stored (same paradigm and units) is not stored again: the answer is 200
with the stored corpus instead of 201 (another team's identical corpus is neither reused nor revealed). Every list also answers ``?format=csv`` (streamed, never paginated).
"""
from __future__ import annotations

from functools import cached_property

from django.shortcuts import get_object_or_404
from drf_spectacular.utils import extend_schema, extend_schema_field
from rest_framework import generics, serializers, status
from rest_framework.response import Response

from auditapp.corpus_selectors import (
    corpus_factor_counts,
    corpus_list,
    corpus_recorded_scorers,
    corpus_units_export,
)
from auditapp.corpus_services import CorpusError
from auditapp.engine import registry
from auditapp.models import Corpus
from common.api.exports import ExportListAPIView, ModelListExportView
from common.api.fields import StrictCharField
from common.export_rows import Export
from teams.api import EditableTeamField, ExportLogged, TeamScopedMixin, new_object_team
from teams.scoping import new_objects_in, visible

TEAM_HELP = ("The id of the corpus's team, one where you are an editor (default: your only such team, or a new team "
             "of your own). A corpus identical to one of that team's is reused; other teams' corpora never are.")


def generated_paradigms() -> list[tuple[str, str]]:
    """(name, label) of the paradigms whose corpora ``POST /api/corpora/`` generates (``Paradigm.corpus_generate``)."""
    return [(paradigm.name, paradigm.label) for paradigm in registry.every() if paradigm.corpus_generate]
LIST_COLUMNS = ["id", "paradigm", "name", "content_hash", "n_units", "n_recorded_scorers", "created_by",
                "created_at"]


class CorpusSerializer(serializers.ModelSerializer):
    n_recorded_scorers = serializers.IntegerField(read_only=True)
    created_by = serializers.CharField(source="created_by.username", allow_null=True, read_only=True)
    generator = serializers.SerializerMethodField(help_text="bits (generated) or upload.")

    class Meta:
        model = Corpus
        fields = ("id", "paradigm", "name", "content_hash", "n_units", "n_recorded_scorers", "generator",
                  "created_by", "created_at")

    def get_generator(self, corpus: Corpus) -> str:
        return corpus.provenance.get("generator", "")


class FactorValueSerializer(serializers.Serializer):
    value = serializers.CharField(allow_null=True)
    n = serializers.IntegerField()


class FactorCountsSerializer(serializers.Serializer):
    name = serializers.CharField()
    distinct = serializers.IntegerField(help_text="Distinct values; at most 1,000 are listed, most frequent first.")
    counts = FactorValueSerializer(many=True)


class RecordedScorerSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    name = serializers.CharField()
    imported = serializers.BooleanField(default=True, help_text="Recorded scores are always imported.")
    n_scores = serializers.IntegerField()
    n_missing = serializers.IntegerField(help_text="Units the file gave no score (each with its reason).")
    provenance = serializers.JSONField(help_text="The column and the files (name, sha256) it came from.")


class CorpusDetailSerializer(CorpusSerializer):
    provenance = serializers.JSONField(read_only=True)
    factors = serializers.SerializerMethodField()
    recorded_scorers = serializers.SerializerMethodField()
    reused = serializers.SerializerMethodField(help_text="True when the answer is a corpus stored before.")
    warnings = serializers.SerializerMethodField(
        help_text="What the researcher should know before analysing the corpus (BITS: a score column with no score "
                  "on one side of the pairs, whose ScoreSense is then undefined).")

    class Meta(CorpusSerializer.Meta):
        fields = (*CorpusSerializer.Meta.fields, "reused", "warnings", "provenance", "factors", "recorded_scorers")

    @extend_schema_field(FactorCountsSerializer(many=True))
    def get_factors(self, corpus: Corpus) -> list[dict]:
        return FactorCountsSerializer(corpus_factor_counts(corpus), many=True).data

    @extend_schema_field(RecordedScorerSerializer(many=True))
    def get_recorded_scorers(self, corpus: Corpus) -> list[dict]:
        return RecordedScorerSerializer(corpus_recorded_scorers(corpus), many=True).data

    def get_reused(self, corpus: Corpus) -> bool:
        return getattr(corpus, "reused", False)

    def get_warnings(self, corpus: Corpus) -> list[str]:
        return [str(warning) for warning in corpus.provenance.get("warnings") or []]


class CorpusCreateSerializer(serializers.Serializer):
    """The body of ``POST /api/corpora/``."""

    paradigm = serializers.ChoiceField(choices=(), required=False,
                                       help_text="The paradigm whose corpus is generated (default: the first that "
                                                 "generates corpora).")
    name = StrictCharField(max_length=200)
    team = EditableTeamField(required=False, allow_null=True, default=None, help_text=TEAM_HELP)
    spec = serializers.DictField(required=False, allow_null=True, default=None,
                                 help_text="The paradigm's generator's parameters; omitted, its paper's tables. BITS: "
                                           "the JSON shape of auditapp/paradigms/bits/seed001_tables.json: templates "
                                           "[{id, text}], emotions [{emotion, emotional_words, event_words}], groups "
                                           "[{group, terms}], and optionally term_case, article_agreement, source.")

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        # From the registry when used, not when imported (the paradigms' adapters import this module).
        self.fields["paradigm"].choices = generated_paradigms()

    def validate(self, data):
        return {**data, "paradigm": data.get("paradigm") or generated_paradigms()[0][0]}


class CorpusProblemSerializer(serializers.Serializer):
    file = serializers.CharField(allow_null=True)
    row = serializers.IntegerField(allow_null=True, help_text="As a spreadsheet numbers it: the header is row 1.")
    column = serializers.CharField(allow_null=True)
    message = serializers.CharField()


class CorpusRejectedSerializer(serializers.Serializer):
    detail = serializers.CharField()
    problems = CorpusProblemSerializer(many=True, required=False,
                                       help_text="Every problem; absent when the body itself cannot be read.")


def rejected_response(problems: list[dict], detail: str) -> Response:
    return Response({"detail": detail, "problems": problems}, status=status.HTTP_400_BAD_REQUEST)


def invalid_body_response(errors: dict) -> Response:
    problems = [{"file": None, "row": None, "column": field, "message": " ".join(str(e) for e in messages)}
                for field, messages in errors.items()]
    return rejected_response(problems, "invalid request: " + "; ".join(f"{p['column']}: {p['message']}" for p in problems))


def stored_response(corpus: Corpus) -> Response:
    reused = corpus.reused
    corpus = corpus_list().get(pk=corpus.pk)
    corpus.reused = reused
    return Response(CorpusDetailSerializer(corpus).data, status=status.HTTP_200_OK if reused else
                    status.HTTP_201_CREATED)


class CorpusListView(ModelListExportView):
    """The corpora of your teams, newest first; POST generates a BITS corpus."""

    serializer_class = CorpusSerializer

    def get_queryset(self):
        return visible(self.request.user, corpus_list())

    def export_rows(self):
        fields = [("created_by__username" if c == "created_by" else c) for c in LIST_COLUMNS]
        return Export(LIST_COLUMNS, self.get_queryset().values_list(*fields))

    def export_filename(self) -> str:
        return "corpora.csv"

    @extend_schema(request=CorpusCreateSerializer,
                   responses={201: CorpusDetailSerializer, 200: CorpusDetailSerializer, 400: CorpusRejectedSerializer},
                   summary="Generate a corpus",
                   description="A paradigm's corpus from its paper's tables (spec omitted) or a researcher's spec "
                               "(BITS: seed 001's Tables 3–5). 400 names every problem of the spec and stores "
                               "nothing; 200 returns an identical corpus stored before.")
    def post(self, request):
        body = CorpusCreateSerializer(data=request.data, context={"request": request})
        if not body.is_valid():
            return invalid_body_response(body.errors)
        try:
            with new_objects_in(new_object_team(request.user, body.validated_data["team"])):
                corpus = registry.get(body.validated_data["paradigm"]).corpus_generate(
                    spec=body.validated_data["spec"], name=body.validated_data["name"], created_by=request.user)
        except CorpusError as error:
            return rejected_response([p.as_dict() for p in error.problems], str(error))
        return stored_response(corpus)


class CorpusDetailView(TeamScopedMixin, generics.RetrieveAPIView):
    """A corpus with its provenance, the counts of its units per factor and its recorded scorers."""

    serializer_class = CorpusDetailSerializer
    queryset = corpus_list()  # narrowed by TeamScopedMixin


class UnitRowSerializer(serializers.Serializer):
    """One unit; the corpus's factors are columns between ``text`` and ``fields`` (for BITS: template, emotion,
    word, group, term, is_control)."""

    position = serializers.IntegerField()
    key = serializers.CharField()
    text = serializers.CharField()
    fields = serializers.JSONField(help_text="What else the paradigm keeps (BITS: the control sentence's key).")
    pair = serializers.CharField(allow_blank=True)

    def to_representation(self, row: dict) -> dict:
        declared = super().to_representation(row)
        return {name: declared.get(name, value) for name, value in row.items()}


@extend_schema(summary="A corpus's units", description="One row per unit in corpus order, one column per factor.")
class CorpusUnitsView(ExportLogged, ExportListAPIView):
    serializer_class = UnitRowSerializer
    export_kind = "units"

    @cached_property
    def corpus(self) -> Corpus:
        return get_object_or_404(visible(self.request.user, Corpus.objects.all()), pk=self.kwargs["pk"])

    @property
    def scoped_object(self) -> Corpus:
        return self.corpus

    def export_rows(self):
        return corpus_units_export(self.corpus)

    def export_filename(self) -> str:
        return f"corpus-{self.corpus.pk}-units.csv"
