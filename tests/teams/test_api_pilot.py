"""The study API scoped by team: another team's study is 404 everywhere under /api/studies/{id}/ and missing from
the list; a viewer reads but may not change it (403); an editor changes it; a new study goes to a team."""
from __future__ import annotations

import pytest

from annotation.models import Study
from annotation.services import items_import_file
from teams.models import Membership, Team
from tests.factories import autalic_like_csv, make_researcher, make_study, token_client

SUB_RESOURCES = ("items", "participants", "instrument-responses", "iat-trials", "ground-truth",
                 "ground-truth-alternatives", "item-sets", "labels", "imports", "annotator-imports", "analysis")


@pytest.fixture
def study_of_a(two_teams, queued):
    study = make_study(team=two_teams["a"], name="A's study")
    assert items_import_file(study=study, filename="f.csv", content=autalic_like_csv(3)).status == "succeeded"
    return study


def test_another_teams_study_is_not_found_anywhere(two_teams, study_of_a):
    bob = token_client(two_teams["bob"][1])
    assert bob.get("/api/studies/").json()["results"] == []
    assert bob.get(f"/api/studies/{study_of_a.id}/").status_code == 404
    missing = Study.objects.order_by("-id").first().id + 1000
    for sub in SUB_RESOURCES:
        for path in (f"/api/studies/{study_of_a.id}/{sub}/", f"/api/studies/{study_of_a.id}/{sub}/?format=csv"):
            response = bob.get(path)
            assert response.status_code == 404, path
            assert response.status_code == bob.get(path.replace(str(study_of_a.id), str(missing))).status_code
        assert bob.post(f"/api/studies/{study_of_a.id}/{sub}/", {}).status_code in {404, 405}, sub
    assert bob.patch(f"/api/studies/{study_of_a.id}/", {"name": "Bob's now"}, format="json").status_code == 404
    assert bob.post(f"/api/studies/{study_of_a.id}/analysis/").status_code == 404
    import_id = study_of_a.imports.get().id
    assert bob.get(f"/api/imports/{import_id}/").status_code == 404
    study_of_a.refresh_from_db()
    assert study_of_a.name == "A's study"


def test_the_teams_members_read_everything(two_teams, study_of_a):
    for name in ("alice", "vera", "ed"):
        client = token_client(two_teams[name][1])
        listed = client.get("/api/studies/").json()["results"]
        assert [s["id"] for s in listed] == [study_of_a.id] and listed[0]["team"] == two_teams["a"].id
        assert client.get(f"/api/studies/{study_of_a.id}/").json()["n_items"] == 3
        for sub in SUB_RESOURCES:
            status = client.get(f"/api/studies/{study_of_a.id}/{sub}/").status_code
            assert status in {200, 404} if sub == "ground-truth-alternatives" else status == 200, sub


def test_a_viewer_may_not_write(two_teams, study_of_a):
    vera = token_client(two_teams["vera"][1])
    url = f"/api/studies/{study_of_a.id}/"
    assert vera.patch(url, {"name": "Vera's now"}, format="json").status_code == 403
    assert vera.put(url, {"name": "Vera's now", "slug": "v"}, format="json").status_code == 403
    assert vera.delete(url).status_code in {403, 405}
    assert vera.post(f"{url}analysis/").status_code == 403
    assert vera.post(f"{url}imports/", {}).status_code == 403
    study_of_a.refresh_from_db()
    assert study_of_a.name == "A's study" and Study.objects.filter(pk=study_of_a.pk).exists()


def test_an_editor_may_change_the_settings_not_the_team(two_teams, study_of_a):
    ed = token_client(two_teams["ed"][1])
    url = f"/api/studies/{study_of_a.id}/"
    response = ed.patch(url, {"name": "Ed's edit"}, format="json")
    assert response.status_code == 200, response.content
    assert response.json()["team"] == two_teams["a"].id
    study_of_a.refresh_from_db()
    assert study_of_a.name == "Ed's edit"
    assert ed.patch(url, {"team": two_teams["b"].id}, format="json").status_code == 400
    Membership.objects.create(team=two_teams["b"], user=two_teams["ed"][0], role="editor")
    assert ed.patch(url, {"team": two_teams["b"].id}, format="json").status_code == 400
    study_of_a.refresh_from_db()
    assert study_of_a.team == two_teams["a"]


def test_a_new_study_goes_to_the_team_named_or_the_only_one(two_teams):
    ed = token_client(two_teams["ed"][1])
    response = ed.post("/api/studies/", {"name": "New", "slug": "new"}, format="json")
    assert response.status_code == 201, response.content
    assert response.json()["team"] == two_teams["a"].id
    vera = token_client(two_teams["vera"][1])
    response = vera.post("/api/studies/", {"name": "V", "slug": "v", "team": two_teams["a"].id}, format="json")
    assert response.status_code == 400 and "team" in response.json()
    response = ed.post("/api/studies/", {"name": "B", "slug": "b", "team": two_teams["b"].id}, format="json")
    assert response.status_code == 400 and "team" in response.json()
    assert not Study.objects.filter(slug__in=["v", "b"]).exists()
    # vera edits nowhere: her first study makes a team of her own.
    response = vera.post("/api/studies/", {"name": "V", "slug": "v"}, format="json")
    assert response.status_code == 201
    assert Team.objects.get(pk=response.json()["team"]).memberships.get().user == two_teams["vera"][0]


def test_an_editor_of_two_teams_names_one(two_teams):
    Membership.objects.create(team=two_teams["b"], user=two_teams["ed"][0], role="editor")
    ed = token_client(two_teams["ed"][1])
    response = ed.post("/api/studies/", {"name": "N", "slug": "n"}, format="json")
    assert response.status_code == 400 and "several teams" in response.json()["team"][0]
    response = ed.post("/api/studies/", {"name": "N", "slug": "n", "team": two_teams["b"].id}, format="json")
    assert response.status_code == 201 and response.json()["team"] == two_teams["b"].id


def test_a_superuser_sees_every_study(two_teams, study_of_a):
    root, token = make_researcher("root")
    root.is_superuser = True
    root.save()
    assert token_client(token).get(f"/api/studies/{study_of_a.id}/labels/").status_code == 200
