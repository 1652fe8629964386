"""Reading teams: the teams a user is in with their role, and the access-log events a user may read (those of teams
they own; every event for a superuser), with the columns they are exported in."""
from __future__ import annotations

from typing import Any

from django.db.models import F, OuterRef, QuerySet, Subquery

from teams import roles
from teams.models import AccessEvent, Membership, Team
from teams.scoping import teams_of

ACCESS_LOG_COLUMNS = ["at", "username", "team", "action", "target_kind", "target_id", "detail"]


def teams_with_role(user: Any) -> QuerySet:
    """The teams ``user`` is a member of, each annotated with ``my_role`` (a superuser sees every team, with their
    role where they hold one), by name."""
    role = Membership.objects.filter(team=OuterRef("pk"), user_id=user.pk).values("role")[:1]
    teams = Team.objects.annotate(my_role=Subquery(role))
    return teams if user.is_superuser else teams.filter(id__in=teams_of(user))


def access_events(user: Any) -> QuerySet:
    """The access-log events ``user`` may read: those of the teams they own (all of them for a superuser)."""
    if user.is_superuser:
        return AccessEvent.objects.all()
    return AccessEvent.objects.filter(team_id__in=teams_of(user, roles.OWNER))


def access_event_rows(events: QuerySet) -> QuerySet:
    """``events`` as tuples in the order of ACCESS_LOG_COLUMNS (the team by name)."""
    return events.annotate(team_name=F("team__name")).values_list(
        "at", "username", "team_name", "action", "target_kind", "target_id", "detail")
