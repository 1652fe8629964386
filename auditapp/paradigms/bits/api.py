"""REST API of BITS corpora (seed 001 §3.2): the upload in the public BITS repository's shape,
``POST /api/corpora/upload/`` (declared by the paradigm's adapter; the other corpus routes are shared:
:mod:`auditapp.api.corpora`)."""
from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.parsers import FormParser, MultiPartParser
from rest_framework.views import APIView

from auditapp.api.corpora import (
    TEAM_HELP,
    CorpusDetailSerializer,
    CorpusRejectedSerializer,
    invalid_body_response,
    rejected_response,
    stored_response,
)
from auditapp.corpus_services import CorpusError
from auditapp.paradigms.bits.corpora import bits_corpus_upload
from auditapp.paradigms.bits.upload import UNMATCHED_RULES
from teams.api import EditableTeamField, new_object_team
from teams.scoping import new_objects_in


class CorpusUploadSerializer(serializers.Serializer):
    """The multipart fields of ``POST /api/corpora/upload/``."""

    perturbed_file = serializers.FileField(help_text="CSV, TSV or XLSX: Template, Sentence, Class, SubClass "
                                                     "(optional Sentiment; Control: the control's text, which "
                                                     "overrides the pairing rules) and one column per tool's score.")
    control_file = serializers.FileField(help_text="CSV, TSV or XLSX: Template, Sentence (optional Sentiment) "
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
