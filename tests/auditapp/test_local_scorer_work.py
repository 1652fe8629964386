"""The worker's loop with a local scorer (benchmarks/bits_throughput.py measures it): a slice whose requests are all
answered writes them and ends at once instead of waiting out the flush interval, and the judgments written in bulk
are stored once per request and unit, however often a reply is recorded."""
from __future__ import annotations

import asyncio
import json
import random
import threading
import time

import pytest

from auditapp import scorer_kinds
from auditapp.engine import launch, planning, preparation, recording
from auditapp.engine import runner as audit_runner
from auditapp.llm_clients import Completion, EndpointConfig
from auditapp.models import Audit, AuditJudgment, LLMEndpoint
from auditapp.paradigms.bits.corpora import bits_corpus_generate
from auditapp.paradigms.bits.corpus import PAPER_TABLES
from auditapp.paradigms.bits.services import bits_audit_create
from auditapp.scorers import local


def test_local_batches_sent_together_are_scored_one_after_the_other_in_one_thread(monkeypatch):
    in_flight, most, threads = 0, 0, set()
    lock = threading.Lock()

    def slow(text: str) -> float:
        nonlocal in_flight, most
        with lock:
            in_flight += 1
            most = max(most, in_flight)
            threads.add(threading.current_thread().name)
        time.sleep(0.005)
        with lock:
            in_flight -= 1
        return 0.5

    monkeypatch.setattr(local, "_loaded", lambda name: slow)
    config = EndpointConfig(protocol="local", base_url="")

    async def send_together():
        return await asyncio.gather(*[scorer_kinds.send(None, config, None, "vader", {"texts": ["a", "b"]}, {},
                                                        rng=random.Random(0)) for _ in range(6)])

    results = asyncio.run(send_together())
    assert [json.loads(result.completion.text) for result in results] == [[0.5, 0.5]] * 6
    # Scoring threads would only take the GIL from each other (benchmarks/bits_throughput.py).
    assert most == 1 and len(threads) == 1


@pytest.fixture
def tasks_off(monkeypatch):
    """Tasks are run by the test itself, in order, instead of by a worker."""
    for name in ("audit_prepare_task", "audit_work_task", "audit_analyse_task"):
        monkeypatch.setattr(f"tasks.audits.{name}.delay", lambda audit_id: None)


def prepared_vader_audit(*, batch_size: int) -> Audit:
    """A VADER audit of the paper's T1 and T6 with one emotional word per emotion (T1: 20 terms + 1 control; T6:
    7 words × (20 terms + 1 control); 168 sentences), prepared: its requests are stored and pending."""
    spec = json.loads(PAPER_TABLES.read_text())
    spec["templates"] = [template for template in spec["templates"] if template["id"] in ("T1", "T6")]
    spec["emotions"] = [{**emotion, "emotional_words": emotion["emotional_words"][:1]} for emotion in spec["emotions"]]
    corpus = bits_corpus_generate(spec=spec, name="T1 and T6")
    local = LLMEndpoint.objects.create(name="local", protocol="local", base_url="")
    audit = bits_audit_create(name="local", corpus=corpus, models=[launch.ModelChoice(endpoint=local, model="vader")],
                              batch_size=batch_size, use_cache=False)
    preparation.audit_prepare(audit_id=audit.id)
    return Audit.objects.get(pk=audit.id)


@pytest.mark.django_db(transaction=True)
@pytest.mark.integration
def test_a_slice_ends_when_its_replies_are_written_not_after_the_flush_interval(monkeypatch, tasks_off):
    monkeypatch.setattr(audit_runner, "FLUSH_SECONDS", 30.0)
    audit = prepared_vader_audit(batch_size=16)
    assert audit.status == Audit.Status.RUNNING and audit.corpus.n_units == 168 and audit.n_requests == 11

    started = time.monotonic()
    assert audit_runner.audit_work(audit.id) == "finished"
    # The loop used to sleep out the interval twice (once before writing the replies, once more to find nothing
    # left to claim): 60 s. Now it writes as soon as no request is queued or in flight.
    assert time.monotonic() - started < 10
    assert Audit.objects.get(pk=audit.id).status == Audit.Status.ANALYSING
    assert AuditJudgment.objects.filter(audit=audit, value__isnull=False).count() == audit.corpus.n_units


@pytest.mark.django_db(transaction=True)
@pytest.mark.integration
def test_a_reply_recorded_twice_keeps_one_judgment_per_unit(tasks_off):
    audit = prepared_vader_audit(batch_size=4)
    builder = planning.request_builder(audit)
    chunk_id = recording.chunk_open(audit_id=audit.id)
    request = recording.chunk_claim(chunk_id=chunk_id, audit_id=audit.id, limit=1)[0]
    units = builder.units_of(request)
    # Three scores and a failure whose reason is longer than the column (kept to its first 200 characters).
    reply = Completion(text=json.dumps([0.25, -0.5, 0.0, {"error": "E" * 300}]), finish_reason=None,
                       prompt_tokens=None, completion_tokens=None, model_reported="vader")
    result = recording.RequestResult(request, reply, "", 1, 2.0)
    recording.chunk_record(chunk_id=chunk_id, results=[result], parse=builder.parse)
    # A duplicate completion (a lease that expired while its worker still lived) finds the judgments stored.
    recording.chunk_record(chunk_id=chunk_id, results=[result], parse=builder.parse)

    stored = {unit: (value, reason) for unit, value, reason in AuditJudgment.objects.filter(
        request_id=request.id).values_list("unit", "value", "reason")}
    assert stored == {units[0].key: (0.25, ""), units[1].key: (-0.5, ""), units[2].key: (0.0, ""),
                      units[3].key: (None, "E" * 200)}
    assert AuditJudgment.objects.filter(audit=audit).count() == 4
