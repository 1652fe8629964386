"""Fixtures shared by the whole suite: researchers and authenticated API clients."""
from __future__ import annotations

import pytest
from rest_framework.test import APIClient

from tests.factories import make_researcher


@pytest.fixture
def researcher(db):
    return make_researcher()


@pytest.fixture
def api_client(researcher) -> APIClient:
    """An API client authenticated with the researcher's token."""
    _, token = researcher
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {token}")
    return client



@pytest.fixture
def queued(monkeypatch) -> list[int]:
    """The import ids handed to the Celery task, which is not run (the worker path has integration tests)."""
    sent: list[int] = []
    monkeypatch.setattr("tasks.imports.item_import_run_task.delay", sent.append)
    return sent
