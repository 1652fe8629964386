"""Audit faults heal by themselves, with real Celery workers on Redis into PostgreSQL, against the real test LLM
server:

- a worker's processes killed (SIGKILL) mid-audit: the broker redelivers their work task and the recovery sends
  another, yet the audit never has more work tasks holding it than its ``parallel_tasks`` (the work holds of
  auditapp.engine.recording.chunk_open), and it completes with one reply per key;
- a worker killed (SIGKILL) while its requests hold the endpoint's concurrency slots in Redis: a new worker sends
  again within the slots' lease (settings.LLM_SLOT_LEASE_SECONDS), not after the attempt's time-out, and the
  endpoint's max concurrency holds throughout;
- on the embedded defaults (SQLite, the file-system broker, no Redis), an endpoint's concurrency limit holds across
  a worker's processes, with a process killed and started again mid-audit and a work task sent again;
- PostgreSQL, Redis or the LLM endpoint away for 20 s mid-audit (servers of a rig of their own,
  tests/integration/fault_rig.py): the audit sends again soon after each is back, without the workers' recovery,
  and completes with one reply per request.

benchmarks/fault_recovery.py prints how soon an audit resumes after each fault.
"""
from __future__ import annotations

import signal
import time

import psutil
import pytest
from django.utils import timezone

from auditapp.models import Audit, AuditChunk, AuditRequest, LLMEndpoint, LLMReply
from tests.factories import AUDIT_POSITIVE_WORDS, make_audit_study
from tests.integration.fault_rig import FaultRig
from tests.integration.support import (
    embedded_worker_environment,
    started_celery_worker,
    wait_for,
    worker_environment,
)
from tests.llm_server import LLMServer

pytestmark = [pytest.mark.integration, pytest.mark.slow, pytest.mark.django_db(transaction=True)]


def launch(api_client, study, endpoint, *, parallel_tasks: int = 1) -> int:
    response = api_client.post("/api/audits/", {
        "study": study.id, "name": "faults", "conditions": ["zs", "persona_pfl"], "n_resamples": 100,
        "parallel_tasks": parallel_tasks, "models": [{"endpoint": endpoint.id, "model": "model-a"}]}, format="json")
    assert response.status_code == 201, response.content
    return response.json()["id"]


def live_holds(audit_id: int) -> int:
    """Leases of work tasks on the audit, neither released nor lapsed."""
    return AuditChunk.objects.filter(audit_id=audit_id, released_at__isnull=True,
                                     leased_until__gt=timezone.now()).count()


def assert_one_reply_per_key(audit_id: int, n: int) -> None:
    requests = AuditRequest.objects.filter(audit_id=audit_id)
    assert requests.count() == n and requests.filter(state="answered").count() == n
    keys = set(requests.values_list("key", flat=True))
    assert len(keys) == n and LLMReply.objects.filter(key__in=keys).count() == n


def test_work_tasks_sent_again_after_a_kill_never_work_beside_the_task_that_holds_the_audit(api_client):
    env = worker_environment(AUDIT_LEASE_SECONDS="4", WORK_RECOVERY_SECONDS="2", WORK_STALLED_SECONDS="3")
    from tasks.audits import audit_work_task

    study = make_audit_study(300, n_examples=8)
    with LLMServer(latency=0.2, positive_words=AUDIT_POSITIVE_WORDS) as server:
        endpoint = LLMEndpoint.objects.create(name="server", protocol="openai", base_url=server.base_url,
                                              max_concurrency=8, attempt_timeout_s=5, max_attempts=3)
        worker = started_celery_worker(env, concurrency=3)
        try:
            audit_id = launch(api_client, study, endpoint)
            answered = AuditRequest.objects.filter(audit_id=audit_id, state="answered")
            wait_for(lambda: answered.count() >= 100, timeout=120, what="100 answered requests")
            # The broker redelivers the killed processes' work task (acks late, rejected on worker loss); the
            # recovery or a worker's start sends another.
            for child in psutil.Process(worker.process.pid).children():
                child.send_signal(signal.SIGKILL)
            audit_work_task.delay(audit_id)
            assert answered.count() < 600, "the audit finished before the kill: make it longer"
            most = 0

            def finished():
                nonlocal most
                most = max(most, live_holds(audit_id))
                status = Audit.objects.values_list("status", flat=True).get(pk=audit_id)
                return status if status in ("completed", "failed", "stopped") else None

            started = time.monotonic()
            assert wait_for(finished, timeout=180, interval=0.1, what="the audit") == "completed"
            assert time.monotonic() - started < 120
        finally:
            worker.stop()
        stats = server.stats()
    assert most == 1, f"{most} work tasks held the audit at once"
    assert_one_reply_per_key(audit_id, 600)
    assert stats["bodies"] == 600


def test_a_killed_workers_endpoint_slots_are_free_again_within_their_lease(api_client):
    env = worker_environment(AUDIT_LEASE_SECONDS="4")
    study = make_audit_study(300, n_examples=8)
    with LLMServer(latency=0.2, positive_words=AUDIT_POSITIVE_WORDS) as server:
        # Slots used to expire after the attempt's time-out plus 30 s: 150 s here.
        endpoint = LLMEndpoint.objects.create(name="server", protocol="openai", base_url=server.base_url,
                                              max_concurrency=4, attempt_timeout_s=120, max_attempts=3)
        worker = started_celery_worker(env)
        try:
            audit_id = launch(api_client, study, endpoint)
            wait_for(lambda: server.stats()["requests"] >= 50, timeout=120, what="50 requests")
        finally:
            worker.stop(signal.SIGKILL)
        killed_at, sent = time.monotonic(), server.stats()["requests"]
        assert sent < 550, "the audit finished before the kill: make it longer"
        worker = started_celery_worker(env)
        try:
            wait_for(lambda: server.stats()["requests"] > sent, timeout=120, interval=0.1,
                     what="a request sent after the kill")
            resumed = time.monotonic() - killed_at
            assert wait_for(lambda: Audit.objects.values_list("status", flat=True).get(pk=audit_id) == "completed",
                            timeout=180, what="the audit")
        finally:
            worker.stop()
        stats = server.stats()
    assert resumed < 30, f"the endpoint was blocked {resumed:.0f} s after the kill"
    assert stats["max_in_flight"] <= 4
    assert_one_reply_per_key(audit_id, 600)


@pytest.mark.embedded
def test_on_the_embedded_defaults_an_endpoints_limit_holds_across_worker_processes_and_a_restart(api_client):
    env = embedded_worker_environment(AUDIT_LEASE_SECONDS="4", WORK_RECOVERY_SECONDS="2", WORK_STALLED_SECONDS="3")
    from tasks.audits import audit_work_task

    study = make_audit_study(80, n_examples=8)
    with LLMServer(latency=0.05, positive_words=AUDIT_POSITIVE_WORDS) as server:
        endpoint = LLMEndpoint.objects.create(name="server", protocol="openai", base_url=server.base_url,
                                              max_concurrency=1, attempt_timeout_s=5, max_attempts=3)
        # Two work tasks in two processes: each used to have a limit of its own, so two requests were in flight.
        worker = started_celery_worker(env, concurrency=2)
        try:
            audit_id = launch(api_client, study, endpoint, parallel_tasks=2)
            wait_for(lambda: server.stats()["requests"] >= 30, timeout=120, what="30 requests")
            psutil.Process(worker.process.pid).children()[0].send_signal(signal.SIGKILL)
            audit_work_task.delay(audit_id)
            assert server.stats()["requests"] < 150, "the audit finished before the kill: make it longer"
            most = 0

            def finished():
                nonlocal most
                most = max(most, live_holds(audit_id))
                return Audit.objects.values_list("status", flat=True).get(pk=audit_id) == "completed"

            assert wait_for(finished, timeout=180, interval=0.1, what="the audit")
        finally:
            worker.stop()
        stats = server.stats()
    assert stats["max_in_flight"] == 1
    assert most <= 2, f"{most} work tasks held the audit at once (parallel_tasks 2)"
    assert_one_reply_per_key(audit_id, 160)


@pytest.fixture(scope="module")
def rig(django_db_blocker):
    """One deployment for the outage tests (its own servers: the shared ones must not be stopped); with the
    settings' defaults, but the recovery, which must not be what resumes the audit, rarely."""
    from django.db import connection

    with django_db_blocker.unblock():
        if connection.vendor != "postgresql":
            pytest.skip("runs in bin/test's PostgreSQL + Redis pass")
    deployment = FaultRig(worker_settings={"WORK_RECOVERY_SECONDS": "600"})
    yield deployment
    deployment.close()


@pytest.mark.parametrize("fault", ["database_outage", "redis_outage", "endpoint_outage"])
def test_an_audit_sends_again_soon_after_a_service_is_back(rig, fault):
    audit_id = rig.launch()
    rig.wait_answered(audit_id, 60)
    back_at, seen = getattr(rig, fault)(20)
    resumed = rig.resume_seconds(back_at, seen, timeout=60)
    assert rig.wait_completed(audit_id) == "completed"
    assert resumed < 30, f"sent again {resumed:.0f} s after the {fault} ended"
    assert rig.one_reply_per_key(audit_id)
