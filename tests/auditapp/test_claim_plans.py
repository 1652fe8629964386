"""The work queue's statements read only the rows they take, whatever the planner's statistics said before.

Autovacuum gathers a table's statistics once an audit's writes settle, so when the next audit starts they know
nothing of its rows: the planner estimated one row for its audit id and its lease, and read every request of the
audit at each claim (10 ms a claim at 10,000 requests, growing with the audit: ``benchmarks/audit_throughput.py
--history``). Here an audit is prepared (real test LLM server) on a table whose statistics were gathered before it
existed, each statement of a claim is run again under ``EXPLAIN ANALYZE``, and the rows it read from the requests
table are counted. PostgreSQL only: SQLite has no such planner statistics."""
from __future__ import annotations

import datetime
import json

import pytest
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from auditapp.engine import launch, preparation, recording
from auditapp.models import Audit, AuditChunk, AuditModel, AuditRequest, LLMEndpoint
from auditapp.paradigms.classification import services as classification_services
from tests.auditapp.db_race import postgresql_only
from tests.factories import AUDIT_POSITIVE_WORDS, make_audit_study
from tests.llm_server import LLMServer

pytestmark = [pytest.mark.django_db, pytest.mark.integration, postgresql_only]

LIMIT = 100


def history(n: int) -> None:
    """``n`` answered requests of an earlier audit."""
    endpoint = LLMEndpoint.objects.create(name="history", base_url="http://127.0.0.1:9/v1")
    audit = Audit.objects.create(name="history", status=Audit.Status.COMPLETED)
    model = AuditModel.objects.create(audit=audit, endpoint=endpoint, model="m", position=0)
    AuditRequest.objects.bulk_create([
        AuditRequest(audit=audit, audit_model=model, condition="zs", unit=f"u{k}", order=k, key=f"history:{k}",
                     state=AuditRequest.State.ANSWERED) for k in range(n)], batch_size=5000)


def prepared_audit(server, n_items: int) -> Audit:
    endpoint = LLMEndpoint.objects.create(name="claims", protocol="openai", base_url=server.base_url,
                                          max_concurrency=8, attempt_timeout_s=2.0)
    audit = classification_services.audit_create(
        study=make_audit_study(n_items, n_examples=2), name="claims", conditions=["zs"], use_cache=False,
        models=[launch.ModelChoice(endpoint=endpoint, model=model) for model in ("model-a", "model-b")])
    preparation.audit_prepare(audit_id=audit.id)
    return Audit.objects.get(pk=audit.id)


def rows_read(plan: dict, table: str) -> int:
    """Rows a plan read from ``table``: each scan's rows kept and removed by its filters, over its loops."""
    read = 0
    if plan.get("Relation Name") == table and "Scan" in plan["Node Type"]:
        read += (plan["Actual Rows"] + plan.get("Rows Removed by Filter", 0)
                 + plan.get("Rows Removed by Index Recheck", 0)) * plan["Actual Loops"]
    return read + sum(rows_read(child, table) for child in plan.get("Plans", []))


@pytest.mark.parametrize("gathered", [True, False], ids=["statistics gathered", "preparation went on without"])
def test_a_claim_on_statistics_from_before_its_audit_reads_only_the_rows_it_takes(audit_tasks_off, monkeypatch,
                                                                                   gathered):
    if not gathered:  # another preparation held the table: the statistics know nothing of this audit
        monkeypatch.setattr(preparation, "_requests_statistics_gather", lambda lock_wait: True)
    history(20_000)
    table = AuditRequest._meta.db_table
    with connection.cursor() as cursor:
        cursor.execute(f"ANALYZE {table}")
    with LLMServer(latency=0.001, positive_words=AUDIT_POSITIVE_WORDS) as server:
        audit = prepared_audit(server, 2_500)
    assert audit.status == Audit.Status.RUNNING and audit.n_requests == 5_000
    # A lapsed lease of a dead worker still marks the first requests: they are free again.
    lapsed = AuditChunk.objects.create(audit=audit, leased_until=timezone.now() - datetime.timedelta(minutes=5))
    first = list(AuditRequest.objects.filter(audit=audit).order_by("order", "id").values_list("id", flat=True))
    AuditRequest.objects.filter(id__in=first[:10]).update(chunk=lapsed)
    chunk = AuditChunk.objects.create(audit=audit, leased_until=timezone.now() + datetime.timedelta(minutes=5))

    with transaction.atomic(), CaptureQueriesContext(connection) as queries:
        claimed = recording.chunk_claim(chunk_id=chunk.id, audit_id=audit.id, limit=LIMIT)
        transaction.set_rollback(True)
    assert [request.id for request in claimed] == first[:LIMIT]

    # Replayed in order in one transaction, as the claim ran them (its planner setting included), each statement
    # on the requests table under EXPLAIN ANALYZE, which runs it too; then rolled back.
    statements = [query["sql"] for query in queries.captured_queries
                  if table in query["sql"] or "set_config" in query["sql"]]
    assert sum(table in sql for sql in statements) == 3  # find the free ones, take them, read them
    plans = []
    with transaction.atomic(), connection.cursor() as cursor:
        for sql in statements:
            if table not in sql:
                cursor.execute(sql)
                continue
            cursor.execute(f"EXPLAIN (ANALYZE, FORMAT JSON) {sql}")
            result = cursor.fetchone()[0]
            plans.append((sql, (result if isinstance(result, list) else json.loads(result))[0]["Plan"]))
        transaction.set_rollback(True)
    for sql, plan in plans:
        # The first statement reads the first LIMIT pending requests in dispatch order off the pending-requests
        # index (those of the lapsed lease are free again); the other two read LIMIT rows by id.
        assert rows_read(plan, table) <= 2 * LIMIT, (sql[:300], json.dumps(plan)[:4000])


@pytest.mark.django_db(transaction=True)
def test_a_table_held_by_a_vacuum_delays_the_preparation_by_the_lock_wait_only(monkeypatch):
    import time

    import psycopg

    monkeypatch.setattr(preparation, "ANALYZE_LOCK_WAIT", "200ms")
    table = AuditRequest._meta.db_table
    params = {key: value for key, value in connection.get_connection_params().items()
              if key in ("dbname", "user", "password", "host", "port")}
    # What a vacuum that does not give way holds: the lock ANALYZE needs.
    with psycopg.connect(**params) as holder:
        holder.execute(f"LOCK TABLE {table} IN SHARE UPDATE EXCLUSIVE MODE")
        with transaction.atomic(), connection.cursor() as cursor:
            started = time.monotonic()
            assert preparation._requests_statistics_gather(preparation.ANALYZE_LOCK_WAIT) is False
            waited = time.monotonic() - started
            cursor.execute("SHOW lock_timeout")
            assert cursor.fetchone()[0] == "0"  # the preparation's own statements wait as before
            AuditRequest.objects.count()  # the transaction goes on
        holder.rollback()
    assert 0.2 <= waited < 2


@pytest.mark.django_db(transaction=True)
def test_a_preparation_that_went_on_without_statistics_gathers_them_after_its_commit(audit_tasks_off, monkeypatch):
    events = []

    def held_then_free(lock_wait: str) -> bool:
        events.append((lock_wait, connection.in_atomic_block))
        return len(events) > 1
    monkeypatch.setattr(preparation, "_requests_statistics_gather", held_then_free)
    monkeypatch.setattr("tasks.audits.audit_work_task.delay", lambda audit_id: events.append("work sent"))
    with LLMServer(latency=0.001, positive_words=AUDIT_POSITIVE_WORDS) as server:
        audit = prepared_audit(server, 10)
    assert audit.status == Audit.Status.RUNNING
    # In the preparation's transaction with the short wait; after the commit, once the work is sent (never holding
    # it up), outside the transaction with the long one.
    assert events == [(preparation.ANALYZE_LOCK_WAIT, True), "work sent", (preparation.LATE_ANALYZE_LOCK_WAIT, False)]
