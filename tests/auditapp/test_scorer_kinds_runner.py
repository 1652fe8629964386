"""Scorer kinds through the worker's real send loop (audit_runner.run_slice: leases, the event loop, bulk
writes to the database): a local scorer's batch and an HTTP JSON scorer's texts against the real scoring server
with injected faults. Every reply is stored as the kind's send made it, every failure with its reason.

The request builder here is the smallest one these kinds need (one request per batch of texts); a scorer
paradigm's own builder replaces it, and its end-to-end tests run through the same loop.
"""
from __future__ import annotations

import json
from functools import partial

import pytest
from textblob import TextBlob

from auditapp.engine import planning
from auditapp.engine import runner as audit_runner
from auditapp.engine.protocol import ParsedReply
from auditapp.models import Audit, AuditModel, AuditRequest, LLMEndpoint, LLMReply
from tests.scoring_server import (
    GARBAGE,
    MISSING_SCORE,
    OUT_OF_SCALE,
    REQUEST_TEMPLATE,
    SCORE_PATH,
    ScoringServer,
    expected_score,
    status,
)

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.integration]

TEXTS = ["A good day.", "They are parents of a Blind child.", "The meal was awful.", "Nothing happened."]


class TextBatches:
    """Rebuilds each request's payload from ``batches`` (unit -> texts): {"texts": [...]} for a local scorer,
    {"text": ...} (the batch's one text) for an HTTP JSON scorer."""

    def __init__(self, audit: Audit, batches: dict[str, list[str]]):
        self.audit = audit
        self.batches = batches
        self.models = {m.id: m for m in audit.models.select_related("endpoint")}

    def payload(self, request) -> dict:
        texts = self.batches[request.unit]
        if self.models[request.audit_model_id].endpoint.protocol == "local":
            return {"texts": texts}
        return {"text": texts[0]}

    def key(self, audit_model: AuditModel, payload: dict, replicate: int) -> str:
        return planning.audit_request_key(self.audit, audit_model, payload, replicate)

    def parse(self, request, text: str, finish_reason: str) -> ParsedReply:
        return ParsedReply(AuditRequest.Outcome.SCORE)


def run_scorer_audit(monkeypatch, endpoint: LLMEndpoint, model: str, batches: dict[str, list[str]]) -> Audit:
    audit = Audit.objects.create(name="scorer", status=Audit.Status.RUNNING, n_requests=len(batches),
                                 error_budget=1.0)
    audit_model = AuditModel.objects.create(audit=audit, endpoint=endpoint, model=model)
    builder = TextBatches(audit, batches)
    for order, unit in enumerate(batches):
        AuditRequest.objects.create(audit=audit, audit_model=audit_model, condition="score", unit=unit, order=order,
                                    key=builder.key(builder.models[audit_model.id], builder.payload(
                                        AuditRequest(audit_model=audit_model, unit=unit)), 0))
    monkeypatch.setattr(audit_runner, "_builder", lambda *, audit_id: TextBatches(Audit.objects.get(pk=audit_id),
                                                                                 batches))
    outcome = audit_runner._run_in_own_loop(partial(audit_runner.run_slice, audit.id, slice_seconds=60))
    assert outcome == "exhausted"
    return audit


def test_a_local_scorer_batch_is_scored_in_the_worker_and_stored(monkeypatch):
    endpoint = LLMEndpoint.objects.create(name="local", protocol="local", base_url="")
    audit = run_scorer_audit(monkeypatch, endpoint, "textblob", {"batch:0": TEXTS[:2], "batch:1": TEXTS[2:]})
    requests = list(AuditRequest.objects.filter(audit=audit).select_related("reply").order_by("unit"))
    assert [r.state for r in requests] == [AuditRequest.State.ANSWERED] * 2
    stored = [score for r in requests for score in json.loads(r.reply.text)]
    assert stored == [TextBlob(text).sentiment.polarity for text in TEXTS]
    assert requests[0].reply.model_reported == "textblob" and requests[0].reply.latency_ms > 0


def test_an_http_json_scorer_records_each_reply_and_each_failure_with_its_reason(monkeypatch):
    with ScoringServer(api_key="k-9") as server:
        monkeypatch.setenv("LLM_KEY_SCORER_FOR_TEST", "k-9")
        endpoint = LLMEndpoint.objects.create(
            name="scorer", protocol="http_json", base_url=server.url, api_key_env="LLM_KEY_SCORER_FOR_TEST",
            request_template=REQUEST_TEMPLATE, score_path=SCORE_PATH, max_attempts=3, attempt_timeout_s=2)
        server.inject(TEXTS[0], status(500), status(429, retry_after="0"))
        server.inject(TEXTS[1], OUT_OF_SCALE)
        server.inject(TEXTS[2], MISSING_SCORE)
        server.inject(TEXTS[3], GARBAGE, GARBAGE, GARBAGE)
        audit = run_scorer_audit(monkeypatch, endpoint, "score", {f"text:{i}": [t] for i, t in enumerate(TEXTS)})
    requests = {r.unit: r for r in AuditRequest.objects.filter(audit=audit).select_related("reply")}
    answered = requests["text:0"]
    assert answered.state == AuditRequest.State.ANSWERED and answered.attempts == 3
    reply = json.loads(answered.reply.text)
    assert reply["attributeScores"]["SENTIMENT"]["summaryScore"]["value"] == expected_score(TEXTS[0])
    assert requests["text:1"].error == "no score: the score 7.5 is outside [-1, 1]"
    assert requests["text:2"].error == f"no score: the score path {SCORE_PATH!r} found nothing in the reply"
    assert requests["text:3"].error.startswith("failed after 3 attempts: malformed reply: not JSON")
    assert all(requests[f"text:{i}"].state == AuditRequest.State.FAILED for i in (1, 2, 3))
    assert LLMReply.objects.count() == 1  # failures are never stored as replies, so never cached
