"""Admin of the audit domain: register LLM endpoints and list their models, edit prompt templates (each edit
is a new version), launch an audit, follow it and pause, resume or cancel it."""
from __future__ import annotations

import hashlib

from django import forms
from django.contrib import admin, messages
from django.urls import reverse
from django.utils.html import format_html, format_html_join

from auditapp import audit_services as services
from auditapp.audit_selectors import audit_progress
from auditapp.llm_clients import EndpointError
from auditapp.models import Audit, LLMEndpoint, PromptTemplate
from auditapp.paradigms.classification_prompts import CONDITIONS, DEFAULT_TEMPLATES


@admin.register(LLMEndpoint)
class LLMEndpointAdmin(admin.ModelAdmin):
    list_display = ("name", "protocol", "base_url", "max_concurrency", "requests_per_minute", "api_key_status",
                    "n_models", "listed_at")
    readonly_fields = ("model_list", "listed_at")
    actions = ["list_models"]

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
            except EndpointError as error:
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


class AuditLaunchForm(forms.ModelForm):
    """Launch an audit: the models are those the endpoints listed (use the endpoint action first)."""

    models = forms.MultipleChoiceField(widget=forms.CheckboxSelectMultiple, choices=(),
                                       help_text="Models from the endpoints' last listing.")
    params = forms.JSONField(
        required=False, initial=dict, widget=forms.Textarea(attrs={"rows": 2}),
        help_text='Generation parameters for every chosen model, e.g. {"temperature": 0}; leave {} for each '
                  "endpoint's own defaults (as in seed 000 §3.4).")
    conditions = forms.MultipleChoiceField(
        widget=forms.CheckboxSelectMultiple, initial=list(CONDITIONS),
        choices=[(code, DEFAULT_TEMPLATES[code].name) for code in CONDITIONS])

    class Meta:
        model = Audit
        fields = ("name", "study", "replicates", "seed", "use_cache", "error_budget", "unparsed", "n_resamples",
                  "parallel_tasks")

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

    def clean(self):
        data = super().clean()
        if not self.errors:
            for problem in services.audit_problems(
                    study=data["study"], models=self.model_choices(), conditions=data["conditions"],
                    replicates=data["replicates"], error_budget=data["error_budget"], unparsed=data["unparsed"]):
                self.add_error(None, problem)
        return data

    def model_choices(self) -> list[services.ModelChoice]:
        endpoints = LLMEndpoint.objects.in_bulk()
        choices = []
        for value in self.cleaned_data["models"]:
            endpoint_id, _, model = value.partition(":")
            choices.append(services.ModelChoice(endpoint=endpoints[int(endpoint_id)], model=model,
                                                params=self.cleaned_data.get("params") or {}))
        return choices


@admin.register(Audit)
class AuditAdmin(admin.ModelAdmin):
    list_display = ("name", "study", "status", "n_requests", "created_at", "dashboard_link")
    list_filter = ("status",)
    actions = ["pause", "resume", "cancel", "retry_failed"]
    readonly_fields = ("name", "study", "paradigm", "status", "status_reason", "progress", "dashboard_link",
                       "replicates", "seed", "use_cache", "error_budget", "unparsed", "n_resamples", "parallel_tasks",
                       "n_requests", "created_by", "created_at", "started_at", "finished_at", "analysed_at")

    def get_form(self, request, obj=None, **kwargs):
        if obj is None:
            kwargs["form"] = AuditLaunchForm
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
