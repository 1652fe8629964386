"""Admin of teams: a researcher sees the teams they are in with their members; an owner renames the team and adds,
removes and changes the role of members, every change going through :mod:`teams.services` (owner only, a team keeps
an owner, one access-log event each). The access log is read-only: an owner reads the events of their teams and
exports them as CSV (a superuser every event).

Teams are not in the "Researchers" group's model permissions: who may do what here is the user's role in the team.
"""
from __future__ import annotations

from django import forms
from django.contrib import admin, messages
from django.core.exceptions import ValidationError
from django.db.models import Count
from django.forms.models import BaseInlineFormSet
from django.urls import path

from common.api.csv_export import streaming_csv_response
from teams import roles, services
from teams.models import AccessEvent, Membership, Team
from teams.selectors import ACCESS_LOG_COLUMNS, access_event_rows, access_events, teams_with_role


def _researcher(request) -> bool:
    user = request.user
    return bool(user.is_active and user.is_staff)


def _owns(request, team: Team | None) -> bool:
    return team is not None and team.pk is not None and services.is_owner(request.user, team)


class MembershipForm(forms.ModelForm):
    class Meta:
        model = Membership
        fields = ("user", "role")

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        from django.contrib.auth import get_user_model

        self.fields["user"].queryset = get_user_model().objects.filter(  # type: ignore[attr-defined]
            is_staff=True, is_active=True)
        if self.instance.pk:
            # A member is removed or given another role, never swapped for someone else.
            self.fields["user"].disabled = True


class MembershipFormSet(BaseInlineFormSet):
    """Refuses an edit that would leave the team without an owner (the services refuse it too)."""

    def clean(self):
        super().clean()
        if self.instance.pk is None:
            return  # the creator becomes the new team's owner
        owners = 0
        for form in self.forms:
            data = getattr(form, "cleaned_data", None) or {}
            if data and not data.get("DELETE") and data.get("role") == roles.OWNER:
                owners += 1
        if owners == 0:
            raise ValidationError("A team keeps at least one owner: make another member an owner first.")


class MembershipInline(admin.TabularInline):
    model = Membership
    form = MembershipForm
    formset = MembershipFormSet
    extra = 1
    fields = ("user", "role", "created_at")
    readonly_fields = ("created_at",)

    def has_view_permission(self, request, obj=None):
        return _researcher(request)

    def has_add_permission(self, request, obj):  # type: ignore[override]
        return obj is None or _owns(request, obj)

    def has_change_permission(self, request, obj=None):
        return obj is None or _owns(request, obj)

    def has_delete_permission(self, request, obj=None):
        return obj is not None and _owns(request, obj)


@admin.register(Team)
class TeamAdmin(admin.ModelAdmin):
    list_display = ("name", "my_role", "n_members", "created_at")
    search_fields = ("name",)
    fields = ("name", "created_at")
    readonly_fields = ("created_at",)
    inlines = [MembershipInline]

    def get_queryset(self, request):
        return teams_with_role(request.user).annotate(n_members=Count("memberships"))

    def has_module_permission(self, request):
        return _researcher(request)

    def has_view_permission(self, request, obj=None):
        return _researcher(request)  # the queryset holds only their teams

    def has_add_permission(self, request):
        return _researcher(request)

    def has_change_permission(self, request, obj=None):
        return _researcher(request) and (obj is None or _owns(request, obj))

    def has_delete_permission(self, request, obj=None):
        return _researcher(request) and (obj is None or _owns(request, obj))

    @admin.display(description="your role", ordering="my_role")
    def my_role(self, team: Team) -> str:
        return getattr(team, "my_role", None) or "—"

    @admin.display(description="members", ordering="n_members")
    def n_members(self, team: Team) -> int:
        return getattr(team, "n_members", 0)

    def save_model(self, request, obj, form, change):
        try:
            if change:
                services.rename_team(user=request.user, team=Team.objects.get(pk=obj.pk), name=obj.name)
            else:
                created = services.create_team(user=request.user, name=obj.name)
                obj.pk, obj.created_at = created.pk, created.created_at
                obj._state.adding = False
        except services.TeamError as error:
            self.message_user(request, str(error), messages.ERROR)

    def save_formset(self, request, form, formset, change):
        if formset.model is not Membership:
            super().save_formset(request, form, formset, change)
            return
        formset.save(commit=False)
        team = form.instance
        # New members first, then roles, then removals: handing the team over to a new owner works in one save.
        steps = ([lambda m=m: services.add_member(user=request.user, team=team, member=m.user, role=m.role)
                  for m in formset.new_objects]
                 + [lambda m=m: services.change_role(user=request.user, membership=m, role=m.role)
                    for m, _ in formset.changed_objects]
                 + [lambda m=m: services.remove_member(user=request.user, membership=m)
                    for m in formset.deleted_objects])
        for step in steps:
            try:
                step()
            except services.TeamError as error:
                self.message_user(request, str(error), messages.ERROR)

    def delete_model(self, request, obj):
        services.delete_team(user=request.user, team=obj)

    def delete_queryset(self, request, queryset):
        for team in queryset:
            try:
                services.delete_team(user=request.user, team=team)
            except services.TeamError as error:
                self.message_user(request, str(error), messages.ERROR)


@admin.register(AccessEvent)
class AccessEventAdmin(admin.ModelAdmin):
    """Read-only: who exported what and who changed a team, for the owners of the team (every event for a
    superuser)."""

    list_display = ("at", "username", "team", "action", "target_kind", "target_id", "detail")
    list_filter = ("action",)
    search_fields = ("username", "target_kind", "target_id")
    date_hierarchy = "at"
    actions = ["export_csv"]

    def get_queryset(self, request):
        return access_events(request.user).select_related("team")

    def get_list_filter(self, request):
        # The team filter lists only the teams whose events the user reads.
        return ("action", ("team", admin.RelatedOnlyFieldListFilter))

    def has_module_permission(self, request):
        return _researcher(request)

    def has_view_permission(self, request, obj=None):
        if not _researcher(request):
            return False
        return obj is None or access_events(request.user).filter(pk=obj.pk).exists()

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False

    def get_urls(self):
        return [path("export.csv", self.admin_site.admin_view(self.export_view), name="teams_accessevent_export"),
                *super().get_urls()]

    def _csv(self, events):
        return streaming_csv_response(ACCESS_LOG_COLUMNS, access_event_rows(events).iterator(),
                                      filename="access-log.csv")

    @admin.action(description="Export the selected events as CSV")
    def export_csv(self, request, queryset):
        return self._csv(queryset)

    def export_view(self, request):
        """Every event the user reads, as CSV (``?team=<id>`` for one team's)."""
        events = self.get_queryset(request)
        if request.GET.get("team", "").isdigit():
            events = events.filter(team_id=int(request.GET["team"]))
        return self._csv(events)
