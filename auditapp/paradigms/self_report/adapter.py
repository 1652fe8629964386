"""The self-report paradigm's entry in the registry (:mod:`auditapp.engine.registry`): its launch body and
admin form, its request builder, analysis, dashboard and exports (answers, scores, validity)."""
from __future__ import annotations

from django import forms
from django.urls import path
from rest_framework import serializers

from auditapp.api.launch import model_choices, settings_serializer
from auditapp.engine import registry
from auditapp.engine.launch_settings import Setting
from auditapp.launch_forms import launch_form_base
from auditapp.models import Audit
from auditapp.paradigms.self_report import LABEL
from auditapp.paradigms.self_report import services as self_report_services
from auditapp.paradigms.self_report.admin import register_admin
from auditapp.paradigms.self_report.design import FORMS, ValidityRule, answer_schema
from auditapp.paradigms.self_report.design import headline as self_report_headline
from auditapp.paradigms.self_report.selectors import form_cells, self_report_dashboard_data
from psychometrics.models import Instrument

NAME = self_report_services.PARADIGM
FORM_LABELS = {"original": "Original (the published items, order and options)",
               "masked": "Masked (one questionnaire of the instruments' items, IPIP fillers and 52 dummy items, in a "
                         "seeded order: seed 000 Appendix A)"}
SETTINGS = (
    Setting("forms", "choices", default=FORMS, choices=tuple((form, FORM_LABELS[form]) for form in FORMS),
            form_name="administered_forms",
            help="The forms each model answers (seed 000 §3.3): the original, the masked, or both (the default)."),
    Setting("mode", "choice", default="batch",
            choices=(("batch", "Batch: the whole form in one request, numbered"),
                     ("item", "Item: one item per request")),
            help="batch: the whole form in one request (as the paper's combined questionnaire); item: one item per "
                 "request."),
    Setting("labels", "choice", default=None,
            choices=((None, "default (numbers; text in batch mode)"), ("numbers", "numbers"), ("letters", "letters"),
                     ("text", "text")),
            help="How an item's options are labelled in item mode (default numbers; a batch writes its options out "
                 "as text)."),
    Setting("title", "boolean", default=False, help="The original form opens with the instrument's name."),
)
VALIDITY = (
    Setting("max_refusal_share", "number", default=ValidityRule.max_refusal_share, minimum=0, maximum=1,
            help="Flag a model on a form when it refuses more than this share."),
    Setting("max_dummy_endorsed", "integer", default=ValidityRule.max_dummy_endorsed, minimum=0,
            help="Flag a model when it endorses more of the 52 dummy items."),
    Setting("action", "choice", default=ValidityRule.action,
            choices=(("flag", "flag only"), ("exclude", "flag and leave out of the paired comparison")),
            form_name="validity_action",
            help="flag: marked in the results; exclude: also left out of the paired comparison."),
)
"""The validity rule's settings: an object of their own in the API body (``validity``), flat in the admin form."""


class ValidityRuleSerializer(settings_serializer(VALIDITY, base=serializers.Serializer)):
    """When a model is flagged on a form, and what a flag does."""


class SelfReportLaunchSerializer(settings_serializer(SETTINGS)):
    """The body of ``POST /api/audits/`` for a self-report audit (``models`` as for a classification audit)."""

    paradigm = serializers.ChoiceField(choices=registry.choices())
    instruments = serializers.PrimaryKeyRelatedField(queryset=Instrument.objects.all(), many=True,
                                                     help_text="Instrument ids (GET /api/instruments/).")
    validity = ValidityRuleSerializer(default=dict)


def launch(values: dict, *, created_by=None) -> Audit:
    values = dict(values)
    values.pop("paradigm", None)
    values["validity"] = ValidityRule(**values["validity"])
    return self_report_services.self_report_audit_create(models=model_choices(values.pop("models")),
                                                         created_by=created_by, **values)


class SelfReportLaunchForm(launch_form_base((*SETTINGS, *VALIDITY))):
    """Launch a self-report audit (seed 000 §3.3): models × instruments × forms × replicates."""

    instruments = forms.ModelMultipleChoiceField(
        queryset=Instrument.objects.all(), widget=forms.CheckboxSelectMultiple,
        help_text="Shipped or uploaded Likert instruments. A partial instrument is not the published scale.")

    class Meta:
        model = Audit
        fields = ("name", "replicates", "seed", "use_cache", "error_budget", "parallel_tasks")

    def launch_arguments(self) -> dict:
        data, values = self.cleaned_data, self.setting_values()
        return {"models": self.model_choices(), "instruments": list(data["instruments"]),
                "forms": tuple(values["forms"]), "mode": values["mode"], "labels": values["labels"],
                "title": values["title"], "validity": ValidityRule(**{setting.name: values[setting.name]
                                                                      for setting in VALIDITY}),
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
            path("audits/<int:pk>/judged-items/", api.AuditJudgedItemsView.as_view(), name="audit-judged-items"),
            path("audits/<int:pk>/scores/", api.AuditScoresView.as_view(), name="audit-scores"),
            path("audits/<int:pk>/validity/", api.AuditValidityView.as_view(), name="audit-validity"),
            path("instruments/", api.InstrumentListView.as_view(), name="instrument-list")]


PARADIGM = registry.Paradigm(
    name=NAME,
    label=LABEL,
    builder=self_report_services.SelfReportRequests,
    cells=form_cells,
    analyse=self_report_services.self_report_analyse,
    settings=(*SETTINGS, *VALIDITY),
    launch_serializer=SelfReportLaunchSerializer,
    launch=launch,
    launch_form=SelfReportLaunchForm,
    launch_from_form=launch_from_form,
    dashboard_template="auditapp/self_report_dashboard.html",
    dashboard_data=self_report_dashboard_data,
    tables=TABLES,
    api_urls=api_urls,
    register_admin=register_admin,
    answer_schema=lambda audit: answer_schema(audit.design["mode"]),
    headline=lambda audit: self_report_headline(audit.analysis or {}),
)
