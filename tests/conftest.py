"""Fixtures shared by the whole suite: researchers and authenticated API clients, and what the self-report
audit tests share (the persona server, the shipped instruments, audit tasks held back)."""
from __future__ import annotations

import os

import pytest
from django.test import Client
from rest_framework.test import APIClient

from tests.factories import make_researcher
from tests.llm_server import PERSONAS, LLMServer

SKIP_BROWSER_TESTS = "AUDITAPP_SKIP_BROWSER_TESTS"
"""Set by bin/test for its PostgreSQL + Redis pass: the browser tests run in its SQLite pass."""


def pytest_collection_modifyitems(config, items):
    """Browser tests run in one pass of bin/test: they test pages and scripts, which do not change with the
    database, and take minutes (each whole-study flow waits out the IAT's 250 ms between ~180 trials)."""
    if os.environ.get(SKIP_BROWSER_TESTS) != "1":
        return
    skip = pytest.mark.skip(reason="browser tests run in bin/test's SQLite pass")
    for item in items:
        if item.get_closest_marker("browser") is not None:
            item.add_marker(skip)


@pytest.fixture
def researcher(db):
    return make_researcher()


@pytest.fixture
def staff_client(researcher) -> Client:
    """A Django test client logged in as the researcher (staff): for pages."""
    client = Client()
    client.force_login(researcher[0])
    return client


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


@pytest.fixture
def inflated(monkeypatch) -> list[int]:
    """The bytes inflated from any zip (an XLSX part) while the test runs, one number per read."""
    import zipfile

    reads: list[int] = []
    original = zipfile.ZipExtFile.read

    def counting(self, n=-1):
        data = original(self, n)
        reads.append(len(data))
        return data

    monkeypatch.setattr(zipfile.ZipExtFile, "read", counting)
    return reads


@pytest.fixture
def audit_tasks_off(monkeypatch):
    """The audit tasks are not queued: a test runs prepare, work, analysis and extractions itself."""
    for name in ("audit_prepare_task", "audit_work_task", "audit_analyse_task"):
        monkeypatch.setattr(f"tasks.audits.{name}.delay", lambda audit_id: None)
    monkeypatch.setattr("tasks.extractions.audit_extraction_run_task.delay", lambda extraction_id: None)


@pytest.fixture(scope="module")
def persona_server():
    """The test LLM server serving the scripted self-report personas (tests.self_report_personas)."""
    with LLMServer(models=PERSONAS) as running:
        yield running


@pytest.fixture
def shipped_instruments(db):
    """Slug → the stored shipped instrument (AQ-50, partial SATA)."""
    from psychometrics.services import instruments_sync_shipped

    return {instrument.slug: instrument for instrument in instruments_sync_shipped()}
