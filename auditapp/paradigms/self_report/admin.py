"""Admin of self-report audits' own records: the phrasing variants of the masked form (registered by the
paradigm's adapter through ``Paradigm.register_admin``)."""
from __future__ import annotations

from django import forms
from django.contrib import admin

from auditapp.models import ItemVariant
from auditapp.paradigms.self_report import services as self_report_services


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


def register_admin(site: admin.AdminSite) -> None:
    site.register(ItemVariant, ItemVariantAdmin)
