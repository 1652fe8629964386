"""REST API of self-report audits (researchers only): the instruments that can be asked and an audit's
exports: item-level answers, scores per administration, validity per model × form, and the error browser's answers
item by item beside the other form's (``/api/audits/{id}/judged-items/``). (A self-report audit
is launched with ``POST /api/audits/`` and ``"paradigm": "self_report"``: :mod:`.adapter`.)

Every export also answers ``?format=csv`` (streamed, never paginated).
"""
from __future__ import annotations

import json

from drf_spectacular.utils import extend_schema
from rest_framework import generics, serializers

from auditapp.api.audits import AuditExportView, AuditScoped
from auditapp.paradigms.self_report.selectors import (
    JUDGED_ITEM_ORDERINGS,
    JUDGED_KINDS,
    JUDGED_OUTCOMES,
    judged_choices,
    judged_items_export,
)
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


class PresentedItemSerializer(serializers.Serializer):
    """What the answers export and the error browser both say of a presented item."""

    model_id = serializers.IntegerField()
    model = serializers.CharField()
    replicate = serializers.IntegerField()
    form = serializers.CharField(help_text="original:<instrument slug> or masked.")
    position = serializers.IntegerField(help_text="The item's position in the form as presented (1-based).")
    kind = serializers.CharField(help_text="instrument, filler or dummy.")
    source = serializers.CharField(help_text="The instrument's slug, the filler pool's or the dummy set's.")
    number = serializers.IntegerField(help_text="The item's number in its source.")
    keying = serializers.CharField(allow_blank=True, help_text="The instrument's key for the item (\"\" if unscored).")
    text = serializers.CharField(help_text="The wording shown.")


class AnswerRowSerializer(PresentedItemSerializer):
    unit = serializers.CharField(help_text="The request: item:<position> or batch.")
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


class JudgedItemRowSerializer(PresentedItemSerializer):
    outcome = serializers.CharField(help_text="answer, refusal, unparseable, error or pending.")
    option = serializers.CharField(allow_blank=True, help_text="The option chosen (\"\" without an answer).")
    reason = serializers.CharField(allow_blank=True)
    other_form = serializers.CharField(allow_blank=True, help_text="The item's other form in this audit (\"\" for a "
                                                                    "filler or dummy item, or a single form).")
    other_option = serializers.CharField(allow_blank=True, help_text="The option chosen there (\"\" without one).")
    differs = serializers.BooleanField(allow_null=True, help_text="The two options differ; null without both.")


class JudgedItemFilterSerializer(serializers.Serializer):
    """The browser's filters; a value the audit does not have is a 400 naming it."""

    model = serializers.IntegerField(required=False, min_value=1, max_value=2 ** 63 - 1,
                                     help_text="Only this audit model (id).")
    form = serializers.CharField(required=False, max_length=120, help_text="Only this form (original:<slug> or "
                                                                          "masked).")
    kind = serializers.ChoiceField(required=False, choices=JUDGED_KINDS, help_text="Only this kind of item.")
    source = serializers.CharField(required=False, max_length=120, help_text="Only this instrument's items (slug).")
    outcome = serializers.ChoiceField(required=False, choices=JUDGED_OUTCOMES, help_text="Only this outcome.")
    differs = serializers.BooleanField(required=False, allow_null=True, default=None,
                                       help_text="true: only the answers that differ from the same item's on the "
                                                 "other form; false: only those that agree.")
    q = serializers.CharField(required=False, max_length=200, help_text="The wording shown contains this "
                                                                        "(case-insensitive).")
    ordering = serializers.ChoiceField(required=False, default="form",
                                       choices=[*JUDGED_ITEM_ORDERINGS, *(f"-{n}" for n in JUDGED_ITEM_ORDERINGS)],
                                       help_text="; ".join(f"{name}: {text}" for name, text in
                                                           JUDGED_ITEM_ORDERINGS.items()) + "; - reverses.")

    def validate(self, attrs):
        audit = self.context["audit"]
        choices = judged_choices(audit)
        problems = {}
        if "model" in attrs and attrs["model"] not in set(audit.models.values_list("id", flat=True)):
            problems["model"] = ["not a model of this audit"]
        if "form" in attrs and attrs["form"] not in {form["code"] for form in choices["forms"]}:
            problems["form"] = [f"not a form of this audit (its forms: "
                                f"{', '.join(form['code'] for form in choices['forms'])})"]
        if "source" in attrs and attrs["source"] not in {source["code"] for source in choices["sources"]}:
            problems["source"] = [f"not an instrument of this audit (its instruments: "
                                  f"{', '.join(source['code'] for source in choices['sources'])})"]
        if problems:
            raise serializers.ValidationError(problems)
        return attrs


@extend_schema(summary="A self-report audit's answers item by item (the error browser)",
               parameters=[JudgedItemFilterSerializer],
               description="One row per model × replicate × form × presented item: the wording shown, the option "
                           "chosen, and the same item's option on its other form (original or masked; seed 000 "
                           "§4.4) with whether they differ; filtered and sorted. JSON pages, or every row with "
                           "?format=csv.")
class AuditJudgedItemsView(SelfReportScoped, AuditExportView):
    serializer_class = JudgedItemRowSerializer
    export_kind = "judged items"

    def export_rows(self):
        return judged_items_export(self.audit, **self.validated_filters(JudgedItemFilterSerializer, audit=self.audit))

    def export_filename(self) -> str:
        return f"audit-{self.kwargs['pk']}-judged-items.csv"
