"""REST API both seed 003 paradigms share (word association, affective attribution): an audit's replies instance by
instance for the error browser, ``GET /api/audits/{id}/judged-instances/`` (routed once for both:
:func:`auditapp.paradigms.implicit_bias.services.api_urls`)."""
from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import serializers

from auditapp.api.audits import AuditExportView
from auditapp.models import AuditRequest
from auditapp.paradigms.implicit_bias.selectors import (
    READINGS,
    judged_choices,
    judged_instances_export,
    orderings,
)
from auditapp.paradigms.implicit_bias.services import TASKS, Task

COUNT_HELP = "WABT only: N({}, {}) of eq. 1, read from the parse (null unless the reply is valid)."


class JudgedInstanceRowSerializer(serializers.Serializer):
    """One row; the fields marked "WABT only", "AAT only" or "two-turn AAT only" are in those audits' rows only."""

    request_id = serializers.IntegerField(help_text="The judged request (a two-turn AAT: the second turn's); GET "
                                                    "/api/audits/{id}/requests/{request_id}/ gives it whole.")
    model = serializers.CharField(help_text="The model's name in the audit's tables.")
    instance = serializers.CharField(help_text="The instance's key (seed 003 §3.3.3 generation).")
    condition = serializers.CharField(help_text="The WABT's dimension, or the AAT's group label (S_a or S_b).")
    social_group = serializers.CharField(allow_blank=True)
    template = serializers.CharField(allow_blank=True)
    prompt = serializers.CharField(help_text="The (first) prompt as sent, rebuilt from the corpus and the seed.")
    description = serializers.CharField(required=False, allow_null=True,
                                        help_text="Two-turn AAT only: the model's answer to Q1 (null: none).")
    question = serializers.CharField(required=False, help_text="Two-turn AAT only: Q2, asked after the description.")
    bias_score = serializers.FloatField(required=False, allow_null=True,
                                        help_text="WABT only: eq. 1, −1 to +1 (null: invalid reply or undefined "
                                                  "score; reason says why).")
    n_sa_xa = serializers.IntegerField(required=False, allow_null=True, help_text=COUNT_HELP.format("S_a", "X_a"))
    n_sa_xb = serializers.IntegerField(required=False, allow_null=True, help_text=COUNT_HELP.format("S_a", "X_b"))
    n_sb_xa = serializers.IntegerField(required=False, allow_null=True, help_text=COUNT_HELP.format("S_b", "X_a"))
    n_sb_xb = serializers.IntegerField(required=False, allow_null=True, help_text=COUNT_HELP.format("S_b", "X_b"))
    answer = serializers.CharField(required=False, allow_null=True,
                                   help_text="AAT only: comedy, tragedy or neutral (null: none read; reason says why).")
    reply = serializers.CharField(allow_null=True, help_text="The model's reply (null: the request failed).")
    outcome = serializers.CharField(help_text="score (WABT), label (AAT), refusal, unparseable or error.")
    reason = serializers.CharField(allow_blank=True, help_text="Why nothing usable was read (\"\" when it was).")
    consistent = serializers.BooleanField(allow_null=True, help_text="Goes the stereotype's way: WABT bias score "
                                                                     "above 0; AAT comedy for S_a or tragedy for S_b "
                                                                     "(the answers FAR and UAR count). null: nothing "
                                                                     "read.")

    def to_representation(self, instance: dict) -> dict:
        """Only the row's own columns: a task's fields are absent from the other's rows (null means "none here")."""
        return {name: value for name, value in super().to_representation(instance).items() if name in instance}


class JudgedInstanceFilterSerializer(serializers.Serializer):
    """The error browser's filters; any other value is a 400 naming it. ``context["choices"]``: the audit's
    (:func:`judged_choices`); ``context["task"]``: its task."""

    model = serializers.IntegerField(required=False, min_value=1, max_value=2 ** 63 - 1,
                                     help_text="Only this audit model (id).")
    condition = serializers.CharField(required=False, max_length=40,
                                      help_text="Only this WABT dimension or AAT group label (S_a, S_b).")
    outcome = serializers.ChoiceField(required=False, choices=AuditRequest.Outcome.values, help_text="Only this outcome.")
    consistent = serializers.BooleanField(required=False, allow_null=True, default=None,
                                          help_text="true: only the replies consistent with the stereotype (WABT "
                                                    "bias score > 0; AAT comedy for S_a, tragedy for S_b); false: "
                                                    "only those read and not consistent.")
    q = serializers.CharField(required=False, max_length=200, help_text="The reply (or a two-turn AAT's "
                                                                        "description) contains this.")
    ordering = serializers.ChoiceField(required=False, default="instance",
                                       choices=sorted({name for task in ("wabt", "aat") for name in
                                                       ("instance", "model", "condition", "outcome",
                                                        READINGS[task].ordering[0])}),
                                       help_text="instance (default), model, condition, outcome; bias_score (WABT, "
                                                 "highest first) or answer (AAT).")

    def validate_model(self, value: int) -> int:
        known = [model["id"] for model in self.context["choices"]["models"]]
        if value not in known:
            raise serializers.ValidationError(f"the audit has no model {value}; its models: "
                                              f"{', '.join(map(str, known))}")
        return value

    def validate_condition(self, value: str) -> str:
        known = [condition["code"] for condition in self.context["choices"]["conditions"]]
        if value not in known:
            raise serializers.ValidationError(f"{value!r} is not one of the audit's conditions: {', '.join(known)}")
        return value

    def validate_ordering(self, value: str) -> str:
        known = list(orderings(self.context["task"]))
        if value not in known:
            raise serializers.ValidationError(f"{value!r} is not a sort of this audit's paradigm: {', '.join(known)}")
        return value


@extend_schema(summary="A word association or affective attribution audit's replies instance by instance (the "
                       "error browser)", parameters=[JudgedInstanceFilterSerializer],
               description="One row per model × instance (a two-turn AAT: per conversation, its second turn with the "
                           "first turn's description): the prompt rebuilt from the corpus and the seed, the reply, "
                           "what was read (WABT: eq. 1's bias score and counts; AAT: the answer), whether it is "
                           "consistent with the stereotype, the outcome and why nothing was read; filtered and sorted. "
                           "JSON pages, or every row with ?format=csv.")
class AuditJudgedInstancesView(AuditExportView):
    serializer_class = JudgedInstanceRowSerializer
    export_kind = "judged instances"

    def served_paradigms(self) -> list[str]:
        return list(TASKS)

    @property
    def task(self) -> Task:
        return TASKS[self.audit.paradigm]

    def export_rows(self):
        task = self.task
        filters = self.validated_filters(JudgedInstanceFilterSerializer, choices=judged_choices(self.audit, task),
                                         task=task)
        return judged_instances_export(audit=self.audit, task=task, **filters)

    def export_filename(self) -> str:
        return f"audit-{self.audit.id}-judged-instances.csv"
