"""Admin of the audit domain: register LLM endpoints and list their models, edit prompt templates (each edit
is a new version), launch an audit (classification under Audits, self-report under Self-report audits),
follow it and pause, resume or cancel it."""
from __future__ import annotations

import hashlib

from django import forms
from django.contrib import admin, messages
from django.db import models
from django.urls import reverse
from django.utils.html import format_html, format_html_join

from auditapp import audit_services as services
from auditapp import scorer_kinds, self_report_services
from auditapp.audit_selectors import audit_progress
from auditapp.endpoint_addresses import EndpointAddressRefused
from auditapp.llm_clients import EndpointError
from auditapp.models import Audit, ItemVariant, LLMEndpoint, PromptTemplate, SelfReportAudit
from auditapp.paradigms.classification.prompts import CONDITIONS, DEFAULT_TEMPLATES
from auditapp.paradigms.self_report.design import FORMS, ValidityRule
from psychometrics.models import Instrument


def _url_assumes_http(db_field, **kwargs):
    # A URL typed without a scheme is a local model server's more often than not (http://127.0.0.1:8080).
    if isinstance(db_field, models.URLField):
        kwargs["assume_scheme"] = "http"
    return db_field.formfield(**kwargs)


class LLMEndpointForm(forms.ModelForm):
    """An endpoint's settings, checked for its kind as the API checks them
    (:func:`auditapp.scorer_kinds.endpoint_problems`): a local scorer leaves the base URL empty."""

    class Meta:
        model = LLMEndpoint
        fields = "__all__"
        formfield_callback = _url_assumes_http

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["base_url"].required = False

    def clean(self):
        data = super().clean()
        if "protocol" not in data:
            return data
        problems = scorer_kinds.endpoint_problems(
            kind=data["protocol"], base_url=data.get("base_url") or "", request_template=data.get("request_template"),
            score_path=data.get("score_path") or "", score_min=data.get("score_min"), score_max=data.get("score_max"))
        for field_name, reasons in problems.items():
            if field_name not in self.errors:  # a field already refused says why itself
                for message in reasons:
                    self.add_error(field_name, message)
        return data


@admin.register(LLMEndpoint)
class LLMEndpointAdmin(admin.ModelAdmin):
    form = LLMEndpointForm
    list_display = ("name", "protocol", "base_url", "max_concurrency", "requests_per_minute", "api_key_status",
                    "n_models", "listed_at")
    readonly_fields = ("model_list", "listed_at")
    fieldsets = (
        (None, {"fields": ("name", "protocol", "base_url", "api_key_env"),
                "description": "Chat LLMs (OpenAI-compatible, Ollama) and HTTP JSON scorers are servers at a base "
                               "URL; local scorers (VADER, TextBlob) run in the worker: leave the base URL empty."}),
        ("Limits", {"fields": ("max_concurrency", "requests_per_minute", "attempt_timeout_s", "deadline_s",
                               "max_attempts")}),
        ("HTTP JSON scorer", {"fields": ("request_template", "score_path", "score_min", "score_max"),
                              "description": "Only for the HTTP JSON kind: the body POSTed to the base URL for each "
                                             "text, where in the reply the score is, and the range it must be in; "
                                             "a reply outside it is a failed request with its reason."}),
        ("Models", {"fields": ("model_list", "listed_at")}),
    )
    actions = ["list_models"]
    # A URL typed without a scheme is a local model server's more often than not (http://127.0.0.1:8080).
    formfield_overrides = {models.URLField: {"assume_scheme": "http"}}

    def save_model(self, request, obj, form, change):
        super().save_model(request, obj, form, change)
        if scorer_kinds.scorer_kind(obj.protocol).models_known:
            services.endpoint_list_models(obj)

    @admin.display(description="API key")
    def api_key_status(self, endpoint: LLMEndpoint) -> str:
        if not endpoint.api_key_env:
            return "none"
        return f"${endpoint.api_key_env} " + ("set" if endpoint.api_key() else "NOT SET")

    @admin.display(description="models")
    def n_models(self, endpoint: LLMEndpoint) -> int:
        return len(endpoint.listed_models)

    @admin.display(description="models at the last listing")
    def model_list(self, endpoint: LLMEndpoint) -> str:
        if not endpoint.listed_models:
            return "Not listed yet: use the action “List the endpoints' models” on the endpoint list."
        return format_html("<ul>{}</ul>", format_html_join("", "<li>{} <small>{}</small></li>", (
            (m["name"], m.get("digest") or "") for m in endpoint.listed_models)))

    @admin.action(description="List the endpoints' models (asks each endpoint now)")
    def list_models(self, request, queryset):
        for endpoint in queryset:
            try:
                models = services.endpoint_list_models(endpoint)
            except (EndpointError, EndpointAddressRefused) as error:
                self.message_user(request, f"{endpoint}: {error}", messages.ERROR)
            else:
                self.message_user(request, f"{endpoint}: {len(models)} models: "
                                           f"{', '.join(m.name for m in models)}", messages.SUCCESS)


@admin.register(PromptTemplate)
class PromptTemplateAdmin(admin.ModelAdmin):
    list_display = ("condition", "name", "short_hash", "created_at")
    list_filter = ("paradigm", "condition")
    readonly_fields = ("content_hash", "created_at")
    fields = ("paradigm", "condition", "name", "text", "note", "source", "content_hash", "created_at")

    @admin.display(description="hash")
    def short_hash(self, template: PromptTemplate) -> str:
        return template.content_hash[:12]

    def save_model(self, request, obj, form, change):
        """An edit never changes a version that audits may have used: it saves a new version."""
        if change:
            obj.pk = None
        text_hash = hashlib.sha256(obj.text.encode("utf-8")).hexdigest()
        if PromptTemplate.objects.filter(paradigm=obj.paradigm, condition=obj.condition, content_hash=text_hash).exists():
            self.message_user(request, "This exact text is already a version of the template: nothing saved.",
                              messages.WARNING)
            return
        super().save_model(request, obj, form, change)


class ItemVariantForm(forms.ModelForm):
    class Meta:
        model = ItemVariant
        fields = ("source", "number", "text", "note", "active")

    def clean(self):
        data = super().clean()
        source, number = data.get("source"), data.get("number")
        if source and number is not None:
            sources = self_report_services.variant_sources()
            if source not in sources:
                self.add_error("source", f"no instrument or item pool {source!r}; one of {', '.join(sorted(sources))}")
            elif number not in sources[source][0]:
                self.add_error("number", f"{source} has no item {number}")
        return data


@admin.register(ItemVariant)
class ItemVariantAdmin(admin.ModelAdmin):
    """The phrasing variants of the masked self-report form, with the wording and licence note they change."""

    form = ItemVariantForm
    list_display = ("source", "number", "text", "active", "created_at")
    list_filter = ("source", "active")
    readonly_fields = ("published_wording", "licence_note", "created_by", "created_at")

    @admin.display(description="published wording")
    def published_wording(self, variant: ItemVariant) -> str:
        return self_report_services.variant_sources().get(variant.source, ({}, ""))[0].get(variant.number, "")

    @admin.display(description="licence note of the source")
    def licence_note(self, variant: ItemVariant) -> str:
        return self_report_services.variant_sources().get(variant.source, ({}, ""))[1]

    def save_model(self, request, obj, form, change):
        if not change:
            obj.created_by = request.user
        super().save_model(request, obj, form, change)


class ModelsFieldsMixin(forms.Form):
    """The listed models to audit and their generation parameters (use the endpoint action to list them)."""

    models = forms.MultipleChoiceField(widget=forms.CheckboxSelectMultiple, choices=(),
                                       help_text="Models from the endpoints' last listing.")
    params = forms.JSONField(
        required=False, initial=dict, widget=forms.Textarea(attrs={"rows": 2}),
        help_text='Generation parameters for every chosen model, e.g. {"temperature": 0}; leave {} for each '
                  "endpoint's own defaults (as in seed 000 §3.4).")

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["models"].choices = [
            (f"{endpoint.id}:{model['name']}", f"{endpoint.name} — {model['name']}")
            for endpoint in LLMEndpoint.objects.all() for model in endpoint.listed_models]

    def clean_params(self):
        params = self.cleaned_data.get("params") or {}
        if not isinstance(params, dict):
            raise forms.ValidationError('Give the parameters as a JSON object, e.g. {"temperature": 0}.')
        return params

    def model_choices(self) -> list[services.ModelChoice]:
        endpoints = LLMEndpoint.objects.in_bulk()
        choices = []
        for value in self.cleaned_data["models"]:
            endpoint_id, _, model = value.partition(":")
            choices.append(services.ModelChoice(endpoint=endpoints[int(endpoint_id)], model=model,
                                                params=self.cleaned_data.get("params") or {}))
        return choices


class AuditLaunchForm(ModelsFieldsMixin, forms.ModelForm):
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
            for problem in services.audit_problems(
                    study=data["study"], models=self.model_choices(), conditions=data["conditions"],
                    replicates=data["replicates"], error_budget=data["error_budget"], unparsed=data["unparsed"]):
                self.add_error(None, problem)
        return data


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
        model = SelfReportAudit
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


@admin.register(Audit)
class AuditAdmin(admin.ModelAdmin):
    """Every audit; "Add" launches a classification audit (self-report audits: SelfReportAuditAdmin)."""

    list_display = ("name", "paradigm", "study", "status", "n_requests", "created_at", "dashboard_link")
    list_filter = ("paradigm", "status")
    actions = ["pause", "resume", "cancel", "retry_failed"]
    readonly_fields = ("name", "study", "paradigm", "status", "status_reason", "progress", "dashboard_link",
                       "replicates", "seed", "use_cache", "error_budget", "unparsed", "n_resamples", "parallel_tasks",
                       "n_requests", "created_by", "created_at", "started_at", "finished_at", "analysed_at")

    launch_form = AuditLaunchForm

    def get_form(self, request, obj=None, **kwargs):
        if obj is None:
            kwargs["form"] = self.launch_form
        return super().get_form(request, obj, **kwargs)

    def get_readonly_fields(self, request, obj=None):
        return self.readonly_fields if obj else ()

    def get_fields(self, request, obj=None):
        if obj is None:
            return ("name", "study", "models", "params", "conditions", "replicates", "seed", "use_cache", "error_budget",
                    "unparsed", "n_resamples", "parallel_tasks")
        return self.readonly_fields

    def save_model(self, request, obj, form, change):
        if change:
            return
        data = form.cleaned_data
        audit = services.audit_create(
            study=data["study"], name=data["name"], models=form.model_choices(), conditions=data["conditions"],
            replicates=data["replicates"], seed=data["seed"], use_cache=data["use_cache"],
            error_budget=data["error_budget"], unparsed=data["unparsed"], n_resamples=data["n_resamples"],
            parallel_tasks=data["parallel_tasks"], created_by=request.user)
        obj.pk = audit.pk

    def save_related(self, request, form, formsets, change):
        if change:
            super().save_related(request, form, formsets, change)

    @admin.display(description="dashboard")
    def dashboard_link(self, audit: Audit) -> str:
        return format_html('<a href="{}">dashboard</a>', reverse("audit-dashboard", args=[audit.pk]))

    @admin.display(description="progress")
    def progress(self, audit: Audit) -> str:
        totals = audit_progress(audit)["totals"]
        done = totals["answered"] + totals["failed"]
        return format_html(
            '<progress max="{}" value="{}"></progress> {} answered, {} failed, {} waiting ({} retries); '
            'live view on the <a href="{}">dashboard</a>',
            max(audit.n_requests, 1), done, totals["answered"], totals["failed"], totals["waiting"],
            totals["retries"], reverse("audit-dashboard", args=[audit.pk]))

    def _control(self, request, queryset, action, verb: str):
        for audit in queryset:
            try:
                action(audit=audit)
            except services.AuditError as error:
                self.message_user(request, f"{audit}: {error}", messages.WARNING)
            else:
                self.message_user(request, f"{audit}: {verb}", messages.SUCCESS)

    @admin.action(description="Pause the selected audits")
    def pause(self, request, queryset):
        self._control(request, queryset, services.audit_pause, "paused")

    @admin.action(description="Resume the selected audits (sends only what is still waiting)")
    def resume(self, request, queryset):
        self._control(request, queryset, services.audit_resume, "resumed")

    @admin.action(description="Cancel the selected audits")
    def cancel(self, request, queryset):
        self._control(request, queryset, services.audit_cancel, "cancelled")

    @admin.action(description="Send the failed requests of the selected audits again")
    def retry_failed(self, request, queryset):
        self._control(request, queryset, services.audit_retry_failed, "failed requests queued again")


@admin.register(SelfReportAudit)
class SelfReportAuditAdmin(AuditAdmin):
    """Self-report audits; "Add" launches one."""

    list_display = ("name", "status", "n_requests", "created_at", "dashboard_link")
    list_filter = ("status",)
    launch_form = SelfReportLaunchForm

    def get_queryset(self, request):
        return super().get_queryset(request).filter(paradigm="self_report")

    def get_fields(self, request, obj=None):
        if obj is None:
            return ("name", "models", "params", "instruments", "administered_forms", "mode", "labels", "title", "replicates",
                    "seed", "max_refusal_share", "max_dummy_endorsed", "validity_action", "use_cache", "error_budget",
                    "parallel_tasks")
        return self.readonly_fields

    def save_model(self, request, obj, form, change):
        if change:
            return
        data = form.cleaned_data
        audit = self_report_services.self_report_audit_create(
            name=data["name"], seed=data["seed"], use_cache=data["use_cache"], parallel_tasks=data["parallel_tasks"],
            created_by=request.user, **form.launch_arguments())
        obj.pk = audit.pk
