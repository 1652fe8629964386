"""Writing the access log: one :class:`teams.models.AccessEvent` per export of data and per change to a team.

Ethics boards ask who took a study's data out of the server and who changed who may see it. Each export view and each
team change calls :func:`record` with the acting user and the object concerned; the event keeps the username, so it
outlives the account, and the team, found from the object's ``team_path`` when not given.
"""
from __future__ import annotations

from typing import Any

from django.db import models

from teams.models import AccessEvent, Team
from teams.scoping import team_id_of

EXPORT = "export"
TEAM_CREATED = "team_created"
TEAM_RENAMED = "team_renamed"
TEAM_DELETED = "team_deleted"
MEMBER_ADDED = "member_added"
ROLE_CHANGED = "role_changed"
MEMBER_REMOVED = "member_removed"
ACTIONS = (EXPORT, TEAM_CREATED, TEAM_RENAMED, TEAM_DELETED, MEMBER_ADDED, ROLE_CHANGED, MEMBER_REMOVED)


def record(user: Any, action: str, *, target: models.Model | None = None, team: Team | None = None,
           detail: dict[str, Any] | None = None) -> AccessEvent:
    """Store that ``user`` did ``action`` (one of ACTIONS) to ``target`` in ``team`` (default: the target's team, or
    the target itself when it is a Team); ``detail`` says what exactly (the export's kind and format, the member and
    roles)."""
    if action not in ACTIONS:
        raise ValueError(f"unknown access-log action {action!r}: one of {', '.join(ACTIONS)}")
    team_id = None
    if team is not None:
        team_id = team.pk
    elif isinstance(target, Team):
        team_id = target.pk
    elif target is not None:
        team_id = team_id_of(target)
    authenticated = user is not None and getattr(user, "is_authenticated", False)
    return AccessEvent.objects.create(
        user=user if authenticated else None,
        username=user.get_username() if authenticated else "",
        team_id=team_id,
        action=action,
        target_kind=target._meta.label_lower if target is not None else "",
        target_id=str(target.pk) if target is not None else "",
        detail=detail or {},
    )
