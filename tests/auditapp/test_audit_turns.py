"""Multi-turn requests in the audit engine (conversations), through the real engine functions against the real
test LLM server, whose conversant persona answers a second turn by quoting its first reply (so a reply proves the
history was sent). Runs on SQLite, and on PostgreSQL with DATABASE_URL set."""
from __future__ import annotations

import threading
from datetime import timedelta

import pytest
from django.utils import timezone

from auditapp import llm_clients
from auditapp.engine import analysis, control, endpoints, launch, preparation, recording
from auditapp.engine import conversations as engine_conversations
from auditapp.engine import runner as audit_runner
from auditapp.engine.selectors import audit_parse_quality, audit_progress, audit_request_detail
from auditapp.models import Audit, AuditChunk, AuditJudgment, AuditRequest, LLMEndpoint, LLMReply
from tests.auditapp import two_turn_builder
from tests.auditapp.db_race import finish, in_thread, postgresql_only, wait_until_blocked_on_a_lock
from tests.auditapp.two_turn_builder import NAME, TwoTurnRequests, ask, describe
from tests.llm_server import REFUSAL, LLMServer, conversant_reply

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.integration]

MODEL = "conversant-a"
TEXTS = ["a clown slips on a banana", "a ship sinks at night", "a wedding in the rain", "two old friends meet"]


@pytest.fixture(autouse=True)
def two_turns(monkeypatch):
    """The test paradigm is registered, and tasks are run by the test itself, in order."""
    two_turn_builder.install(monkeypatch)
    for name in ("audit_prepare_task", "audit_work_task", "audit_analyse_task"):
        monkeypatch.setattr(f"tasks.audits.{name}.delay", lambda audit_id: None)


@pytest.fixture(scope="module")
def server():
    with LLMServer(models=(MODEL,)) as running:
        yield running


def make_endpoint(server, **fields) -> LLMEndpoint:
    defaults = {"name": "conversant server", "protocol": "openai", "base_url": server.base_url, "max_concurrency": 4,
                "attempt_timeout_s": 5.0, "deadline_s": 30, "max_attempts": 2}
    return LLMEndpoint.objects.create(**{**defaults, **fields})


def make_audit(endpoint, texts, **fields) -> Audit:
    audit = Audit.objects.create(**{"name": "conversations", "paradigm": NAME, "design": {"texts": texts},
                                    "error_budget": 1.0, **fields})
    launch.audit_models_create(audit, [launch.ModelChoice(endpoint=endpoint, model=MODEL)])
    return audit


def requests_of(audit, turn):
    return {row.unit: row for row in AuditRequest.objects.filter(audit=audit, turn=turn).select_related("reply")}


def expected_second(text: str) -> tuple[list[dict], str]:
    """Turn 1's messages and the conversant's reply to them (worked from the persona's rule)."""
    first = describe(text)
    described = conversant_reply(first)
    messages = [*first, {"role": "assistant", "content": described}, ask(1)]
    return messages, conversant_reply(messages)


def test_two_turns_each_sent_once_with_its_history_and_own_key(server, api_client):
    texts = [*TEXTS, "a joke [refuse]", "a storm [fail]"]
    endpoint = make_endpoint(server)
    # 2 of 12 requests may fail: the [fail] text's first turn and the second turn it closes. The refusal's closed
    # second turn does not count, or the audit would stop (3 > 0.2 × 12).
    audit = make_audit(endpoint, texts, error_budget=0.2)
    server.reset_stats()
    preparation.audit_prepare(audit_id=audit.id)
    audit.refresh_from_db()
    assert audit.n_requests == 12
    first, second = requests_of(audit, 0), requests_of(audit, 1)
    assert all(row.key for row in first.values()) and not any(row.key for row in second.values())
    assert all(second[unit].previous_id == first[unit].id for unit in first)
    progress = audit_progress(audit)["totals"]
    assert progress["waiting"] == 12 and progress["answered"] == 0

    assert audit_runner.audit_work(audit.id) == "finished"
    audit.refresh_from_db()
    assert audit.status == Audit.Status.ANALYSING, audit.status_reason
    first, second = requests_of(audit, 0), requests_of(audit, 1)
    builder = TwoTurnRequests(audit)
    model = builder.models[second["text:0"].audit_model_id]
    for index, text in enumerate(TEXTS):
        unit = f"text:{index}"
        messages, reply = expected_second(text)
        assert first[unit].reply.text == conversant_reply(describe(text))
        # The second reply quotes the first: the server was sent the whole conversation.
        assert second[unit].reply.text == reply and f'"{first[unit].reply.text}"' in reply
        assert second[unit].key == builder.key(model, messages, 0) != first[unit].key
        assert second[unit].label == (1 if reply.endswith("Comedy.") else 0)
    refused, failed = "text:4", "text:5"
    assert first[refused].outcome == "refusal" and first[refused].reply.text == REFUSAL
    assert second[refused].state == "failed" and second[refused].reply is None
    assert second[refused].error == "turn 1 gave nothing to continue from: a refusal"
    assert first[failed].state == "failed" and "HTTP 500" in first[failed].error
    assert second[failed].state == "failed" and second[failed].error == f"turn 1 failed: {first[failed].error}"
    assert not second[failed].key and not second[refused].key, "a closed turn is never keyed"

    stats = server.stats()
    # 6 first turns (the failing one tried twice: max_attempts 2) and 4 second turns, each body sent once.
    assert stats["bodies"] == 10 and stats["requests"] == 11
    assert len({row.key for row in [*first.values(), *second.values()] if row.key}) == 10
    assert LLMReply.objects.filter(key__in=[row.key for row in second.values() if row.key]).count() == 4
    # The description records no judgment; each answered second turn one.
    assert AuditJudgment.objects.filter(audit=audit).count() == 4
    assert not AuditJudgment.objects.filter(request__turn=0).exists()

    totals = audit_progress(audit)["totals"]
    assert (totals["answered"], totals["failed"], totals["waiting"]) == (9, 3, 0)
    quality = dict(zip(audit_parse_quality(audit).columns, next(iter(audit_parse_quality(audit).rows)), strict=True))
    assert (quality["n_requests"], quality["failed"], quality["n_refusal"], quality["n_error"]) == (12, 3, 1, 3)
    assert analysis.audit_reparse(audit_id=audit.id) == 9
    assert AuditJudgment.objects.filter(audit=audit).count() == 4

    detail = audit_request_detail(audit=audit, request_id=second["text:0"].id)
    messages, reply = expected_second(TEXTS[0])
    assert detail["sent"] == messages and detail["key_matches"] and detail["turn"] == 1
    assert detail["reply"]["text"] == reply
    assert [(turn["turn"], turn["reply"]) for turn in detail["conversation"]] == [(0, first["text:0"].reply.text)]
    exported = api_client.get(f"/api/audits/{audit.id}/responses/").json()["results"]
    assert sorted((row["unit"], row["turn"]) for row in exported) == sorted(
        (f"text:{index}", turn) for index in range(6) for turn in (0, 1))
    served = api_client.get(f"/api/audits/{audit.id}/requests/{second['text:0'].id}/")
    assert served.status_code == 200 and served.json()["sent"] == messages
    assert served.json()["conversation"][0]["request_id"] == first["text:0"].id
    closed = audit_request_detail(audit=audit, request_id=second[refused].id)
    assert closed["sent"] is None and closed["conversation"][0]["reply"] == REFUSAL
    assert closed["error"].startswith("turn 1 gave nothing")


def test_the_cache_works_per_turn_and_a_different_first_reply_gives_a_different_second_key(server):
    endpoint = make_endpoint(server)
    first_audit = make_audit(endpoint, TEXTS)
    preparation.audit_prepare(audit_id=first_audit.id)
    assert audit_runner.audit_work(first_audit.id) == "finished"

    # Same design again: both turns of every conversation come from the cache, nothing is sent.
    server.reset_stats()
    again = make_audit(endpoint, TEXTS, name="again")
    preparation.audit_prepare(audit_id=again.id)
    assert AuditRequest.objects.filter(audit=again, from_cache=True, state="answered").count() == 8
    assert audit_runner.audit_work(again.id) == "finished"
    assert server.stats()["requests"] == 0
    assert AuditJudgment.objects.filter(audit=again).count() == 4

    # A stored first reply that differs (here: rewritten) gives its second turn a new key, sent with that reply.
    old_first, old_second = requests_of(first_audit, 0)["text:2"], requests_of(first_audit, 1)["text:2"]
    LLMReply.objects.filter(key=old_first.key).update(text="A scene of a picnic.")
    third = make_audit(endpoint, TEXTS, name="other first reply")
    preparation.audit_prepare(audit_id=third.id)
    second = requests_of(third, 1)["text:2"]
    assert second.state == "pending" and second.key and second.key != old_second.key
    assert audit_runner.audit_work(third.id) == "finished"
    assert server.stats()["requests"] == 1
    second.refresh_from_db()
    assert second.reply.text == conversant_reply([*describe(TEXTS[2]),
                                                  {"role": "assistant", "content": "A scene of a picnic."}, ask(1)])


def test_a_lease_expired_between_turns_sends_each_turn_once(server):
    endpoint = make_endpoint(server)
    audit = make_audit(endpoint, TEXTS, use_cache=False)
    preparation.audit_prepare(audit_id=audit.id)
    server.reset_stats()
    builder = TwoTurnRequests(audit)
    # Worker A: claims (only first turns are claimable), sends and records them, claims the second turns and dies.
    chunk = recording.chunk_open(audit_id=audit.id)
    claimed = recording.chunk_claim(chunk_id=chunk, audit_id=audit.id, limit=100)
    assert [request.turn for request in claimed] == [0, 0, 0, 0]
    config = endpoints.endpoint_config(endpoint)
    results = []
    for request in claimed:
        probe = llm_clients.probe_chat_sync(config, MODEL, engine_conversations.request_payload(builder, request), {})
        results.append(recording.RequestResult(request, llm_clients.Completion(
            probe.text, probe.finish_reason, None, None, None), "", 1, 1.0))
    recording.chunk_record(chunk_id=chunk, results=results, parse=builder.parse, builder=builder)
    held = recording.chunk_claim(chunk_id=chunk, audit_id=audit.id, limit=100)
    assert [request.turn for request in held] == [1, 1, 1, 1]
    assert all(len(request.earlier) == 1 and request.earlier[0].reply_text for request in held)
    AuditChunk.objects.filter(pk=chunk).update(leased_until=timezone.now() - timedelta(seconds=1))

    # Worker B takes the expired lease's second turns and finishes: every turn was sent exactly once.
    assert audit_runner.audit_work(audit.id) == "finished"
    stats = server.stats()
    assert stats["requests"] == stats["bodies"] == 8 and stats["max_repeats"] == 1
    second = requests_of(audit, 1)
    for index, text in enumerate(TEXTS):
        assert second[f"text:{index}"].reply.text == expected_second(text)[1]


def test_retry_failed_reopens_whole_conversations():
    texts = [*TEXTS[:2], "a joke [refuse]"]
    with LLMServer(models=(MODEL,), permanent_error_rate=1.0) as broken:
        endpoint = make_endpoint(broken, max_attempts=1)
        audit = make_audit(endpoint, texts)
        preparation.audit_prepare(audit_id=audit.id)
        assert audit_runner.audit_work(audit.id) == "finished"
    first, second = requests_of(audit, 0), requests_of(audit, 1)
    assert all(row.state == "failed" for row in [*first.values(), *second.values()])
    assert all(row.error.startswith("turn 1 failed: failed after 1 attempts: HTTP 500") for row in second.values())
    Audit.objects.filter(pk=audit.pk).update(status=Audit.Status.COMPLETED)

    port = int(endpoint.base_url.rsplit(":", 1)[1])
    with LLMServer(port=port, models=(MODEL,)) as fixed:
        assert control.audit_retry_failed(audit=audit) == 6
        assert not AuditRequest.objects.filter(audit=audit, turn=1).exclude(key="").exists(), "they wait again"
        assert audit_runner.audit_work(audit.id) == "finished"
        stats = fixed.stats()
    first, second = requests_of(audit, 0), requests_of(audit, 1)
    for index, text in enumerate(texts[:2]):
        assert second[f"text:{index}"].reply.text == expected_second(text)[1]
    assert second["text:2"].error == "turn 1 gave nothing to continue from: a refusal"
    assert stats["requests"] == 3 + 2

    # Retrying again re-opens the refusal's closed turn, which closes again at once, unsent.
    Audit.objects.filter(pk=audit.pk).update(status=Audit.Status.COMPLETED)
    assert control.audit_retry_failed(audit=audit) == 1
    closed = AuditRequest.objects.get(pk=second["text:2"].pk)
    assert closed.state == "failed" and closed.error == "turn 1 gave nothing to continue from: a refusal"


def test_a_second_turn_left_waiting_after_its_first_was_recorded_is_sent_by_the_next_slice(server):
    """A first turn recorded without moving its conversation on (a fault between the two writes, or an older
    worker): the next work slice keys the second turn, so the audit cannot wait for ever."""
    endpoint = make_endpoint(server)
    audit = make_audit(endpoint, TEXTS[:1], use_cache=False)
    preparation.audit_prepare(audit_id=audit.id)
    builder = TwoTurnRequests(audit)
    chunk = recording.chunk_open(audit_id=audit.id)
    [request] = recording.chunk_claim(chunk_id=chunk, audit_id=audit.id, limit=10)
    completion = llm_clients.Completion(conversant_reply(describe(TEXTS[0])), "stop", None, None, None)
    recording.chunk_record(chunk_id=chunk, results=[recording.RequestResult(request, completion, "", 1, 1.0)],
                          parse=builder.parse)
    recording.chunk_release(chunk_id=chunk)
    assert requests_of(audit, 1)["text:0"].key == "", "recorded without the builder: not moved on"
    server.reset_stats()
    assert audit_runner.audit_work(audit.id, slice_seconds=20) == "finished"
    assert requests_of(audit, 1)["text:0"].reply.text == expected_second(TEXTS[0])[1]
    assert server.stats()["requests"] == 1


def test_retry_failed_committed_between_a_slices_read_and_its_write_does_not_close_the_reopened_turn(
        server, monkeypatch):
    """The race in its order: a work slice reads a conversation whose first turn failed and decides to close the
    second; "retry failed" re-opens the first turn; then the slice writes. The write re-checks the first turn in
    its UPDATE, so the second turn keeps waiting, and the conversation is then sent whole."""
    endpoint = make_endpoint(server)
    audit = make_audit(endpoint, TEXTS[:1], use_cache=False)
    preparation.audit_prepare(audit_id=audit.id)
    builder = TwoTurnRequests(audit)
    chunk = recording.chunk_open(audit_id=audit.id)
    [request] = recording.chunk_claim(chunk_id=chunk, audit_id=audit.id, limit=10)
    # Recorded failed without moving the conversation on, as a worker killed between the two writes leaves it.
    recording.chunk_record(chunk_id=chunk, results=[recording.RequestResult(request, None, "HTTP 500", 2, 1.0)],
                          parse=builder.parse)
    recording.chunk_release(chunk_id=chunk)
    Audit.objects.filter(pk=audit.pk).update(status=Audit.Status.STOPPED)
    assert requests_of(audit, 1)["text:0"].state == "pending"

    read_chains = engine_conversations.conversations_before
    retried = []

    def read_then_retry(ids):
        chains = read_chains(ids)
        if not retried:
            retried.append(control.audit_retry_failed(audit=Audit.objects.get(pk=audit.pk)))
        return chains

    read_conversations_with(monkeypatch, read_then_retry)
    engine_conversations.turns_unblock(audit=audit, builder=builder)
    assert retried == [1]
    assert [chain[-1].state for chain in read_chains([request.id]).values()] == ["pending"]
    second = requests_of(audit, 1)["text:0"]
    assert (second.state, second.key, second.error) == ("pending", "", ""), "the re-opened turn was closed again"

    read_conversations_with(monkeypatch, read_chains)
    server.reset_stats()
    assert audit_runner.audit_work(audit.id) == "finished"
    assert requests_of(audit, 1)["text:0"].reply.text == expected_second(TEXTS[0])[1]
    assert server.stats()["requests"] == 2


def read_conversations_with(monkeypatch, read) -> None:
    """Every reader of a conversation (the claim and the turns' advance) reads it with ``read``."""
    for module in (engine_conversations, recording):
        monkeypatch.setattr(module, "conversations_before", read)


@postgresql_only
def test_retry_failed_waits_for_a_slice_closing_a_turn_and_reopens_the_turn_it_closed(server, monkeypatch):
    """The same race on two connections: the slice holds the failed first turn locked while it closes the second;
    "retry failed" waits for it, then re-opens both turns, so no conversation is left half open."""
    endpoint = make_endpoint(server)
    audit = make_audit(endpoint, TEXTS[:1], use_cache=False)
    preparation.audit_prepare(audit_id=audit.id)
    builder = TwoTurnRequests(audit)
    chunk = recording.chunk_open(audit_id=audit.id)
    [request] = recording.chunk_claim(chunk_id=chunk, audit_id=audit.id, limit=10)
    recording.chunk_record(chunk_id=chunk, results=[recording.RequestResult(request, None, "HTTP 500", 2, 1.0)],
                          parse=builder.parse)
    recording.chunk_release(chunk_id=chunk)
    Audit.objects.filter(pk=audit.pk).update(status=Audit.Status.STOPPED)

    read_chains = engine_conversations.conversations_before
    read, go = threading.Event(), threading.Event()

    def read_then_wait(ids):
        chains = read_chains(ids)
        read.set()
        assert go.wait(20)
        return chains

    read_conversations_with(monkeypatch, read_then_wait)
    slice_ = in_thread(lambda: engine_conversations.turns_unblock(audit=audit, builder=builder))
    assert read.wait(20)
    retry = in_thread(lambda: control.audit_retry_failed(audit=Audit.objects.get(pk=audit.pk)))
    wait_until_blocked_on_a_lock()
    go.set()
    finish(slice_, retry)

    first, second = requests_of(audit, 0)["text:0"], requests_of(audit, 1)["text:0"]
    assert (first.state, second.state, second.key, second.error) == ("pending", "pending", "", "")
    read_conversations_with(monkeypatch, read_chains)
    assert audit_runner.audit_work(audit.id) == "finished"
    assert requests_of(audit, 1)["text:0"].reply.text == expected_second(TEXTS[0])[1]
