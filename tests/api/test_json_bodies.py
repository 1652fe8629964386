"""Every JSON write of the API takes one JSON object: any other JSON value, or one nested too deeply, is a 400
saying what is wrong, and nothing is stored."""
from __future__ import annotations

import pytest

from annotation.models import Study
from auditapp.models import Audit, LLMEndpoint

pytestmark = pytest.mark.django_db

JSON_WRITES = ["/api/studies/", "/api/endpoints/", "/api/audits/"]
DEEP = "[" * 100_000 + "]" * 100_000


@pytest.mark.parametrize("path", JSON_WRITES)
@pytest.mark.parametrize("body, kind", [("[]", "an array"), ('[{"name": "x"}]', "an array"), ("3", "a number"),
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
