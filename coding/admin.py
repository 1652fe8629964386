"""Admin of coding rounds: where researchers draw a round, invite its coders and run it without the API.

Rounds: "Add" draws one from a completed audit whose paradigm has explained replies (picked first, or given as
``?audit=<id>`` by the audit's dashboard), with the sample's settings and one codebook per lens; its page shows the
settings and draw (never edited: a round's sample is fixed), the coders with their invite links and progress, the
cross-lens mappings, and buttons to add or remove coders, replace mappings, close and reopen. Every write goes
through ``coding.round_services``; the problems a service names are shown on the page, and nothing is stored.

Codebooks: a version with its codes inline. Every save goes through ``codebook_save``: a version a round uses,
or one the app shipped, is never changed, so saving it creates the next version (and says so); the codes are
checked by the same rules as the API (``coding.codebooks.codebook_parse``), every problem shown on the page.
"""
from __future__ import annotations

from django import forms
from django.contrib import admin, messages
from django.contrib.auth import get_user_model
from django.core.exceptions import PermissionDenied, ValidationError
from django.forms.models import BaseInlineFormSet
from django.http import Http404, HttpResponseRedirect
from django.shortcuts import get_object_or_404
from django.template.response import TemplateResponse
from django.urls import path, reverse

from auditapp.engine import registry
from auditapp.models import Audit
from coding import round_services
from coding.access import blind_reason
from coding.codebook_selectors import codebook_defaults_latest, codebook_latest_versions
from coding.codebook_services import codebook_create, codebook_frozen, codebook_save
from coding.codebooks import CodebookInvalid, codebook_parse
from coding.models import Code, Codebook, Coder, CodingRound, RoundLens
from coding.round_selectors import round_detail
from coding.round_services import SEED_RANGE
from teams import roles
from teams.admin_scoping import TeamScopedAdmin, TeamScopedInline, editable_teams, holds, usable

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


class CodeInline(TeamScopedInline, admin.TabularInline):
    model = Code
    formset = CodeInlineFormSet
    fields = ("position", "name", "shortcut", "definition", "examples", "definition_is_ours")
    extra = 1

    def _shipped_editable(self, request, obj) -> bool:
        # The codes of a shipped codebook are edited as the new version its editor's team gets (CodebookAdmin).
        return obj is not None and obj.team_id is None and editable_teams(request.user).exists()

    def has_add_permission(self, request, obj):
        return super().has_add_permission(request, obj) or (
            admin.TabularInline.has_add_permission(self, request, obj) and self._shipped_editable(request, obj))

    def has_change_permission(self, request, obj=None):
        return super().has_change_permission(request, obj) or (
            admin.TabularInline.has_change_permission(self, request, obj) and self._shipped_editable(request, obj))

    def has_delete_permission(self, request, obj=None):
        return super().has_delete_permission(request, obj) or (
            admin.TabularInline.has_delete_permission(self, request, obj) and self._shipped_editable(request, obj))


@admin.register(Codebook)
class CodebookAdmin(TeamScopedAdmin, admin.ModelAdmin):
    list_display = ("name", "version", "shipped", "created_at")
    list_filter = ("shipped",)
    search_fields = ("name",)
    fields = ("name", "description", "source", "lineage", "version", "shipped", "created_by", "created_at")
    readonly_fields = ("lineage", "version", "shipped", "created_by", "created_at")
    inlines = [CodeInline]

    def has_change_permission(self, request, obj=None):
        if obj is not None and obj.team_id is None:
            # A shipped codebook is never changed: an edit is a new version in the editor's team.
            return (super(TeamScopedAdmin, self).has_change_permission(request, obj)
                    and editable_teams(request.user).exists())
        return super().has_change_permission(request, obj)

    def save_model(self, request, obj, form, change):
        # Codebook and codes are stored together in save_related, through the service.
        pass

    def save_related(self, request, form, formsets, change):
        spec = next(formset.codebook_spec for formset in formsets if isinstance(formset, CodeInlineFormSet))
        for formset in formsets:
            # The service stores the codes, not the formset; the change message reads what a formset saved.
            formset.new_objects, formset.changed_objects, formset.deleted_objects = [], [], []
        if not change:
            team = self.team_for_new(request, form.cleaned_data.get("team"))
            created = codebook_create(spec=spec, created_by=request.user, team=team)
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

# ---- Rounds ----

LENS_SLOTS = 6


def _explained_audits():
    """Completed audits whose paradigm offers explained replies (the ones a round can be drawn from)."""
    paradigms = [paradigm.name for paradigm in registry.every() if paradigm.explained_replies is not None]
    return Audit.objects.filter(status=Audit.Status.COMPLETED, paradigm__in=paradigms).order_by("-created_at")


class AuditPickForm(forms.Form):
    audit = forms.ModelChoiceField(queryset=Audit.objects.none(), help_text="A completed audit whose replies carry a "
                                                                            "label and an explanation.")

    def __init__(self, *args, user, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["audit"].queryset = usable(user, _explained_audits())


def selection_initial(query) -> dict:
    """A round's starting settings from the audit dashboard's error browser (?eligible=disagree&models_included=…
    &conditions_included=…): only what a round can draw from; the form checks every value again on submit."""
    initial: dict = {}
    if query.get("eligible") in CodingRound.Eligible.values:
        initial["eligible"] = query["eligible"]
    for name in ("models_included", "conditions_included"):
        if query.getlist(name):
            initial[name] = query.getlist(name)
    return initial


class RoundCreateForm(forms.Form):
    """The settings of a new round of one audit (seed 000 §3.4: 99 excerpts across models and conditions)."""

    name = forms.CharField(max_length=200, required=False, help_text="Blank: named after the audit.")
    sample_size = forms.IntegerField(min_value=1, initial=99)
    allocation = forms.ChoiceField(choices=CodingRound.Allocation.choices, initial=CodingRound.Allocation.PROPORTIONAL)
    eligible = forms.ChoiceField(choices=CodingRound.Eligible.choices, initial=CodingRound.Eligible.PARSED)
    models_included = forms.MultipleChoiceField(required=False, widget=forms.CheckboxSelectMultiple,
                                                label="Models", help_text="None ticked: every model.")
    conditions_included = forms.MultipleChoiceField(required=False, widget=forms.CheckboxSelectMultiple,
                                                    label="Conditions", help_text="None ticked: every condition.")
    seed = forms.IntegerField(required=False, min_value=SEED_RANGE[0], max_value=SEED_RANGE[1],
                              help_text="Blank: a random seed, recorded with the draw.")
    show_model = forms.BooleanField(required=False, help_text="Coders see which model answered.")
    show_condition = forms.BooleanField(required=False, help_text="Coders see the prompting condition.")
    show_reference = forms.BooleanField(required=False, help_text="Coders see the weighted ground truth.")

    def __init__(self, *args, audit: Audit, user, **kwargs):
        super().__init__(*args, **kwargs)
        self.audit = audit
        self.fields["models_included"].choices = [(str(model.id), model.label or model.model)
                                                  for model in audit.models.order_by("position", "id")]
        self.fields["conditions_included"].choices = [(condition, condition) for condition in
                                                      audit.conditions.order_by("position")
                                                      .values_list("condition", flat=True)]
        codebooks = usable(user, codebook_latest_versions())
        defaults = [codebook.id for codebook in codebook_defaults_latest()]
        for slot in range(LENS_SLOTS):
            self.fields[f"lens_{slot + 1}"] = forms.ModelChoiceField(
                queryset=codebooks, required=slot == 0, label=f"Lens {slot + 1} codebook",
                initial=defaults[slot] if slot < len(defaults) else None)

    def codebook_ids(self) -> list[int]:
        return [self.cleaned_data[f"lens_{slot + 1}"].id for slot in range(LENS_SLOTS)
                if self.cleaned_data.get(f"lens_{slot + 1}") is not None]

    def create(self, user) -> CodingRound:
        data = self.cleaned_data
        return round_services.round_create(
            audit=self.audit, codebooks=self.codebook_ids(), name=data["name"], sample_size=data["sample_size"],
            allocation=data["allocation"], eligible=data["eligible"],
            models_included=[int(model) for model in data["models_included"]],
            conditions_included=data["conditions_included"], seed=data["seed"], show_model=data["show_model"],
            show_condition=data["show_condition"], show_reference=data["show_reference"], created_by=user)


class CoderAddForm(forms.Form):
    lens = forms.ModelChoiceField(queryset=RoundLens.objects.none())
    user = forms.ModelChoiceField(queryset=get_user_model().objects.none(), required=False,
                                  label="Researcher account", help_text="Or leave blank and name an outside coder.")
    name = forms.CharField(max_length=100, required=False, help_text="The only name exports show.")

    def __init__(self, *args, coding_round: CodingRound, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["lens"].queryset = coding_round.lenses.select_related("codebook").order_by("position")
        self.fields["user"].queryset = get_user_model().objects.filter(is_staff=True, is_active=True)


class MappingForm(forms.Form):
    name = forms.CharField(max_length=200)
    codes = forms.ModelMultipleChoiceField(queryset=Code.objects.none(), widget=forms.CheckboxSelectMultiple,
                                           help_text="Codes of at least two lenses read as one finding.")

    def __init__(self, *args, coding_round: CodingRound, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["codes"].queryset = (Code.objects.filter(codebook__in=coding_round.lenses.values("codebook"))
                                         .select_related("codebook"))
        self.fields["codes"].label_from_instance = lambda code: f"{code.codebook.name}: {code.name}"


@admin.register(CodingRound)
class CodingRoundAdmin(TeamScopedAdmin, admin.ModelAdmin):
    list_display = ("name", "audit", "sample_size", "created_at", "closed_at")
    list_filter = ("closed_at",)
    search_fields = ("name",)

    def has_change_permission(self, request, obj=None):
        # The sample is never edited; the round's page changes only coders, mappings and whether it is open.
        return False

    def get_urls(self):
        def view(function):
            return self.admin_site.admin_view(function)
        own = [
            path("<int:round_id>/coders/", view(self.coders_add), name="coding_codinground_coders"),
            path("<int:round_id>/coders/<int:coder_id>/remove/", view(self.coder_remove),
                 name="coding_codinground_coder_remove"),
            path("<int:round_id>/mappings/", view(self.mapping_add), name="coding_codinground_mappings"),
            path("<int:round_id>/mappings/<int:mapping_id>/remove/", view(self.mapping_remove),
                 name="coding_codinground_mapping_remove"),
            *(path(f"<int:round_id>/{action}/", view(self.open_or_close), {"action": action},
                   name=f"coding_codinground_{action}") for action in ("close", "reopen")),
        ]
        return own + super().get_urls()

    def _page(self, request, template: str, context: dict, status: int = 200):
        return TemplateResponse(request, template, {**self.admin_site.each_context(request),
                                                    "opts": self.model._meta, **context}, status=status)

    def add_view(self, request, form_url="", extra_context=None):
        if not self.has_add_permission(request):
            raise PermissionDenied
        audit = None
        if request.GET.get("audit"):
            picked = AuditPickForm(request.GET, user=request.user)
            if not picked.is_valid():
                return self._page(request, "admin/coding/codinground/pick_audit.html",
                                  {"title": "Draw an error-analysis round", "form": picked}, status=400)
            audit = picked.cleaned_data["audit"]
        if audit is None:
            return self._page(request, "admin/coding/codinground/pick_audit.html",
                              {"title": "Draw an error-analysis round", "form": AuditPickForm(user=request.user)})
        form = RoundCreateForm(request.POST or None, audit=audit, user=request.user,
                               initial=selection_initial(request.GET))
        status = 200
        if request.method == "POST":
            if form.is_valid():
                try:
                    coding_round = form.create(request.user)
                except round_services.RoundError as error:
                    for problem in error.problems:
                        form.add_error(None, problem)
                else:
                    self.message_user(request, f"Round {coding_round.name!r} drawn: {coding_round.excerpts.count()} "
                                               "excerpts. Now add its coders.", messages.SUCCESS)
                    return HttpResponseRedirect(reverse("admin:coding_codinground_change", args=[coding_round.pk]))
            status = 400
        return self._page(request, "admin/coding/codinground/add.html",
                          {"title": f"Draw an error-analysis round of {audit.name}", "form": form, "audit": audit},
                          status=status)

    def change_view(self, request, object_id, form_url="", extra_context=None):
        coding_round = self.get_object(request, object_id)  # None for an id that is not one (also "abc")
        if coding_round is None:
            raise Http404(f"No coding round with id {object_id!r}.")
        if not self.has_view_permission(request, coding_round) or request.method == "POST":
            raise PermissionDenied  # the page's forms post to the round's own URLs, never here
        return self._round_page(request, coding_round)

    def _round_page(self, request, coding_round, *, coder_form=None, mapping_form=None, status: int = 200):
        detail = round_detail(coding_round)
        # A researcher coding in this open round sees only their own link (coding.access.blind_reason).
        blind = blind_reason(request.user, coding_round)
        for coder in detail["coders"]:
            own = coder["user"] == request.user.id
            coder["invite_link"] = request.build_absolute_uri(coder["invite_path"]) if own or not blind else ""
            coder["can_remove"] = coder["started_at"] is None and not (own and coding_round.closed_at is None)
        return self._page(request, "admin/coding/codinground/round.html", {
            "title": coding_round.name, "round": coding_round, "detail": detail, "original": coding_round,
            "blind": blind,
            "coder_form": coder_form or CoderAddForm(coding_round=coding_round),
            "mapping_form": mapping_form or MappingForm(coding_round=coding_round)}, status=status)

    def _round(self, request, round_id: int) -> CodingRound:
        if request.method != "POST" or not request.user.has_perm("coding.change_codinground"):
            raise PermissionDenied
        coding_round = get_object_or_404(self.get_queryset(request), pk=round_id)
        if not holds(request.user, coding_round, roles.EDITOR):
            raise PermissionDenied
        return coding_round

    def _back(self, coding_round: CodingRound):
        return HttpResponseRedirect(reverse("admin:coding_codinground_change", args=[coding_round.pk]))

    def coders_add(self, request, round_id: int):
        coding_round = self._round(request, round_id)
        form = CoderAddForm(request.POST, coding_round=coding_round)
        if form.is_valid():
            user = form.cleaned_data["user"]
            try:
                coder = round_services.coder_add(coding_round=coding_round, lens_id=form.cleaned_data["lens"].id,
                                                 user_id=user.id if user else None, name=form.cleaned_data["name"])
            except round_services.RoundError as error:
                for problem in error.problems:
                    form.add_error(None, problem)
            else:
                send = ("another researcher, who does not code in this round, sends them their invite link "
                        "(it would open their codes to you)" if blind_reason(request.user, coding_round)
                        else "send them their invite link below")
                self.message_user(request, f"Coder {coder.name!r} added: {send}.", messages.SUCCESS)
                return self._back(coding_round)
        return self._round_page(request, coding_round, coder_form=form, status=400)

    def coder_remove(self, request, round_id: int, coder_id: int):
        coding_round = self._round(request, round_id)
        coder = get_object_or_404(Coder, pk=coder_id, round=coding_round)
        try:
            round_services.coder_remove(coder=coder, by=request.user)
        except round_services.RoundError as error:
            for problem in error.problems:
                self.message_user(request, problem, messages.ERROR)
        else:
            self.message_user(request, f"Coder {coder.name!r} removed.", messages.SUCCESS)
        return self._back(coding_round)

    def _mappings_replace(self, request, coding_round, mappings, form=None):
        try:
            round_services.mappings_replace(coding_round=coding_round, mappings=mappings)
        except round_services.RoundError as error:
            form = form or MappingForm(coding_round=coding_round)
            for problem in error.problems:
                form.add_error(None, problem)
            return self._round_page(request, coding_round, mapping_form=form, status=400)
        return self._back(coding_round)

    def _stored_mappings(self, coding_round, *, leaving_out: int | None = None) -> list:
        return [round_services.MappingSpec(name=mapping.name, codes=tuple(code.id for code in mapping.codes.all()))
                for mapping in coding_round.mappings.prefetch_related("codes") if mapping.id != leaving_out]

    def mapping_add(self, request, round_id: int):
        coding_round = self._round(request, round_id)
        form = MappingForm(request.POST, coding_round=coding_round)
        if not form.is_valid():
            return self._round_page(request, coding_round, mapping_form=form, status=400)
        added = round_services.MappingSpec(name=form.cleaned_data["name"],
                                           codes=tuple(code.id for code in form.cleaned_data["codes"]))
        return self._mappings_replace(request, coding_round, [*self._stored_mappings(coding_round), added], form)

    def mapping_remove(self, request, round_id: int, mapping_id: int):
        coding_round = self._round(request, round_id)
        return self._mappings_replace(request, coding_round,
                                      self._stored_mappings(coding_round, leaving_out=mapping_id))

    def open_or_close(self, request, round_id: int, action: str):
        coding_round = self._round(request, round_id)
        change = {"close": round_services.round_close, "reopen": round_services.round_reopen}[action]
        try:
            change(coding_round=coding_round, by=request.user)
        except round_services.RoundError as error:
            for problem in error.problems:
                self.message_user(request, problem, messages.ERROR)
        return self._back(coding_round)

# ---- end of Rounds ----
