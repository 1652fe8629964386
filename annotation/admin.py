"""Django admin for studies, items, participants, labels and item imports.

Uploading a file happens from a study's page ("Import items"): the file is validated at once (every
problem shown with its row and column, nothing stored), then recorded and imported by a Celery worker;
the import's page shows its status, counts, warnings and errors, and lets the researcher download the
exact file that was imported. A successful import has the study's analysis recomputed; the study's page shows
where the analysis stands and has a "Recompute the analysis" button (as the API's POST does).
"""
from django.contrib import admin, messages
from django.db import models
from django.http import HttpResponse
from django.shortcuts import get_object_or_404, redirect
from django.template.response import TemplateResponse
from django.urls import path, reverse
from django.utils.html import format_html, format_html_join
from django.views.decorators.http import require_POST

from annotation.duration import STATED_MINUTES_MAX, STATED_MINUTES_MIN
from annotation.forms import InviteForm, ItemImportForm
from annotation.item_files import ItemFileError
from annotation.models import Item, ItemImport, Label, Participant, Study, StudyAnalysisSettings
from annotation.monitor import study_export_links
from annotation.participation import participants_invite
from annotation.selectors import study_analysis_status, study_duration, study_list
from annotation.services import item_import_submit
from annotation.study_analysis import study_analysis_enqueue, study_analysis_request
from common.api.csv_export import streaming_csv_response
from psychometrics.admin import StudyInstrumentInline
from psychometrics.annotator_imports import annotator_import_submit
from psychometrics.forms import AnnotatorImportForm, IATStimuliField
from psychometrics.iat import MIN_WORDS_PER_CATEGORY
from psychometrics.selectors import study_weights_gap
from teams.admin_scoping import TeamScopedAdmin, TeamScopedInline
from teams.scoping import visible


class StudyAnalysisSettingsInline(TeamScopedInline, admin.StackedInline):
    model = StudyAnalysisSettings
    can_delete = False
    max_num = 1
    verbose_name = "Analysis settings (weighted ground truth, groups, test sets)"
    verbose_name_plural = verbose_name


@admin.register(Study)
class StudyAdmin(TeamScopedAdmin, admin.ModelAdmin):
    list_display = ("name", "slug", "status", "label_scheme", "n_items", "n_participants", "n_labels", "created_at")
    list_filter = ("status", "label_scheme")
    search_fields = ("name", "slug", "description")
    prepopulated_fields = {"slug": ("name",)}
    readonly_fields = ("analysis", "item_imports", "annotator_imports", "invite_links", "estimated_duration",
                       "created_at", "updated_at")
    inlines = [StudyInstrumentInline, StudyAnalysisSettingsInline]
    formfield_overrides = {models.URLField: {"assume_scheme": "https"}}
    fieldsets = [
        (None, {"fields": ("name", "slug", "description", "status")}),
        ("Annotators", {"fields": ("content_warning", "consent_text", "labelling_instructions", "label_scheme",
                                   "annotators_per_item", "items_per_annotator", "assignment_timeout_minutes",
                                   "attention_check_pass_threshold", "skipping", "estimated_minutes",
                                   "estimated_duration")}),
        ("IAT", {"fields": ("iat_enabled", "keyboard_required", "iat_stimuli")}),
        ("Recruitment", {"fields": ("invite_links", "open_link_enabled", "open_link_cap", "completion_code",
                                    "completion_url", "no_consent_url")}),
        ("Data", {"fields": ("analysis", "item_imports", "annotator_imports", "created_at", "updated_at")}),
    ]

    class Media:
        js = ("annotation/copy_link.js",)  # the open link's copy button

    def change_view(self, request, object_id, form_url="", extra_context=None):
        """The study's page, with its dashboard and every export one click away above the form."""
        if str(object_id).isdigit():
            extra_context = {**(extra_context or {}), "study_exports": study_export_links(study_id=int(object_id)),
                             "study_dashboard_url": reverse("study-dashboard", args=[object_id])}
        return super().change_view(request, object_id, form_url, extra_context)

    def save_related(self, request, form, formsets, change):
        """A change of the study or its analysis settings recomputes the analysis (in the worker). A study whose
        trust weights will lack a score (no AQ or SATA role, the IAT off) is saved with a warning saying what the
        weights will use instead."""
        super().save_related(request, form, formsets, change)
        if change:
            study_analysis_enqueue(study_id=form.instance.pk)
        gap = study_weights_gap(study=form.instance)
        if gap:
            messages.warning(request, gap)

    @admin.display(description="Analysis")
    def analysis(self, study):
        if not study.pk:
            return "Save the study first."
        analysis = study_analysis_status(study=study)
        when = (f"last computed {analysis.computed_at:%Y-%m-%d %H:%M} UTC" if analysis.computed_at
                else "not computed yet")
        now = {"queued": "; a recomputation is waiting for a worker", "running": "; a recomputation is running",
               "failed": f"; the last recomputation failed: {analysis.error}"}.get(analysis.state, "")
        return format_html("<a class='button' href='{}'>Study dashboard</a> (<span "
                           "id='analysis-state'>{}{}</span>)", reverse("study-dashboard", args=[study.pk]), when, now)

    def recompute_analysis_view(self, request, object_id: int):
        """The "Recompute the analysis" button: queues a recomputation (coalesced, as the API's POST)."""
        study = get_object_or_404(self.get_queryset(request), pk=object_id)
        if not self.has_change_permission(request, study):
            return HttpResponse(status=403)
        study_analysis_request(study_id=study.pk)
        messages.success(request, "Recomputation of the analysis queued: a worker computes it now; the study "
                                  "dashboard refreshes itself when it is done.")
        return redirect("admin:annotation_study_change", study.pk)

    def formfield_for_dbfield(self, db_field, request, **kwargs):
        if db_field.name == "estimated_minutes":  # the range the API accepts too
            kwargs.update(min_value=STATED_MINUTES_MIN, max_value=STATED_MINUTES_MAX)
        if db_field.name == "iat_stimuli":  # an editor of the categories and words, stored as the same JSON
            return IATStimuliField(required=False, label="IAT categories and words", help_text=(
                f"Each category needs a name and at least {MIN_WORDS_PER_CATEGORY} different words; no word may be "
                "in two categories. Target A is the stigmatised target: the prejudice-consistent pairing puts it "
                "with the unpleasant attribute."))
        return super().formfield_for_dbfield(db_field, request, **kwargs)

    @admin.display(description="Duration shown before consent")
    def estimated_duration(self, study):
        if not study.pk:
            return "Save the study first."
        duration = study_duration(study=study)
        parts = format_html_join(", ", "{} {} s", ((part.name, round(part.seconds)) for part in duration.parts))
        source = "as stated above" if duration.stated else "estimated (annotation/duration.py; our own per-part times)"
        return format_html("About {} minutes, {}: {}", duration.minutes, source, parts)

    def get_fieldsets(self, request, obj=None):
        links = self._invite_links_field(request)
        return [(name, {**options, "fields": tuple(links if field == "invite_links" else field
                                                   for field in options["fields"])})
                for name, options in super().get_fieldsets(request, obj)]

    def get_readonly_fields(self, request, obj=None):
        links = self._invite_links_field(request)
        return [links if field == "invite_links" else field for field in super().get_readonly_fields(request, obj)]

    def _invite_links_field(self, request):
        """The "Invite links" display of this request: the open link is shown absolute, so it needs the request's
        host (checked against ALLOWED_HOSTS). The admin tells a read-only field by identity, so the fieldsets and
        the read-only fields of one request must get the same function: it is kept on the request."""
        if not hasattr(request, "_study_invite_links"):
            @admin.display(description="Invite links")
            def invite_links(study):
                return self.invite_links(study, request=request)
            request._study_invite_links = invite_links
        return request._study_invite_links

    def invite_links(self, study, *, request):
        if not study.pk:
            return "Save the study first."
        open_link = request.build_absolute_uri(reverse("participant:join", args=[study.open_link_token]))
        state = ("enabled" if study.open_link_enabled
                 else "off until \u201cOpen link enabled\u201d below is ticked and the study saved")
        return format_html(
            "<p>Open link ({}; Prolific parameters PROLIFIC_PID, STUDY_ID, SESSION_ID are kept):</p>"
            "<p class='open-link'><input type='text' readonly id='open-link' class='vTextField' value='{}' "
            "aria-label='Open link' size='70'> <button type='button' class='button' id='copy-open-link' "
            "data-copy='open-link' hidden>Copy the link</button> <span id='copy-open-link-status' role='status'>"
            "</span></p><p><a class='button' href='{}'>Invite participants…</a> <a href='{}'>Download every "
            "personal link (CSV)</a></p>", state, open_link,
            reverse("admin:annotation_study_invite", args=[study.pk]),
            reverse("admin:annotation_study_invite_links", args=[study.pk]))

    def invite_view(self, request, object_id: int):
        study = get_object_or_404(self.get_queryset(request), pk=object_id)
        if not (self.has_change_permission(request, study) and request.user.has_perm("annotation.add_participant")):
            return HttpResponse(status=403)
        form = InviteForm(request.POST or None)
        if request.method == "POST" and form.is_valid():
            created = participants_invite(study=study, count=form.cleaned_data["count"],
                                          team=form.cleaned_data["team"])
            messages.success(request, f"Invited {len(created)} participants ({created[0].pseudonym}–"
                                      f"{created[-1].pseudonym}). Download their links as CSV from the study page.")
            return redirect("admin:annotation_study_change", study.pk)
        return TemplateResponse(request, "admin/annotation/study/invite.html", {
            **self.admin_site.each_context(request), "opts": self.model._meta, "study": study, "form": form,
            "title": f"Invite participants to {study.name}"})

    def invite_links_view(self, request, object_id: int):
        """pseudonym, team, status, link: the personal links to hand out (researchers only)."""
        study = get_object_or_404(self.get_queryset(request), pk=object_id)
        if not self.has_view_permission(request, study):
            return HttpResponse(status=403)
        base = request.build_absolute_uri("/").rstrip("/")
        rows = ((p, t, s, base + reverse("participant:resume", args=[token])) for p, t, s, token in
                study.participants.filter(source_import__isnull=True).order_by("pseudonym")
                .values_list("pseudonym", "team", "status", "invite_token"))
        return streaming_csv_response(["participant", "team", "status", "link"], rows,
                                      filename=f"{study.slug}-invite-links.csv")

    def get_queryset(self, request):
        return visible(request.user, study_list())

    @admin.display(ordering="n_items", description="items")
    def n_items(self, study):
        return study.n_items

    @admin.display(ordering="n_participants", description="participants")
    def n_participants(self, study):
        return study.n_participants

    @admin.display(ordering="n_labels", description="labels")
    def n_labels(self, study):
        return study.n_labels

    @admin.display(description="Item imports")
    def item_imports(self, study):
        if not study.pk:
            return "Save the study first, then import its items."
        rows = format_html_join(
            "", "<li><a href='{}'>{}</a>: {} ({} items, {} labels)</li>",
            ((reverse("admin:annotation_itemimport_change", args=[i.pk]), i.filename, i.get_status_display(),
              i.n_items, i.n_labels) for i in study.imports.all()[:20]),
        )
        link = reverse("admin:annotation_study_import_items", args=[study.pk])
        return format_html("<a class='button' href='{}'>Import items from a file…</a><ul>{}</ul>", link, rows)

    @admin.display(description="Annotator data imports")
    def annotator_imports(self, study):
        if not study.pk:
            return "Save the study first, then import its items and annotators."
        rows = format_html_join(
            "", "<li><a href='{}'>{}</a>: {}, {} annotators</li>",
            ((reverse("admin:psychometrics_annotatorimport_change", args=[i.pk]), i.filename, i.get_kind_display(),
              i.n_annotators) for i in study.annotator_imports.defer("content")[:20]),
        )
        link = reverse("admin:annotation_study_import_annotator_data", args=[study.pk])
        return format_html("<a class='button' href='{}'>Import annotator data…</a> (scores, raw questionnaire "
                           "answers or raw IAT trials of annotators the study already has)<ul>{}</ul>", link, rows)

    def get_urls(self):
        return [
            path("<int:object_id>/import-items/", self.admin_site.admin_view(self.import_items_view),
                 name="annotation_study_import_items"),
            path("<int:object_id>/recompute-analysis/",
                 self.admin_site.admin_view(require_POST(self.recompute_analysis_view)),
                 name="annotation_study_recompute_analysis"),
            path("<int:object_id>/import-annotator-data/", self.admin_site.admin_view(self.import_annotator_data_view),
                 name="annotation_study_import_annotator_data"),
            path("<int:object_id>/invite/", self.admin_site.admin_view(self.invite_view),
                 name="annotation_study_invite"),
            path("<int:object_id>/invite-links.csv", self.admin_site.admin_view(self.invite_links_view),
                 name="annotation_study_invite_links"),
            *super().get_urls(),
        ]

    def import_items_view(self, request, object_id: int):
        study = get_object_or_404(self.get_queryset(request), pk=object_id)
        if not (self.has_change_permission(request, study) and request.user.has_perm("annotation.add_item")):
            return HttpResponse(status=403)
        problems, total = [], 0
        form = ItemImportForm(request.POST or None, request.FILES or None)
        if request.method == "POST" and form.is_valid():
            upload = form.cleaned_data["file"]
            try:
                item_import = item_import_submit(study=study, filename=upload.name, content=upload.read(),
                                                 options=form.import_options(), uploaded_by=request.user)
            except ItemFileError as error:
                problems, total = error.problems, error.total
            else:
                messages.success(request, f"{upload.name} is valid and queued; a worker imports it now.")
                return redirect("admin:annotation_itemimport_change", item_import.pk)
        context = {
            **self.admin_site.each_context(request),
            "opts": self.model._meta,
            "study": study,
            "form": form,
            "problems": problems,
            "total_problems": total,
            "title": f"Import items into {study.name}",
        }
        return TemplateResponse(request, "admin/annotation/study/import_items.html", context)


    def import_annotator_data_view(self, request, object_id: int):
        study = get_object_or_404(self.get_queryset(request), pk=object_id)
        if not (self.has_change_permission(request, study)
                and request.user.has_perm("psychometrics.add_annotatorimport")):
            return HttpResponse(status=403)
        problems, total = [], 0
        form = AnnotatorImportForm(request.POST or None, request.FILES or None)
        if request.method == "POST" and form.is_valid():
            upload = form.cleaned_data["file"]
            try:
                annotator_import = annotator_import_submit(
                    study=study, kind=form.cleaned_data["kind"], filename=upload.name, content=upload.read(),
                    options=form.import_options(), uploaded_by=request.user)
            except ItemFileError as error:
                problems, total = error.problems, error.total
            else:
                messages.success(request, f"{upload.name}: imported for {annotator_import.n_annotators} annotators; "
                                          "the study's analysis is being recomputed.")
                return redirect("admin:psychometrics_annotatorimport_change", annotator_import.pk)
        return TemplateResponse(request, "admin/annotation/study/import_annotator_data.html", {
            **self.admin_site.each_context(request), "opts": self.model._meta, "study": study, "form": form,
            "problems": problems, "total_problems": total, "title": f"Import annotator data into {study.name}"})


@admin.register(ItemImport)
class ItemImportAdmin(TeamScopedAdmin, admin.ModelAdmin):
    list_display = ("filename", "study", "status", "n_items", "n_labels", "n_participants", "created_at")
    list_filter = ("status", "study")
    exclude = ("content", "errors", "warnings")
    readonly_fields = ("study", "filename", "file_format", "download", "sha256", "encoding", "options", "status",
                       "problem_list", "warning_list", "n_items", "n_labels", "n_participants", "uploaded_by",
                       "created_at", "started_at", "finished_at")

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        # Read-only: its page is the view permission's.
        return False

    @admin.display(description="Problems (nothing was imported)")
    def problem_list(self, item_import):
        if not item_import.errors:
            return "none"
        return format_html(
            "<table><tr><th>row</th><th>column</th><th>problem</th></tr>{}</table>",
            format_html_join("", "<tr><td>{}</td><td>{}</td><td>{}</td></tr>",
                             ((p.get("row") or "", p.get("column") or "", p["message"]) for p in item_import.errors)),
        )

    @admin.display(description="Warnings")
    def warning_list(self, item_import):
        if not item_import.warnings:
            return "none"
        return format_html("<ul>{}</ul>", format_html_join("", "<li>{}</li>", ((w,) for w in item_import.warnings)))

    @admin.display(description="File")
    def download(self, item_import):
        url = reverse("admin:annotation_itemimport_download", args=[item_import.pk])
        return format_html("<a href='{}'>{}</a> ({} bytes)", url, item_import.filename, len(item_import.content))

    def get_urls(self):
        return [
            path("<int:object_id>/download/", self.admin_site.admin_view(self.download_view),
                 name="annotation_itemimport_download"),
            *super().get_urls(),
        ]

    def download_view(self, request, object_id: int):
        item_import = get_object_or_404(self.get_queryset(request), pk=object_id)
        if not self.has_view_permission(request, item_import):
            return HttpResponse(status=403)
        response = HttpResponse(bytes(item_import.content), content_type="application/octet-stream")
        response["Content-Disposition"] = f'attachment; filename="{item_import.filename}"'
        return response


@admin.register(Item)
class ItemAdmin(TeamScopedAdmin, admin.ModelAdmin):
    list_display = ("external_id", "study", "short_target", "position")
    list_filter = ("study",)
    search_fields = ("external_id", "target", "preceding", "following")
    raw_id_fields = ("source_import",)
    list_select_related = ("study",)

    @admin.display(description="target")
    def short_target(self, item):
        return item.target if len(item.target) <= 90 else item.target[:87] + "…"


@admin.register(Participant)
class ParticipantAdmin(TeamScopedAdmin, admin.ModelAdmin):
    list_display = ("pseudonym", "study", "team", "status", "invite_link", "created_at", "completed_at")
    list_filter = ("study", "status", "team")
    search_fields = ("pseudonym", "prolific_pid")
    readonly_fields = ("invite_link", "invite_token", "source_import", "seed", "prolific_pid", "prolific_study_id",
                       "prolific_session_id", "via_open_link", "read_instructions_at", "attention_check_score",
                       "attention_checks_passed", "created_at", "updated_at", "started_at", "completed_at",
                       "withdrawn_at")

    @admin.display(description="invite link")
    def invite_link(self, participant):
        return format_html("<code>{}</code>", reverse("participant:resume", args=[participant.invite_token]))
    list_select_related = ("study",)


@admin.register(Label)
class LabelAdmin(TeamScopedAdmin, admin.ModelAdmin):
    list_display = ("participant", "item", "value", "created_at")
    list_filter = ("value", "item__study")
    search_fields = ("participant__pseudonym", "item__external_id")
    raw_id_fields = ("participant", "item")
    list_select_related = ("participant", "item")
