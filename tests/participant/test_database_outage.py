"""A database that cannot be reached gives participants a 503 page that explains and retries, not a bare 500."""
from __future__ import annotations

import pytest
from django.db import InterfaceError, OperationalError
from django.test import Client

from annotation import access
from psychometrics.models import Instrument

pytestmark = pytest.mark.django_db


def raising(error: Exception):
    def lookup(request, token):
        raise error
    return lookup


@pytest.fixture
def database_down(monkeypatch):
    monkeypatch.setattr(access, "participant_by_token", raising(OperationalError(
        'connection to server at "127.0.0.1", port 5432 failed: Connection refused')))


def test_a_participant_page_answers_503_with_a_page_that_retries_by_itself(database_down):
    response = Client(raise_request_exception=False).post("/p/some-token/label/", {"item": 1, "value": 1})
    assert response.status_code == 503 and int(response["Retry-After"]) > 0
    page = response.content.decode()
    assert "Your answers so far are saved" in page and 'http-equiv="refresh"' in page
    assert "Server Error" not in page and "Connection refused" not in page


def test_a_script_post_gets_a_json_503(database_down):
    aq = Instrument.objects.get(slug="aq50")
    response = Client(raise_request_exception=False).post(
        f"/p/some-token/questionnaire/{aq.pk}/answer/", {"item": 1, "response": 0}, content_type="application/json")
    assert response.status_code == 503 and response.json()["retry_after"] == int(response["Retry-After"])


def test_only_connection_errors_become_503(monkeypatch):
    monkeypatch.setattr(access, "participant_by_token", raising(InterfaceError("connection already closed")))
    assert Client(raise_request_exception=False).get("/p/t/").status_code == 503
    monkeypatch.setattr(access, "participant_by_token", raising(ZeroDivisionError()))
    assert Client(raise_request_exception=False).get("/p/t/").status_code == 500
