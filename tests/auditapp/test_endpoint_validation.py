"""LLM endpoints are refused with limits no request could run under (endpoint settings validated): through the API, the
admin and any other write (the database's check constraints)."""
from __future__ import annotations

import pytest
from django.db import IntegrityError, transaction

from auditapp.models import LLMEndpoint

pytestmark = pytest.mark.django_db

VALID = {"name": "local", "protocol": "openai", "base_url": "http://127.0.0.1:8000", "max_concurrency": 4,
         "attempt_timeout_s": 60, "deadline_s": 300, "max_attempts": 3}

UNUSABLE = [
    ("max_concurrency", 0),
    ("max_concurrency", -1),
    ("attempt_timeout_s", 0),
    ("attempt_timeout_s", -5),
    ("deadline_s", 0),
    ("deadline_s", -1.5),
    ("max_attempts", 0),
    ("requests_per_minute", 0),
]


@pytest.mark.parametrize(("field", "value"), UNUSABLE)
def test_the_api_refuses_an_endpoint_with_an_unusable_limit_and_names_the_field(api_client, field, value):
    response = api_client.post("/api/endpoints/", {**VALID, field: value}, format="json")
    assert response.status_code == 400
    assert field in response.json()
    assert not LLMEndpoint.objects.exists()


def test_the_api_refuses_an_infinite_time_out(api_client):
    body = '{"name": "x", "base_url": "http://127.0.0.1:8000", "deadline_s": 1e400}'
    response = api_client.post("/api/endpoints/", body, content_type="application/json")
    assert response.status_code == 400 and "deadline_s" in response.json()["detail"]
    assert not LLMEndpoint.objects.exists()


def test_the_api_accepts_usable_limits(api_client):
    response = api_client.post("/api/endpoints/", {**VALID, "requests_per_minute": 60}, format="json")
    assert response.status_code == 201, response.json()


@pytest.mark.parametrize(("base_url", "message"), [
    ("ftp://127.0.0.1/", "an endpoint is reached over http:// or https://, not ftp://"),
    ("FTPS://127.0.0.1/v1", "not ftps://"),
    ("127.0.0.1:18081", "begin it with http:// or https:// (for example http://127.0.0.1:18081)"),
])
def test_an_endpoint_is_reached_over_http_or_https_and_a_missing_scheme_is_named(api_client, client, researcher,
                                                                                 base_url, message):
    response = api_client.post("/api/endpoints/", {**VALID, "base_url": base_url}, format="json")
    assert response.status_code == 400
    assert any(message in error for error in response.json()["base_url"]), response.json()
    client.force_login(researcher[0])
    form = {**VALID, "api_key_env": "", "requests_per_minute": "", "score_min": -1, "score_max": 1,
            "base_url": base_url}
    page = client.post("/admin/auditapp/llmendpoint/add/", form)
    if "://" in base_url:
        assert page.status_code == 200 and "http:// or https://" in page.content.decode()
        assert not LLMEndpoint.objects.exists()
    else:  # the admin's URL field assumes http:// for an address typed without it
        assert page.status_code == 302
        assert LLMEndpoint.objects.get().base_url == f"http://{base_url}"
        LLMEndpoint.objects.all().delete()
    assert api_client.post("/api/endpoints/", {**VALID, "base_url": "HTTPS://127.0.0.1:8000"},
                           format="json").status_code == 201


@pytest.mark.parametrize(("field", "value"), UNUSABLE)
def test_the_admin_refuses_an_endpoint_with_an_unusable_limit(client, researcher, field, value):
    client.force_login(researcher[0])
    # What the admin form renders: its scorer fields with their initial values.
    form = {**VALID, "api_key_env": "", "requests_per_minute": "", "score_min": -1, "score_max": 1, field: value}
    response = client.post("/admin/auditapp/llmendpoint/add/", form)
    assert response.status_code == 200, "the form is shown again with its errors"
    assert "errornote" in response.content.decode()
    assert not LLMEndpoint.objects.exists()
    form[field] = VALID.get(field, "")
    assert client.post("/admin/auditapp/llmendpoint/add/", form).status_code == 302
    assert LLMEndpoint.objects.count() == 1


@pytest.mark.parametrize(("field", "value"), UNUSABLE)
def test_the_database_refuses_an_unusable_limit_written_around_the_forms(field, value):
    with pytest.raises(IntegrityError), transaction.atomic():
        LLMEndpoint.objects.create(**{**VALID, field: value})
