"""The teams tests give every object its team themselves: the suite's default test team is off here."""
from __future__ import annotations

import pytest

from tests import team_defaults


@pytest.fixture(autouse=True)
def no_default_team(monkeypatch):
    monkeypatch.setitem(team_defaults.ENABLED, "on", False)


@pytest.fixture
def two_teams(db):
    """Teams A and B, each with an owner (alice, bob), and A with a viewer (vera) and an editor (ed)."""
    from teams.models import Membership, Team
    from tests.factories import make_researcher

    team_a, team_b = Team.objects.create(name="A"), Team.objects.create(name="B")
    people = {}
    for username, team, role in (("alice", team_a, "owner"), ("bob", team_b, "owner"), ("vera", team_a, "viewer"),
                                 ("ed", team_a, "editor")):
        user, token = make_researcher(username)
        Membership.objects.create(team=team, user=user, role=role)
        people[username] = (user, token)
    return {"a": team_a, "b": team_b, **people}
