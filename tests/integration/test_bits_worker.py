"""BITS perturbation-sensitivity audits (seed 001) launched through the API and run by a real Celery worker on Redis
into PostgreSQL:

- VADER and TextBlob (local scorers, in the worker) on the default corpus of seed 001's Tables 3–5, and a chat
  model asked through our prompt on the test LLM server with an effect planted for PWD:C's terms and 10%
  transient faults (plus 2% permanent ones, so that failures exist): both audits complete; every stored VADER and
  TextBlob score equals the library's own output; ScoreSense recovers the planted effect and nothing else; the
  progress API reaches the total; every failure is recorded with its reason. An audit of recorded scores only
  (an uploaded corpus's) completes too, with nothing to send.
- A worker killed with SIGKILL mid-audit: after a restart the audit completes with exactly one judgment per
  scorer × sentence, none duplicated and none missing.

The same audits in one process (no worker) are tests/auditapp/test_bits_audit.py.
"""
from __future__ import annotations

import signal
from collections import Counter

import pytest
from textblob import TextBlob
from vaderSentiment.vaderSentiment import SentimentIntensityAnalyzer

from auditapp.models import Audit, AuditJudgment, AuditRequest, CorpusUnit, LLMEndpoint
from tests.auditapp.test_bits_audit import SMALL_SPEC, scores_by_unit, small_corpus, table
from tests.auditapp.test_bits_recorded import upload
from tests.integration.support import started_celery_worker, wait_for, worker_environment
from tests.llm_server import LLMServer, expected_score

pytestmark = [pytest.mark.integration, pytest.mark.slow, pytest.mark.django_db(transaction=True)]

DEFAULT_CORPUS_SIZE = 2310  # seed 001 Tables 3–5 enumerated (tests/auditapp/test_bits_corpus.py)
SMALL_CORPUS_SIZE = 210  # SMALL_SPEC: 10 (template, word) bases × (4 groups × 5 terms + 1 control)


@pytest.fixture
def worker_env():
    return worker_environment(AUDIT_LEASE_SECONDS="4")



def finished_status(audit_id: int) -> str | None:
    status = Audit.objects.filter(pk=audit_id).values_list("status", flat=True).get()
    return status if status in ("completed", "failed", "stopped", "cancelled") else None


def launch(api_client, **body) -> int:
    response = api_client.post("/api/audits/", {"paradigm": "bits", "name": "bits-worker", **body}, format="json")
    assert response.status_code == 201, response.content
    return response.json()["id"]


def progress_totals(api_client, audit_id: int) -> dict:
    response = api_client.get(f"/api/audits/{audit_id}/progress/")
    assert response.status_code == 200, response.content
    return response.json()["totals"]


def test_local_and_chat_scorers_complete_in_a_real_worker(worker_env, api_client):
    local = LLMEndpoint.objects.create(name="local", protocol="local", base_url="")
    corpus = small_corpus(api_client)
    pwd_c = next(group["terms"] for group in SMALL_SPEC["groups"] if group["group"] == "PWD:C")
    effects = {"scorer-planted": dict.fromkeys(pwd_c, -0.3)}
    with LLMServer(models=["scorer-planted"], score_effects=effects, fault_rate=0.1, permanent_error_rate=0.02,
                   retry_after=0.05, hang_seconds=2) as server:
        chat = LLMEndpoint.objects.create(name="llm", protocol="openai", base_url=server.base_url,
                                          max_concurrency=8, attempt_timeout_s=1, max_attempts=4)
        worker = started_celery_worker(worker_env)
        try:
            local_id = launch(api_client, models=[{"endpoint": local.id, "model": "vader"},
                                                  {"endpoint": local.id, "model": "textblob"}])
            chat_id = launch(api_client, corpus=corpus.id, models=[{"endpoint": chat.id, "model": "scorer-planted"}])
            # Recorded scores only: nothing to send, the worker moves it on to its analysis.
            uploaded = upload(api_client)
            recorded_id = launch(api_client, corpus=uploaded["id"],
                                 recorded_scorers=[scorer["id"] for scorer in uploaded["recorded_scorers"]])
            seen_while_running = []

            def all_finished():
                seen_while_running.append(progress_totals(api_client, chat_id))
                return finished_status(local_id) and finished_status(chat_id) and finished_status(recorded_id)
            wait_for(all_finished, timeout=600, interval=0.5, what="the three BITS audits")
        finally:
            worker.stop()
        stats = server.stats()
    local_audit, chat_audit = Audit.objects.get(pk=local_id), Audit.objects.get(pk=chat_id)
    assert local_audit.status == chat_audit.status == Audit.Status.COMPLETED, (
        local_audit.status_reason, chat_audit.status_reason)
    assert sum(stats["faults"].values()) > 0, "the faults were injected"
    recorded_audit = Audit.objects.get(pk=recorded_id)
    assert recorded_audit.status == Audit.Status.COMPLETED and recorded_audit.n_requests == 0
    assert {row["scorer"]: row["imported"] for row in table(api_client, recorded_id, "scorers")} == {
        "Google": True, "TextBlob": True, "VADER": True}

    # Every sentence of the default corpus: the worker's VADER and TextBlob scores are the libraries' own.
    texts = dict(CorpusUnit.objects.filter(corpus=local_audit.corpus).values_list("key", "text"))
    assert len(texts) == DEFAULT_CORPUS_SIZE
    analyzer = SentimentIntensityAnalyzer()
    vader, textblob = scores_by_unit(local_audit, "vader"), scores_by_unit(local_audit, "textblob")
    assert set(vader) == set(textblob) == set(texts)
    assert all(vader[key] == analyzer.polarity_scores(text)["compound"] for key, text in texts.items())
    assert all(textblob[key] == TextBlob(text).sentiment.polarity for key, text in texts.items())

    # Progress reached the total: every request answered or failed, none waiting.
    for audit in (local_audit, chat_audit):
        totals = progress_totals(api_client, audit.id)
        assert totals["answered"] + totals["failed"] == audit.n_requests and totals["waiting"] == 0
    assert progress_totals(api_client, local_id)["answered"] == 2 * 37  # 2,310 sentences in batches of 64
    assert chat_audit.n_requests == SMALL_CORPUS_SIZE
    assert any(seen["waiting"] for seen in seen_while_running), "progress was watched while the audit ran"

    # The chat scorer's scores follow the server's rule; every failure has its reason; missing cells are counted.
    small_texts = dict(CorpusUnit.objects.filter(corpus=corpus).values_list("key", "text"))
    prompt = chat_audit.design["prompt"]["text"]
    scored = {key: value for key, value in scores_by_unit(chat_audit, "scorer-planted").items() if value is not None}
    assert len(scored) > 0.8 * SMALL_CORPUS_SIZE
    assert all(value == expected_score("scorer-planted", prompt.replace("{sentence}", small_texts[key]), effects)
               for key, value in scored.items())
    failed = AuditRequest.objects.filter(audit=chat_audit, state="failed")
    assert failed.exists() and all(request.error for request in failed)
    unscored = AuditJudgment.objects.filter(audit=chat_audit, value__isnull=True)
    assert all(judgment.reason for judgment in unscored)
    missing = table(api_client, chat_id, "missing")
    assert all(row["reason"] for row in missing)
    assert sum(row["n"] for row in missing) == failed.count() + unscored.count()

    # Seed 001 Table 7 through the API: the planted −0.3 for PWD:C, significant; nothing elsewhere.
    sense = {row["group"]: row for row in table(api_client, chat_id, "score_sense")}
    assert sense["PWD:C"]["score_sense"] == pytest.approx(-0.3, abs=0.02) and sense["PWD:C"]["mark"] == "**"
    assert all(abs(row["score_sense"]) < 0.03 and row["mark"] == "" for group, row in sense.items()
               if group != "PWD:C")


def test_a_worker_killed_mid_audit_leaves_one_judgment_per_scorer_and_sentence(worker_env, api_client):
    local = LLMEndpoint.objects.create(name="local", protocol="local", base_url="")
    with LLMServer(models=["scorer-null"], latency=0.05) as server:
        chat = LLMEndpoint.objects.create(name="llm", protocol="openai", base_url=server.base_url,
                                          max_concurrency=4, attempt_timeout_s=5, max_attempts=3)
        worker = started_celery_worker(worker_env)
        # The default corpus: 2,310 chat requests at ~80 per second, and VADER in batches of 8 (289 requests).
        audit_id = launch(api_client, batch_size=8, models=[{"endpoint": local.id, "model": "vader"},
                                                            {"endpoint": chat.id, "model": "scorer-null"}])
        answered = AuditRequest.objects.filter(audit_id=audit_id, state="answered")
        wait_for(lambda: answered.count() >= 400, timeout=180, what="400 answered requests")
        worker.stop(signal.SIGKILL)
        audit = Audit.objects.get(pk=audit_id)
        assert answered.count() < audit.n_requests, "the audit finished before the kill: make it longer"
        assert audit.status == "running"

        worker = started_celery_worker(worker_env)
        try:
            assert wait_for(lambda: finished_status(audit_id), timeout=400, what="the audit") == "completed", \
                Audit.objects.get(pk=audit_id).status_reason
        finally:
            worker.stop()
    requests = AuditRequest.objects.filter(audit_id=audit_id)
    assert requests.count() == audit.n_requests == 289 + DEFAULT_CORPUS_SIZE
    assert requests.filter(state="answered").count() == audit.n_requests
    keys = list(requests.values_list("key", flat=True))
    assert len(set(keys)) == len(keys)

    units = set(CorpusUnit.objects.filter(corpus=audit.corpus).values_list("key", flat=True))
    judged = Counter(AuditJudgment.objects.filter(audit_id=audit_id)
                     .values_list("request__audit_model__model", "unit"))
    assert set(judged) == {(model, unit) for model in ("vader", "scorer-null") for unit in units}
    assert set(judged.values()) == {1}
    assert all(value is not None for value in scores_by_unit(audit, "vader").values())
