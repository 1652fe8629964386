"""The self-report paradigm's entry in the registry (:mod:`auditapp.engine.registry`): its launch body and
admin form, its request builder, analysis, dashboard and exports (answers, scores, validity)."""
from __future__ import annotations

from django import forms
from django.urls import path
from rest_framework import serializers

from auditapp.api.launch import BIGINT_MAX, LaunchSerializer, model_choices
from auditapp.engine import registry
from auditapp.launch_forms import ModelsFieldsMixin
from auditapp.models import Audit
from auditapp.paradigms.self_report import LABEL
from auditapp.paradigms.self_report import services as self_report_services
from auditapp.paradigms.self_report.admin import register_admin
from auditapp.paradigms.self_report.design import FORMS, ValidityRule, answer_schema
from auditapp.paradigms.self_report.selectors import form_cells, self_report_dashboard_data
from psychometrics.models import Instrument

NAME = self_report_services.PARADIGM


class ValidityRuleSerializer(serializers.Serializer):
    max_refusal_share = serializers.FloatField(default=ValidityRule.max_refusal_share, min_value=0, max_value=1)
    max_dummy_endorsed = serializers.IntegerField(default=ValidityRule.max_dummy_endorsed, min_value=0)
    action = serializers.ChoiceField(choices=["flag", "exclude"], default=ValidityRule.action,
                                     help_text="flag: marked in the results; exclude: also left out of the "
                                               "paired comparison.")


class SelfReportLaunchSerializer(LaunchSerializer):
    """The body of ``POST /api/audits/`` for a self-report audit (``models`` as for a classification audit)."""

    paradigm = serializers.ChoiceField(choices=registry.choices())
    instruments = serializers.PrimaryKeyRelatedField(queryset=Instrument.objects.all(), many=True,
                                                     help_text="Instrument ids (GET /api/instruments/).")
    forms = serializers.ListField(child=serializers.ChoiceField(choices=FORMS), default=list(FORMS))
    mode = serializers.ChoiceField(choices=["batch", "item"], default="batch",
                                   help_text="batch: the whole form in one request (as the paper's combined "
                                             "questionnaire); item: one item per request.")
    labels = serializers.ChoiceField(choices=["numbers", "letters", "text"], allow_null=True, default=None,
                                     help_text="How an item's options are labelled in item mode (default numbers).")
    title = serializers.BooleanField(default=False, help_text="The original form opens with the instrument's name.")
    validity = ValidityRuleSerializer(default=dict)
    seed = serializers.IntegerField(default=0, min_value=0, max_value=BIGINT_MAX)


def launch(values: dict, *, created_by=None) -> Audit:
    values = dict(values)
    values.pop("paradigm", None)
    values["validity"] = ValidityRule(**values["validity"])
    return self_report_services.self_report_audit_create(models=model_choices(values.pop("models")),
                                                         created_by=created_by, **values)


class SelfReportLaunchForm(ModelsFieldsMixin, forms.ModelForm):
    """Launch a self-report audit (seed 000 §3.3): models × instruments × forms × replicates."""

    instruments = forms.ModelMultipleChoiceField(
        queryset=Instrument.objects.all(), widget=forms.CheckboxSelectMultiple,
        help_text="Shipped or uploaded Likert instruments. A partial instrument is not the published scale.")
    administered_forms = forms.MultipleChoiceField(
        label="Forms", choices=[("original", "Original (the published items, order and options)"),
                 ("masked", "Masked (one questionnaire of the instruments' items, IPIP fillers and 52 dummy items, "
                            "in a seeded order: seed 000 Appendix A)")],
        initial=list(FORMS), widget=forms.CheckboxSelectMultiple)
    mode = forms.ChoiceField(choices=[("batch", "Batch: the whole form in one request, numbered"),
                                      ("item", "Item: one item per request")], initial="batch")
    labels = forms.ChoiceField(choices=[("", "default (numbers; text in batch mode)"), ("numbers", "numbers"),
                                        ("letters", "letters"), ("text", "text")], required=False,
                               help_text="How each option is labelled in item mode.")
    title = forms.BooleanField(required=False, help_text="The original form opens with the instrument's name.")
    max_refusal_share = forms.FloatField(initial=ValidityRule.max_refusal_share, min_value=0, max_value=1,
                                         help_text="Flag a model on a form when it refuses more than this share.")
    max_dummy_endorsed = forms.IntegerField(initial=ValidityRule.max_dummy_endorsed, min_value=0,
                                            help_text="Flag a model when it endorses more of the 52 dummy items.")
    validity_action = forms.ChoiceField(choices=[("flag", "flag only"),
                                                 ("exclude", "flag and leave out of the paired comparison")],
                                        initial=ValidityRule.action)

    class Meta:
        model = Audit
        fields = ("name", "replicates", "seed", "use_cache", "error_budget", "parallel_tasks")

    def launch_arguments(self) -> dict:
        data = self.cleaned_data
        return {"models": self.model_choices(), "instruments": list(data["instruments"]),
                "forms": tuple(data["administered_forms"]),
                "mode": data["mode"], "labels": data["labels"] or None, "title": data["title"],
                "validity": ValidityRule(max_refusal_share=data["max_refusal_share"],
                                         max_dummy_endorsed=data["max_dummy_endorsed"],
                                         action=data["validity_action"]),
                "replicates": data["replicates"], "error_budget": data["error_budget"]}

    def clean(self):
        data = super().clean()
        if not self.errors:
            for problem in self_report_services.self_report_problems(**self.launch_arguments()):
                self.add_error(None, problem)
        return data


def launch_from_form(form: SelfReportLaunchForm, user) -> Audit:
    data = form.cleaned_data
    return self_report_services.self_report_audit_create(
        name=data["name"], seed=data["seed"], use_cache=data["use_cache"], parallel_tasks=data["parallel_tasks"],
        created_by=user, **form.launch_arguments())


def _table(name: str):
    def rows(audit: Audit):
        from auditapp.paradigms.self_report import api

        return getattr(api, f"{name}_export")(audit)
    return rows


TABLES = {
    "answers": registry.Table("answers", "Item-level answers: one row per model × replicate × form × presented "
                                         "item.", _table("answers")),
    "scores": registry.Table("scores", "Scores per model × replicate × form × instrument.", _table("scores")),
    "validity": registry.Table("validity", "Validity per model × form, with the rule.", _table("validity")),
}


def api_urls() -> list:
    from auditapp.paradigms.self_report import api

    return [path("audits/<int:pk>/answers/", api.AuditAnswersView.as_view(), name="audit-answers"),
            path("audits/<int:pk>/scores/", api.AuditScoresView.as_view(), name="audit-scores"),
            path("audits/<int:pk>/validity/", api.AuditValidityView.as_view(), name="audit-validity"),
            path("instruments/", api.InstrumentListView.as_view(), name="instrument-list")]


PARADIGM = registry.Paradigm(
    name=NAME,
    label=LABEL,
    builder=self_report_services.SelfReportRequests,
    cells=form_cells,
    analyse=self_report_services.self_report_analyse,
    launch_serializer=SelfReportLaunchSerializer,
    launch=launch,
    launch_form=SelfReportLaunchForm,
    launch_fields=("name", "models", "params", "instruments", "administered_forms", "mode", "labels", "title",
                   "replicates", "seed", "max_refusal_share", "max_dummy_endorsed", "validity_action", "use_cache",
                   "error_budget", "parallel_tasks"),
    launch_from_form=launch_from_form,
    dashboard_template="auditapp/self_report_dashboard.html",
    dashboard_data=self_report_dashboard_data,
    tables=TABLES,
    api_urls=api_urls,
    register_admin=register_admin,
    answer_schema=lambda audit: answer_schema(audit.design["mode"]),
)
