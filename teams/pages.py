"""The researcher pages' one check: the object a page shows, looked up among those the user's teams may see.

An object of a team the user is not in is not found (404), so a page never reveals that it exists; one the user may
see but with too low a role for what the request does (an editor's POST by a viewer) is refused (403) before
anything changes. The rule is :mod:`teams.scoping`'s, the same as the API's (:mod:`teams.api`).
"""
from __future__ import annotations

from typing import Any, TypeVar

from django.core.exceptions import PermissionDenied
from django.db import models
from django.db.models import QuerySet
from django.http import Http404

from teams import roles
from teams.scoping import role_on, visible

M = TypeVar("M", bound=models.Model)


def get_visible_or_404(user: Any, queryset: QuerySet[M], at_least: str = roles.VIEWER, **lookup: Any) -> M:
    """The one row of ``queryset`` matching ``lookup`` that ``user`` may see (Http404 otherwise), when their role on
    it is ``at_least`` (PermissionDenied, a 403, otherwise)."""
    obj = visible(user, queryset).filter(**lookup).first()
    if obj is None:
        raise Http404(f"No {queryset.model._meta.verbose_name} matches the given query.")
    if at_least != roles.VIEWER and not roles.at_least(role_on(user, obj), at_least):
        raise PermissionDenied(f"This needs the {at_least} role in the {queryset.model._meta.verbose_name}'s team.")
    return obj


def can(user: Any, obj: models.Model, at_least: str) -> bool:
    """Whether ``user``'s role on ``obj`` is ``at_least`` (for a page to offer only the buttons that would work)."""
    return roles.at_least(role_on(user, obj), at_least)
