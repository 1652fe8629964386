"""Managing teams: create, rename and delete a team, add a member, change a role, remove a member.

Only an owner of the team (or a superuser) manages it; anyone else gets :class:`TeamError`, and a team always keeps an
owner (its last owner can neither leave nor be made an editor or viewer). Every change writes one access-log event
(:func:`teams.access_log.record`) with the acting user, because ethics boards ask who changed who may see a study's
data. The admin and the API (:mod:`teams.admin`, :mod:`teams.team_api`) both go through here.
"""
from __future__ import annotations

from typing import Any

from django.db import IntegrityError, transaction
from django.db.models.deletion import ProtectedError, RestrictedError

from teams import access_log, roles
from teams.models import Membership, Team

NAME_MAX_LENGTH = 150  # Team.name's


class TeamError(ValueError):
    """A team change that is refused, saying why."""


class NotTeamOwner(TeamError):
    """The acting user is not an owner of the team."""


class LastOwner(TeamError):
    """The change would leave the team without an owner."""


class TeamNotEmpty(TeamError):
    """The team still holds objects, which deleting it would delete."""


def is_owner(user: Any, team: Team) -> bool:
    """Whether ``user`` may manage ``team``: an owner of it, or a superuser."""
    if user is None or not getattr(user, "is_authenticated", False) or not user.is_active:
        return False
    return user.is_superuser or Membership.objects.filter(team=team, user_id=user.pk, role=roles.OWNER).exists()


def _require_owner(user: Any, team: Team) -> None:
    if not is_owner(user, team):
        raise NotTeamOwner(f"only an owner of team {team.name!r} manages it")


def _check_role(role: str) -> None:
    if role not in roles.ORDER:
        raise TeamError(f"unknown role {role!r}: one of {', '.join(roles.ORDER)}")


def _check_name(name: str, team: Team | None = None) -> str:
    name = (name or "").strip()
    if not name:
        raise TeamError("a team needs a name")
    if len(name) > NAME_MAX_LENGTH:
        raise TeamError(f"a team's name has at most {NAME_MAX_LENGTH} characters")
    others = Team.objects.filter(name=name)
    if team is not None:
        others = others.exclude(pk=team.pk)
    if others.exists():
        raise TeamError(f"a team named {name!r} already exists")
    return name


def _other_owners(team: Team, membership: Membership) -> bool:
    return Membership.objects.filter(team=team, role=roles.OWNER).exclude(pk=membership.pk).exists()


@transaction.atomic
def create_team(*, user: Any, name: str) -> Team:
    """A new team named ``name`` with ``user`` (a researcher) as its owner."""
    if user is None or not (user.is_active and user.is_staff):
        raise TeamError("only a researcher (a staff user) creates teams")
    try:
        team = Team.objects.create(name=_check_name(name))
    except IntegrityError:
        raise TeamError(f"a team named {name!r} already exists") from None
    Membership.objects.create(team=team, user=user, role=roles.OWNER)
    access_log.record(user, access_log.TEAM_CREATED, target=team, detail={"name": team.name})
    return team


@transaction.atomic
def rename_team(*, user: Any, team: Team, name: str) -> Team:
    _require_owner(user, team)
    old = team.name
    team.name = _check_name(name, team)
    if team.name != old:
        team.save(update_fields=["name"])
        access_log.record(user, access_log.TEAM_RENAMED, target=team, detail={"from": old, "to": team.name})
    return team


@transaction.atomic
def delete_team(*, user: Any, team: Team) -> None:
    """Delete an empty team. A team still holding studies, audits, corpora, endpoints, codebooks or coding rounds is
    refused: they would be deleted with it (the database protects them)."""
    _require_owner(user, team)
    access_log.record(user, access_log.TEAM_DELETED, target=team, detail={"name": team.name})
    try:
        with transaction.atomic():
            team.delete()
    except (ProtectedError, RestrictedError):
        raise TeamNotEmpty(f"team {team.name!r} still holds objects: move or delete them first") from None


@transaction.atomic
def add_member(*, user: Any, team: Team, member: Any, role: str = roles.VIEWER) -> Membership:
    """Make ``member`` (a researcher) a member of ``team`` with ``role``."""
    _require_owner(user, team)
    _check_role(role)
    if member is None or not (member.is_active and member.is_staff):
        raise TeamError("only an active researcher (a staff user) can be a team member")
    if Membership.objects.filter(team=team, user=member).exists():
        raise TeamError(f"{member.get_username()} is already a member of {team.name!r}")
    membership = Membership.objects.create(team=team, user=member, role=role)
    access_log.record(user, access_log.MEMBER_ADDED, target=team,
                      detail={"member": member.get_username(), "role": role})
    return membership


@transaction.atomic
def change_role(*, user: Any, membership: Membership, role: str) -> Membership:
    """Give the member of ``membership`` ``role``; the team's last owner keeps theirs."""
    membership = Membership.objects.select_for_update().select_related("team", "user").get(pk=membership.pk)
    _require_owner(user, membership.team)
    _check_role(role)
    old = membership.role
    if old == role:
        return membership
    if old == roles.OWNER and not _other_owners(membership.team, membership):
        raise LastOwner(f"{membership.user.get_username()} is the last owner of {membership.team.name!r}: make "
                        "another member an owner first")
    membership.role = role
    membership.save(update_fields=["role"])
    access_log.record(user, access_log.ROLE_CHANGED, target=membership.team,
                      detail={"member": membership.user.get_username(), "from": old, "to": role})
    return membership


@transaction.atomic
def remove_member(*, user: Any, membership: Membership) -> None:
    """Take the member of ``membership`` out of its team; the team's last owner stays."""
    membership = Membership.objects.select_for_update().select_related("team", "user").get(pk=membership.pk)
    _require_owner(user, membership.team)
    if membership.role == roles.OWNER and not _other_owners(membership.team, membership):
        raise LastOwner(f"{membership.user.get_username()} is the last owner of {membership.team.name!r}: a team "
                        "keeps at least one owner")
    access_log.record(user, access_log.MEMBER_REMOVED, target=membership.team,
                      detail={"member": membership.user.get_username(), "role": membership.role})
    membership.delete()
