"""A word association audit (seed 003) launched through the API and run by a real Celery worker on Redis into
PostgreSQL, against the test LLM server's WABT personas with 10% transient faults: the audit completes, every
answered request has exactly one judgment, and the planted association is recovered (``wabt-consistent`` +1 in
every dimension with t undefined, ``wabt-neutral`` near 0).

The same audit in one process (no worker) is tests/auditapp/test_implicit_bias_audit.py.
"""
from __future__ import annotations

import pandas as pd
import pytest

from auditapp.models import Audit, AuditJudgment, AuditRequest, LLMEndpoint
from tests.auditapp.test_implicit_bias_audit import records
from tests.integration.support import started_celery_worker, wait_for, worker_environment
from tests.llm_server import LLMServer

pytestmark = [pytest.mark.integration, pytest.mark.slow, pytest.mark.django_db(transaction=True)]


def finished_status(audit_id: int) -> str | None:
    status = Audit.objects.filter(pk=audit_id).values_list("status", flat=True).get()
    return status if status in ("completed", "failed", "stopped", "cancelled") else None


def test_word_association_audit_completes_in_a_real_worker(api_client):
    models = ("wabt-consistent", "wabt-neutral")
    with LLMServer(models=models, fault_rate=0.1, retry_after=0.05, hang_seconds=2) as server:
        endpoint = LLMEndpoint.objects.create(name="personas", protocol="openai", base_url=server.base_url,
                                              max_concurrency=8, attempt_timeout_s=1, max_attempts=6)
        worker = started_celery_worker(worker_environment(AUDIT_LEASE_SECONDS="4"))
        try:
            response = api_client.post("/api/audits/", {
                "paradigm": "word_association", "name": "wabt in a worker", "samples_per_combination": 4,
                "seed": 11, "parallel_tasks": 2,
                "models": [{"endpoint": endpoint.id, "model": model} for model in models]}, format="json")
            assert response.status_code == 201, response.content
            audit_id = response.json()["id"]
            wait_for(lambda: finished_status(audit_id), timeout=600, interval=0.5, what="the word association audit")
        finally:
            worker.stop()
        stats = server.stats()
    assert sum(stats["faults"].values()) > 0, "the faults were injected"
    audit = Audit.objects.get(pk=audit_id)
    assert audit.status == Audit.Status.COMPLETED, audit.status_reason
    # 10 combinations × 4 samples × 3 dimensions × 3 templates × 2 models.
    assert audit.n_requests == 720
    answered = AuditRequest.objects.filter(audit=audit, state=AuditRequest.State.ANSWERED).count()
    assert AuditJudgment.objects.filter(audit=audit).count() == answered
    assert answered + AuditRequest.objects.filter(audit=audit, state="failed").count() == audit.n_requests

    table4 = records(api_client, audit_id, "table4").set_index(["model", "dimension"])
    consistent = table4.loc["wabt-consistent"]
    assert (consistent["mean"] == 1.0).all() and consistent["t"].isna().all()
    neutral = table4.loc["wabt-neutral"]
    assert (neutral["mean"].abs() < 0.15).all() and pd.notna(neutral["t"]).all()
