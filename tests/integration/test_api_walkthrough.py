"""The API walkthrough of docs/api.md (docs/examples/api_walkthrough.py), run as a user runs it: a separate process
driving the live server with a researcher's token, a real Celery worker on the embedded defaults doing the work, and
the test LLM server as the model. From nothing to a study with a weighted ground truth and an audit of every
registered paradigm, each completed, with every table downloaded as CSV."""
from __future__ import annotations

import csv
import subprocess
import sys

import pytest

from auditapp.engine import registry
from auditapp.models import Audit
from tests.factories import make_researcher
from tests.integration.support import REPO, embedded_worker_environment, started_celery_worker
from tests.llm_server import LLMServer

pytestmark = [pytest.mark.integration, pytest.mark.slow, pytest.mark.embedded,
              pytest.mark.django_db(transaction=True)]

WALKTHROUGH = REPO / "docs" / "examples" / "api_walkthrough.py"


def test_the_api_walkthrough_runs_from_nothing_to_every_paradigms_tables(live_server, tmp_path):
    env = embedded_worker_environment()
    _, token = make_researcher("walker")
    with LLMServer(models=("annotator-a",), annotators={"annotator-a": {"base": 0.5}}) as server:
        worker = started_celery_worker(env, concurrency=2)
        try:
            run = subprocess.run(
                [sys.executable, str(WALKTHROUGH), "--base-url", live_server.url, "--token", token,
                 "--llm-url", server.base_url, "--model", "annotator-a", "--out", str(tmp_path), "--timeout", "240"],
                capture_output=True, text=True, timeout=400, cwd=tmp_path)
        finally:
            worker.stop()
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-4000:]
    assert set(Audit.objects.values_list("status", flat=True)) == {"completed"}
    assert set(Audit.objects.values_list("paradigm", flat=True)) == set(registry.PARADIGMS)
    for paradigm in registry.PARADIGMS:
        tables = set(registry.get(paradigm).tables)
        written = {path.stem for path in (tmp_path / paradigm).glob("*.csv")}
        assert written == tables, paradigm
        for path in (tmp_path / paradigm).glob("*.csv"):
            with path.open(encoding="utf-8-sig") as table:
                assert next(csv.reader(table)), path  # a header at least
    assert "names: " in run.stdout
