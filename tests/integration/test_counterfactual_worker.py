"""Counterfactual names and dialect audits (seed 002) launched through the API and run by a real Celery worker on
Redis into PostgreSQL, against the test LLM server's batched annotators with 10% transient faults and effects
planted: both audits complete, every text of every answered request has one judgment (none duplicated), the
planted gaps are recovered and the judgments are read back by the PostgreSQL COPY path of the analysis.

The same audits in one process (no worker) are tests/auditapp/test_counterfactual_audit.py.
"""
from __future__ import annotations

import pytest

from auditapp.models import Audit, AuditJudgment, AuditRequest, LLMEndpoint
from tests.auditapp.test_counterfactual_audit import ANNOTATORS, records
from tests.integration.support import started_celery_worker, wait_for, worker_environment
from tests.llm_server import LLMServer

pytestmark = [pytest.mark.integration, pytest.mark.slow, pytest.mark.django_db(transaction=True)]


def finished_status(audit_id: int) -> str | None:
    status = Audit.objects.filter(pk=audit_id).values_list("status", flat=True).get()
    return status if status in ("completed", "failed", "stopped", "cancelled") else None


def launch(api_client, paradigm: str, **body) -> int:
    response = api_client.post("/api/audits/", {"paradigm": paradigm, "name": paradigm, **body}, format="json")
    assert response.status_code == 201, response.content
    return response.json()["id"]


def test_names_and_dialect_audits_complete_in_a_real_worker(api_client):
    models = ("annotator-biased", "annotator-fair", "annotator-dialect")
    with LLMServer(models=models, annotators={model: ANNOTATORS[model] for model in models}, fault_rate=0.1,
                   retry_after=0.05, hang_seconds=2) as server:
        endpoint = LLMEndpoint.objects.create(name="annotators", protocol="openai", base_url=server.base_url,
                                              max_concurrency=8, attempt_timeout_s=1, max_attempts=6)
        worker = started_celery_worker(worker_environment(AUDIT_LEASE_SECONDS="4"))
        try:
            names_id = launch(api_client, "names", iterations=8, seed=3, parallel_tasks=2,
                              material={"tasks": ["self_disciplined", "warm"]},
                              models=[{"endpoint": endpoint.id, "model": "annotator-biased"},
                                      {"endpoint": endpoint.id, "model": "annotator-fair"}])
            dialect_id = launch(api_client, "dialect", iterations=40, seed=5,
                                material={"tasks": ["professional_tone", "angry"]},
                                models=[{"endpoint": endpoint.id, "model": "annotator-dialect"}])
            wait_for(lambda: finished_status(names_id) and finished_status(dialect_id), timeout=600, interval=0.5,
                     what="the names and dialect audits")
        finally:
            worker.stop()
        stats = server.stats()
    assert sum(stats["faults"].values()) > 0, "the faults were injected"
    names, dialect = Audit.objects.get(pk=names_id), Audit.objects.get(pk=dialect_id)
    assert names.status == dialect.status == Audit.Status.COMPLETED, (names.status_reason, dialect.status_reason)

    # One judgment per numbered text of every answered request: 60 for names, 10 for dialect, none twice.
    for audit, per_request in ((names, 60), (dialect, 10)):
        answered = AuditRequest.objects.filter(audit=audit, state=AuditRequest.State.ANSWERED).count()
        assert AuditJudgment.objects.filter(audit=audit).count() == answered * per_request
        assert answered + AuditRequest.objects.filter(audit=audit, state="failed").count() == audit.n_requests

    cells = records(api_client, names_id, "cells")
    planted = cells[(cells.model == "annotator-biased") & (cells.task == "self_disciplined")
                     & (cells.group == "Black")].iloc[0]
    assert planted.significant and planted.ci_low <= -0.3 <= planted.ci_high, planted.to_dict()
    assert not cells[cells.model == "annotator-fair"].significant.any()
    cells = records(api_client, dialect_id, "cells")
    planted = cells[cells.task == "professional_tone"].iloc[0]
    assert planted.significant and planted.ci_low <= -0.3 <= planted.ci_high, planted.to_dict()
