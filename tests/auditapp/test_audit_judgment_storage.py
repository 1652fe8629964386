"""Storing judgments in bulk (auditapp.engine.judgments.judgments_create): the COPY path on PostgreSQL and the
executemany path (SQLite, and small batches on PostgreSQL) store the same rows with the same rules."""
from __future__ import annotations

import pytest
from django.db import connection, transaction

from auditapp.engine import conversations, recording
from auditapp.engine import judgments as engine_judgments
from auditapp.engine.protocol import Judgment, ParsedReply
from auditapp.models import Audit, AuditJudgment, AuditModel, AuditRequest, LLMEndpoint

PATHS = ["copy", "executemany"]


def make_requests(n: int) -> tuple[int, list[int]]:
    endpoint = LLMEndpoint.objects.create(name="storage", base_url="http://127.0.0.1:9/v1")
    audit = Audit.objects.create(name="storage")
    audit_model = AuditModel.objects.create(audit=audit, endpoint=endpoint, model="annotator-a")
    requests = AuditRequest.objects.bulk_create([
        AuditRequest(audit=audit, audit_model=audit_model, condition="leader", unit=f"iteration:{k}", order=k,
                     key=f"k{k}") for k in range(n)])
    return audit.id, [request.id for request in requests]


def reply(n: int, *, label: int = 1, explanation: str = "") -> ParsedReply:
    """n judgments: every third missing with a reason (and a None label), a score on the others."""
    return ParsedReply(outcome="label", judgments=tuple(
        Judgment(unit=f"{i}:pair:side", outcome="unparseable", reason="index absent", explanation=explanation)
        if i % 3 == 0 else Judgment(unit=f"{i}:pair:side", outcome="label", label=label, value=0.25 * i,
                                    explanation=explanation)
        for i in range(1, n + 1)))


def stored(audit_id: int) -> list[tuple]:
    return list(AuditJudgment.objects.filter(audit_id=audit_id).order_by("request_id", "unit").values_list(
        "request_id", "unit", "outcome", "value", "label", "reason", "explanation"))


@pytest.fixture(params=PATHS)
def path(request, monkeypatch):
    if request.param == "copy" and connection.vendor != "postgresql":
        pytest.skip("the COPY path is PostgreSQL's")
    # Every batch takes the path under test: the COPY path from one row, executemany never switching to COPY.
    monkeypatch.setattr(engine_judgments, "JUDGMENT_COPY_MIN_ROWS", 1 if request.param == "copy" else 10**9)
    return request.param


@pytest.mark.django_db(transaction=True)
def test_both_paths_store_every_field_and_keep_an_existing_judgment(path):
    audit_id, (first, second) = make_requests(2)
    with transaction.atomic():
        engine_judgments.judgments_create(audit_id, [(first, reply(60, explanation="tab\there, new\nline, \\N"))])
    # A second delivery of the first request with other answers, and a reply to the second request with a
    # duplicated unit: the stored judgment and the first of the two duplicates are kept.
    duplicated = ParsedReply(outcome="label", judgments=(Judgment(unit="1:pair:side", outcome="label", label=0),
                                                         Judgment(unit="1:pair:side", outcome="label", label=1)))
    with transaction.atomic():
        engine_judgments.judgments_create(audit_id, [(first, reply(60, label=0)), (second, duplicated)])
        engine_judgments.judgments_create(audit_id, [])
    rows = stored(audit_id)
    assert len(rows) == 61
    by_unit = {(request_id, unit): rest for request_id, unit, *rest in rows}
    assert by_unit[(first, "1:pair:side")] == ["label", 0.25, 1, "", "tab\there, new\nline, \\N"]
    assert by_unit[(first, "3:pair:side")] == ["unparseable", None, None, "index absent", "tab\there, new\nline, \\N"]
    assert by_unit[(second, "1:pair:side")] == ["label", None, 0, "", ""]
    assert {rest[2] for (request_id, _), rest in by_unit.items() if request_id == first and rest[0] == "label"} == {1}


@pytest.mark.django_db(transaction=True)
def test_a_rolled_back_transaction_stores_nothing_and_the_next_one_stores_all(path):
    audit_id, requests = make_requests(3)

    def store_then_fail():
        with transaction.atomic():
            engine_judgments.judgments_create(audit_id, [(requests[0], reply(10))])
            raise RuntimeError("the caller fails after storing")

    with pytest.raises(RuntimeError, match="the caller fails after storing"):
        store_then_fail()
    assert stored(audit_id) == []
    with transaction.atomic():
        engine_judgments.judgments_create(audit_id, [(request_id, reply(10)) for request_id in requests])
    assert len(stored(audit_id)) == 30


@pytest.mark.django_db
def test_the_copy_path_takes_large_batches_on_postgresql(monkeypatch):
    """Which path a batch takes: COPY on PostgreSQL from JUDGMENT_COPY_MIN_ROWS judgments, else executemany."""
    taken = []
    monkeypatch.setattr(engine_judgments, "_judgments_copy", lambda rows: taken.append(len(rows)))
    audit_id, (request_id,) = make_requests(1)
    engine_judgments.judgments_create(audit_id, [(request_id, reply(engine_judgments.JUDGMENT_COPY_MIN_ROWS - 1))])
    engine_judgments.judgments_create(audit_id, [(request_id, reply(engine_judgments.JUDGMENT_COPY_MIN_ROWS))])
    expected = [engine_judgments.JUDGMENT_COPY_MIN_ROWS] if connection.vendor == "postgresql" else []
    assert taken == expected


def claimed(request_ids: list[int], keys: list[str]) -> list[conversations.ClaimedRequest]:
    rows = AuditRequest.objects.filter(id__in=request_ids).values_list("id", "audit_model_id", "condition", "unit")
    by_id = {row[0]: row for row in rows}
    return [conversations.ClaimedRequest(request_id, by_id[request_id][1], by_id[request_id][2], None,
                                          by_id[request_id][3], 0, key)
            for request_id, key in zip(request_ids, keys, strict=True)]


def completed(request, text: str) -> recording.RequestResult:
    from auditapp.llm_clients import Completion

    return recording.RequestResult(request, Completion(text, "stop", 12, 3, "m"), "", 1, 5.0)


def parse_by_text(request, text: str, finish_reason: str) -> ParsedReply:
    """Each reply's text is its label for two units, so a test can see which stored text was parsed."""
    return ParsedReply(outcome="label", label=int(text), judgments=(
        Judgment(unit="a", outcome="label", label=int(text)), Judgment(unit="b", outcome="label", label=int(text))))


@pytest.mark.django_db(transaction=True)
def test_chunk_record_stores_each_key_once_parses_the_stored_reply_and_records_a_request_once():
    from auditapp.models import AuditChunk, LLMReply

    audit_id, ids = make_requests(4)
    chunk = AuditChunk.objects.create(audit_id=audit_id, leased_until="2100-01-01T00:00:00Z")
    # key "old" was answered before (by another audit): its stored text "0", not this reply's "1", is parsed.
    LLMReply.objects.create(key="old", text="0", latency_ms=1, attempts=1)
    requests = claimed(ids, ["old", "new", "new", "failing"])
    results = [completed(requests[0], "1"), completed(requests[1], "1"), completed(requests[2], "0"),
               recording.RequestResult(requests[3], None, "HTTP 500", 3, 9.0)]
    recording.chunk_record(chunk_id=chunk.id, results=results, parse=parse_by_text)
    # The same completions again (a worker whose lease expired): nothing recorded twice, nothing changed.
    recording.chunk_record(chunk_id=chunk.id, results=[completed(requests[1], "0")], parse=parse_by_text)

    assert LLMReply.objects.filter(key="new").count() == 1
    new_reply = LLMReply.objects.get(key="new")
    assert (new_reply.text, new_reply.prompt_tokens, new_reply.completion_tokens, new_reply.attempts) == ("1", 12, 3, 1)
    state = {r.id: r for r in AuditRequest.objects.filter(id__in=ids)}
    assert [state[i].label for i in ids[:3]] == [0, 1, 1]  # the stored text of each key, the batch's first for "new"
    assert [state[i].state for i in ids] == ["answered", "answered", "answered", "failed"]
    assert state[ids[1]].reply_id == state[ids[2]].reply_id == new_reply.id
    assert (state[ids[3]].error, state[ids[3]].attempts, state[ids[3]].outcome) == ("HTTP 500", 3, "error")
    assert all(state[i].finished_at is not None for i in ids)
    assert AuditJudgment.objects.filter(request_id=ids[3]).count() == 0
    assert sorted(AuditJudgment.objects.filter(audit_id=audit_id).values_list("request_id", "unit", "label")) == sorted(
        [(ids[0], "a", 0), (ids[0], "b", 0), (ids[1], "a", 1), (ids[1], "b", 1), (ids[2], "a", 1), (ids[2], "b", 1)])


@pytest.mark.django_db(transaction=True)
def test_judgments_go_with_their_audit_and_their_request_though_the_database_has_no_foreign_key_on_them():
    audit_id, (first, second) = make_requests(2)
    with transaction.atomic():
        engine_judgments.judgments_create(audit_id, [(first, reply(6)), (second, reply(6))])
    AuditRequest.objects.filter(pk=first).delete()
    assert {request_id for request_id, *_ in stored(audit_id)} == {second}
    Audit.objects.filter(pk=audit_id).delete()
    assert not AuditJudgment.objects.exists()
