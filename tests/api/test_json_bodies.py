"""Every JSON write of the API takes one JSON object: any other JSON value, or one nested too deeply, is a 400
saying what is wrong, and nothing is stored."""
from __future__ import annotations

import json

import pytest

from annotation.models import Study
from auditapp.models import Audit, LLMEndpoint
from tests.factories import make_audit_study

pytestmark = pytest.mark.django_db

JSON_WRITES = ["/api/studies/", "/api/endpoints/", "/api/audits/"]
DEEP = "[" * 100_000 + "]" * 100_000


@pytest.mark.parametrize("path", JSON_WRITES)
@pytest.mark.parametrize(("body", "kind"), [("[]", "an array"), ('[{"name": "x"}]', "an array"), ("3", "a number"),
                                            ('"audit"', "a string"), ("null", "null"), ("true", "a boolean")])
def test_a_body_that_is_not_an_object_is_a_400_naming_what_it_is(api_client, path, body, kind):
    response = api_client.post(path, body, content_type="application/json")
    assert response.status_code == 400, response.content
    assert response.json() == {"detail": f"The request body must be a JSON object ({{...}}), not {kind}."}
    assert not (Study.objects.exists() or LLMEndpoint.objects.exists() or Audit.objects.exists())


@pytest.mark.parametrize("path", JSON_WRITES)
@pytest.mark.parametrize("body", [DEEP, '{"name": ' + DEEP + "}", '{"a": ' + "[" * 65 + "]" * 65 + "}"])
def test_json_nested_too_deeply_is_a_400(api_client, path, body):
    response = api_client.post(path, body, content_type="application/json")
    assert response.status_code == 400, response.content[:300]
    assert "nested more than 64 levels deep" in response.json()["detail"]
    assert not (Study.objects.exists() or LLMEndpoint.objects.exists() or Audit.objects.exists())


def test_an_object_still_works_and_bad_json_is_still_a_400(api_client):
    created = api_client.post("/api/studies/", '{"name": "Pilot", "slug": "pilot", "extra": [[[1]]]}',
                              content_type="application/json")
    assert created.status_code == 201, created.content
    broken = api_client.post("/api/studies/", '{"name": ', content_type="application/json")
    assert broken.status_code == 400 and broken.json()["detail"].startswith("JSON parse error")
    constant = api_client.post("/api/studies/", '{"name": NaN}', content_type="application/json")
    assert constant.status_code == 400



# JSON spellings of values no column takes: infinities (``1e400`` is one to Python's json), NaN, a NUL character, a
# lone surrogate; and the 400's message for each.
NOT_STORABLE = [("1e400", "1e400 is not a finite number"), ("-1e400", "-1e400 is not a finite number"),
                ("NaN", "NaN is not a finite number"), ("-Infinity", "-Infinity is not a finite number"),
                ('"a\\u0000b"', "contains a NUL character, which cannot be stored; please remove it"),
                ('"a\\ud800b"', "contains an invalid character (an unpaired surrogate)")]


@pytest.fixture
def launch(audit_tasks_off) -> dict:
    """A classification launch that is accepted as it is."""
    study = make_audit_study(6, n_examples=2)
    endpoint = LLMEndpoint.objects.create(name="e", base_url="http://127.0.0.1:9")
    return {"study": study.id, "name": "a", "conditions": ["zs"], "seed": 1,
            "models": [{"endpoint": endpoint.id, "model": "m", "params": {"temperature": 0, "stop": ["x"]}}]}


def poisoned(body: dict, path: tuple, value: str) -> str:
    """``body`` as JSON text with the JSON text ``value`` at ``path``."""
    body = json.loads(json.dumps(body))
    node = body
    for step in path[:-1]:
        node = node[step]
    node[path[-1]] = "VALUE"
    return json.dumps(body).replace('"VALUE"', value)


@pytest.mark.parametrize(("value", "problem"), NOT_STORABLE)
@pytest.mark.parametrize(("path", "field"), [(("study",), "study"), (("seed",), "seed"),
                                             (("models", 0, "endpoint"), "models[0].endpoint"),
                                             (("models", 0, "params", "temperature"), "models[0].params.temperature"),
                                             (("models", 0, "params", "stop", 0), "models[0].params.stop[0]")])
def test_a_value_no_column_takes_anywhere_in_a_body_is_a_400_naming_it(api_client, launch, value, problem, path,
                                                                       field):
    response = api_client.post("/api/audits/", poisoned(launch, path, value), content_type="application/json")
    assert response.status_code == 400, response.content
    assert response.json() == {"detail": f"{field}: {problem}."}
    assert not Audit.objects.exists()
    assert api_client.post("/api/audits/", launch, format="json").status_code == 201


@pytest.mark.parametrize(("key", "field", "problem"), [
    ("a\\u0000b", "models[0].params.a\\x00b", "the name contains a NUL character, which cannot be stored; please "
                                             "remove it"),
    ("a\\ud800b", "models[0].params.a\\ud800b", "the name contains an invalid character (an unpaired surrogate)")])
def test_a_name_no_column_takes_is_a_400_showing_it_escaped(api_client, launch, key, field, problem):
    body = json.dumps(launch).replace('"temperature"', f'"{key}"')
    response = api_client.post("/api/audits/", body, content_type="application/json")
    assert response.status_code == 400, response.content
    assert response.json() == {"detail": f"{field}: {problem}."}
    assert not Audit.objects.exists()


def test_every_value_no_column_takes_is_named_at_once(api_client, launch):
    body = poisoned({**launch, "seed": "SEED"}, ("models", 0, "params", "stop", 0), "1e400").replace('"SEED"', "NaN")
    response = api_client.post("/api/audits/", body, content_type="application/json")
    assert response.status_code == 400, response.content
    assert response.json() == {"detail": "seed: NaN is not a finite number; "
                                         "models[0].params.stop[0]: 1e400 is not a finite number."}


@pytest.mark.parametrize("accept", ["application/json", "text/html"])
@pytest.mark.parametrize(("path", "body", "field"), [
    ("/api/endpoints/", '{"name": "e", "protocol": "\\ud800", "base_url": "http://127.0.0.1:9"}', "protocol"),
    ("/api/studies/", '{"name": "s", "slug": "s", "label_scheme": "x\\udfff"}', "label_scheme")])
def test_a_lone_surrogate_is_never_echoed_in_an_answer(api_client, accept, path, body, field):
    """A choice field's message quotes what it was given: a lone surrogate there could not be encoded (a 500)."""
    response = api_client.post(path, body, content_type="application/json", HTTP_ACCEPT=accept)
    assert response.status_code == 400
    text = response.content.decode("utf-8")
    assert field in text and "an unpaired surrogate" in text
    assert not (Study.objects.exists() or LLMEndpoint.objects.exists())


def test_a_form_body_is_held_to_the_same_rules(api_client, launch):
    """A form's fields are text: a free-form field (an audit model's params, an endpoint's request template) gets
    its values from them, a JSON field reading its text with Python's json."""
    form = {"study": launch["study"], "name": "a", "conditions[0]": "zs", "models[0]endpoint":
            launch["models"][0]["endpoint"], "models[0]model": "m", "models[0]params.stop": "a\x00b"}
    response = api_client.post("/api/audits/", form)
    assert response.status_code == 400, response.content
    assert response.json() == {"models": {"0": {"params": [
        "stop: contains a NUL character, which cannot be stored; please remove it"]}}}
    endpoint = {"name": "scorer", "protocol": "http_json", "base_url": "http://127.0.0.1:9/score",
                "score_path": "score", "request_template": '{"text": "{{text}}", "weight": 1e400}'}
    response = api_client.post("/api/endpoints/", endpoint)
    assert response.status_code == 400, response.content
    assert response.json() == {"request_template": ["weight: inf is not a finite number"]}
    assert not Audit.objects.exists() and LLMEndpoint.objects.count() == 1
    form["models[0]params.stop"] = "ab"
    assert api_client.post("/api/audits/", form).status_code == 201
    endpoint["request_template"] = '{"text": "{{text}}", "weight": 1}'
    assert api_client.post("/api/endpoints/", endpoint).status_code == 201


def test_a_body_of_many_such_values_is_answered_briefly(api_client):
    response = api_client.post("/api/studies/", '{"name": [' + ", ".join(["NaN"] * 100_000) + "]}",
                               content_type="application/json")
    assert response.status_code == 400
    detail = response.json()["detail"]
    assert detail.count("is not a finite number") == 20 and "name[19]: NaN" in detail
    assert detail.endswith("; and more (only the first 20 are named).")
