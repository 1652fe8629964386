"""An audit's work holds (auditapp.engine.recording.chunk_open): a work task sent again while live tasks hold all of
the audit's ``parallel_tasks`` holds ends without working beside them; one whose holder was killed takes over once
the dead lease lapses; a task whose lease lapsed while others took the holds stops.

Real test LLM server, one process (the worker path with SIGKILL is tests/integration/test_worker_faults.py).
"""
from __future__ import annotations

import threading
import time
from datetime import timedelta

import pytest
from django.db import connection
from django.utils import timezone

from auditapp.engine import launch, preparation, recording
from auditapp.engine import runner as audit_runner
from auditapp.models import Audit, AuditChunk, AuditRequest, LLMEndpoint
from auditapp.paradigms.classification import services as classification_services
from tests.factories import AUDIT_POSITIVE_WORDS, make_audit_study
from tests.llm_server import LLMServer

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.integration]


@pytest.fixture(scope="module")
def server():
    with LLMServer(latency=0.002, positive_words=AUDIT_POSITIVE_WORDS) as running:
        yield running


def running_audit(server, *, parallel_tasks: int = 1) -> Audit:
    endpoint = LLMEndpoint.objects.create(name=f"server {Audit.objects.count()}", protocol="openai",
                                          base_url=server.base_url, max_concurrency=8, attempt_timeout_s=2.0)
    audit = classification_services.audit_create(
        study=make_audit_study(12, n_examples=2), name="holds", conditions=["zs"], parallel_tasks=parallel_tasks,
        models=[launch.ModelChoice(endpoint=endpoint, model="model-a")])
    preparation.audit_prepare(audit_id=audit.id)
    return Audit.objects.get(pk=audit.id)


def test_parallel_tasks_bounds_the_holds_and_a_released_or_lapsed_hold_is_free(server, audit_tasks_off):
    audit = running_audit(server, parallel_tasks=2)
    first, second = recording.chunk_open(audit_id=audit.id), recording.chunk_open(audit_id=audit.id)
    with pytest.raises(recording.WorkHeld) as held:
        recording.chunk_open(audit_id=audit.id)
    assert set(held.value.leases) == {first, second}
    recording.chunk_release(chunk_id=first)
    third = recording.chunk_open(audit_id=audit.id)
    AuditChunk.objects.filter(pk=second).update(leased_until=timezone.now() - timedelta(seconds=1))
    assert recording.chunk_open(audit_id=audit.id) not in (first, second, third)


def test_a_task_sent_again_while_a_live_task_holds_the_audit_ends_and_sends_nothing(server, audit_tasks_off):
    audit = running_audit(server)
    live = recording.chunk_open(audit_id=audit.id)
    stop = threading.Event()

    def renew():  # the live task's flushes
        try:
            while not stop.wait(0.2):
                recording.chunk_renew(chunk_id=live, audit_id=audit.id, retry_state={})
        finally:
            connection.close()

    renewing = threading.Thread(target=renew)
    renewing.start()
    server.reset_stats()
    try:
        started = time.monotonic()
        assert audit_runner.audit_work(audit.id) == "held"
        assert time.monotonic() - started < 5
    finally:
        stop.set()
        renewing.join()
    assert server.stats()["requests"] == 0
    assert list(AuditChunk.objects.filter(audit=audit, released_at__isnull=True).values_list("id", flat=True)) == [live]
    recording.chunk_release(chunk_id=live)
    assert audit_runner.audit_work(audit.id) == "finished"


def test_a_task_sent_again_after_its_worker_was_killed_takes_over_when_the_dead_lease_lapses(server, audit_tasks_off,
                                                                                            settings):
    settings.AUDIT_LEASE_SECONDS = 3
    audit = running_audit(server)
    dead = recording.chunk_open(audit_id=audit.id)
    claimed = recording.chunk_claim(chunk_id=dead, audit_id=audit.id, limit=4)
    assert len(claimed) == 4
    server.reset_stats()
    started = time.monotonic()
    assert audit_runner.audit_work(audit.id) == "finished"
    assert 2 < time.monotonic() - started < 15
    stats = server.stats()
    assert stats["requests"] == stats["bodies"] == 12, "every request sent once, those the dead lease held too"
    assert not AuditRequest.objects.filter(audit=audit, state=AuditRequest.State.PENDING).exists()


def test_a_lease_that_lapsed_while_another_task_took_the_hold_is_lost(server, audit_tasks_off):
    audit = running_audit(server)
    stalled = recording.chunk_open(audit_id=audit.id)
    AuditChunk.objects.filter(pk=stalled).update(leased_until=timezone.now() - timedelta(seconds=1))
    other = recording.chunk_open(audit_id=audit.id)
    assert recording.chunk_renew(chunk_id=stalled, audit_id=audit.id, retry_state={}) == recording.LEASE_LOST
    recording.chunk_release(chunk_id=other)
    # No other task holds the audit: the stalled task's lapsed lease is taken again.
    assert recording.chunk_renew(chunk_id=stalled, audit_id=audit.id, retry_state={}) == Audit.Status.RUNNING
    assert AuditChunk.objects.get(pk=stalled).leased_until > timezone.now()
