"""teams.scoping.team_for_new_object, the teams new audits and rounds take, ONE_LAB."""
from __future__ import annotations

import pytest
from django.db import IntegrityError, transaction
from django.test import override_settings

from auditapp.models import Audit, Corpus
from coding.models import Codebook, CodingRound
from teams.models import Membership, Team
from teams.scoping import TeamChoiceError, team_for_new_object
from tests.factories import make_participant_user, make_researcher, make_study


def test_the_requested_team_where_the_user_edits(two_teams):
    assert team_for_new_object(two_teams["ed"][0], two_teams["a"]) == two_teams["a"]
    assert team_for_new_object(two_teams["ed"][0], two_teams["a"].id) == two_teams["a"]
    with pytest.raises(TeamChoiceError, match="not an editor"):
        team_for_new_object(two_teams["vera"][0], two_teams["a"])
    with pytest.raises(TeamChoiceError, match="not an editor"):
        team_for_new_object(two_teams["ed"][0], two_teams["b"])
    with pytest.raises(TeamChoiceError, match="not an editor"):
        team_for_new_object(two_teams["ed"][0], 99999)


def test_the_only_team_then_a_personal_one(two_teams):
    assert team_for_new_object(two_teams["alice"][0]) == two_teams["a"]
    Membership.objects.create(team=two_teams["b"], user=two_teams["alice"][0], role="editor")
    with pytest.raises(TeamChoiceError, match="several teams"):
        team_for_new_object(two_teams["alice"][0])
    personal = team_for_new_object(two_teams["vera"][0])
    assert personal.name == "vera" and personal.memberships.get().role == "owner"
    assert team_for_new_object(two_teams["vera"][0]) == personal
    Team.objects.create(name="zoe")
    zoe, _ = make_researcher("zoe")
    assert team_for_new_object(zoe).name == "zoe (2)"


def test_only_researchers(db):
    with pytest.raises(TeamChoiceError):
        team_for_new_object(make_participant_user())


def test_a_superuser_may_name_any_team(two_teams):
    root, _ = make_researcher("root")
    root.is_superuser = True
    root.save()
    assert team_for_new_object(root, two_teams["b"]) == two_teams["b"]


def test_new_audits_and_rounds_take_their_parents_team_and_objects_their_creators(two_teams):
    study = make_study(team=two_teams["b"])
    audit = Audit.objects.create(name="x", study=study, created_by=two_teams["alice"][0])
    assert audit.team == two_teams["b"]
    assert CodingRound.objects.create(audit=audit, name="r").team == two_teams["b"]
    corpus = Corpus.objects.create(paradigm="bits", name="c", content_hash="h", created_by=two_teams["ed"][0])
    assert corpus.team == two_teams["a"]
    assert Codebook.objects.create(name="mine", created_by=two_teams["ed"][0]).team == two_teams["a"]
    assert Codebook.objects.create(name="shipped", shipped=True).team is None


@override_settings(AUDITAPP_ONE_LAB=True)
def test_one_lab_puts_every_researcher_and_new_object_in_the_lab(two_teams):
    newcomer, _ = make_researcher("newcomer")
    lab = Team.objects.get(name="Lab")
    assert lab.memberships.get(user=newcomer).role == "editor"
    assert team_for_new_object(newcomer) == lab
    assert team_for_new_object(two_teams["alice"][0]) == lab
    assert lab.memberships.get(user=two_teams["alice"][0]).role == "editor"
    assert team_for_new_object(two_teams["alice"][0], two_teams["a"]) == two_teams["a"]
    Membership.objects.filter(team=lab, user=newcomer).update(role="owner")
    newcomer.save()
    assert lab.memberships.get(user=newcomer).role == "owner"
    make_participant_user("not-staff")
    assert lab.memberships.count() == 2


def test_objects_made_for_nobody_go_to_the_team_of_the_block(two_teams):
    from annotation.models import Study
    from auditapp.models import LLMEndpoint
    from teams.scoping import demo_team, new_objects_in

    other_corpus = Corpus.objects.create(paradigm="bits", name="c", content_hash="h", team=two_teams["b"])
    with new_objects_in(demo_team(two_teams["alice"][0])) as demo:
        study = Study.objects.create(name="Demo", slug="demo")
        endpoint = LLMEndpoint.objects.create(name="local", protocol="local", base_url="")
        audit = Audit.objects.create(name="a", corpus=other_corpus)
        shipped = Codebook.objects.create(name="shipped", shipped=True)
    assert study.team == endpoint.team == audit.team == demo and demo.name == "Demo"
    assert shipped.team is None
    assert demo.memberships.get().user == two_teams["alice"][0]
    assert Audit.objects.create(name="b", corpus=other_corpus).team == two_teams["b"]  # the corpus's, last
    with pytest.raises(IntegrityError), transaction.atomic():
        Study.objects.create(name="Nobody's", slug="nobody")


def test_a_new_endpoint_through_the_api_goes_to_its_creators_team(two_teams):
    from rest_framework.test import APIClient

    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {two_teams['ed'][1]}")
    response = client.post("/api/endpoints/", {"name": "local", "protocol": "local", "base_url": ""}, format="json")
    assert response.status_code == 201, response.content
    from auditapp.models import LLMEndpoint

    assert LLMEndpoint.objects.get(name="local").team == two_teams["a"]
