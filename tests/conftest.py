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

