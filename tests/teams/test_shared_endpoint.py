"""One lab endpoint shared with two teams: both launch audits on it through the API, neither sees the other's audits;
neither learns where its key lives nor may it be used by a team it is not shared with."""
from __future__ import annotations

import re

import pytest
from rest_framework.test import APIClient

from auditapp.models import Audit, LLMEndpoint
from teams.models import Membership, Team
from teams.scoping import new_objects_in
from tests.factories import make_audit_study, make_researcher, token_client


@pytest.fixture
def prepare_sent(monkeypatch):
    sent = []
    monkeypatch.setattr("tasks.audits.audit_prepare_task.delay", sent.append)
    monkeypatch.setattr("tasks.audits.audit_work_task.delay", lambda audit_id: sent.append(("work", audit_id)))
    return sent


@pytest.fixture
def lab(two_teams):
    """Team "Lab" (owned by lena) holds an endpoint shared with A and B; A and B each have a study to audit."""
    lab_team = Team.objects.create(name="Lab")
    lena, lena_token = make_researcher("lena")
    Membership.objects.create(team=lab_team, user=lena, role="owner")
    endpoint = LLMEndpoint.objects.create(name="lab vLLM", base_url="http://127.0.0.1:9/v1",
                                          api_key_env="LLM_KEY_LAB", team=lab_team)
    endpoint.shared_with.add(two_teams["a"], two_teams["b"])
    studies = {}
    for name in ("a", "b"):
        with new_objects_in(two_teams[name]):
            studies[name] = make_audit_study(12, n_examples=3, name=f"{name.upper()}'s study")
    return {"endpoint": endpoint, "studies": studies, "lena": lena_token, "team": lab_team}


def launch(client: APIClient, study_id: int, endpoint_id: int, name: str):
    return client.post("/api/audits/", {"study": study_id, "name": name,
                                        "models": [{"endpoint": endpoint_id, "model": "m"}]}, format="json")


def test_two_teams_launch_on_one_shared_endpoint_and_see_only_their_own_audits(
        two_teams, lab, prepare_sent, django_capture_on_commit_callbacks):
    alice, bob = token_client(two_teams["alice"][1]), token_client(two_teams["bob"][1])
    endpoint = lab["endpoint"]
    for client in (alice, bob):
        listed = client.get("/api/endpoints/").json()["results"]
        assert [e["id"] for e in listed] == [endpoint.id]
        assert listed[0]["api_key_env"] is None, "a team it is shared with does not learn where its key lives"
        assert listed[0]["shared_with"] == sorted([two_teams["a"].id, two_teams["b"].id])
    with django_capture_on_commit_callbacks(execute=True):
        a_response = launch(alice, lab["studies"]["a"].id, endpoint.id, "A's audit")
        b_response = launch(bob, lab["studies"]["b"].id, endpoint.id, "B's audit")
    assert a_response.status_code == 201, a_response.content
    assert b_response.status_code == 201, b_response.content
    a_audit, b_audit = Audit.objects.get(pk=a_response.json()["id"]), Audit.objects.get(pk=b_response.json()["id"])
    assert (a_audit.team, b_audit.team) == (two_teams["a"], two_teams["b"])
    assert a_audit.models.get().endpoint == b_audit.models.get().endpoint == endpoint

    assert [a["id"] for a in alice.get("/api/audits/").json()["results"]] == [a_audit.id]
    assert [a["id"] for a in bob.get("/api/audits/").json()["results"]] == [b_audit.id]
    for client, other in ((alice, b_audit), (bob, a_audit)):
        for sub in ("", "progress/", "responses/", "manifest/", "tables/", "parse-quality/"):
            assert client.get(f"/api/audits/{other.id}/{sub}").status_code == 404, sub
        assert client.post(f"/api/audits/{other.id}/pause/").status_code == 404

    # The lab's owner sees the endpoint with its key's variable, and no team's audits.
    lena = token_client(lab["lena"])
    assert lena.get("/api/endpoints/").json()["results"][0]["api_key_env"] == "LLM_KEY_LAB"
    assert lena.get("/api/audits/").json()["results"] == []


def test_an_endpoint_not_shared_with_the_team_does_not_exist_for_it(two_teams, lab, prepare_sent):
    carl, token = make_researcher("carl")
    team_c = Team.objects.create(name="C")
    Membership.objects.create(team=team_c, user=carl, role="owner")
    with new_objects_in(team_c):
        study = make_audit_study(12, n_examples=3, name="C's study")
    carl_client = token_client(token)
    assert carl_client.get("/api/endpoints/").json()["results"] == []
    assert carl_client.get(f"/api/endpoints/{lab['endpoint'].id}/models/").status_code == 404
    response = launch(carl_client, study.id, lab["endpoint"].id, "C's audit")
    assert response.status_code == 400 and "models" in response.json(), response.content
    assert "does not exist" in response.content.decode()
    assert not Audit.objects.exists() and not prepare_sent


def test_a_viewer_of_the_studys_team_may_not_launch_and_a_foreign_study_does_not_exist(two_teams, lab,
                                                                                       prepare_sent):
    vera = token_client(two_teams["vera"][1])
    assert launch(vera, lab["studies"]["a"].id, lab["endpoint"].id, "Vera's").status_code == 403
    alice = token_client(two_teams["alice"][1])
    response = launch(alice, lab["studies"]["b"].id, lab["endpoint"].id, "Alice on B's study")
    assert response.status_code == 400 and "study" in response.json()
    assert not Audit.objects.exists() and not prepare_sent


def test_the_shared_teams_cannot_register_an_endpoint_in_the_lab(two_teams, lab):
    alice = token_client(two_teams["alice"][1])
    response = alice.post("/api/endpoints/", {"name": "mine", "base_url": "http://127.0.0.1:9/v1",
                                              "api_key_env": "LLM_KEY_X", "team": lab["team"].id},
                          format="json")
    assert response.status_code == 400 and "team" in response.json()
    response = alice.post("/api/endpoints/", {"name": "mine", "base_url": "http://127.0.0.1:9/v1",
                                              "api_key_env": "LLM_KEY_X"}, format="json")
    assert response.status_code == 201, response.content
    assert response.json()["team"] == two_teams["a"].id and response.json()["api_key_env"] == "LLM_KEY_X"
    assert LLMEndpoint.objects.get(pk=response.json()["id"]).team == two_teams["a"]


def test_the_lab_shares_its_endpoint_in_the_admin_and_a_shared_team_reads_it_without_its_key(two_teams, lab):
    from django.test import Client

    endpoint, other = lab["endpoint"], Team.objects.create(name="C")
    lena = Client()
    lena.force_login(endpoint.team.memberships.get().user)
    page = lena.get(f"/admin/auditapp/llmendpoint/{endpoint.id}/change/").content.decode()
    assert 'name="shared_with"' in page and 'name="api_key_env"' in page
    form = {"name": endpoint.name, "protocol": endpoint.protocol, "base_url": endpoint.base_url,
            "api_key_env": endpoint.api_key_env, "max_concurrency": 4, "attempt_timeout_s": 60, "deadline_s": 600,
            "requests_per_minute": "", "max_attempts": 3, "structured_output": "", "request_template": "{}",
            "score_path": "", "score_min": -1, "score_max": 1,
            "shared_with": [two_teams["a"].id, other.id]}
    response = lena.post(f"/admin/auditapp/llmendpoint/{endpoint.id}/change/", form)
    assert response.status_code == 302, re.findall(r"errorlist[^>]*>(.*?)</ul>", response.content.decode(), re.S)
    assert set(endpoint.shared_with.values_list("name", flat=True)) == {"A", "C"}

    alice = Client()
    alice.force_login(two_teams["alice"][0])
    page = alice.get(f"/admin/auditapp/llmendpoint/{endpoint.id}/change/").content.decode()
    assert endpoint.name in page and "LLM_KEY_LAB" not in page and 'name="name"' not in page  # read-only
    assert "LLM_KEY_LAB" not in alice.get("/admin/auditapp/llmendpoint/").content.decode()
    bob = Client()
    bob.force_login(two_teams["bob"][0])  # B is no longer among the teams it is shared with
    assert endpoint.name not in bob.get("/admin/auditapp/llmendpoint/").content.decode()
