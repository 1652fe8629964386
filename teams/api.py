"""Team scoping for the REST API: views show only what the user's teams hold, and write only with the role it takes.

:class:`TeamScopedMixin` goes first in a generic view's bases: ``get_queryset`` is narrowed by
:func:`teams.scoping.visible`, so an object of another team answers 404 (its existence is not revealed), and
``get_object`` answers 403 when the user sees it but holds a role below ``write_role`` (editor) for PUT, PATCH and
POST, or below ``delete_role`` (owner) for DELETE. :class:`TeamScopedParentMixin` does the same for the views under
an object's URL (``/api/studies/{pk}/...``), before any handler runs. :class:`EditableTeamField` takes the id of a
team the user may add to (any other id is "does not exist", whether or not it does). :func:`scope_relations` narrows a
request body's ids of objects to those the user sees; :class:`ExportLogged` and :func:`record_export` write the access
log of an export.
"""
from __future__ import annotations

from functools import cached_property
from typing import Any

from django.db import models
from django.shortcuts import get_object_or_404
from rest_framework import serializers
from rest_framework.exceptions import PermissionDenied
from rest_framework.permissions import SAFE_METHODS

from teams import access_log, roles
from teams.models import Team
from teams.scoping import TeamChoiceError, role_on, team_for_new_object, teams_of, visible


def required_role(method: str, write_role: str = roles.EDITOR, delete_role: str = roles.OWNER) -> str | None:
    """The least role a request of ``method`` needs on an object it sees (None for a read)."""
    if method in SAFE_METHODS:
        return None
    return delete_role if method == "DELETE" else write_role


def check_role(user: Any, obj: models.Model, needed: str | None) -> None:
    """403 unless ``user`` holds ``needed`` (None: nothing) or above on ``obj``."""
    if needed is None:
        return
    held = role_on(user, obj)
    if not roles.at_least(held, needed):
        raise PermissionDenied(f"This needs the {needed} role in the object's team; you are "
                               f"{'a ' + held if held else 'not a member'} there.")


class TeamScopedMixin:
    """A generic view's queryset narrowed to what the user sees; writes checked against their role (403)."""

    write_role = roles.EDITOR
    delete_role = roles.OWNER
    request: Any

    def get_queryset(self):
        return visible(self.request.user, super().get_queryset())  # type: ignore[misc]

    def check_object_permissions(self, request, obj) -> None:
        super().check_object_permissions(request, obj)  # type: ignore[misc]
        check_role(request.user, obj, required_role(request.method, self.write_role, self.delete_role))


class TeamScopedParentMixin:
    """For the views under an object's URL: ``scoped_object``, the ``parent_model`` row whose pk is the URL's
    ``parent_kwarg``, looked up among those the user sees (404 otherwise) before any handler runs, with the role the
    method needs checked (403)."""

    parent_model: type[models.Model]
    parent_kwarg = "pk"
    write_role = roles.EDITOR
    delete_role = roles.OWNER
    request: Any
    kwargs: dict[str, Any]

    def initial(self, request, *args, **kwargs) -> None:
        super().initial(request, *args, **kwargs)  # type: ignore[misc]
        check_role(request.user, self.scoped_object, required_role(request.method, self.write_role,
                                                                    self.delete_role))

    @cached_property
    def scoped_object(self) -> Any:
        queryset = visible(self.request.user, self.parent_model._default_manager.all())
        return get_object_or_404(queryset, pk=self.kwargs[self.parent_kwarg])


class EditableTeamField(serializers.PrimaryKeyRelatedField):
    """A team's id, among the teams where the request's user is an editor or owner (every team for a superuser)."""

    def __init__(self, **kwargs) -> None:
        kwargs.setdefault("queryset", Team.objects.all())
        super().__init__(**kwargs)

    def get_queryset(self):
        request = self.context.get("request")
        user = getattr(request, "user", None)
        if user is not None and user.is_superuser:
            return Team.objects.all()
        return Team.objects.filter(id__in=teams_of(user, roles.EDITOR))


def new_object_team(user: Any, requested: Team | int | None = None) -> Team:
    """The team of an object the API creates for ``user`` (:func:`teams.scoping.team_for_new_object`); a 400 naming
    the field ``team`` when it cannot be chosen."""
    try:
        return team_for_new_object(user, requested)
    except TeamChoiceError as error:
        raise serializers.ValidationError({"team": [str(error)]}) from error


def scope_relations(serializer: serializers.BaseSerializer, user: Any) -> serializers.BaseSerializer:
    """Narrow every related-object field of ``serializer`` (nested serializers and lists of ids included) whose model
    belongs to a team to the rows ``user`` sees: an id of another team's object is then "does not exist" (a 400
    naming the field), exactly as an id that exists nowhere. Models of no team (instruments) are left as they are."""
    def narrow(field: Any) -> None:
        if isinstance(field, serializers.ListSerializer):
            narrow(field.child)
        elif isinstance(field, serializers.ManyRelatedField):
            narrow(field.child_relation)
        elif isinstance(field, serializers.Serializer):
            for child in field.fields.values():
                narrow(child)
        elif isinstance(field, serializers.RelatedField) and field.queryset is not None \
                and getattr(field.queryset.model, "team_path", None):
            field.queryset = visible(user, field.queryset.all())

    narrow(serializer)
    return serializer


def record_export(request: Any, target: models.Model, kind: str) -> None:
    """One access-log entry: ``request``'s user exported ``kind`` of ``target``, as CSV or JSON."""
    fmt = "csv" if getattr(getattr(request, "accepted_renderer", None), "format", None) == "csv" else "json"
    access_log.record(request.user, access_log.EXPORT, target=target, detail={"kind": kind, "format": fmt})


class ExportLogged:
    """For an export view (:class:`common.api.exports.ExportListAPIView`) of one scoped object: each answer with its
    rows (a JSON page or the whole CSV) writes one access-log entry of ``export_kind`` for ``scoped_object``."""

    export_kind = ""
    request: Any
    scoped_object: Any

    def exported(self) -> None:
        record_export(self.request, self.scoped_object, self.export_kind)
