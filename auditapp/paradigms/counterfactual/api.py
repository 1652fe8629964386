"""REST API the counterfactual paradigms share (seed 002): the judged pairs of one model × task, for the error
browser (``/api/audits/{id}/judged-pairs/``, JSON pages or ``?format=csv``). One route serves every flavour: the
audit's paradigm names its :class:`~auditapp.paradigms.counterfactual.interface.Flavour`, whose ``pairs`` say
what a row holds."""
from __future__ import annotations

import copy

from django.urls import path
from drf_spectacular.utils import PolymorphicProxySerializer, extend_schema
from rest_framework import serializers
from rest_framework.exceptions import ValidationError

from auditapp.api.audits import AuditExportView
from auditapp.paradigms.counterfactual.interface import FLAVOURS, Flavour
from auditapp.paradigms.counterfactual.pairs import ANSWER_CHOICES, OUTCOME_FILTERS, SIDE_OUTCOMES
from auditapp.paradigms.counterfactual.selectors import (
    DEFAULT_ORDERING,
    PairFilterError,
    PairQuery,
    judged_pairs_export,
    pair_columns,
)


def _side_fields(prefix: str, heading: str) -> dict:
    return {
        f"{prefix}_text": serializers.CharField(help_text=f"The {heading} text as the model was sent it (rebuilt "
                                                          "from the design; where the batch did not draw this side, "
                                                          "the text it would have been)."),
        f"{prefix}_label": serializers.ChoiceField(choices=ANSWER_CHOICES, allow_null=True,
                                                   help_text=f"The model's answer for the {heading} text (null: "
                                                             f"none; {prefix}_missing says why)."),
        f"{prefix}_outcome": serializers.ChoiceField(choices=SIDE_OUTCOMES, help_text=(
            "label (answered), refusal or unparseable (the judgment's outcome), inconsistent (asked twice in the "
            "batch, answered yes and no), unasked (not drawn in this batch), failed (no reply), pending, "
            "unrecorded (answered without a judgment of this text).")),
        f"{prefix}_missing": serializers.CharField(allow_null=True, help_text="Why the side has no label (null when "
                                                                              "it has one)."),
    }


_ROW_SERIALIZERS: dict[str, type] = {}


def pair_row_serializer(flavour: Flavour) -> type:
    """A flavour's row (made once): the fields of :func:`~auditapp.paradigms.counterfactual.selectors.pair_columns`,
    in that order (a serializer orders its fields by when they were made)."""
    if flavour.name not in _ROW_SERIALIZERS:
        _ROW_SERIALIZERS[flavour.name] = _row_serializer(flavour)
    return _ROW_SERIALIZERS[flavour.name]


def _row_serializer(flavour: Flavour) -> type:
    browser = flavour.pairs
    fields = {
        "request_id": serializers.IntegerField(help_text="GET /api/audits/{id}/requests/{request_id}/ gives it "
                                                         "whole (its numbered texts and reply)."),
        "model_id": serializers.IntegerField(help_text="The audit model's id (the model filter's value)."),
        "model": serializers.CharField(help_text="The model's name in the audit's tables."),
        "task": serializers.CharField(help_text="The task's slug."),
        "iteration": serializers.IntegerField(),
        "pair": browser.pair_field,
        **{column.key: column.field for column in browser.columns},
    }
    for prefix, heading in zip(browser.prefixes, browser.headings, strict=True):
        fields |= _side_fields(prefix, heading)
    fields["differs"] = serializers.BooleanField(allow_null=True, help_text="The two sides' labels differ (null "
                                                                            "unless both have one).")
    # Copied in the columns' order: the copies are made in that order, so the serializer keeps it.
    return type(f"{flavour.name.title()}JudgedPairSerializer", (serializers.Serializer,), {
        "__doc__": f"One judged pair of a {flavour.label} audit.",
        **{key: copy.deepcopy(fields[key]) for key in pair_columns(browser)}})


def _ordering_choices() -> list[str]:
    names = list(dict.fromkeys([*DEFAULT_ORDERING, *(name for flavour in FLAVOURS.values()
                                                     for name in flavour.pairs.orderings)]))
    return [*names, *(f"-{name}" for name in names)]


class JudgedPairFilterSerializer(serializers.Serializer):
    """The error browser's filters: one model × task (both required), then any of the others; a value of the wrong
    form, or one the audit does not have, is a 400 naming it."""

    model = serializers.IntegerField(min_value=1, max_value=2 ** 63 - 1,
                                     help_text="The cell's model: an audit model id (required).")
    task = serializers.CharField(max_length=40, help_text="The cell's task: its slug (required).")
    group = serializers.CharField(required=False, max_length=100,
                                  help_text="Only the pairs of this group (names audits: a minority group).")
    differs = serializers.BooleanField(required=False, allow_null=True, default=None,
                                       help_text="true: only the pairs whose two labels differ; false: only those "
                                                 "labelled alike (a pair without both labels is in neither).")
    outcome = serializers.ChoiceField(required=False, choices=OUTCOME_FILTERS, help_text=(
        "complete: both sides labelled; missing: a side without a label; or a side in that state (see the rows' "
        "<side>_outcome)."))
    q = serializers.CharField(required=False, max_length=200,
                              help_text="A text, name or pair key contains this (case-insensitive).")
    ordering = serializers.ChoiceField(required=False, default="iteration", choices=_ordering_choices(),
                                       help_text="iteration (default: the iterations in order, each request's "
                                                 "pairs in the order of its texts); group (names) or pair "
                                                 "(dialect: the pair key); - reverses.")


def _rows_schema() -> PolymorphicProxySerializer:
    return PolymorphicProxySerializer(component_name="JudgedPair", resource_type_field_name=None, many=True,
                                      serializers=[pair_row_serializer(flavour) for flavour in FLAVOURS.values()])


@extend_schema(
    summary="A counterfactual audit's judged pairs, one model × task at a time (the error browser)",
    parameters=[JudgedPairFilterSerializer], responses=_rows_schema(),
    description="One row per request × pair of the cell: what the paradigm compares (names: the same vignette with a "
                "minority and a reference name; dialect: an SAE/AAVE pair, of which the batch drew one side, both or "
                "one twice), each side's text rebuilt from the design, its label (yes/no) or why it has none, and "
                "whether the two labels differ; filtered and sorted. JSON pages, or every row with ?format=csv.")
class AuditJudgedPairsView(AuditExportView):
    export_kind = "judged pairs"

    def served_paradigms(self) -> list[str]:
        return list(FLAVOURS)  # the route the counterfactual paradigms share

    @property
    def flavour(self) -> Flavour:
        return FLAVOURS[self.audit.paradigm]

    def get_serializer_class(self):
        return pair_row_serializer(self.flavour)

    def export_rows(self):
        filters = self.validated_filters(JudgedPairFilterSerializer)
        try:
            return judged_pairs_export(audit=self.audit, browser=self.flavour.pairs,
                                       design_class=self.flavour.design_class, query=PairQuery(**filters))
        except PairFilterError as error:
            raise ValidationError({error.field: [str(error)]}) from error

    def export_filename(self) -> str:
        return f"audit-{self.audit.id}-judged-pairs.csv"


ROUTES = [path("audits/<int:pk>/judged-pairs/", AuditJudgedPairsView.as_view(), name="audit-judged-pairs")]
