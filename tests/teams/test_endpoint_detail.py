"""One endpoint through the API: read by its team and the teams it is shared with, changed by its team's editors,
deleted by its owners, and never changed in what its requests' keys hold while an audit still has requests to send,
nor deleted while an audit names it."""
from __future__ import annotations

import pytest

from auditapp.engine import launch as engine_launch
from auditapp.models import Audit, AuditModel, AuditRequest, LLMEndpoint
from auditapp.paradigms.classification import services as classification_services
from teams.scoping import new_objects_in
from tests.factories import make_audit_study, token_client


@pytest.fixture
def endpoint(two_teams):
    return LLMEndpoint.objects.create(name="A's vLLM", base_url="http://127.0.0.1:9/v1", api_key_env="LLM_KEY_A",
                                      team=two_teams["a"], listed_models=[{"name": "m", "digest": None,
                                                                           "details": {}}])


def audit_with_a_pending_request(team, endpoint: LLMEndpoint, status: str) -> Audit:
    with new_objects_in(team):
        study = make_audit_study(3, n_examples=1)
        audit = classification_services.audit_create(study=study, name="sending", conditions=["zs"],
                                                     models=[engine_launch.ModelChoice(endpoint=endpoint, model="m")])
    Audit.objects.filter(pk=audit.pk).update(status=status, n_requests=1)
    AuditRequest.objects.create(audit=audit, audit_model=audit.models.get(), condition="zs",
                                item=study.items.first(), order=0, key="k")
    return audit


def test_its_team_reads_and_its_editors_change_it_a_viewer_and_another_team_may_not(two_teams, endpoint):
    url = f"/api/endpoints/{endpoint.id}/"
    ed, vera, bob = (token_client(two_teams[name][1]) for name in ("ed", "vera", "bob"))
    read = vera.get(url)
    assert read.status_code == 200 and read.json()["name"] == "A's vLLM"
    assert read.json()["api_key_env"] is None, "where its key lives is its team's editors' business"
    assert ed.get(url).json()["api_key_env"] == "LLM_KEY_A"
    assert bob.get(url).status_code == 404

    changed = ed.patch(url, {"max_concurrency": 4, "deadline_s": 90}, format="json")
    assert changed.status_code == 200, changed.content
    assert changed.json()["max_concurrency"] == 4 and changed.json()["deadline_s"] == 90
    endpoint.refresh_from_db()
    assert (endpoint.max_concurrency, endpoint.deadline_s) == (4, 90)
    assert endpoint.listed_models, "kept: the server it describes did not change"

    assert vera.patch(url, {"max_concurrency": 2}, format="json").status_code == 403
    assert bob.patch(url, {"max_concurrency": 2}, format="json").status_code == 404
    endpoint.refresh_from_db()
    assert endpoint.max_concurrency == 4


def test_a_team_it_is_shared_with_reads_it_without_its_key_variable_and_changes_nothing(two_teams, endpoint):
    endpoint.shared_with.add(two_teams["b"])
    bob = token_client(two_teams["bob"][1])
    url = f"/api/endpoints/{endpoint.id}/"
    read = bob.get(url)
    assert read.status_code == 200 and read.json()["api_key_env"] is None
    assert bob.patch(url, {"base_url": "http://127.0.0.1:10/v1"}, format="json").status_code == 403
    assert bob.delete(url).status_code == 403
    endpoint.refresh_from_db()
    assert endpoint.base_url == "http://127.0.0.1:9/v1"


def test_bad_changes_are_a_400_naming_the_field(two_teams, endpoint):
    ed = token_client(two_teams["ed"][1])
    url = f"/api/endpoints/{endpoint.id}/"
    for body, field in (({"base_url": "ftp://127.0.0.1/v1"}, "base_url"), ({"team": two_teams["b"].id}, "team"),
                        ({"max_concurrency": 0}, "max_concurrency"), ({"deadline_s": "nan"}, "deadline_s")):
        response = ed.patch(url, body, format="json")
        assert response.status_code == 400 and field in response.json(), (body, response.content)
    assert ed.patch(url, "[]", content_type="application/json").status_code == 400
    endpoint.refresh_from_db()
    assert endpoint.base_url == "http://127.0.0.1:9/v1" and endpoint.team_id == two_teams["a"].id


@pytest.mark.parametrize("status", ["running", "paused", "failed"])
def test_what_its_requests_keys_hold_is_not_changed_while_an_audit_has_requests_to_send(two_teams, endpoint,
                                                                                         status):
    audit = audit_with_a_pending_request(two_teams["a"], endpoint, status)
    ed = token_client(two_teams["ed"][1])
    url = f"/api/endpoints/{endpoint.id}/"
    refused = ed.patch(url, {"base_url": "http://127.0.0.1:10/v1"}, format="json")
    assert refused.status_code == 409, refused.content
    assert "'sending'" in refused.json()["detail"] and "register the new settings as a new endpoint" in \
        refused.json()["detail"]
    assert ed.patch(url, {"protocol": "ollama"}, format="json").status_code == 409
    assert ed.patch(url, {"max_concurrency": 3, "name": "A's vLLM (fast)"}, format="json").status_code == 200
    endpoint.refresh_from_db()
    assert endpoint.base_url == "http://127.0.0.1:9/v1" and endpoint.max_concurrency == 3

    Audit.objects.filter(pk=audit.pk).update(status="cancelled")
    moved = ed.patch(url, {"base_url": "http://127.0.0.1:10/v1"}, format="json")
    assert moved.status_code == 200, moved.content
    assert moved.json()["base_url"] == "http://127.0.0.1:10/v1"
    assert moved.json()["listed_models"] == [] and moved.json()["listed_at"] is None, \
        "the listing described the old server"


def test_its_owners_delete_it_unless_an_audit_names_it(two_teams, endpoint):
    alice, ed = token_client(two_teams["alice"][1]), token_client(two_teams["ed"][1])
    url = f"/api/endpoints/{endpoint.id}/"
    audit = audit_with_a_pending_request(two_teams["a"], endpoint, "completed")
    assert ed.delete(url).status_code == 403
    refused = alice.delete(url)
    assert refused.status_code == 409
    assert refused.json()["detail"] == ("endpoint A's vLLM is named by 1 audit(s), whose records say which endpoint "
                                        "answered: it cannot be deleted")
    assert LLMEndpoint.objects.filter(pk=endpoint.pk).exists()

    audit.delete()
    assert alice.delete(url).status_code == 204
    assert not LLMEndpoint.objects.filter(pk=endpoint.pk).exists()
    assert alice.get(url).status_code == 404


def test_the_admin_refuses_the_same_change_and_drops_the_old_servers_listing_after_one(two_teams, endpoint):
    import re

    from django.test import Client

    audit = audit_with_a_pending_request(two_teams["a"], endpoint, "running")
    ed = Client()
    ed.force_login(two_teams["ed"][0])
    url = f"/admin/auditapp/llmendpoint/{endpoint.id}/change/"
    form = {"name": endpoint.name, "protocol": "openai", "base_url": "http://127.0.0.1:10/v1",
            "api_key_env": endpoint.api_key_env, "max_concurrency": 4, "attempt_timeout_s": 60, "deadline_s": 600,
            "requests_per_minute": "", "max_attempts": 3, "structured_output": "", "request_template": "{}",
            "score_path": "", "score_min": -1, "score_max": 1}
    refused = ed.post(url, form)
    assert refused.status_code == 200
    errors = " ".join(re.findall(r"errorlist[^>]*>(.*?)</ul>", refused.content.decode(), re.S))
    assert "still have to send" in errors and "&#x27;sending&#x27;" in errors
    endpoint.refresh_from_db()
    assert endpoint.base_url == "http://127.0.0.1:9/v1" and endpoint.max_concurrency == 8

    Audit.objects.filter(pk=audit.pk).update(status="completed")
    saved = ed.post(url, form)
    assert saved.status_code == 302, re.findall(r"errorlist[^>]*>(.*?)</ul>", saved.content.decode(), re.S)
    endpoint.refresh_from_db()
    assert endpoint.base_url == "http://127.0.0.1:10/v1" and endpoint.max_concurrency == 4
    assert endpoint.listed_models == [] and endpoint.listed_at is None


def test_a_local_scorers_endpoint_is_renamed_and_shared_without_a_server_to_ask(two_teams):
    """A kind with no server and no audit: nothing to key again, nothing refused."""
    local = LLMEndpoint.objects.create(name="in the worker", protocol="local", base_url="", team=two_teams["a"])
    renamed = token_client(two_teams["ed"][1]).patch(f"/api/endpoints/{local.id}/", {"name": "VADER and TextBlob"},
                                                     format="json")
    assert renamed.status_code == 200, renamed.content
    assert {model["name"] for model in renamed.json()["listed_models"]} == {"vader", "textblob"}

    from django.test import Client

    alice = Client()
    alice.force_login(two_teams["alice"][0])
    form = {"name": "VADER and TextBlob", "protocol": "local", "base_url": "", "api_key_env": "",
            "max_concurrency": local.max_concurrency, "attempt_timeout_s": 60, "deadline_s": 600,
            "requests_per_minute": "", "max_attempts": 3, "structured_output": "", "request_template": "{}",
            "score_path": "", "score_min": -1, "score_max": 1, "shared_with": [two_teams["b"].id]}
    saved = alice.post(f"/admin/auditapp/llmendpoint/{local.id}/change/", form)
    assert saved.status_code == 302, saved.content[:2000]
    assert list(local.shared_with.values_list("name", flat=True)) == ["B"]


def test_an_http_json_scorers_template_score_path_and_scale_are_in_its_keys(two_teams):
    from tests.auditapp.test_endpoint_kinds import HTTP_JSON

    scorer = LLMEndpoint.objects.create(**HTTP_JSON, team=two_teams["a"])
    # A BITS audit scoring texts with it, one request still to send (only the keys matter here).
    audit = Audit.objects.create(name="scoring", paradigm="bits", team=two_teams["a"], status="running")
    audit_model = AuditModel.objects.create(audit=audit, endpoint=scorer, model="perspective", position=0)
    AuditRequest.objects.create(audit=audit, audit_model=audit_model, condition="texts", unit="t1", order=0,
                                key="k")
    ed = token_client(two_teams["ed"][1])
    url = f"/api/endpoints/{scorer.id}/"
    for change in ({"score_path": "other.score"}, {"score_min": -2}, {"score_max": 2},
                   {"request_template": {"text": "{{text}}", "lang": "en"}}):
        assert ed.patch(url, change, format="json").status_code == 409, change
    assert ed.patch(url, {"max_concurrency": 2}, format="json").status_code == 200
    Audit.objects.filter(pk=audit.pk).update(status="cancelled")
    assert ed.patch(url, {"score_path": "other.score"}, format="json").status_code == 200


def test_an_endpoint_whose_kind_changed_is_still_changed_and_its_old_audits_are_not_sent_again(two_teams,
                                                                                                endpoint):
    """A chat endpoint an old audit asked for model "m" becomes the local scorers (nothing was left to send): it is
    renamed later without a 500, though "m" is no model of its new kind; and that audit's failed requests, keyed for
    the chat server, are not sent to the local scorers (409)."""
    audit = audit_with_a_pending_request(two_teams["a"], endpoint, "completed")
    AuditRequest.objects.filter(audit=audit).update(state=AuditRequest.State.FAILED, error="HTTP 500")
    from auditapp.engine.endpoints import request_identity

    Audit.objects.filter(pk=audit.pk).update(
        manifest={"endpoint_identities": {str(audit.models.get().id): request_identity(endpoint, "m")}})
    ed = token_client(two_teams["ed"][1])
    url = f"/api/endpoints/{endpoint.id}/"
    assert ed.patch(url, {"protocol": "local", "base_url": ""}, format="json").status_code == 200
    renamed = ed.patch(url, {"name": "in the worker"}, format="json")
    assert renamed.status_code == 200, renamed.content
    refused = ed.post(f"/api/audits/{audit.id}/retry-failed/")
    assert refused.status_code == 409, refused.content
    assert "for m at in the worker" in refused.json()["detail"]
    assert AuditRequest.objects.get(audit=audit).state == AuditRequest.State.FAILED
