"""Team scoping for the REST API: views show only what the user's teams hold, and write only with the role it takes.

:class:`TeamScopedMixin` goes first in a generic view's bases: ``get_queryset`` is narrowed by
:func:`teams.scoping.visible`, so an object of another team answers 404 (its existence is not revealed), and
``get_object`` answers 403 when the user sees it but holds a role below ``write_role`` (editor) for PUT, PATCH and
POST, or below ``delete_role`` (owner) for DELETE. :class:`TeamScopedParentMixin` does the same for the views under
an object's URL (``/api/studies/{pk}/...``), before any handler runs. :class:`EditableTeamField` takes the id of a
team the user may add to (any other id is "does not exist", whether or not it does).
"""
from __future__ import annotations

from functools import cached_property
from typing import Any

from django.db import models
from django.shortcuts import get_object_or_404
from rest_framework import serializers
from rest_framework.exceptions import PermissionDenied
from rest_framework.permissions import SAFE_METHODS

from teams import roles
from teams.models import Team
from teams.scoping import role_on, teams_of, visible


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
