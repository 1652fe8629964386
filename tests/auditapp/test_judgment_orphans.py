"""No judgment outlives its request (AuditJudgment's foreign keys are not database constraints): the sweep when a
deletion commits, the writers that write judgments only for request rows they hold locked, and the command that
counts what is left. The races are played in their order: on one connection (any database), and on PostgreSQL
with two connections in threads, the deletion blocked on the writer's row locks as it is in production."""
from __future__ import annotations

import threading

import pytest
from django.core.management import call_command
from django.db import connection, transaction

from auditapp.engine import analysis
from auditapp.engine import judgments as engine_judgments
from auditapp.engine import recording as engine_recording
from auditapp.engine.protocol import Judgment, ParsedReply
from auditapp.models import Audit, AuditJudgment, AuditModel, AuditRequest, LLMEndpoint, LLMReply
from tests.auditapp.db_race import finish, in_thread, postgresql_only, wait_until_blocked_on_a_lock

pytestmark = pytest.mark.django_db(transaction=True)


def make_audit(name: str, n: int, *, models: int = 1) -> tuple[Audit, list[AuditRequest]]:
    endpoint, _ = LLMEndpoint.objects.get_or_create(name="orphans", base_url="http://127.0.0.1:9/v1")
    audit = Audit.objects.create(name=name)
    audit_models = [AuditModel.objects.create(audit=audit, endpoint=endpoint, model=f"m{m}", position=m)
                    for m in range(models)]
    requests = AuditRequest.objects.bulk_create([
        AuditRequest(audit=audit, audit_model=audit_models[k % models], condition="c", unit=f"u{k}", order=k,
                     key=f"{name}:{k}") for k in range(n)])
    return audit, requests


def judged(requests) -> list[tuple[int, ParsedReply]]:
    return [(request.id, ParsedReply(outcome="label", label=1, judgments=(
        Judgment(unit="a", outcome="label", label=1), Judgment(unit="b", outcome="label", label=0))))
        for request in requests]


def judgments_of(audit_id: int) -> int:
    return AuditJudgment.objects.filter(audit_id=audit_id).count()


def test_a_judgment_written_after_the_cascade_is_swept_when_the_deletion_commits():
    audit, requests = make_audit("deleted", 3)
    kept, kept_requests = make_audit("kept", 2)
    with transaction.atomic():
        engine_judgments.judgments_create(audit.id, judged(requests))
        engine_judgments.judgments_create(kept.id, judged(kept_requests))
    with transaction.atomic():
        Audit.objects.filter(pk=audit.pk).delete()
        assert judgments_of(audit.id) == 0, "Django's cascade deleted the judgments first"
        # A worker that held the requests' locks writes their judgments after the cascade's DELETE (and commits
        # before the deletion does): here, in the deleting transaction itself.
        engine_judgments.judgments_create(audit.id, judged(requests[:2]))
        assert judgments_of(audit.id) == 4
    assert judgments_of(audit.id) == 0
    assert judgments_of(kept.id) == 4


def test_deleting_a_model_of_an_audit_sweeps_its_requests_judgments_only():
    audit, requests = make_audit("two models", 4, models=2)
    gone, stays = AuditModel.objects.filter(audit=audit).order_by("position")
    with transaction.atomic():
        gone.delete()
        engine_judgments.judgments_create(audit.id, judged(requests))
    assert set(AuditJudgment.objects.filter(audit_id=audit.id).values_list("request_id", flat=True)) == {
        request.id for request in requests if request.audit_model_id == stays.id}


def test_the_command_counts_orphans_and_deletes_them(capsys):
    audit, requests = make_audit("command", 2)
    with transaction.atomic():
        engine_judgments.judgments_create(audit.id, judged(requests))
        # An orphan as a deletion made before the sweep existed would have left it: its request id is gone.
        engine_judgments.judgments_create(audit.id, judged([AuditRequest(id=requests[-1].id + 1000)]))
    with pytest.raises(SystemExit) as exited:
        call_command("judgments_orphans")
    assert exited.value.code == 1
    assert f"audit {audit.id}: 2 judgments without their request" in capsys.readouterr().out
    call_command("judgments_orphans", "--delete")
    assert f"audit {audit.id}: 2 judgments without their request deleted" in capsys.readouterr().out
    call_command("judgments_orphans")
    assert "No judgment without its request." in capsys.readouterr().out
    assert judgments_of(audit.id) == 4


@postgresql_only
def test_a_recorder_holding_the_requests_commits_its_judgments_after_the_cascade_and_they_are_swept():
    audit, requests = make_audit("recording", 3)
    locked, go = threading.Event(), threading.Event()

    def record():
        with transaction.atomic():
            finished_at = connection.ops.adapt_datetimefield_value(audit.created_at)
            recorded = engine_recording._requests_record([
                (request.id, AuditRequest.State.FAILED, None, "HTTP 500", 1, finished_at, "error", None, "", "")
                for request in requests])
            assert recorded == {request.id for request in requests}
            locked.set()
            assert go.wait(20)
            engine_judgments.judgments_copy_new(audit.id, judged(requests))

    recorder = in_thread(record)
    assert locked.wait(20)
    deleter = in_thread(lambda: Audit.objects.filter(pk=audit.pk).delete())
    # The deletion has run the cascade's DELETE of judgments and now waits on the recorder's row locks.
    wait_until_blocked_on_a_lock()
    go.set()
    finish(recorder, deleter)
    assert not Audit.objects.filter(pk=audit.pk).exists()
    assert judgments_of(audit.id) == 0


@postgresql_only
def test_a_reparse_meeting_a_deletion_in_progress_writes_no_judgment(monkeypatch):
    audit, _ = make_audit("reparsed", 3)
    reply = LLMReply.objects.create(key="reparsed", text="1", latency_ms=1, attempts=1)
    AuditRequest.objects.filter(audit=audit).update(state=AuditRequest.State.ANSWERED, reply=reply)
    deleted, go = threading.Event(), threading.Event()

    def delete():
        with transaction.atomic():
            Audit.objects.filter(pk=audit.pk).delete()
            deleted.set()
            assert go.wait(20)

    class Builder:
        def parse(self, request, text, finish_reason):
            return judged([request])[0][1]

    monkeypatch.setattr(analysis, "request_builder", lambda audit: Builder())
    deleter = in_thread(delete)
    assert deleted.wait(20)
    # The re-parse read the audit before the deletion; its requests are deleted but not yet committed.
    reparse = in_thread(lambda: analysis.audit_reparse(audit_id=audit.id))
    wait_until_blocked_on_a_lock()
    go.set()
    finish(deleter, reparse)
    assert judgments_of(audit.id) == 0
