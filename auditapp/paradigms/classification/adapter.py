"""The classification paradigm's entry in the registry (:mod:`auditapp.paradigms.registry`): its launch body
and admin form, its request builder, analysis, dashboard and exports."""
from __future__ import annotations

from django import forms
from django.core.exceptions import BadRequest
from django.http import Http404
from django.urls import path
from rest_framework import serializers

from annotation.models import Study
from auditapp.api.launch import LaunchSerializer, model_choices
from auditapp.launch_forms import ModelsFieldsMixin
from auditapp.models import Audit
from auditapp.paradigms import registry
from auditapp.paradigms.classification import LABEL
from auditapp.paradigms.classification import services as classification_services
from auditapp.paradigms.classification.extraction_services import (
    OutcomeSourceError,
    extractions_analyse,
    extractions_recover,
)
from auditapp.paradigms.classification.prompts import CONDITIONS, DEFAULT_TEMPLATES
from auditapp.paradigms.classification.replies import ANSWER_SCHEMA
from auditapp.paradigms.classification.selectors import audit_dashboard_data, audit_metrics_export, condition_cells

NAME = "classification"


class ClassificationLaunchSerializer(LaunchSerializer):
    """The body of ``POST /api/audits/`` for a classification audit (the default paradigm)."""

    paradigm = serializers.ChoiceField(choices=registry.choices(), default=NAME)
    study = serializers.PrimaryKeyRelatedField(queryset=Study.objects.all())
    conditions = serializers.ListField(child=serializers.ChoiceField(choices=CONDITIONS), default=list(CONDITIONS))
    unparsed = serializers.ChoiceField(choices=Audit.Unparsed.choices, default=Audit.Unparsed.EXCLUDE)
    n_resamples = serializers.IntegerField(default=2000, min_value=100, max_value=100000)


def launch(values: dict, *, created_by=None) -> Audit:
    values = dict(values)
    values.pop("paradigm", None)
    return classification_services.audit_create(models=model_choices(values.pop("models")), created_by=created_by,
                                                **values)


class ClassificationLaunchForm(ModelsFieldsMixin, forms.ModelForm):
    """Launch a classification audit."""

    conditions = forms.MultipleChoiceField(
        widget=forms.CheckboxSelectMultiple, initial=list(CONDITIONS),
        choices=[(code, DEFAULT_TEMPLATES[code].name) for code in CONDITIONS])

    class Meta:
        model = Audit
        fields = ("name", "study", "replicates", "seed", "use_cache", "error_budget", "unparsed", "n_resamples",
                  "parallel_tasks")

    def clean(self):
        data = super().clean()
        if not self.errors:
            for problem in classification_services.audit_problems(
                    study=data["study"], models=self.model_choices(), conditions=data["conditions"],
                    replicates=data["replicates"], error_budget=data["error_budget"], unparsed=data["unparsed"]):
                self.add_error(None, problem)
        return data


def launch_from_form(form: ClassificationLaunchForm, user) -> Audit:
    data = form.cleaned_data
    return classification_services.audit_create(
        study=data["study"], name=data["name"], models=form.model_choices(), conditions=data["conditions"],
        replicates=data["replicates"], seed=data["seed"], use_cache=data["use_cache"],
        error_budget=data["error_budget"], unparsed=data["unparsed"], n_resamples=data["n_resamples"],
        parallel_tasks=data["parallel_tasks"], created_by=user)


def dashboard_data(audit: Audit, outcomes: str | None = None) -> dict:
    """The dashboard's data under the outcome source of ``?outcomes=``: a 404 for an extraction the audit does not
    have, a 400 naming the problem for any other source it cannot show."""
    try:
        return audit_dashboard_data(audit, outcomes)
    except OutcomeSourceError as error:
        if error.status == 404:
            raise Http404(str(error)) from error
        raise BadRequest(str(error)) from error


def analyse(audit: Audit) -> None:
    """The audit's results: the metrics with each of its extractions (computed again: a resume or a re-parse changed
    the replies), then the strict ones, which complete the audit."""
    extractions_analyse(audit)
    classification_services.classification_analyse(audit)


def api_urls() -> list:
    from auditapp.paradigms.classification.api import (
        AuditExtractionLabelsView,
        AuditExtractionsView,
        AuditMetricsView,
    )

    return [path("audits/<int:pk>/metrics/", AuditMetricsView.as_view(), name="audit-metrics"),
            path("audits/<int:pk>/extractions/", AuditExtractionsView.as_view(), name="audit-extractions"),
            path("audits/<int:pk>/extractions/<str:extraction_id>/labels/", AuditExtractionLabelsView.as_view(),
                 name="audit-extraction-labels")]


PARADIGM = registry.Paradigm(
    name=NAME,
    label=LABEL,
    builder=classification_services.ClassificationRequests,
    cells=condition_cells,
    analyse=analyse,
    recover=extractions_recover,
    launch_serializer=ClassificationLaunchSerializer,
    launch=launch,
    launch_form=ClassificationLaunchForm,
    launch_fields=("name", "study", "models", "params", "conditions", "replicates", "seed", "use_cache",
                   "error_budget", "unparsed", "n_resamples", "parallel_tasks"),
    launch_from_form=launch_from_form,
    dashboard_template="auditapp/audit_dashboard.html",
    dashboard_data=dashboard_data,
    dashboard_query=("outcomes",),
    tables={"metrics": registry.Table(
        "metrics", "One row per model × condition × reference: every metric with its bootstrap 95% CI, the counts "
                   "of each outcome, and Δκ (seed 000 Tables 1–2).", lambda audit: audit_metrics_export(audit=audit))},
    api_urls=api_urls,
    after_migrate=classification_services.templates_sync_defaults,
    answer_schema=lambda audit: ANSWER_SCHEMA,
)
