"""Admin of coding rounds.

Codebooks: a version with its codes inline. Every save goes through ``codebook_save``: a version a round uses,
or one the app shipped, is never changed, so saving it creates the next version (and says so); the codes are
checked by the same rules as the API (``coding.codebooks.codebook_parse``), every problem shown on the page.
"""
from __future__ import annotations

from django.contrib import admin, messages
from django.core.exceptions import ValidationError
from django.forms.models import BaseInlineFormSet
from django.http import HttpResponseRedirect
from django.urls import reverse

from coding.codebook_services import codebook_create, codebook_frozen, codebook_save
from coding.codebooks import CodebookInvalid, codebook_parse
from coding.models import Code, Codebook

# ---- Codebooks (helper 1) ----


class CodeInlineFormSet(BaseInlineFormSet):
    """Checks the codebook the page describes as a whole and keeps it as ``codebook_spec`` for saving."""

    def clean(self):
        super().clean()
        kept = [form for form in self.forms
                if form.cleaned_data and not form.cleaned_data.get("DELETE") and form.cleaned_data.get("name")]
        # A new row keeps its place at the end unless its position was typed in.
        kept.sort(key=lambda form: form.cleaned_data.get("position") or 0
                  if form.instance.pk or "position" in form.changed_data else float("inf"))
        data = {"name": self.instance.name, "description": self.instance.description, "source": self.instance.source,
                # An emptied field is left out (a default), not given as null (a problem in the API).
                "codes": [{key: form.cleaned_data[key] for key in
                           ("name", "definition", "examples", "shortcut", "definition_is_ours")
                           if form.cleaned_data.get(key) is not None}
                          for form in kept]}
        try:
            self.codebook_spec = codebook_parse(data)
        except CodebookInvalid as invalid:
            raise ValidationError([str(problem) for problem in invalid.problems]) from None


class CodeInline(admin.TabularInline):
    model = Code
    formset = CodeInlineFormSet
    fields = ("position", "name", "shortcut", "definition", "examples", "definition_is_ours")
    extra = 1


@admin.register(Codebook)
class CodebookAdmin(admin.ModelAdmin):
    list_display = ("name", "version", "shipped", "created_at")
    list_filter = ("shipped",)
    search_fields = ("name",)
    fields = ("name", "description", "source", "lineage", "version", "shipped", "created_by", "created_at")
    readonly_fields = ("lineage", "version", "shipped", "created_by", "created_at")
    inlines = [CodeInline]

    def save_model(self, request, obj, form, change):
        # Codebook and codes are stored together in save_related, through the service.
        pass

    def save_related(self, request, form, formsets, change):
        spec = next(formset.codebook_spec for formset in formsets if isinstance(formset, CodeInlineFormSet))
        for formset in formsets:
            # The service stores the codes, not the formset; the change message reads what a formset saved.
            formset.new_objects, formset.changed_objects, formset.deleted_objects = [], [], []
        if not change:
            created = codebook_create(spec=spec, created_by=request.user)
            form.instance.pk, form.instance.lineage = created.pk, created.lineage
            return
        stored = Codebook.objects.get(pk=form.instance.pk)
        was_frozen = codebook_frozen(stored)
        saved = codebook_save(codebook=stored, spec=spec, saved_by=request.user)
        if saved.new_version:
            request.codebook_new_version = saved.codebook
            reason = "the app shipped it" if stored.shipped else "a round uses it"
            self.message_user(request, f"Version {stored.version} was not changed ({reason}): your edit is version "
                                       f"{saved.codebook.version}.", messages.WARNING)
        elif was_frozen:
            self.message_user(request, "Nothing changed: no new version was made.", messages.INFO)

    def response_change(self, request, obj):
        new_version = getattr(request, "codebook_new_version", None)
        if new_version is not None:
            return HttpResponseRedirect(reverse("admin:coding_codebook_change", args=[new_version.pk]))
        return super().response_change(request, obj)


# ---- end of Codebooks ----
