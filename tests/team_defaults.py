"""The team of test data that names none: the suite's tests were written before teams, so (unless a test turns this
off, as tests/teams/ does) every staff user a test creates is an owner of the team "Tests", and every study, audit,
corpus, endpoint and coding round saved without a team (and no parent or creator to take one from) goes there."""
from __future__ import annotations

from django.contrib.auth import get_user_model
from django.db.models.signals import post_save, pre_save

TEST_TEAM = "Tests"
OWNED = ("annotation.Study", "auditapp.Audit", "auditapp.Corpus", "auditapp.LLMEndpoint", "coding.CodingRound")
ENABLED = {"on": True}


def test_team():
    from teams.models import Team

    team, _ = Team.objects.get_or_create(name=TEST_TEAM)
    return team


def _default_team(sender, instance, raw: bool = False, **kwargs) -> None:
    if ENABLED["on"] and not raw and instance.team_id is None:
        instance.team = test_team()


def _staff_in_the_test_team(sender, instance, created: bool, raw: bool = False, **kwargs) -> None:
    from teams.models import Membership

    if ENABLED["on"] and created and not raw and instance.is_staff:
        Membership.objects.get_or_create(team=test_team(), user=instance, defaults={"role": "owner"})


def connect() -> None:
    """Connect the receivers (after the app's own, which take a parent's or creator's team first)."""
    for label in OWNED:
        pre_save.connect(_default_team, sender=label, dispatch_uid=f"tests-default-team-{label}")
    post_save.connect(_staff_in_the_test_team, sender=get_user_model(), dispatch_uid="tests-staff-in-test-team")
