"""Team scoping for the Django admin: every ModelAdmin of an owned model shows, changes and deletes only what the
user's role in the object's team allows, as the API does (:mod:`teams.api`).

:class:`TeamScopedAdmin` goes first in a ModelAdmin's bases (:class:`TeamScopedInline` in an inline's):

- the queryset is narrowed by :func:`teams.scoping.visible`, so an object of another team is "not found" (the admin
  redirects to its index saying it does not exist) and never rendered, in the changelist, the change, history and
  delete pages, the autocomplete and the raw-id popups alike;
- on top of the model permissions of the "Researchers" group, viewing an object needs the viewer role in its team,
  changing it the editor role (a viewer gets the read-only page, and a POST is refused), deleting it the owner role;
- an admin action acts only on the selected rows the user holds its role on (editor; owner to delete) and says how
  many it left alone;
- every choice of a related object (a study, a corpus, an endpoint, a codebook, an audit) offers only what the user
  may use (:func:`usable`), and list filters offer only the related objects of the rows the user sees;
- a new object goes to :func:`teams.scoping.team_for_new_object`'s team; an editor of several teams picks it in a
  ``team`` field offering only those teams.
"""
from __future__ import annotations

import functools
from typing import Any

from django import forms
from django.contrib import messages
from django.contrib.admin.filters import RelatedOnlyFieldListFilter
from django.contrib.admin.utils import NotRelationField, flatten_fieldsets, get_fields_from_path
from django.core.exceptions import FieldDoesNotExist, PermissionDenied
from django.db import models
from django.db.models import Q, QuerySet

from teams import roles
from teams.models import Team
from teams.scoping import TeamChoiceError, role_on, team_for_new_object, teams_of, visible


def owned(model: type[models.Model]) -> bool:
    """Whether rows of ``model`` belong to a team (it declares ``team_path``)."""
    return bool(getattr(model, "team_path", None))


def editable_teams(user: Any) -> QuerySet:
    """The teams a new object of ``user`` may go to: those where they are an editor or owner (all for a superuser)."""
    if user.is_superuser:
        return Team.objects.all()
    return Team.objects.filter(id__in=teams_of(user, roles.EDITOR))


def usable(user: Any, queryset: QuerySet) -> QuerySet:
    """The rows of ``queryset`` ``user`` may pick for an object they add or change: those of teams where they are an
    editor, an endpoint shared with one of those teams, a codebook shipped with the app."""
    model = queryset.model
    if not owned(model):
        return queryset
    editable = visible(user, queryset, roles.EDITOR)
    if user.is_superuser or not (user.is_active and user.is_staff):
        return editable
    extra = Q()
    if shared := getattr(model, "team_shared_with", None):
        extra |= Q(**{f"{shared}__in": teams_of(user, roles.EDITOR)})
    if getattr(model, "team_null_visible", False):
        extra |= Q(**{f"{model.team_path}__isnull": True})
    if not extra:
        return editable
    return queryset.filter(Q(pk__in=editable.values("pk")) | Q(pk__in=model._base_manager.filter(extra).values("pk")))


def narrow_choices(form: forms.BaseForm, user: Any) -> None:
    """Every choice of a team or of an owned object in ``form`` narrowed to what ``user`` may use."""
    for field in form.fields.values():
        if isinstance(field, forms.ModelChoiceField) and field.queryset is not None:
            model = field.queryset.model
            if model is Team:
                # A team to put an object in is one's own; the teams an endpoint is shared with are other labs'.
                if not isinstance(field, forms.ModelMultipleChoiceField):
                    field.queryset = field.queryset.filter(pk__in=editable_teams(user).values("pk"))
            elif owned(model):
                field.queryset = usable(user, field.queryset)


def holds(user: Any, obj: models.Model | None, role: str) -> bool:
    """Whether ``user`` holds ``role`` or above on ``obj`` (True when there is no object yet: a list or an add)."""
    return obj is None or roles.at_least(role_on(user, obj), role)


class TeamScopedAdmin:
    """First in the bases of the ModelAdmin of an owned model (see the module's docstring)."""

    view_role = roles.VIEWER
    change_role = roles.EDITOR
    delete_role = roles.OWNER
    model: type[models.Model]

    def get_queryset(self, request):
        return visible(request.user, super().get_queryset(request))  # type: ignore[misc]

    def has_view_permission(self, request, obj=None):
        return (super().has_view_permission(request, obj)  # type: ignore[misc]
                and holds(request.user, obj, self.view_role))

    def has_change_permission(self, request, obj=None):
        return (super().has_change_permission(request, obj)  # type: ignore[misc]
                and holds(request.user, obj, self.change_role))

    def has_delete_permission(self, request, obj=None):
        return (super().has_delete_permission(request, obj)  # type: ignore[misc]
                and holds(request.user, obj, self.delete_role))

    # ---- actions ----

    def get_actions(self, request):
        actions = super().get_actions(request)  # type: ignore[misc]
        return {name: (self._scoped_action(func, name), name, description)
                for name, (func, name, description) in actions.items()}

    def _scoped_action(self, func, name: str):
        needed = getattr(func, "team_role", self.delete_role if name == "delete_selected" else self.change_role)

        @functools.wraps(func)
        def action(modeladmin, request, queryset):
            allowed = visible(request.user, queryset, needed)
            left_alone = queryset.count() - allowed.count()
            if left_alone:
                modeladmin.message_user(request, f"{left_alone} of the selected rows were left alone: this action "
                                                 f"needs the {needed} role in their team.", messages.WARNING)
            if not allowed.exists():
                return None
            return func(modeladmin, request, allowed)
        return action

    # ---- choices ----

    def formfield_for_foreignkey(self, db_field, request, **kwargs):
        _narrow_relation(self, db_field, request, kwargs)
        return super().formfield_for_foreignkey(db_field, request, **kwargs)  # type: ignore[misc]

    def formfield_for_manytomany(self, db_field, request, **kwargs):
        _narrow_relation(self, db_field, request, kwargs)
        return super().formfield_for_manytomany(db_field, request, **kwargs)  # type: ignore[misc]

    def get_form(self, request, obj=None, change=False, **kwargs):
        form = super().get_form(request, obj, change=change, **kwargs)  # type: ignore[misc]
        return scoped_form_class(form, request.user, self.scope_form)

    def scope_form(self, form: forms.BaseForm, user: Any) -> None:
        """Narrow the choices of a form this admin shows (declared fields included, as a launch form's)."""
        narrow_choices(form, user)

    def get_list_filter(self, request):
        return [self._scoped_filter(entry) for entry in super().get_list_filter(request)]  # type: ignore[misc]

    def _scoped_filter(self, entry):
        if not isinstance(entry, str):
            return entry
        try:
            field = get_fields_from_path(self.model, entry)[-1]
        except (FieldDoesNotExist, NotRelationField):
            return entry
        related = field.related_model
        if field.is_relation and isinstance(related, type) and owned(related):
            # The plain filter would list every team's studies by name.
            return (entry, RelatedOnlyFieldListFilter)
        return entry

    # ---- the team of a new object ----

    def _has_team_field(self) -> bool:
        try:
            field = self.model._meta.get_field("team")
        except FieldDoesNotExist:
            return False
        return field.is_relation and field.related_model is Team

    def offers_team(self, request, obj=None) -> bool:
        """Whether the add form shows a ``team`` field: the user may add to several teams."""
        return obj is None and self._has_team_field() and editable_teams(request.user)[:2].count() > 1

    def get_fieldsets(self, request, obj=None):
        fieldsets = super().get_fieldsets(request, obj)  # type: ignore[misc]
        if self.offers_team(request, obj) and "team" not in flatten_fieldsets(fieldsets):
            (name, options), *rest = fieldsets
            fieldsets = [(name, {**options, "fields": ("team", *options["fields"])}), *rest]
        return fieldsets

    def get_readonly_fields(self, request, obj=None):
        readonly = super().get_readonly_fields(request, obj)  # type: ignore[misc]
        if obj is not None and self._has_team_field() and "team" not in readonly:
            # Moving an object to another team is not a change of its settings.
            readonly = (*readonly, "team")
        return readonly

    def team_for_new(self, request, requested: Team | int | None = None) -> Team:
        """The team a new object of the request's user goes to (``requested`` if they may add to it); the admin's 403
        page saying why when none can be chosen."""
        try:
            return team_for_new_object(request.user, requested)
        except TeamChoiceError as error:
            raise PermissionDenied(str(error)) from error

    def save_model(self, request, obj, form, change):
        if not change and self._has_team_field():
            obj.team = self.team_for_new(request, obj.team_id)
        super().save_model(request, obj, form, change)  # type: ignore[misc]


class TeamScopedInline:
    """First in the bases of an inline of an owned model: its rows as the parent's team allows; adding, changing and
    deleting a row is a change of the parent (editor)."""

    def get_queryset(self, request):
        return visible(request.user, super().get_queryset(request))  # type: ignore[misc]

    def has_view_permission(self, request, obj=None):
        return super().has_view_permission(request, obj) and holds(request.user, obj, roles.VIEWER)  # type: ignore[misc]

    def has_add_permission(self, request, obj):
        return super().has_add_permission(request, obj) and holds(request.user, obj, roles.EDITOR)  # type: ignore[misc]

    def has_change_permission(self, request, obj=None):
        return (super().has_change_permission(request, obj)  # type: ignore[misc]
                and holds(request.user, obj, roles.EDITOR))

    def has_delete_permission(self, request, obj=None):
        return (super().has_delete_permission(request, obj)  # type: ignore[misc]
                and holds(request.user, obj, roles.EDITOR))

    def formfield_for_foreignkey(self, db_field, request, **kwargs):
        _narrow_relation(self, db_field, request, kwargs)
        return super().formfield_for_foreignkey(db_field, request, **kwargs)  # type: ignore[misc]

    def formfield_for_manytomany(self, db_field, request, **kwargs):
        _narrow_relation(self, db_field, request, kwargs)
        return super().formfield_for_manytomany(db_field, request, **kwargs)  # type: ignore[misc]


def _narrow_relation(admin_obj, db_field, request, kwargs: dict) -> None:
    related = db_field.remote_field.model
    if "queryset" in kwargs or not (related is Team or owned(related)):
        return
    base = admin_obj.get_field_queryset(None, db_field, request)
    if base is None:
        base = related._default_manager.all()
    if related is Team:
        if db_field.many_to_many:
            return  # sharing an endpoint names other labs' teams
        kwargs["queryset"] = base.filter(pk__in=editable_teams(request.user).values("pk"))
        kwargs["required"] = True  # a codebook without a team is one the app shipped, never one a user adds
    else:
        kwargs["queryset"] = usable(request.user, base)


def scoped_form_class(form_class: type[forms.BaseForm], user: Any, scope) -> type[forms.BaseForm]:
    """A subclass of ``form_class`` whose choices ``scope(form, user)`` narrows once built."""
    def __init__(self, *args, **kwargs):
        form_class.__init__(self, *args, **kwargs)
        scope(self, user)
    return type(form_class.__name__, (form_class,), {"__init__": __init__, "__module__": form_class.__module__})
