"""LLM audits run by real Celery workers on Redis into PostgreSQL, against the real test LLM server.

- 2 models × 7 conditions × 300 items with 10% injected faults: every request ends answered or failed
  with its reason, and the exported metrics equal scikit-learn on the exported replies (the classification
  audit engine).
- A worker killed with SIGKILL mid-audit: after a restart the audit completes with exactly one reply per
  key and none missing.
- The LLM server stopped for seconds mid-audit and restarted: no request fails, the audit finishes by
  itself with one reply per request (the endpoint circuit breaker).
- A self-report audit (seed 000 §3.3) of the scripted personas on AQ-50 + partial SATA in item mode, through
  transient faults: the scores equal those worked by hand from the personas' rule and the instruments' keys,
  and the scores export equals the answers export scored by those keys.
"""
from __future__ import annotations

import io
import signal
import time

import pandas as pd
import pytest
from sklearn.metrics import accuracy_score, cohen_kappa_score, f1_score, precision_score, recall_score

from auditapp.models import Audit, AuditRequest, LLMEndpoint, LLMReply
from psychometrics.services import instruments_sync_shipped
from tests.factories import AUDIT_POSITIVE_WORDS, make_audit_study
from tests.integration.support import free_port, started_celery_worker, wait_for, worker_environment
from tests.llm_server import PERSONAS, LLMServer, persona_choice

pytestmark = [pytest.mark.integration, pytest.mark.slow, pytest.mark.django_db(transaction=True)]

ALL_CONDITIONS = ["zs", "cot", "icl_a", "icl_b", "persona_sic", "persona_ifl", "persona_pfl"]


@pytest.fixture
def worker_env():
    return worker_environment(AUDIT_LEASE_SECONDS="4")



def audit_status(audit_id: int) -> str | None:
    status = Audit.objects.filter(pk=audit_id).values_list("status", flat=True).get()
    return status if status in ("completed", "failed", "stopped", "cancelled") else None


def launch(api_client, study, endpoint, *, models, conditions, n_resamples=500, parallel_tasks=1) -> int:
    response = api_client.post("/api/audits/", {
        "study": study.id, "name": "integration", "conditions": conditions, "n_resamples": n_resamples,
        "parallel_tasks": parallel_tasks,
        "models": [{"endpoint": endpoint.id, "model": model} for model in models]}, format="json")
    assert response.status_code == 201, response.content
    return response.json()["id"]


def csv_export(api_client, url: str) -> pd.DataFrame:
    response = api_client.get(url, {"format": "csv"})
    assert response.status_code == 200
    return pd.read_csv(io.BytesIO(b"".join(response.streaming_content)), keep_default_na=False)


def test_audit_with_injected_faults_completes_and_metrics_equal_scikit_learn(worker_env, api_client):
    study = make_audit_study(300, n_examples=8)
    with LLMServer(latency=0.005, fault_rate=0.1, retry_after=0.3, hang_seconds=2, permanent_error_rate=0.005,
                   positive_words=AUDIT_POSITIVE_WORDS) as server:
        endpoint = LLMEndpoint.objects.create(name="faulty", protocol="openai", base_url=server.base_url,
                                              max_concurrency=32, attempt_timeout_s=1.0, deadline_s=30,
                                              max_attempts=4)
        worker = started_celery_worker(worker_env)
        try:
            # Two tasks in two worker processes share the endpoint's limit through Redis.
            audit_id = launch(api_client, study, endpoint, models=["model-a", "model-b"], conditions=ALL_CONDITIONS,
                              parallel_tasks=2)
            assert wait_for(lambda: audit_status(audit_id), timeout=600, what="the audit") == "completed", \
                Audit.objects.get(pk=audit_id).status_reason
        finally:
            worker.stop()
        stats = server.stats()
    assert stats["max_in_flight"] <= 32
    assert stats["rate_limited_then_early"] == 0
    assert sum(stats["faults"].values()) > 0.05 * 4200

    responses = csv_export(api_client, f"/api/audits/{audit_id}/responses/")
    assert len(responses) == 2 * 7 * 300 and responses["key"].is_unique
    assert set(responses["state"]) <= {"answered", "failed"}
    failed = responses[responses["state"] == "failed"]
    assert len(failed) > 0 and (failed["error"] != "").all() and (failed["outcome"] == "error").all()
    answered = responses[responses["state"] == "answered"]
    assert {"label", "refusal", "unparseable"} <= set(answered["outcome"])
    assert (answered["reply"].notna()).all()

    truth = csv_export(api_client, f"/api/studies/{study.id}/ground-truth/").set_index("item")
    metrics = api_client.get(f"/api/audits/{audit_id}/metrics/", {"page_size": 1000}).json()["results"]
    assert len(metrics) == 2 * 7 * 2
    for row in metrics:
        cell = responses[(responses["model"] == row["model"]) & (responses["condition"] == row["condition"])
                         & (responses["outcome"] == "label")]
        predicted = cell["label"].astype(int).to_numpy()
        reference = truth.loc[cell["item"], f"{row['reference']}_label"].astype(int).to_numpy()
        assert row["n"] == len(cell)
        assert row["n_error"] == int(((responses["model"] == row["model"]) & (responses["condition"] == row["condition"])
                                      & (responses["outcome"] == "error")).sum())
        assert row["kappa"] == pytest.approx(cohen_kappa_score(predicted, reference), abs=1e-12)
        assert row["f1"] == pytest.approx(f1_score(reference, predicted, zero_division=0), abs=1e-12)
        assert row["precision"] == pytest.approx(precision_score(reference, predicted, zero_division=0), abs=1e-12)
        assert row["recall"] == pytest.approx(recall_score(reference, predicted, zero_division=0), abs=1e-12)
        assert row["accuracy"] == pytest.approx(accuracy_score(reference, predicted), abs=1e-12)
        assert row["unparsed"] == "exclude"
    manifest = api_client.get(f"/api/audits/{audit_id}/manifest/").json()
    assert [t["condition"] for t in manifest["templates"]] == ALL_CONDITIONS
    assert manifest["git_commit"] and manifest["models"][0]["digest"] is None  # /v1/models reports no digest


def test_worker_killed_mid_audit_loses_and_duplicates_nothing(worker_env, api_client):
    study = make_audit_study(300, n_examples=8)
    with LLMServer(latency=0.05, positive_words=AUDIT_POSITIVE_WORDS) as server:
        endpoint = LLMEndpoint.objects.create(name="ollama", protocol="ollama", base_url=server.base_url,
                                              max_concurrency=8, attempt_timeout_s=5, max_attempts=3)
        worker = started_celery_worker(worker_env)
        audit_id = launch(api_client, study, endpoint, models=["model-a"], conditions=["zs", "persona_pfl"])
        answered = AuditRequest.objects.filter(audit_id=audit_id, state="answered")
        wait_for(lambda: answered.count() >= 100, timeout=120, what="100 answered requests")
        worker.stop(signal.SIGKILL)
        at_kill = answered.count()
        assert at_kill < 600, "the audit finished before the kill: make it longer"
        assert Audit.objects.get(pk=audit_id).status == "running"

        worker = started_celery_worker(worker_env)
        try:
            assert wait_for(lambda: audit_status(audit_id), timeout=300, what="the audit") == "completed"
        finally:
            worker.stop()
        stats = server.stats()
    requests = AuditRequest.objects.filter(audit_id=audit_id)
    assert requests.count() == 600 and requests.filter(state="answered").count() == 600
    keys = list(requests.values_list("key", flat=True))
    assert len(set(keys)) == 600
    assert LLMReply.objects.filter(key__in=keys).count() == 600
    assert set(requests.values_list("reply__key", flat=True)) == set(keys)
    assert stats["bodies"] == 600
    assert stats["requests"] >= 600


def test_an_audit_launched_while_its_endpoint_is_away_waits_and_runs_once_it_answers(api_client):
    """No server on the endpoint's port at the launch: the worker's preparation leaves the audit queued, the
    progress API says since when it waits, the workers' recovery prepares it again, and once a server listens
    there the audit completes with one reply per request."""
    env = worker_environment(WORK_RECOVERY_SECONDS="1", WORK_STALLED_SECONDS="2")
    study = make_audit_study(20, n_examples=4)
    port = free_port()
    endpoint = LLMEndpoint.objects.create(name="starting", protocol="openai", base_url=f"http://127.0.0.1:{port}",
                                          max_concurrency=8, attempt_timeout_s=5, deadline_s=120, max_attempts=2)
    worker = started_celery_worker(env)
    server = None
    try:
        audit_id = launch(api_client, study, endpoint, models=["model-a"], conditions=["zs"])

        def waiting_shown():
            progress = api_client.get(f"/api/audits/{audit_id}/progress/").json()
            return progress["unreachable_endpoints"] if progress["status"] == "queued" else None
        shown = wait_for(waiting_shown, timeout=60, what="the wait for the endpoint in the progress API")
        assert shown[0]["endpoint"] == "starting" and "Connection refused" in shown[0]["last_error"]
        time.sleep(5)
        audit = Audit.objects.get(pk=audit_id)
        assert audit.status == "queued" and audit.preparation_waiting["since"] == shown[0]["since"]
        assert worker.count(r"endpoint starting could not be reached") >= 2, "prepared again by the recovery"
        server = LLMServer(port=port, latency=0.01, positive_words=AUDIT_POSITIVE_WORDS).start()
        assert wait_for(lambda: audit_status(audit_id), timeout=120, what="the audit") == "completed", \
            Audit.objects.get(pk=audit_id).status_reason
    finally:
        worker.stop()
        if server is not None:
            server.stop()
    assert AuditRequest.objects.filter(audit_id=audit_id, state="answered").count() == 20
    assert Audit.objects.get(pk=audit_id).preparation_waiting == {}


def test_self_report_audit_through_transient_faults_scores_as_worked_by_hand(worker_env, api_client):
    instruments = {instrument.slug: instrument for instrument in instruments_sync_shipped()}
    aq, sata = instruments["aq50"].parsed, instruments["sata_partial"].parsed
    with LLMServer(models=PERSONAS, latency=0.002, fault_rate=0.1, fault_kinds=("rate_limit", "server_error", "hang"),
                   retry_after=0.2, hang_seconds=2) as server:
        endpoint = LLMEndpoint.objects.create(name="personas", protocol="openai", base_url=server.base_url,
                                              max_concurrency=16, attempt_timeout_s=1.0, deadline_s=60,
                                              max_attempts=8)
        worker = started_celery_worker(worker_env)
        try:
            response = api_client.post("/api/audits/", {
                "paradigm": "self_report", "name": "personas", "mode": "item", "parallel_tasks": 2, "seed": 9,
                "instruments": [instruments["aq50"].id, instruments["sata_partial"].id],
                "models": [{"endpoint": endpoint.id, "model": persona} for persona in PERSONAS]}, format="json")
            assert response.status_code == 201, response.content
            audit_id = response.json()["id"]
            assert wait_for(lambda: audit_status(audit_id), timeout=600, what="the audit") == "completed", \
                Audit.objects.get(pk=audit_id).status_reason
        finally:
            worker.stop()
        stats = server.stats()
    assert stats["faults"]["rate_limit"] > 0 and stats["faults"]["hang"] > 0
    # 5 personas × (50 + 5 original items + 157 masked ones), every one answered despite the faults.
    requests = AuditRequest.objects.filter(audit_id=audit_id)
    assert requests.count() == 5 * (55 + 157) and not requests.exclude(state="answered").exists()

    def hand(instrument, choose):
        return sum(instrument.keys[item.key][choose(item)] for item in instrument.items)

    def key(instrument):
        return lambda item: persona_choice("persona-key", item.text, instrument.response_options)

    expected = {"persona-agree": {"aq50": 24, "sata_partial": 8},
                "persona-key": {"aq50": hand(aq, key(aq)), "sata_partial": hand(sata, key(sata))},
                "persona-dummy": {"aq50": hand(aq, key(aq)), "sata_partial": hand(sata, key(sata))},
                # One item per request: the form cannot be told, so it answers by its key on both forms.
                "persona-recognise": {"aq50": hand(aq, key(aq)), "sata_partial": hand(sata, key(sata))}}
    scores = csv_export(api_client, f"/api/audits/{audit_id}/scores/")
    assert len(scores) == 5 * 2 * 2
    for row in scores.itertuples():
        if row.model == "persona-refuse":
            assert row.total == ""
        else:
            assert int(row.total) == expected[row.model][row.instrument], row

    # The scores export equals the answers export scored by the instruments' keys.
    answers = csv_export(api_client, f"/api/audits/{audit_id}/answers/")
    scored = answers[(answers["kind"] == "instrument") & (answers["outcome"] == "answer")]
    by_instrument = {"aq50": aq, "sata_partial": sata}
    scored = scored.assign(score=[by_instrument[row.source].keys[row.keying][int(row.option_index)]
                                  for row in scored.itertuples()],
                           form_kind=scored["form"].map(lambda form: "masked" if form == "masked" else "original"))
    totals = scored.groupby(["model", "form_kind", "source"])["score"].sum()
    for row in scores[scores["total"] != ""].itertuples():
        assert totals[(row.model, row.form, row.instrument)] == int(row.total)


def test_an_endpoint_down_for_seconds_mid_audit_fails_no_request_and_the_audit_resumes_by_itself(worker_env,
                                                                                                 api_client):
    """The endpoint circuit breaker: the LLM server is stopped for ~6 s mid-audit and restarted on the same port. With
    max_attempts=2 every request in flight would have failed; the breaker holds them instead, the progress
    API says since when the endpoint is unreachable, and the audit finishes with one reply per request."""
    study = make_audit_study(300, n_examples=8)
    port = free_port()
    server = LLMServer(port=port, latency=0.1, positive_words=AUDIT_POSITIVE_WORDS).start()
    endpoint = LLMEndpoint.objects.create(name="flaky", protocol="openai", base_url=server.base_url,
                                          max_concurrency=8, attempt_timeout_s=5, deadline_s=120, max_attempts=2)
    worker = started_celery_worker(worker_env)
    try:
        audit_id = launch(api_client, study, endpoint, models=["model-a"], conditions=["zs", "persona_pfl"])
        answered = AuditRequest.objects.filter(audit_id=audit_id, state="answered")
        wait_for(lambda: answered.count() >= 100, timeout=120, what="100 answered requests")
        server.stop()
        down_at = answered.count()
        assert down_at < 600, "the audit finished before the outage: make it longer"

        def outage_shown():
            progress = api_client.get(f"/api/audits/{audit_id}/progress/").json()
            return progress["unreachable_endpoints"] or None
        shown = wait_for(outage_shown, timeout=20, what="the outage in the progress API")
        assert shown[0]["endpoint"] == "flaky" and shown[0]["since"]
        time.sleep(6)
        assert Audit.objects.get(pk=audit_id).status == "running"
        failed = AuditRequest.objects.filter(audit_id=audit_id, state="failed")
        assert not failed.exists(), list(failed.values_list("error", "attempts")[:5])
        server = LLMServer(port=port, latency=0.1, positive_words=AUDIT_POSITIVE_WORDS).start()
        assert wait_for(lambda: audit_status(audit_id), timeout=180, what="the audit") == "completed"
        assert api_client.get(f"/api/audits/{audit_id}/progress/").json()["unreachable_endpoints"] == []
    finally:
        worker.stop()
        server.stop()
    requests = AuditRequest.objects.filter(audit_id=audit_id)
    assert requests.count() == 600
    assert requests.filter(state="answered").count() == 600, list(
        requests.exclude(state="answered").values_list("error", flat=True)[:5])
    keys = list(requests.values_list("key", flat=True))
    assert len(set(keys)) == 600 and LLMReply.objects.filter(key__in=keys).count() == 600
    assert set(requests.values_list("reply__key", flat=True)) == set(keys)
    assert requests.filter(attempts__lt=1).count() == 0
