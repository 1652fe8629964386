"""REST API of BITS (seed 001): the corpus upload in the public BITS repository's shape,
``POST /api/corpora/upload/`` (§3.2; the other corpus routes are shared: :mod:`auditapp.api.corpora`), a
researcher's own texts perturbed, ``POST /api/corpora/perturb/`` (§3.1, Table 6), and an
audit's scores sentence by sentence beside their controls' for the error browser,
``GET /api/audits/{id}/judged-sentences/`` (§4). Both are declared by the paradigm's adapter."""
from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.parsers import FormParser, MultiPartParser
from rest_framework.response import Response
from rest_framework.views import APIView

from auditapp.api.audits import AuditExportView
from auditapp.api.corpora import (
    TEAM_HELP,
    CorpusDetailSerializer,
    CorpusRejectedSerializer,
    invalid_body_response,
    rejected_response,
    stored_response,
)
from auditapp.corpus_services import CorpusError
from auditapp.paradigms.bits import services as bits_services
from auditapp.paradigms.bits.corpora import bits_corpus_upload, bits_posts_read, bits_posts_store, posts_options
from auditapp.paradigms.bits.corpus import TERM_CASES
from auditapp.paradigms.bits.selectors import (
    JUDGED_ORDERINGS,
    JUDGED_OUTCOMES,
    judged_choices,
    judged_sentences_export,
)
from auditapp.paradigms.bits.upload import UNMATCHED_RULES
from teams.api import EditableTeamField, new_object_team
from teams.scoping import new_objects_in


class CorpusUploadSerializer(serializers.Serializer):
    """The multipart fields of ``POST /api/corpora/upload/``."""

    perturbed_file = serializers.FileField(help_text="CSV, TSV, XLSX or JSON Lines: Template, Sentence, Class, SubClass "
                                                     "(optional Sentiment; Control: the control's text, which "
                                                     "overrides the pairing rules) and one column per tool's score.")
    control_file = serializers.FileField(help_text="CSV, TSV, XLSX or JSON Lines: Template, Sentence (optional Sentiment) "
                                                   "and score columns.")
    name = serializers.CharField(max_length=200)
    unmatched = serializers.ChoiceField(choices=UNMATCHED_RULES, default="report",
                                        help_text="A perturbed sentence no pairing rule finds a control for "
                                                  "(exact text, a typo, the position within its template and "
                                                  "emotion): imported and reported with its reason (report) or a "
                                                  "problem (refuse).")
    team = EditableTeamField(required=False, allow_null=True, default=None, help_text=TEAM_HELP)


class CorpusUploadView(APIView):
    parser_classes = [MultiPartParser, FormParser]

    @extend_schema(request={"multipart/form-data": CorpusUploadSerializer},
                   responses={201: CorpusDetailSerializer, 200: CorpusDetailSerializer, 400: CorpusRejectedSerializer},
                   summary="Upload a BITS corpus",
                   description="Two files in the public BITS repository's shape (github.com/PranavNV/BITS): the "
                               "perturbed sentences and the no-group controls; every other column is a tool's "
                               "score, stored as a recorded scorer. Each perturbed sentence is paired with its "
                               "control by named rules in order (Control column, exact, typo, position); the "
                               "answer's provenance.summary.pairing counts the sentences per rule and names every "
                               "unpaired row with its reason, and warnings names each score column with no score "
                               "on one side of the pairs. All or nothing: 400 names the file, row and "
                               "column of every problem and stores nothing. Each file may hold at most "
                               "CORPUS_UPLOAD_MAX_BYTES to read (16 MiB by default).")
    def post(self, request):
        body = CorpusUploadSerializer(data=request.data, context={"request": request})
        if not body.is_valid():
            return invalid_body_response(body.errors)
        data = body.validated_data
        try:
            with new_objects_in(new_object_team(request.user, data["team"])):
                corpus = bits_corpus_upload(perturbed_file=data["perturbed_file"], control_file=data["control_file"],
                                            name=data["name"], unmatched=data["unmatched"], created_by=request.user)
        except CorpusError as error:
            return rejected_response([p.as_dict() for p in error.problems], str(error))
        return stored_response(corpus)


class PostsPerturbSerializer(serializers.Serializer):
    """The multipart fields of ``POST /api/corpora/perturb/``."""

    file = serializers.FileField(help_text="CSV, TSV, XLSX or JSON Lines: one text a row, with an id column and a "
                                           "text column; a platform (or source) column gives the per-source "
                                           "breakdown; every other column is kept as the text's metadata.")
    name = serializers.CharField(max_length=200, required=False, help_text="The corpus's name (required unless "
                                                                            "preview).")
    target_words = serializers.CharField(required=False, max_length=5000, default="disability, disabled",
                                         help_text="The words whose mentions are replaced, separated by commas "
                                                   "(seed 001 §3.1: disability, disabled). Whole words, any case.")
    groups = serializers.JSONField(required=False, default=None, binary=True,
                                   help_text='The term groups as JSON, [{"group": "PWD:C", "terms": [...]}, ...] '
                                             "(default: seed 001's Table 4 as printed).")
    term_case = serializers.ChoiceField(choices=TERM_CASES, default="lower",
                                        help_text="lower: terms lower-cased (a capitalised mention still gives a "
                                                  "capital); as_printed: as the groups write them.")
    id_column = serializers.CharField(max_length=200, default="id")
    text_column = serializers.CharField(max_length=200, default="text")
    source_column = serializers.CharField(max_length=200, required=False, allow_blank=True, default="",
                                          help_text="The column of the per-source breakdown (default: platform or "
                                                    "source, if the file has one).")
    preview = serializers.BooleanField(default=False, help_text="Only read and perturb: answer the counts, the rows "
                                                                "left out and the first posts' sentences; store "
                                                                "nothing.")
    team = EditableTeamField(required=False, allow_null=True, default=None, help_text=TEAM_HELP)

    def validate(self, data):
        if not data["preview"] and not data.get("name"):
            raise serializers.ValidationError({"name": "a name is required to store the corpus (or preview)"})
        return data


class PostsPreviewSerializer(serializers.Serializer):
    file = serializers.DictField(help_text="The file's name, sha256 and rows.")
    options = serializers.DictField(help_text="The target words, groups, term case and columns used.")
    report = serializers.DictField(help_text="posts, skipped, sentences, mentions, per_source, and skipped_rows: "
                                             "every row left out with its reason.")
    preview = serializers.ListField(child=serializers.DictField(), help_text="The first posts: original, control "
                                                                            "and every perturbed sentence.")


class PostsPerturbView(APIView):
    parser_classes = [MultiPartParser, FormParser]

    @extend_schema(request={"multipart/form-data": PostsPerturbSerializer},
                   responses={201: CorpusDetailSerializer, 200: PostsPreviewSerializer, 400: CorpusRejectedSerializer},
                   summary="Perturb your own texts into a BITS corpus (seed 001 §3.1, Table 6)",
                   description="Every whole-word mention of the target words (default disability, disabled) is "
                               "replaced by each term of each group (default Table 4), one sentence per term, and "
                               "removed for the post's control; the rules are stated in the corpus's provenance. "
                               "A text without a mention is reported with its row and id, not stored. preview=true "
                               "answers the counts and the first posts' sentences and stores nothing (200). All or "
                               "nothing: 400 names the row and column of every problem and stores nothing.")
    def post(self, request):
        body = PostsPerturbSerializer(data=request.data, context={"request": request})
        if not body.is_valid():
            return invalid_body_response(body.errors)
        data = body.validated_data
        try:
            options = posts_options(target_words=[w for w in data["target_words"].split(",") if w.strip()],
                                    groups=data["groups"], term_case=data["term_case"], id_column=data["id_column"],
                                    text_column=data["text_column"], source_column=data["source_column"])
            read = bits_posts_read(file=data["file"], options=options)
            if data["preview"]:
                return Response(read.answer())
            with new_objects_in(new_object_team(request.user, data["team"])):
                corpus = bits_posts_store(read, name=data["name"], created_by=request.user)
        except CorpusError as error:
            return rejected_response([p.as_dict() for p in error.problems], str(error))
        return stored_response(corpus)


class JudgedSentenceRowSerializer(serializers.Serializer):
    scorer = serializers.CharField(help_text="The scorer's name in the audit's tables (a model or a recorded scorer).")
    imported = serializers.BooleanField(help_text="A recorded scorer's score, imported with the corpus.")
    replicate = serializers.IntegerField()
    request_id = serializers.IntegerField(allow_null=True, help_text="The request that asked for the score "
                                                                     "(GET /api/audits/{id}/requests/{request_id}/); "
                                                                     "null for a recorded score.")
    unit = serializers.CharField(help_text="The perturbed sentence's key in the corpus.")
    text = serializers.CharField(help_text="The perturbed sentence.")
    template = serializers.CharField(allow_blank=True)
    emotion = serializers.CharField(allow_blank=True)
    word = serializers.CharField(allow_blank=True)
    group = serializers.CharField(allow_blank=True)
    term = serializers.CharField(allow_blank=True)
    control_unit = serializers.CharField(allow_null=True, help_text="Its control sentence's key (null: none; "
                                                                    "control_note says why).")
    control_text = serializers.CharField(allow_null=True, help_text="The same sentence without a group.")
    score = serializers.FloatField(allow_null=True, help_text="null: no score (reason says why).")
    control_score = serializers.FloatField(allow_null=True, help_text="The same scorer's score of the control at the "
                                                                      "same replicate (null: control_note says why).")
    change = serializers.FloatField(allow_null=True, help_text="score − control_score (null: change_note says why).")
    outcome = serializers.CharField(help_text=f"This score's outcome: {', '.join(JUDGED_OUTCOMES)}.")
    reason = serializers.CharField(allow_blank=True, help_text="Why the score is missing (\"\" when it is there).")
    control_note = serializers.CharField(allow_blank=True, help_text="Why there is no control score (\"\" when "
                                                                     "there is one).")
    change_note = serializers.CharField(allow_blank=True, help_text="Why the change is undefined (\"\" when it is "
                                                                    "defined).")


class JudgedSentenceFilterSerializer(serializers.Serializer):
    """The error browser's filters; any other value is a 400 naming it. ``context["choices"]`` holds the audit's
    scorers, groups and templates (:func:`judged_choices`)."""

    scorer = serializers.CharField(required=False, max_length=200, help_text="Only this scorer (its name).")
    group = serializers.CharField(required=False, max_length=300, help_text="Only this term group.")
    template = serializers.CharField(required=False, max_length=300, help_text="Only this template.")
    outcome = serializers.ChoiceField(required=False, choices=JUDGED_OUTCOMES, help_text="Only this outcome.")
    changed = serializers.BooleanField(required=False, default=False,
                                       help_text="Only scores that differ from their control's.")
    min_change = serializers.FloatField(required=False, min_value=0, max_value=1e9,
                                        help_text="Only rows whose |change| is at least this.")
    q = serializers.CharField(required=False, max_length=200, help_text="The sentence contains this "
                                                                        "(case-insensitive).")
    ordering = serializers.ChoiceField(required=False, default="change", choices=list(JUDGED_ORDERINGS),
                                       help_text="; ".join(f"{name}: {what}" for name, what in
                                                           JUDGED_ORDERINGS.items()) + " (default change).")

    def _one_of(self, value: str, name: str) -> str:
        known = self.context["choices"][name]
        if value not in known:
            raise serializers.ValidationError(f"{value!r} is not one of the audit's {name}: {', '.join(known)}")
        return value

    def validate_scorer(self, value: str) -> str:
        return self._one_of(value, "scorers")

    def validate_group(self, value: str) -> str:
        return self._one_of(value, "groups")

    def validate_template(self, value: str) -> str:
        return self._one_of(value, "templates")


@extend_schema(summary="A BITS audit's scores sentence by sentence (the error browser)",
               parameters=[JudgedSentenceFilterSerializer],
               description="One row per scorer × perturbed sentence × replicate: the sentence and its factors, its "
                           "control sentence, the score, the control's score at the same replicate and the change "
                           "(score − control score), the outcome and why anything is missing; filtered and sorted "
                           "(the largest |change| first by default). JSON pages, or every row with ?format=csv.")
class AuditJudgedSentencesView(AuditExportView):
    serializer_class = JudgedSentenceRowSerializer
    export_kind = "judged sentences"
    paradigm = bits_services.PARADIGM

    def export_rows(self):
        filters = self.validated_filters(JudgedSentenceFilterSerializer, choices=judged_choices(self.audit))
        return judged_sentences_export(audit=self.audit, **filters)

    def export_filename(self) -> str:
        return f"audit-{self.audit.id}-judged-sentences.csv"
