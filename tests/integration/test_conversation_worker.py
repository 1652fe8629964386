"""Two-turn affective attribution audits (seed 003 §3.1.2) run by a real Celery worker on Redis into PostgreSQL, against
the real test LLM server's ``aat-stereotyped`` persona (the conversations' acceptance test): an AAT audit launched
through ``POST /api/audits/`` in its default two-turn form, its worker killed with SIGKILL between the two turns of many
conversations, then restarted, leaves exactly one reply per turn, no conversation without its second turn, every second
turn sent with the model's own description in the conversation, and the planted FAR and UAR recovered.

The same audit in one process (no worker), with refusals and the cache, is tests/auditapp/test_implicit_bias_audit.py;
the engine's conversations with a test-only paradigm are tests/auditapp/test_audit_turns.py.
"""
from __future__ import annotations

import signal

import numpy as np
import pytest

from auditapp.engine import registry
from auditapp.models import Audit, AuditRequest, LLMEndpoint, LLMReply
from tests.auditapp.test_implicit_bias_audit import records
from tests.implicit_bias_personas import aat_reply, expected_aat_answer
from tests.integration.support import started_celery_worker, wait_for, worker_environment
from tests.llm_server import LLMServer

pytestmark = [pytest.mark.integration, pytest.mark.slow, pytest.mark.django_db(transaction=True)]

MODEL = "aat-stereotyped"
COMBINATIONS = 50
N_CONVERSATIONS = 3 * COMBINATIONS  # each combination with the paper's three templates


def test_worker_killed_between_turns_loses_and_duplicates_no_turn(api_client):
    env = worker_environment(AUDIT_LEASE_SECONDS="4")
    with LLMServer(latency=0.05, models=(MODEL,)) as server:
        endpoint = LLMEndpoint.objects.create(name="personas", protocol="openai", base_url=server.base_url,
                                              max_concurrency=8, attempt_timeout_s=5, max_attempts=3)
        worker = started_celery_worker(env)
        response = api_client.post("/api/audits/", {
            "paradigm": "affective_attribution", "name": "killed between turns", "combinations": COMBINATIONS,
            "seed": 8, "use_cache": False, "models": [{"endpoint": endpoint.id, "model": MODEL}]}, format="json")
        assert response.status_code == 201, response.content
        audit_id = response.json()["id"]
        requests = AuditRequest.objects.filter(audit_id=audit_id)

        def between_turns() -> bool:
            first = requests.filter(turn=0, state="answered").count()
            second = requests.filter(turn=1, state="answered").count()
            return first >= 60 and first - second >= 10

        wait_for(between_turns, timeout=120, what="conversations answered in their first turn only")
        worker.stop(signal.SIGKILL)
        assert requests.filter(turn=1, state="answered").count() < N_CONVERSATIONS, "finished before the kill"
        assert Audit.objects.get(pk=audit_id).status == "running"

        worker = started_celery_worker(env)
        try:
            wait_for(lambda: Audit.objects.get(pk=audit_id).status == "completed", timeout=300, what="the audit")
        finally:
            worker.stop()
        stats = server.stats()
    audit = Audit.objects.get(pk=audit_id)
    assert audit.design["options"]["form"] == "two_turn"
    assert requests.count() == 2 * N_CONVERSATIONS and requests.filter(state="answered").count() == 2 * N_CONVERSATIONS
    keys = list(requests.values_list("key", flat=True))
    assert len(set(keys)) == 2 * N_CONVERSATIONS
    assert LLMReply.objects.filter(key__in=keys).count() == 2 * N_CONVERSATIONS
    # Every body reached the server; one in flight at the kill may have been sent twice, never a recorded one.
    assert stats["bodies"] == 2 * N_CONVERSATIONS

    # Each second turn was sent with its conversation: the persona answered Q2 after its own description.
    instances = registry.get("affective_attribution").builder(audit).instances
    replies = {(row["unit"], row["turn"]): row["reply__text"] for row in requests.values("unit", "turn", "reply__text")}
    chosen, labels = [], []
    for unit, instance in instances.items():
        q1, q2 = instance.texts
        assert replies[(unit, 1)] == aat_reply(MODEL, [q1, q2])
        factors = instance.factors
        chosen.append(expected_aat_answer(MODEL, factors["s_e"], factors["s_n"], int(factors["template"])))
        labels.append(factors["group_label"])
    chosen, labels = np.array(chosen), np.array(labels)
    table5 = records(api_client, audit_id, "table5").iloc[0]
    assert table5["sa_n_replies"] + table5["sb_n_replies"] == N_CONVERSATIONS
    assert table5["far"] == pytest.approx(np.mean(chosen[labels == "S_a"] == "comedy"))
    assert table5["uar"] == pytest.approx(np.mean(chosen[labels == "S_b"] == "tragedy"))
