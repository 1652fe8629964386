"""Admin of the audit domain: register endpoints (chat LLMs and scorers) and list their models, edit prompt
templates (each edit is a new version), launch an audit of any registered paradigm (Audits → Add, with a
paradigm picker), follow it and pause, resume or cancel it. Each paradigm registers its own records' admin
(``Paradigm.register_admin``)."""
from __future__ import annotations

import hashlib

from django import forms
from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied
from django.db import models
from django.http import Http404, HttpResponseRedirect
from django.urls import reverse
from django.utils.html import format_html, format_html_join

from auditapp import scorer_kinds
from auditapp.endpoint_keys import KEY_VARIABLE_PREFIX, EndpointRefused, key_variable_problem
from auditapp.engine import control, errors, registry
from auditapp.engine import endpoints as engine_endpoints
from auditapp.engine import launch as engine_launch
from auditapp.engine.duration import duration_words
from auditapp.engine.launch_preview import launch_preview
from auditapp.engine.selectors import audit_progress, finished_counts
from auditapp.launch_forms import PREVIEW, launch_field_order
from auditapp.llm_clients import EndpointError
from auditapp.models import Audit, LLMEndpoint, PromptTemplate
from teams import roles
from teams.admin_scoping import TeamScopedAdmin, usable
from teams.scoping import TeamChoiceError, role_on


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
        fields = ["name", "protocol", "base_url", "api_key_env", "max_concurrency", "requests_per_minute",
                  "attempt_timeout_s", "deadline_s", "max_attempts", "structured_output", "request_template",
                  "score_path", "score_min", "score_max"]
        formfield_callback = _url_assumes_http

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        if "base_url" in self.fields:  # absent from a viewer's read-only page
            self.fields["base_url"].required = False

    def clean(self):
        data = super().clean()
        if "protocol" not in data:
            return data
        problems = scorer_kinds.endpoint_problems(
            kind=data["protocol"], base_url=data.get("base_url") or "", request_template=data.get("request_template"),
            score_path=data.get("score_path") or "", score_min=data.get("score_min"), score_max=data.get("score_max"),
            structured_output=data.get("structured_output") or "")
        for field_name, reasons in problems.items():
            if field_name not in self.errors:  # a field already refused says why itself
                for message in reasons:
                    self.add_error(field_name, message)
        if self.instance.pk is not None and not self.errors:
            refusal = engine_endpoints.endpoint_change_refusal(
                endpoint=LLMEndpoint.objects.get(pk=self.instance.pk), changes=self.changes())
            if refusal:
                self.add_error(None, refusal)
        return data

    def changes(self) -> dict:
        """The changed settings, as :func:`auditapp.engine.endpoints.endpoint_update` takes them (the teams it is
        shared with are saved with the form's other relations)."""
        return {name: self.cleaned_data[name] for name in self.changed_data
                if not LLMEndpoint._meta.get_field(name).many_to_many}


@admin.register(LLMEndpoint)
class LLMEndpointAdmin(TeamScopedAdmin, admin.ModelAdmin):
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
        ("Structured output", {"fields": ("structured_output",),
                               "description": "Chat endpoints: how the server takes the JSON schema of an audit "
                                              "with structured output. llama.cpp: llamacpp_json_object (or "
                                              "openai_json_schema on recent builds); vLLM: vllm_guided_json (or "
                                              "openai_json_schema); Ollama: ollama_format; OpenAI: "
                                              "openai_json_schema."}),
        ("HTTP JSON scorer", {"fields": ("request_template", "score_path", "score_min", "score_max"),
                              "description": "Only for the HTTP JSON kind: the body POSTed to the base URL for each "
                                             "text, where in the reply the score is, and the range it must be in; "
                                             "a reply outside it is a failed request with its reason."}),
        ("Models", {"fields": ("model_list", "listed_at")}),
        ("Sharing", {"fields": ("shared_with",),
                     "description": "Other teams that may use this endpoint: they see it and launch audits on it, "
                                    "but do not change it and are not shown its key's variable. Each audit stays "
                                    "its own team's."}),
    )
    filter_horizontal = ("shared_with",)
    actions = ["list_models"]

    def get_fieldsets(self, request, obj=None):
        fieldsets = super().get_fieldsets(request, obj)
        if obj is None or roles.at_least(role_on(request.user, obj), roles.EDITOR):
            return fieldsets
        # A team the endpoint is shared with uses it; which variable holds its key is the owning team's business.
        return [(name, {**options, "fields": tuple(f for f in options["fields"] if f != "api_key_env")})
                for name, options in fieldsets]
    # A URL typed without a scheme is a local model server's more often than not (http://127.0.0.1:8080).
    formfield_overrides = {models.URLField: {"assume_scheme": "http"}}

    def save_model(self, request, obj, form, change):
        if change:
            # The API's rules: no change of what requests' keys hold while an audit sends them (the form said so),
            # and a listing of the old server dropped.
            engine_endpoints.endpoint_update(endpoint=obj, changes=form.changes())
            return
        super().save_model(request, obj, form, change)
        if scorer_kinds.scorer_kind(obj.protocol).models_known:
            engine_endpoints.endpoint_list_models(obj)

    @admin.display(description="API key")
    def api_key_status(self, endpoint: LLMEndpoint) -> str:
        # No variable name here: the list also shows endpoints shared with the user's teams.
        if not endpoint.api_key_env:
            return "none"
        if key_variable_problem(endpoint.api_key_env):
            return f"REFUSED: its variable must be named {KEY_VARIABLE_PREFIX}…"
        return "set" if endpoint.api_key() else "NOT SET"

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
                models = engine_endpoints.endpoint_list_models(endpoint)
            except (EndpointError, EndpointRefused) as error:
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


@admin.register(Audit)
class AuditAdmin(TeamScopedAdmin, admin.ModelAdmin):
    """Every audit, each with its status, progress and a link to its dashboard. "Add" launches one: a picker of the
    registered paradigms (``?paradigm=<name>``, default classification) above the chosen paradigm's launch form (its
    adapter's), whose *Preview* shows the requests the launch would plan and how long sending them should take
    (:mod:`auditapp.engine.launch_preview`); a launched audit opens its dashboard."""

    list_display = ("name", "paradigm", "study", "status", "progress_summary", "created_at", "dashboard_link")
    list_filter = ("paradigm", "status")
    actions = ["pause", "resume", "cancel", "retry_failed"]
    readonly_fields = ("name", "study", "corpus", "paradigm", "status", "status_reason", "progress",
                       "dashboard_link", "replicates", "seed", "use_cache", "structured_output", "error_budget", "unparsed", "n_resamples",
                       "parallel_tasks", "n_requests", "created_by", "created_at", "started_at", "finished_at",
                       "analysed_at")
    add_form_template = "admin/auditapp/audit/launch_form.html"

    @staticmethod
    def launch_paradigm(request) -> registry.Paradigm:
        name = request.GET.get("paradigm", registry.DEFAULT)
        try:
            return registry.get(name)
        except registry.UnknownParadigm as error:
            raise Http404(str(error)) from None

    def add_view(self, request, form_url="", extra_context=None):
        paradigm = self.launch_paradigm(request)
        extra_context = {**(extra_context or {}), "paradigms": registry.choices(), "paradigm": paradigm.name,
                         "title": f"Launch an audit: {paradigm.label}"}
        return super().add_view(request, form_url, extra_context)

    def get_form(self, request, obj=None, **kwargs):
        if obj is None:
            kwargs["form"] = self.launch_paradigm(request).launch_form
        return super().get_form(request, obj, **kwargs)

    def get_readonly_fields(self, request, obj=None):
        return self.readonly_fields if obj else ()

    def get_queryset(self, request):
        # The finished requests of the listed audits only: a subquery per row of the page, not a count over every
        # audit's requests.
        return super().get_queryset(request).annotate(**finished_counts())

    def offers_team(self, request, obj=None) -> bool:
        # A launched audit goes to its study's team (else its launcher's): the launch forms pick no team.
        return False

    def scope_form(self, form, user) -> None:
        """The launch form's studies, corpora and models only of what the user may use (their teams' endpoints and
        those shared with them)."""
        super().scope_form(form, user)
        if "models" in form.fields:
            endpoints = set(usable(user, LLMEndpoint.objects.all()).values_list("id", flat=True))
            form.fields["models"].choices = [(value, label) for value, label in form.fields["models"].choices
                                             if int(str(value).partition(":")[0]) in endpoints]

    def get_fields(self, request, obj=None):
        if obj is None:
            return launch_field_order(self.launch_paradigm(request).launch_form)
        return self.readonly_fields

    def launch(self, request, form) -> Audit:
        """Record the audit of a valid launch form (the paradigm's launch, then structured output), for the launch
        itself and for its preview."""
        try:
            audit = self.launch_paradigm(request).launch_from_form(form, request.user)
        except TeamChoiceError as error:  # no study to take a team from, and the launcher edits several teams
            raise PermissionDenied(str(error)) from error
        engine_launch.audit_structured_output_set(audit=audit,
                                                  enabled=form.cleaned_data.get("structured_output", False))
        return audit

    def save_model(self, request, obj, form, change):
        if change:
            return
        obj.pk = self.launch(request, form).pk

    def save_related(self, request, form, formsets, change):
        if change:
            super().save_related(request, form, formsets, change)

    def render_change_form(self, request, context, add=False, change=False, form_url="", obj=None):
        if add:
            context.update(self.preview_context(request, context["adminform"].form))
        return super().render_change_form(request, context, add=add, change=change, form_url=form_url, obj=obj)

    def preview_context(self, request, form) -> dict:
        """What the launch page shows of a preview: the requests per model and in all and the time estimate; the
        launch's refusal; nothing when the form is not previewed or has errors (they are shown with it)."""
        if not (form.is_bound and form.previewing) or form.errors:
            return {}
        try:
            preview = launch_preview(lambda: self.launch(request, form))
        except (errors.AuditError, PermissionDenied) as error:
            return {"launch_preview_error": str(error)}
        return {"launch_preview": preview, "launch_preview_digest": form.data_digest(),
                "launch_preview_duration": duration_words(preview.estimate.seconds),
                "changed_since_preview": PREVIEW not in form.data}

    def response_add(self, request, obj, post_url_continue=None):
        """A launched audit opens its dashboard, where its status and progress show as it is prepared and sent (no
        message: the dashboard shows none, and one left for the next admin page would come too late)."""
        return HttpResponseRedirect(reverse("audit-dashboard", args=[obj.pk]))

    @admin.display(description="dashboard")
    def dashboard_link(self, audit: Audit) -> str:
        return format_html('<a href="{}">dashboard</a>', reverse("audit-dashboard", args=[audit.pk]))

    @admin.display(description="progress", ordering="n_requests")
    def progress_summary(self, audit: Audit) -> str:
        """Finished (answered or failed) of the planned requests; before the preparation plans them, "not planned
        yet"."""
        if not audit.n_requests:
            return "not planned yet"
        done = getattr(audit, "n_answered", 0) + getattr(audit, "n_failed", 0)
        return format_html('<progress max="{}" value="{}" aria-label="finished requests"></progress> {} of {} ({}%)', audit.n_requests, done,
                           f"{done:,}", f"{audit.n_requests:,}", f"{100 * done // audit.n_requests}")

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
            except errors.AuditError as error:
                self.message_user(request, f"{audit}: {error}", messages.WARNING)
            else:
                self.message_user(request, f"{audit}: {verb}", messages.SUCCESS)

    @admin.action(description="Pause the selected audits")
    def pause(self, request, queryset):
        self._control(request, queryset, control.audit_pause, "paused")

    @admin.action(description="Resume the selected audits (sends only what is still waiting)")
    def resume(self, request, queryset):
        self._control(request, queryset, control.audit_resume, "resumed")

    @admin.action(description="Cancel the selected audits")
    def cancel(self, request, queryset):
        self._control(request, queryset, control.audit_cancel, "cancelled")

    @admin.action(description="Send the failed requests of the selected audits again")
    def retry_failed(self, request, queryset):
        self._control(request, queryset, control.audit_retry_failed, "failed requests queued again")


for _paradigm in registry.every():
    _paradigm.register_admin(admin.site)
