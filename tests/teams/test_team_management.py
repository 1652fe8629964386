"""Managing teams: only an owner adds, removes and changes members, renames and deletes the team; a team keeps an
owner; each change is one access-log event naming who made it, through the services, the API and the admin alike."""
from __future__ import annotations

import csv
import io

import pytest
from django.test import Client

from teams import access_log, services
from teams.models import AccessEvent, Membership, Team
from tests.factories import make_researcher, make_study, token_client

pytestmark = pytest.mark.django_db


def events(team: Team) -> list[tuple]:
    return list(AccessEvent.objects.filter(team=team).order_by("id").values_list("username", "action", "detail"))


# ---- services ----

def test_an_owner_manages_the_team_and_each_change_is_logged(two_teams):
    team, alice = two_teams["a"], two_teams["alice"][0]
    newcomer, _ = make_researcher("nina")
    membership = services.add_member(user=alice, team=team, member=newcomer, role="viewer")
    services.change_role(user=alice, membership=membership, role="editor")
    services.rename_team(user=alice, team=team, name="A lab")
    services.remove_member(user=alice, membership=membership)
    assert not Membership.objects.filter(team=team, user=newcomer).exists()
    assert events(team) == [
        ("alice", access_log.MEMBER_ADDED, {"member": "nina", "role": "viewer"}),
        ("alice", access_log.ROLE_CHANGED, {"member": "nina", "from": "viewer", "to": "editor"}),
        ("alice", access_log.TEAM_RENAMED, {"from": "A", "to": "A lab"}),
        ("alice", access_log.MEMBER_REMOVED, {"member": "nina", "role": "editor"}),
    ]


def test_creating_and_deleting_a_team_is_logged(two_teams):
    alice = two_teams["alice"][0]
    team = services.create_team(user=alice, name="Pilot")
    assert Membership.objects.get(team=team).user == alice and Membership.objects.get(team=team).role == "owner"
    assert events(team) == [("alice", access_log.TEAM_CREATED, {"name": "Pilot"})]
    services.delete_team(user=alice, team=team)
    assert not Team.objects.filter(name="Pilot").exists()
    assert AccessEvent.objects.filter(action=access_log.TEAM_DELETED, detail__name="Pilot", username="alice").exists()


def test_a_team_holding_objects_is_not_deleted(two_teams):
    make_study(team=two_teams["a"])
    with pytest.raises(services.TeamNotEmpty):
        services.delete_team(user=two_teams["alice"][0], team=two_teams["a"])
    assert Team.objects.filter(pk=two_teams["a"].pk).exists()
    assert not AccessEvent.objects.filter(action=access_log.TEAM_DELETED).exists()


@pytest.mark.parametrize("who", ["vera", "ed", "bob"])
def test_only_an_owner_manages_a_team(two_teams, who):
    team, user = two_teams["a"], two_teams[who][0]
    vera = Membership.objects.get(team=team, user=two_teams["vera"][0])
    newcomer, _ = make_researcher("nina")
    for change in (lambda: services.add_member(user=user, team=team, member=newcomer),
                   lambda: services.change_role(user=user, membership=vera, role="owner"),
                   lambda: services.remove_member(user=user, membership=vera),
                   lambda: services.rename_team(user=user, team=team, name="Mine"),
                   lambda: services.delete_team(user=user, team=team)):
        with pytest.raises(services.NotTeamOwner):
            change()
    assert sorted(team.memberships.values_list("user__username", "role")) == [
        ("alice", "owner"), ("ed", "editor"), ("vera", "viewer")]
    assert Team.objects.get(pk=team.pk).name == "A" and not AccessEvent.objects.exists()


def test_the_last_owner_can_neither_leave_nor_step_down(two_teams):
    team, alice = two_teams["a"], two_teams["alice"][0]
    own = Membership.objects.get(team=team, user=alice)
    with pytest.raises(services.LastOwner):
        services.remove_member(user=alice, membership=own)
    with pytest.raises(services.LastOwner):
        services.change_role(user=alice, membership=own, role="editor")
    own.refresh_from_db()
    assert own.role == "owner" and not AccessEvent.objects.exists()
    # With a second owner, the first may leave.
    services.change_role(user=alice, membership=Membership.objects.get(team=team, user=two_teams["ed"][0]),
                         role="owner")
    services.remove_member(user=alice, membership=own)
    assert list(team.memberships.filter(role="owner").values_list("user__username", flat=True)) == ["ed"]


def test_a_member_is_a_researcher_added_once(two_teams):
    team, alice = two_teams["a"], two_teams["alice"][0]
    from tests.factories import make_participant_user

    with pytest.raises(services.TeamError, match="researcher"):
        services.add_member(user=alice, team=team, member=make_participant_user("pat"))
    with pytest.raises(services.TeamError, match="already"):
        services.add_member(user=alice, team=team, member=two_teams["vera"][0])
    with pytest.raises(services.TeamError, match="unknown role"):
        services.add_member(user=alice, team=team, member=two_teams["bob"][0], role="boss")


# ---- API ----

def test_my_teams_with_my_role(two_teams):
    Membership.objects.create(team=two_teams["b"], user=two_teams["vera"][0], role="editor")
    listed = token_client(two_teams["vera"][1]).get("/api/teams/").json()["results"]
    assert [(team["name"], team["my_role"], team["n_members"]) for team in listed] == [("A", "viewer", 3),
                                                                                        ("B", "editor", 2)]
    assert [team["name"] for team in token_client(two_teams["bob"][1]).get("/api/teams/").json()["results"]] == ["B"]


def test_creating_a_team_makes_me_its_owner(two_teams):
    response = token_client(two_teams["bob"][1]).post("/api/teams/", {"name": "Bob's second"}, format="json")
    assert response.status_code == 201, response.content
    assert response.json()["my_role"] == "owner"
    assert token_client(two_teams["bob"][1]).post("/api/teams/", {"name": "A"}, format="json").status_code == 400


def test_an_owner_manages_members_through_the_api(two_teams):
    team, alice = two_teams["a"], token_client(two_teams["alice"][1])
    make_researcher("nina")
    base = f"/api/teams/{team.pk}/members/"
    added = alice.post(base, {"username": "nina", "role": "editor"}, format="json")
    assert added.status_code == 201, added.content
    nina_id = added.json()["user_id"]
    assert {m["username"]: m["role"] for m in alice.get(base).json()["results"]} == {
        "alice": "owner", "ed": "editor", "nina": "editor", "vera": "viewer"}
    assert alice.patch(f"{base}{nina_id}/", {"role": "viewer"}, format="json").json()["role"] == "viewer"
    assert alice.delete(f"{base}{nina_id}/").status_code == 204
    assert alice.post(base, {"username": "nobody"}, format="json").status_code == 400
    assert alice.post(base, {"username": "vera"}, format="json").status_code == 400  # already a member
    assert [action for _, action, _ in events(team)] == [access_log.MEMBER_ADDED, access_log.ROLE_CHANGED,
                                                        access_log.MEMBER_REMOVED]
    assert alice.patch(f"/api/teams/{team.pk}/", {"name": "A lab"}, format="json").json()["name"] == "A lab"
    assert events(team)[-1] == ("alice", access_log.TEAM_RENAMED, {"from": "A", "to": "A lab"})


def test_another_team_is_not_found_and_a_member_who_is_not_owner_is_refused(two_teams):
    team = two_teams["a"]
    vera_id = two_teams["vera"][0].pk
    bob, vera = token_client(two_teams["bob"][1]), token_client(two_teams["ed"][1])
    missing = Team.objects.order_by("-pk").first().pk + 100
    for path in (f"/api/teams/{team.pk}/", f"/api/teams/{team.pk}/members/", f"/api/teams/{team.pk}/access-log/"):
        assert bob.get(path).status_code == 404 == bob.get(path.replace(str(team.pk), str(missing))).status_code
    assert bob.post(f"/api/teams/{team.pk}/members/", {"username": "bob", "role": "owner"},
                    format="json").status_code == 404
    assert bob.patch(f"/api/teams/{team.pk}/members/{vera_id}/", {"role": "owner"}, format="json").status_code == 404
    assert bob.delete(f"/api/teams/{team.pk}/members/{vera_id}/").status_code == 404
    assert bob.patch(f"/api/teams/{team.pk}/", {"name": "Bob's"}, format="json").status_code == 404
    assert bob.delete(f"/api/teams/{team.pk}/").status_code == 404
    # ed, an editor of A, reads its members but changes nothing.
    assert vera.get(f"/api/teams/{team.pk}/members/").status_code == 200
    assert vera.post(f"/api/teams/{team.pk}/members/", {"username": "bob"}, format="json").status_code == 403
    assert vera.patch(f"/api/teams/{team.pk}/members/{vera_id}/", {"role": "owner"}, format="json").status_code == 403
    assert vera.delete(f"/api/teams/{team.pk}/members/{vera_id}/").status_code == 403
    assert vera.get(f"/api/teams/{team.pk}/access-log/").status_code == 403
    assert vera.delete(f"/api/teams/{team.pk}/").status_code == 403
    assert sorted(team.memberships.values_list("user__username", "role")) == [
        ("alice", "owner"), ("ed", "editor"), ("vera", "viewer")]
    assert Team.objects.get(pk=team.pk).name == "A" and not AccessEvent.objects.exists()


def test_the_last_owner_cannot_leave_through_the_api(two_teams):
    team, alice = two_teams["a"], token_client(two_teams["alice"][1])
    alice_id = two_teams["alice"][0].pk
    assert alice.delete(f"/api/teams/{team.pk}/members/{alice_id}/").status_code == 409
    assert alice.patch(f"/api/teams/{team.pk}/members/{alice_id}/", {"role": "viewer"},
                       format="json").status_code == 409
    assert Membership.objects.get(team=team, user_id=alice_id).role == "owner"
    make_study(team=team)
    assert alice.delete(f"/api/teams/{team.pk}/").status_code == 409


def test_the_access_log_for_owners_as_json_and_csv(two_teams):
    team, alice = two_teams["a"], token_client(two_teams["alice"][1])
    services.add_member(user=two_teams["alice"][0], team=team, member=two_teams["bob"][0], role="viewer")
    services.add_member(user=two_teams["bob"][0], team=two_teams["b"], member=two_teams["alice"][0])  # B's event
    listed = alice.get(f"/api/teams/{team.pk}/access-log/").json()["results"]
    assert [(e["username"], e["team"], e["action"], e["detail"]) for e in listed] == [
        ("alice", "A", "member_added", {"member": "bob", "role": "viewer"})]
    response = alice.get(f"/api/teams/{team.pk}/access-log/?format=csv")
    assert response.status_code == 200 and response["Content-Type"].startswith("text/csv")
    rows = list(csv.DictReader(io.StringIO(b"".join(response.streaming_content).decode())))
    assert [(r["username"], r["team"], r["action"]) for r in rows] == [("alice", "A", "member_added")]


# ---- admin ----

def test_the_team_admin_goes_through_the_services(two_teams):
    team = two_teams["a"]
    alice = Client()
    alice.force_login(two_teams["alice"][0])
    members = list(team.memberships.order_by("id"))
    nina, _ = make_researcher("nina")
    data = {"name": "A renamed", "memberships-TOTAL_FORMS": len(members) + 1,
            "memberships-INITIAL_FORMS": len(members), "memberships-MIN_NUM_FORMS": 0,
            "memberships-MAX_NUM_FORMS": 1000}
    for index, membership in enumerate(members):
        data |= {f"memberships-{index}-id": membership.pk, f"memberships-{index}-team": team.pk,
                 f"memberships-{index}-user": membership.user_id, f"memberships-{index}-role": membership.role}
    vera_index = next(i for i, m in enumerate(members) if m.user.username == "vera")
    data[f"memberships-{vera_index}-role"] = "editor"
    data |= {f"memberships-{len(members)}-team": team.pk, f"memberships-{len(members)}-user": nina.pk,
             f"memberships-{len(members)}-role": "viewer"}
    response = alice.post(f"/admin/teams/team/{team.pk}/change/", data)
    assert response.status_code == 302, response.context["adminform"].form.errors if response.context else response
    assert sorted((u, a) for u, a, _ in events(team)) == [
        ("alice", access_log.MEMBER_ADDED), ("alice", access_log.ROLE_CHANGED), ("alice", access_log.TEAM_RENAMED)]
    # A viewer sees the team, read-only; another team's is not found.
    vera = Client()
    vera.force_login(two_teams["vera"][0])
    assert vera.get(f"/admin/teams/team/{team.pk}/change/").status_code == 200
    assert vera.post(f"/admin/teams/team/{team.pk}/change/", {**data, "name": "Vera's"}).status_code == 403
    bob = Client()
    bob.force_login(two_teams["bob"][0])
    assert bob.get(f"/admin/teams/team/{team.pk}/change/")["Location"] == "/admin/"
    assert Team.objects.get(pk=team.pk).name == "A renamed"


def test_the_access_log_admin_is_read_only_and_for_owners(two_teams):
    services.add_member(user=two_teams["alice"][0], team=two_teams["a"], member=two_teams["bob"][0])
    event = AccessEvent.objects.get()
    for name, sees in (("alice", True), ("vera", False), ("bob", False)):
        client = Client()
        client.force_login(two_teams[name][0])
        listed = client.get("/admin/teams/accessevent/")
        assert listed.context["cl"].queryset.filter(pk=event.pk).exists() == sees, name
        assert client.post(f"/admin/teams/accessevent/{event.pk}/delete/", {"post": "yes"}).status_code in (302, 403)
        exported = client.get("/admin/teams/accessevent/export.csv")
        assert (b"member_added" in b"".join(exported.streaming_content)) == sees, name
    assert client.get("/admin/teams/accessevent/add/").status_code == 403
    assert AccessEvent.objects.filter(pk=event.pk).exists()
