"""REST API of self-report audits (researchers only): the instruments that can be asked and an audit's
exports: item-level answers, scores per administration, and validity per model × form. (A self-report audit
is launched with ``POST /api/audits/`` and ``"paradigm": "self_report"``: :mod:`.adapter`.)

Every export also answers ``?format=csv`` (streamed, never paginated).
"""
from __future__ import annotations

import json

from rest_framework import generics, serializers

from auditapp.api.audits import AuditExportView, AuditScoped
from auditapp.paradigms.self_report.services import PARADIGM, item_answers
from common.export_rows import Export
from psychometrics.models import Instrument


class InstrumentSerializer(serializers.ModelSerializer):
    n_items = serializers.SerializerMethodField()

    class Meta:
        model = Instrument
        fields = ("id", "slug", "name", "version", "partial", "shipped", "content_hash", "n_items", "created_at")

    def get_n_items(self, instrument: Instrument) -> int:
        return len(instrument.definition.get("items", []))


class InstrumentListView(generics.ListAPIView):
    """Likert instruments (shipped and uploaded) by id: what a self-report audit can ask."""

    serializer_class = InstrumentSerializer
    queryset = Instrument.objects.all()


ANSWER_COLUMNS = ["model_id", "model", "replicate", "form", "unit", "position", "kind", "source", "number", "keying",
                  "text", "rewritten", "outcome", "option_index", "option", "reason", "request_key"]


class AnswerRowSerializer(serializers.Serializer):
    model_id = serializers.IntegerField()
    model = serializers.CharField()
    replicate = serializers.IntegerField()
    form = serializers.CharField(help_text="original:<instrument slug> or masked.")
    unit = serializers.CharField(help_text="The request: item:<position> or batch.")
    position = serializers.IntegerField(help_text="The item's position in the form as presented (1-based).")
    kind = serializers.CharField(help_text="instrument, filler or dummy.")
    source = serializers.CharField(help_text="The instrument's slug, the filler pool's or the dummy set's.")
    number = serializers.IntegerField(help_text="The item's number in its source.")
    keying = serializers.CharField(allow_blank=True, help_text="The instrument's key for the item (\"\" if unscored).")
    text = serializers.CharField(help_text="The wording shown.")
    rewritten = serializers.BooleanField()
    outcome = serializers.CharField(help_text="answer, refusal, unparseable, error or pending.")
    option_index = serializers.IntegerField(allow_null=True, help_text="0-based index of the chosen option.")
    option = serializers.CharField(allow_blank=True)
    reason = serializers.CharField(allow_blank=True)
    request_key = serializers.CharField()


class SelfReportScoped(AuditScoped):
    paradigm = PARADIGM


class AuditAnswersView(SelfReportScoped, AuditExportView):
    """Item-level answers: one row per model × replicate × form × presented item, parsed from the stored reply."""

    serializer_class = AnswerRowSerializer
    export_kind = "answers"

    def export_rows(self):
        return answers_export(self.audit)

    def export_filename(self) -> str:
        return f"audit-{self.kwargs['pk']}-answers.csv"


SCORE_COLUMNS = ["model", "replicate", "form", "instrument", "total", "tier", "n_answered", "n_items", "subscales",
                 "content_hash"]


class ScoreRowSerializer(serializers.Serializer):
    model = serializers.CharField()
    replicate = serializers.IntegerField()
    form = serializers.CharField(help_text="original or masked.")
    instrument = serializers.CharField()
    total = serializers.FloatField(allow_null=True, help_text="None unless every item of the total is answered.")
    tier = serializers.CharField(allow_null=True)
    n_answered = serializers.IntegerField()
    n_items = serializers.IntegerField()
    subscales = serializers.CharField(help_text="JSON: subscale → score (null when not every item is answered).")
    content_hash = serializers.CharField(help_text="The instrument definition's sha256.")


class AuditScoresView(SelfReportScoped, AuditExportView):
    """Scores per model × replicate × form × instrument (empty until the audit is analysed)."""

    serializer_class = ScoreRowSerializer
    export_kind = "scores"

    def export_rows(self):
        return scores_export(self.audit)

    def export_filename(self) -> str:
        return f"audit-{self.kwargs['pk']}-scores.csv"


VALIDITY_COLUMNS = ["model", "form", "administrations", "items", "refusals", "refusal_share", "unparseable",
                    "missing", "dummy_items", "dummy_answered", "dummy_endorsed", "dummy_endorsed_mean", "flagged",
                    "flag_reasons", "rule"]


class ValidityRowSerializer(serializers.Serializer):
    model = serializers.CharField()
    form = serializers.CharField()
    administrations = serializers.IntegerField(help_text="Replicates of the form counted.")
    items = serializers.IntegerField(help_text="Items asked, over the administrations.")
    refusals = serializers.IntegerField()
    refusal_share = serializers.FloatField()
    unparseable = serializers.IntegerField()
    missing = serializers.IntegerField(help_text="Items without an answer (a failed request, or left out).")
    dummy_items = serializers.IntegerField()
    dummy_answered = serializers.IntegerField()
    dummy_endorsed = serializers.IntegerField()
    dummy_endorsed_mean = serializers.FloatField(allow_null=True, help_text="Endorsed per administration.")
    flagged = serializers.BooleanField()
    flag_reasons = serializers.CharField(allow_blank=True)
    rule = serializers.CharField(help_text="The validity rule the flags follow.")


class AuditValidityView(SelfReportScoped, AuditExportView):
    """Validity per model × form, with the rule (empty until the audit is analysed)."""

    serializer_class = ValidityRowSerializer
    export_kind = "validity"

    def export_rows(self):
        return validity_export(self.audit)

    def export_filename(self) -> str:
        return f"audit-{self.kwargs['pk']}-validity.csv"


def answers_export(audit) -> Export:
    rows = item_answers(audit)
    return Export(ANSWER_COLUMNS, [tuple(row[c] for c in ANSWER_COLUMNS) for row in rows])


def scores_export(audit) -> Export:
    scores = (audit.analysis or {}).get("scores", [])
    return Export(SCORE_COLUMNS, [tuple(json.dumps(row[c], sort_keys=True) if c == "subscales" else row[c]
                                        for c in SCORE_COLUMNS) for row in scores])


def validity_export(audit) -> Export:
    analysis = audit.analysis or {}
    rule = analysis.get("rule", {}).get("text", "")
    rows = [tuple("; ".join(row["flag_reasons"]) if c == "flag_reasons" else rule if c == "rule" else row[c]
                  for c in VALIDITY_COLUMNS) for row in analysis.get("validity", [])]
    return Export(VALIDITY_COLUMNS, rows)
