"""Admin for instruments (upload a JSON definition, validated with every problem named), for the
psychometric data of participants (read-only: it is computed or given by participants), and for annotator
data imports (read-only; uploaded from a study's page, "Import annotator data…"; deleting one deletes the
scores, answers and trials it brought, puts back the teams it changed and recomputes the study's analysis)."""
from django import forms
from django.contrib import admin, messages
from django.http import HttpResponse
from django.shortcuts import get_object_or_404, redirect
from django.template.response import TemplateResponse
from django.urls import path, reverse
from django.utils.html import format_html, format_html_join

from psychometrics.annotator_imports import annotator_import_delete
from psychometrics.forms import StudyInstrumentForm, StudyInstrumentFormSet
from psychometrics.instruments import InstrumentError
from psychometrics.models import AnnotatorImport, IATSession, Instrument, InstrumentScore, StudyInstrument
from psychometrics.services import instrument_upload
from teams.admin_scoping import TeamScopedAdmin, TeamScopedInline


class InstrumentUploadForm(forms.Form):
    file = forms.FileField(help_text="A JSON file in the instrument format (see psychometrics/instruments.py).")


@admin.register(Instrument)
class InstrumentAdmin(admin.ModelAdmin):
    list_display = ("name", "slug", "version", "partial", "shipped", "content_hash", "created_at")
    list_filter = ("shipped", "partial")
    readonly_fields = ("slug", "name", "version", "partial", "definition", "content_hash", "shipped",
                       "uploaded_by", "created_at")

    def has_add_permission(self, request):
        return False

    def get_urls(self):
        return [path("upload/", self.admin_site.admin_view(self.upload_view), name="psychometrics_instrument_upload"),
                *super().get_urls()]

    def upload_view(self, request):
        if not request.user.has_perm("psychometrics.change_instrument"):
            return redirect("admin:index")
        form = InstrumentUploadForm(request.POST or None, request.FILES or None)
        problems: list[str] = []
        if request.method == "POST" and form.is_valid():
            try:
                instrument = instrument_upload(content=form.cleaned_data["file"].read(), uploaded_by=request.user)
            except InstrumentError as error:
                problems = list(error.problems)
            else:
                messages.success(request, f"{instrument} stored.")
                return redirect("admin:psychometrics_instrument_change", instrument.pk)
        return TemplateResponse(request, "admin/psychometrics/instrument/upload.html", {
            **self.admin_site.each_context(request), "opts": self.model._meta, "form": form,
            "problems": problems, "title": "Upload an instrument"})


class StudyInstrumentInline(TeamScopedInline, admin.TabularInline):
    """A study's instruments: a new row's role is what its instrument is, and the rows are checked together by the
    rules the API applies (``psychometrics.roles``)."""

    model = StudyInstrument
    form = StudyInstrumentForm
    formset = StudyInstrumentFormSet
    extra = 0
    fields = ("position", "instrument", "role", "randomise_items")


@admin.register(InstrumentScore)
class InstrumentScoreAdmin(TeamScopedAdmin, admin.ModelAdmin):
    list_display = ("participant", "instrument", "total", "tier", "computed_at")
    list_filter = ("instrument", "participant__study")
    readonly_fields = [f.name for f in InstrumentScore._meta.fields]

    def has_add_permission(self, request):
        return False


@admin.register(IATSession)
class IATSessionAdmin(TeamScopedAdmin, admin.ModelAdmin):
    list_display = ("participant", "condition_index", "blocks_done", "d_score", "input_modality", "d600_score",
                    "flagged_fast", "completed_at")
    list_filter = ("participant__study", "flagged_fast", "input_modality")
    exclude = ("design",)
    readonly_fields = [f.name for f in IATSession._meta.fields if f.name != "design"]

    def has_add_permission(self, request):
        return False


@admin.register(AnnotatorImport)
class AnnotatorImportAdmin(TeamScopedAdmin, admin.ModelAdmin):
    list_display = ("filename", "study", "kind", "n_annotators", "n_rows", "created_at")
    list_filter = ("kind", "study")
    exclude = ("content", "warnings")
    readonly_fields = ("study", "kind", "filename", "file_format", "download", "sha256", "encoding", "options",
                       "columns", "counts", "team_changes", "n_rows", "n_annotators", "warning_list", "uploaded_by",
                       "created_at")

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        # Read-only: its page is the view permission's.
        return False

    def delete_model(self, request, obj):
        annotator_import_delete(annotator_import=obj)

    def delete_queryset(self, request, queryset):
        # One by one through the service: each restores its own teams and asks for its study's analysis.
        for annotator_import in queryset.defer("content"):
            annotator_import_delete(annotator_import=annotator_import)

    @admin.display(description="Warnings")
    def warning_list(self, annotator_import):
        if not annotator_import.warnings:
            return "none"
        return format_html("<ul>{}</ul>", format_html_join("", "<li>{}</li>", ((w,) for w in annotator_import.warnings)))

    @admin.display(description="File")
    def download(self, annotator_import):
        url = reverse("admin:psychometrics_annotatorimport_download", args=[annotator_import.pk])
        return format_html("<a href='{}'>{}</a> ({} bytes)", url, annotator_import.filename,
                           len(annotator_import.content))

    def get_urls(self):
        return [path("<int:object_id>/download/", self.admin_site.admin_view(self.download_view),
                     name="psychometrics_annotatorimport_download"),
                *super().get_urls()]

    def download_view(self, request, object_id: int):
        annotator_import = get_object_or_404(self.get_queryset(request), pk=object_id)
        if not self.has_view_permission(request, annotator_import):
            return HttpResponse(status=403)
        response = HttpResponse(bytes(annotator_import.content), content_type="application/octet-stream")
        response["Content-Disposition"] = f'attachment; filename="{annotator_import.filename}"'
        return response
