"""Fixtures shared by the whole suite: researchers, API clients, and the real services for integration tests."""
from __future__ import annotations

import os

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


def require_service(name: str, available: bool) -> None:
    """Skip a test whose service is missing, except under CI, where a missing service is a failure."""
    if available:
        return
    message = f"{name} is not available (bin/test starts it from Debian's packages)"
    if os.environ.get("CI") == "true":
        pytest.fail(f"CI=true: {message}")
    pytest.skip(message)


@pytest.fixture
def redis_url() -> str:
    """The Redis used as the Celery broker in this run (the PostgreSQL pass of bin/test)."""
    url = os.environ.get("CELERY_BROKER_URL", "")
    require_service("Redis (CELERY_BROKER_URL=redis://...)", url.startswith("redis://"))
    return url
