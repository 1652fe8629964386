"""Endpoint kinds at the boundary and in the services: the API and the admin check each kind's settings and
name every problem (nothing stored); a local scorer needs no base URL and its models are listed without a
server; request keys carry the kind's identity."""
from __future__ import annotations

import pytest

from auditapp import scorer_kinds
from auditapp.engine import endpoints as engine_endpoints
from auditapp.engine import planning
from auditapp.engine.request_keys import request_key
from auditapp.models import Audit, AuditModel, LLMEndpoint
from tests.scoring_server import REQUEST_TEMPLATE, SCORE_PATH

pytestmark = pytest.mark.django_db

HTTP_JSON = {"name": "perspective", "protocol": "http_json", "base_url": "http://127.0.0.1:9/v1/score",
             "request_template": REQUEST_TEMPLATE, "score_path": SCORE_PATH, "score_min": -1, "score_max": 1}
LOCAL = {"name": "in the worker", "protocol": "local"}


def test_the_api_registers_an_http_json_scorer_with_its_one_model(api_client):
    response = api_client.post("/api/endpoints/", HTTP_JSON, format="json")
    assert response.status_code == 201, response.json()
    endpoint = LLMEndpoint.objects.get()
    assert (endpoint.request_template, endpoint.score_path) == (REQUEST_TEMPLATE, SCORE_PATH)
    assert [m["name"] for m in response.json()["listed_models"]] == ["score"]


def test_the_api_registers_a_local_scorer_without_a_base_url_and_lists_its_models(api_client):
    response = api_client.post("/api/endpoints/", LOCAL, format="json")
    assert response.status_code == 201, response.json()
    assert response.json()["base_url"] == ""
    assert sorted(m["name"] for m in response.json()["listed_models"]) == ["textblob", "vader"]
    # Listing again asks no server and checks no address (an empty URL would be refused as naming no host).
    endpoint = LLMEndpoint.objects.get()
    assert sorted(m.name for m in engine_endpoints.endpoint_list_models(endpoint)) == ["textblob", "vader"]
    assert api_client.get(f"/api/endpoints/{endpoint.id}/models/").status_code == 200


@pytest.mark.parametrize(("body", "fields"), [
    ({**HTTP_JSON, "request_template": {"inputs": "text"}}, {"request_template"}),
    ({**HTTP_JSON, "request_template": '{"inputs": "{{text}}"}'}, {"request_template"}),
    ({**HTTP_JSON, "score_path": "[0][?label=='POSITIVE'"}, {"score_path"}),
    ({**HTTP_JSON, "score_min": 1, "score_max": 0}, {"score_max"}),
    ({key: value for key, value in HTTP_JSON.items() if key not in ("request_template", "score_path")},
     {"request_template", "score_path"}),
    ({**HTTP_JSON, "base_url": ""}, {"base_url"}),
    ({**LOCAL, "base_url": "http://127.0.0.1:8000"}, {"base_url"}),
    ({"name": "chat", "protocol": "openai"}, {"base_url"}),
])
def test_the_api_names_every_problem_of_a_kind_and_stores_nothing(api_client, body, fields):
    response = api_client.post("/api/endpoints/", body, format="json")
    assert response.status_code == 400
    assert set(response.json()) == fields
    assert not LLMEndpoint.objects.exists()


def test_the_api_refuses_an_infinite_scale(api_client):
    body = ('{"name": "x", "protocol": "http_json", "base_url": "http://127.0.0.1:9/s", "score_path": "s", '
            '"request_template": {"inputs": "{{text}}"}, "score_max": 1e400}')
    response = api_client.post("/api/endpoints/", body, content_type="application/json")
    assert response.status_code == 400 and "score_max" in response.json()["detail"]
    assert not LLMEndpoint.objects.exists()


def admin_form(**values) -> dict:
    """What the admin's add form posts: every field, as text."""
    form = {"name": "e", "protocol": "openai", "base_url": "", "api_key_env": "", "max_concurrency": 8,
            "requests_per_minute": "", "attempt_timeout_s": 120, "deadline_s": 600, "max_attempts": 5,
            "request_template": "null", "score_path": "", "score_min": -1, "score_max": 1}
    return {**form, **values}


def test_the_admin_shows_the_scorer_fields_with_their_help(client, researcher):
    client.force_login(researcher[0])
    page = client.get("/admin/auditapp/llmendpoint/add/").content.decode()
    assert "HTTP JSON scorer" in page and "JMESPath" in page and "leave the base URL empty" in page


def test_the_admin_adds_a_local_scorer_without_a_base_url(client, researcher):
    client.force_login(researcher[0])
    response = client.post("/admin/auditapp/llmendpoint/add/", admin_form(protocol="local"))
    assert response.status_code == 302
    endpoint = LLMEndpoint.objects.get()
    assert endpoint.base_url == "" and {m["name"] for m in endpoint.listed_models} == {"vader", "textblob"}


@pytest.mark.parametrize(("values", "message"), [
    ({"request_template": '{"inputs": "{{text}}", "again": "{{text}}"}'}, "2 times"),
    ({"score_path": ""}, "the score path is empty"),
    ({"score_min": 2}, "score_max (1) must be more than score_min (2)"),
    ({"base_url": ""}, "a http_json endpoint needs a base URL"),
])
def test_the_admin_names_each_problem_of_an_http_json_scorer(client, researcher, values, message):
    client.force_login(researcher[0])
    good = admin_form(protocol="http_json", base_url="http://127.0.0.1:9/v1/score",
                      request_template='{"inputs": "{{text}}"}', score_path="score")
    response = client.post("/admin/auditapp/llmendpoint/add/", {**good, **values})
    assert response.status_code == 200 and "errornote" in response.content.decode()
    assert message in response.content.decode().replace("&#x27;", "'")
    assert not LLMEndpoint.objects.exists()
    assert client.post("/admin/auditapp/llmendpoint/add/", good).status_code == 302


def test_the_admin_refuses_a_base_url_for_a_local_scorer(client, researcher):
    client.force_login(researcher[0])
    response = client.post("/admin/auditapp/llmendpoint/add/",
                           admin_form(protocol="local", base_url="http://127.0.0.1:8000"))
    assert response.status_code == 200 and "has no base URL" in response.content.decode()
    assert not LLMEndpoint.objects.exists()


def test_an_audit_request_key_carries_the_local_scorers_identity():
    endpoint = LLMEndpoint.objects.create(name="local", protocol="local", base_url="")
    audit, audit_model = Audit(id=5, use_cache=True), AuditModel(endpoint=endpoint, model="vader", digest="d")
    payload = {"texts": ["A good day."]}
    identity = scorer_kinds.identity(engine_endpoints.endpoint_config(endpoint), "vader")
    assert identity["package"] == "vaderSentiment" and identity["lexicon_sha256"]
    assert planning.audit_request_key(audit, audit_model, payload, 0) == request_key(
        protocol="local", base_url="", model="vader", digest="d", params={}, messages=payload, replicate=0,
        identity=identity)


def test_a_chat_audit_request_key_is_unchanged():
    endpoint = LLMEndpoint.objects.create(name="chat", protocol="openai", base_url="http://127.0.0.1:8000")
    audit, audit_model = Audit(id=5, use_cache=False), AuditModel(endpoint=endpoint, model="m", digest="")
    messages = [{"role": "user", "content": "x"}]
    assert planning.audit_request_key(audit, audit_model, messages, 2) == request_key(
        protocol="openai", base_url="http://127.0.0.1:8000", model="m", digest="", params={}, messages=messages,
        replicate=2, scope="audit:5")
