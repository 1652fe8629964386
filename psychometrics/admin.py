"""Admin for instruments (upload a JSON definition, validated with every problem named) and for the
psychometric data of participants (read-only: it is computed or given by participants)."""
from django import forms
from django.contrib import admin, messages
from django.shortcuts import redirect
from django.template.response import TemplateResponse
from django.urls import path

from psychometrics.instruments import InstrumentError
from psychometrics.models import IATSession, Instrument, InstrumentScore, StudyInstrument
from psychometrics.services import instrument_upload


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


class StudyInstrumentInline(admin.TabularInline):
    model = StudyInstrument
    extra = 0
    fields = ("position", "instrument", "role", "randomise_items")


@admin.register(InstrumentScore)
class InstrumentScoreAdmin(admin.ModelAdmin):
    list_display = ("participant", "instrument", "total", "tier", "computed_at")
    list_filter = ("instrument", "participant__study")
    readonly_fields = [f.name for f in InstrumentScore._meta.fields]

    def has_add_permission(self, request):
        return False


@admin.register(IATSession)
class IATSessionAdmin(admin.ModelAdmin):
    list_display = ("participant", "condition_index", "blocks_done", "d_score", "d600_score", "flagged_fast",
                    "completed_at")
    list_filter = ("participant__study", "flagged_fast")
    exclude = ("design",)
    readonly_fields = [f.name for f in IATSession._meta.fields if f.name != "design"]

    def has_add_permission(self, request):
        return False
