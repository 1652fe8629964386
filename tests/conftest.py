"""Fixtures shared by the whole suite: researchers and authenticated API clients, and what the self-report
audit tests share (the persona server, the shipped instruments, audit tasks held back)."""
from __future__ import annotations

import os
from pathlib import Path

import pytest
from _pytest.mark.expression import Expression  # how pytest itself evaluates -m; no public name for it
from django.test import Client
from rest_framework.test import APIClient

from tests import team_defaults
from tests.factories import make_researcher
from tests.llm_server import PERSONAS, LLMServer

team_defaults.connect()

DATABASE_PASS = "AUDITAPP_DATABASE_PASS"
"""Set by bin/test for its PostgreSQL + Redis pass, which runs only the tests that can differ on that database and
broker: those that touch the database or start processes. Pure tests, browser tests (pages and scripts) and the
tests of the embedded defaults run in the SQLite pass alone."""

DATABASE_FIXTURES = {"db", "transactional_db", "django_db_setup", "live_server",
                     "django_db_reset_sequences", "django_db_serialized_rollback"}
"""What a test asks for when it uses the database (pytest-django's ``django_db_blocker`` is in every test's
closure, so it says nothing)."""


LAYER_MARKERS = {"pure", "db", "slow", "integration", "browser", "embedded"}
SLOW_TO_COLLECT = {"api/test_schema.py": {"db", "slow"}}
"""Modules whose collection alone takes seconds (schemathesis builds every operation's coverage cases), by the
layer markers every test of theirs carries (checked when they are collected). A ``-m`` that selects none of them
does not collect them, so the quick layer does not pay for them."""

TESTS = Path(__file__).parent


def pytest_ignore_collect(collection_path, config):
    layers = SLOW_TO_COLLECT.get(collection_path.relative_to(TESTS).as_posix()) if collection_path.is_relative_to(
        TESTS) else None
    markexpr = config.getoption("markexpr")
    if layers is None or not markexpr:
        return None
    return not Expression.compile(markexpr).evaluate(lambda name, **kwargs: name in layers) or None


def touches_the_database(item) -> bool:
    return item.get_closest_marker("django_db") is not None or bool(DATABASE_FIXTURES & set(item.fixturenames))


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config, items):
    """Marks each test by its layer, from what it uses, so ``-m`` can choose one: ``pure`` (no database, no service
    or worker, and not marked ``slow``: the quick layer), ``db``, ``integration`` and ``browser`` (both also
    ``slow``). A test that uses no database but is slow (it starts a Python process that sets Django up, say) is in
    no layer of its own: ``-m pure`` leaves it out, the whole suite runs it. In bin/test's
    PostgreSQL pass, the pure, browser and ``embedded`` tests are deselected: they do not change with the database
    and broker (an embedded test sets its own), and the browser tests take minutes (each whole-study flow waits out
    the IAT's 250 ms between ~180 trials)."""
    database_pass = os.environ.get(DATABASE_PASS) == "1"
    kept, dropped = [], []
    for item in items:
        started = item.get_closest_marker("integration") or item.get_closest_marker("browser")
        if started:
            item.add_marker(pytest.mark.slow)
        layer = "db" if touches_the_database(item) else "pure"
        if not started and (layer == "db" or not item.get_closest_marker("slow")):
            item.add_marker(getattr(pytest.mark, layer))
        declared = SLOW_TO_COLLECT.get(item.path.relative_to(TESTS).as_posix())
        if declared is not None and {mark.name for mark in item.iter_markers()} & LAYER_MARKERS != declared:
            raise pytest.UsageError(f"{item.nodeid}: its layers differ from those SLOW_TO_COLLECT says ({declared})")
        if database_pass and (item.get_closest_marker("browser") or item.get_closest_marker("embedded")
                              or (layer == "pure" and not started)):
            dropped.append(item)
        else:
            kept.append(item)
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = kept


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
