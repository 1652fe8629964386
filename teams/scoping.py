"""What a user may see and change: the teams they hold a role in, a queryset narrowed to them, their role on one
object, and the team a new object goes to.

Every owned model declares ``team_path``, the ORM path to its team (:mod:`teams`); :func:`visible` filters on it with
one subquery of the user's team ids, never a query per row. A superuser sees everything; an anonymous, inactive or
non-staff user nothing. Two models widen what a viewer sees: ``team_shared_with`` (``LLMEndpoint.shared_with``: the
teams an endpoint is shared with may use it, at the viewer level only) and ``team_null_visible``
(``Codebook``/``Code``: a codebook without a team ships with the app and every researcher reads it).

With the setting ``AUDITAPP_ONE_LAB`` every staff user is an editor of the single team "Lab" and new objects go there.
"""
from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

from django.conf import settings
from django.db import models, transaction
from django.db.models import Q, QuerySet

from teams import roles
from teams.models import Membership, Team

LAB_TEAM = "Lab"
DEMO_TEAM = "Demo"

_team_of_new_objects: ContextVar[Team | None] = ContextVar("team_of_new_objects", default=None)


class TeamChoiceError(ValueError):
    """The team asked for a new object is not one the user may add to, or none can be chosen for them."""


def _is_researcher(user: Any) -> bool:
    return bool(user is not None and getattr(user, "is_authenticated", False) and user.is_active and user.is_staff)


def teams_of(user: Any, at_least: str = roles.VIEWER) -> QuerySet:
    """The ids of the teams where ``user`` holds ``at_least`` or a higher role: a subquery (``.values("team_id")``)."""
    if not _is_researcher(user):
        return Membership.objects.none().values("team_id")
    return Membership.objects.filter(user_id=user.pk, role__in=roles.roles_at_least(at_least)).values("team_id")


def team_path(model: type[models.Model]) -> str:
    """The model's ORM path to its team; TypeError for a model that belongs to no team."""
    path = getattr(model, "team_path", None)
    if not path:
        raise TypeError(f"{model._meta.label} has no team_path: it belongs to no team")
    return path


def visible(user: Any, queryset: QuerySet, at_least: str = roles.VIEWER) -> QuerySet:
    """The rows of ``queryset`` that ``user`` holds ``at_least`` a role on (one subquery, no query per row)."""
    if not _is_researcher(user):
        return queryset.none()
    if user.is_superuser:
        return queryset
    model = queryset.model
    path = team_path(model)
    team_ids = teams_of(user, at_least)
    condition = Q(**{f"{path}__in": team_ids})
    if at_least == roles.VIEWER:
        shared = getattr(model, "team_shared_with", None)
        if shared:
            condition |= Q(pk__in=model._base_manager.filter(**{f"{shared}__in": team_ids}).values("pk"))
        if getattr(model, "team_null_visible", False):
            condition |= Q(**{f"{path}__isnull": True})
    return queryset.filter(condition)


def team_id_of(obj: models.Model) -> int | None:
    """The id of the team ``obj`` belongs to (None for a shipped codebook or an object not yet given one)."""
    path = team_path(type(obj))
    if path == "team":
        return obj.team_id  # type: ignore[attr-defined]
    first, _, rest = path.partition("__")
    parent = getattr(obj, first, None)
    return None if parent is None else team_id_of_path(parent, rest)


def team_id_of_path(obj: models.Model, path: str) -> int | None:
    first, _, rest = path.partition("__")
    if not rest:
        return getattr(obj, f"{first}_id")
    parent = getattr(obj, first, None)
    return None if parent is None else team_id_of_path(parent, rest)


def role_on(user: Any, obj: models.Model) -> str | None:
    """The user's role on ``obj``: owner for a superuser, the role of their membership in its team, viewer on an
    endpoint shared with one of their teams or on a shipped codebook; None when they may not see it."""
    if not _is_researcher(user):
        return None
    if user.is_superuser:
        return roles.OWNER
    team_id = team_id_of(obj)
    if team_id is None:
        return roles.VIEWER if getattr(type(obj), "team_null_visible", False) else None
    role = Membership.objects.filter(user_id=user.pk, team_id=team_id).values_list("role", flat=True).first()
    if role is None:
        shared = getattr(type(obj), "team_shared_with", None)
        if shared and getattr(obj, shared).filter(id__in=teams_of(user)).exists():
            return roles.VIEWER
    return role


def lab_team() -> Team:
    """The single team of a ONE_LAB install (created on demand)."""
    team, _ = Team.objects.get_or_create(name=LAB_TEAM)
    return team


def lab_membership_ensure(user: Any) -> None:
    """ONE_LAB: a staff user is at least an editor of the Lab team (an owner stays an owner)."""
    membership, created = Membership.objects.get_or_create(team=lab_team(), user=user,
                                                           defaults={"role": roles.EDITOR})
    if not created and not roles.at_least(membership.role, roles.EDITOR):
        membership.role = roles.EDITOR
        membership.save(update_fields=["role"])


@contextmanager
def new_objects_in(team: Team) -> Iterator[Team]:
    """Within the block, a new owned object with no team, parent or creator to take one from goes to ``team`` (for
    commands and tasks that create objects for nobody in particular, such as the demos)."""
    token = _team_of_new_objects.set(team)
    try:
        yield team
    finally:
        _team_of_new_objects.reset(token)


def team_of_new_objects() -> Team | None:
    """The team :func:`new_objects_in` names here, if any."""
    return _team_of_new_objects.get()


def demo_team(*owners: Any) -> Team:
    """The team of the demo study and audit and of simulated studies ("Lab" with ONE_LAB), with ``owners`` among its
    owners."""
    team = lab_team() if getattr(settings, "AUDITAPP_ONE_LAB", False) else Team.objects.get_or_create(name=DEMO_TEAM)[0]
    for user in owners:
        Membership.objects.get_or_create(team=team, user=user, defaults={"role": roles.OWNER})
    return team


def admin_team_for_new_object(request: Any) -> Team:
    """The team of an object added in the admin (which has no team field yet): :func:`team_for_new_object` of the
    request's user, a 403 page saying why when it cannot choose."""
    from django.core.exceptions import PermissionDenied

    try:
        return team_for_new_object(request.user)
    except TeamChoiceError as error:
        raise PermissionDenied(str(error)) from error


def _personal_team_name(username: str) -> str:
    name, n = username, 1
    while Team.objects.filter(name=name).exists():
        n += 1
        name = f"{username} ({n})"
    return name


@transaction.atomic
def team_for_new_object(user: Any, requested_team: Team | int | None = None) -> Team:
    """The team a new object of ``user`` goes to.

    The requested team (a Team or its id) if the user is at least an editor there (TeamChoiceError otherwise); else,
    with ONE_LAB, the Lab team; else the user's only team where they are an editor; else, when they are an editor
    nowhere, a new personal team named after them with them as its owner. An editor of several teams must choose.
    """
    if not _is_researcher(user):
        raise TeamChoiceError("only a researcher (a staff user) can create studies, audits and their kin")
    if getattr(settings, "AUDITAPP_ONE_LAB", False):
        lab_membership_ensure(user)
    if requested_team is not None:
        team_id = requested_team.pk if isinstance(requested_team, Team) else requested_team
        team = Team.objects.filter(pk=team_id).first()
        if team is None or not (user.is_superuser
                                or Membership.objects.filter(user_id=user.pk, team=team,
                                                             role__in=roles.roles_at_least(roles.EDITOR)).exists()):
            raise TeamChoiceError(f"you are not an editor of team {team_id}: choose one of your own teams")
        return team
    if getattr(settings, "AUDITAPP_ONE_LAB", False):
        return lab_team()
    editable = list(Team.objects.filter(id__in=teams_of(user, roles.EDITOR)).order_by("name")[:11])
    if len(editable) == 1:
        return editable[0]
    if editable:
        names = ", ".join(f"{team.name} ({team.pk})" for team in editable[:10])
        raise TeamChoiceError(f"you are an editor of several teams: name the team, one of {names}")
    team = Team.objects.create(name=_personal_team_name(user.get_username()))
    Membership.objects.create(team=team, user=user, role=roles.OWNER)
    return team
