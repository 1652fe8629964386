"""The classification paradigm's entry in the registry (:mod:`auditapp.engine.registry`): its launch body
and admin form, its request builder, analysis, dashboard and exports."""
from __future__ import annotations

import re

from django import forms
from django.core.exceptions import BadRequest
from django.http import Http404
from django.urls import path
from rest_framework import serializers

from annotation.models import Study
from auditapp.api.launch import model_choices, settings_serializer
from auditapp.engine import registry
from auditapp.engine.launch import BIGINT_MAX
from auditapp.engine.launch_settings import Setting
from auditapp.launch_forms import launch_form_base, mark_unavailable
from auditapp.models import Audit
from auditapp.paradigms.classification import LABEL
from auditapp.paradigms.classification import evaluation as evaluation_sets
from auditapp.paradigms.classification import services as classification_services
from auditapp.paradigms.classification.extraction_services import (
    OutcomeSourceError,
    extractions_analyse,
    extractions_recover,
)
from auditapp.paradigms.classification.prompts import CONDITIONS, DEFAULT_TEMPLATES
from auditapp.paradigms.classification.replies import (
    ANSWER_ORDER_MEASURED,
    DEFAULT_ANSWER_ORDER,
    EXPLANATION_FIRST,
    LABEL_FIRST,
    answer_schema,
)
from auditapp.paradigms.classification.selectors import (
    audit_dashboard_data,
    audit_metrics_export,
    condition_cells,
    explained_replies,
    headline,
)

NAME = "classification"
EVALUATION_SET_LABELS = {"all": "All items with a ground truth but the study's ICL examples",
                         "item_set": "A stored item set, by its name",
                         "not_examples": "All items but the examples of the ICL sets of the chosen conditions",
                         "items": "A list of item ids"}
SETTINGS = (
    Setting("conditions", "choices", default=CONDITIONS,
            choices=tuple((code, DEFAULT_TEMPLATES[code].name) for code in CONDITIONS),
            help="The prompting conditions each item is asked under (seed 000 §3.4, Appendix A.4; default all "
                 "seven)."),
    Setting("unparsed", "choice", default=Audit.Unparsed.EXCLUDE.value, choices=tuple(Audit.Unparsed.choices),
            help="How refusals, unparseable replies and failures enter the metrics."),
    Setting("n_resamples", "integer", default=2000, minimum=100, maximum=100000,
            help="Bootstrap resamples for the CIs."),
    Setting("evaluation_set", "choice", default=evaluation_sets.DEFAULT_KIND,
            choices=tuple((kind, EVALUATION_SET_LABELS[kind]) for kind in evaluation_sets.KINDS),
            help="Which items are classified: all (every item with a ground truth but attention checks and the "
                 "study's ICL examples), item_set (a stored set named by item_set: a test set such as high_aq, or "
                 "icl_a/icl_b), not_examples (every item but the examples of the ICL sets the conditions use), "
                 "items (the external ids in item_ids)."),
    Setting("item_set", "text", default="", max_length=20,
            help="With evaluation_set item_set: the stored set's name, a test set (all, high_aq, low_aq, low_bias, "
                 "high_bias) or an example set (icl_a, icl_b)."),
    Setting("sample", "integer", default=None, minimum=1, maximum=BIGINT_MAX,
            help="Classify a random sample of this many items of the set, drawn with the audit's seed (e.g. 100 for "
                 "a pilot; more than the set has is refused)."),
    Setting("answer_order", "choice", default=DEFAULT_ANSWER_ORDER,
            choices=((LABEL_FIRST, "Label, then explanation"), (EXPLANATION_FIRST, "Explanation, then label")),
            help="With structured output: the order of the answer's fields, which a constrained model writes in "
                 "that order (with the label first it commits before it explains). Default: "
                 + ANSWER_ORDER_MEASURED),
    Setting("allow_overlap", "boolean", default=False,
            help="Launch even when the evaluation set shares items with the ICL examples of the chosen conditions "
                 "(refused by default, naming how many and a few ids)."),
)


class ClassificationLaunchSerializer(settings_serializer(SETTINGS)):
    """The body of ``POST /api/audits/`` for a classification audit (the default paradigm)."""

    paradigm = serializers.ChoiceField(choices=registry.choices(), default=NAME)
    study = serializers.PrimaryKeyRelatedField(queryset=Study.objects.all())
    item_ids = serializers.ListField(child=serializers.CharField(max_length=200), required=False, default=list,
                                     max_length=1_000_000,
                                     help_text="evaluation_set items: the items' external ids (an unknown id is a "
                                               "400 naming it).")


def evaluation_from(values: dict) -> classification_services.EvaluationSet:
    """The evaluation set of a launch's validated values (the API's body or the admin form's data), taken out
    of them."""
    return classification_services.EvaluationSet(
        kind=values.pop("evaluation_set", evaluation_sets.DEFAULT_KIND) or evaluation_sets.DEFAULT_KIND,
        item_set=values.pop("item_set", "") or "", item_ids=tuple(dict.fromkeys(values.pop("item_ids", ()) or ())),
        sample=values.pop("sample", None), allow_overlap=bool(values.pop("allow_overlap", False)))


def launch(values: dict, *, created_by=None) -> Audit:
    values = dict(values)
    values.pop("paradigm", None)
    evaluation = evaluation_from(values)
    return classification_services.audit_create(models=model_choices(values.pop("models")), created_by=created_by,
                                                evaluation=evaluation, **values)


class ClassificationLaunchForm(launch_form_base(SETTINGS)):
    """Launch a classification audit."""

    item_ids = forms.CharField(required=False, widget=forms.Textarea(attrs={"rows": 3}),
                               help_text="The items' external ids, one per line (or separated by commas).")
    item_ids_file = forms.FileField(required=False, label="Item ids file",
                                    help_text="Or a text file of the ids, one per line (UTF-8).")

    class Meta:
        model = Audit
        fields = ("name", "study", "replicates", "seed", "use_cache", "error_budget", "parallel_tasks")

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._unavailable: dict[str, str] | None = None
        mark_unavailable(self.fields["conditions"], self.conditions_unavailable)
        self.fields["conditions"].help_text += (" A condition the chosen study cannot run (an ICL condition without "
                                                "its example set) is shown disabled, with the reason.")

    def conditions_unavailable(self) -> dict[str, str]:
        """The conditions the chosen study (the submitted one, or ``?study=`` on the page's first view) cannot run,
        each with why (the launch's own rule, :func:`classification_services.conditions_unavailable`)."""
        if self._unavailable is None:
            chosen = self.data.get("study") if self.is_bound else self.initial.get("study")
            study = None
            if re.fullmatch(r"[0-9]{1,18}", str(chosen or "")):
                # The field's queryset: by now narrowed to the studies the user may use.
                study = self.fields["study"].queryset.filter(pk=int(chosen)).first()
            self._unavailable = {} if study is None else classification_services.conditions_unavailable(study)
        return self._unavailable

    def clean_item_ids_file(self) -> list[str]:
        upload = self.cleaned_data.get("item_ids_file")
        if not upload:
            return []
        try:
            return evaluation_sets.parse_item_ids(upload.read().decode("utf-8-sig"))
        except UnicodeDecodeError as error:
            raise forms.ValidationError("The ids file is not UTF-8 text.") from error

    def evaluation(self) -> classification_services.EvaluationSet:
        data = self.cleaned_data
        listed = [*evaluation_sets.parse_item_ids(data.get("item_ids") or ""), *(data.get("item_ids_file") or [])]
        return evaluation_from({"evaluation_set": data.get("evaluation_set"), "item_set": data.get("item_set"),
                                "item_ids": listed, "sample": data.get("sample"),
                                "allow_overlap": data.get("allow_overlap")})

    def clean(self):
        data = super().clean()
        if not self.errors:
            for problem in classification_services.audit_problems(
                    study=data["study"], models=self.model_choices(), conditions=data["conditions"],
                    replicates=data["replicates"], error_budget=data["error_budget"], unparsed=data["unparsed"],
                    evaluation=self.evaluation(), seed=data["seed"]):
                self.add_error(None, problem)
        return data


def launch_from_form(form: ClassificationLaunchForm, user) -> Audit:
    data = form.cleaned_data
    return classification_services.audit_create(
        study=data["study"], name=data["name"], models=form.model_choices(), conditions=data["conditions"],
        replicates=data["replicates"], seed=data["seed"], use_cache=data["use_cache"],
        error_budget=data["error_budget"], unparsed=data["unparsed"], n_resamples=data["n_resamples"],
        parallel_tasks=data["parallel_tasks"], evaluation=form.evaluation(),
        answer_order=data.get("answer_order") or DEFAULT_ANSWER_ORDER, created_by=user)


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
        AuditJudgedRepliesView,
        AuditMetricsView,
        AuditRobustnessView,
    )

    return [path("audits/<int:pk>/metrics/", AuditMetricsView.as_view(), name="audit-metrics"),
            path("audits/<int:pk>/robustness/", AuditRobustnessView.as_view(), name="audit-robustness"),
            path("audits/<int:pk>/judged-replies/", AuditJudgedRepliesView.as_view(), name="audit-judged-replies"),
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
    study_alternatives_settled=lambda study_id: classification_services.robustness_after_alternatives(
        study_id=study_id, paradigm=NAME),
    settings=SETTINGS,
    launch_serializer=ClassificationLaunchSerializer,
    launch=launch,
    launch_form=ClassificationLaunchForm,
    launch_from_form=launch_from_form,
    dashboard_template="auditapp/audit_dashboard.html",
    dashboard_data=dashboard_data,
    dashboard_query=("outcomes",),
    tables={"metrics": registry.Table(
        "metrics", "One row per model × condition × reference: every metric with its bootstrap 95% CI, the counts "
                   "of each outcome, and Δκ (seed 000 Tables 1–2).", lambda audit: audit_metrics_export(audit=audit))},
    api_urls=api_urls,
    after_migrate=classification_services.templates_sync_defaults,
    answer_schema=lambda audit: answer_schema(audit.design.get("answer_order", LABEL_FIRST)),
    explained_replies=explained_replies,
    headline=headline,
)
