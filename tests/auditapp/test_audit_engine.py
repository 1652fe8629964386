"""The audit engine in one process against the real test LLM server: prepare, send, record, analyse.

The worker path (Celery on Redis, PostgreSQL, SIGKILL) has integration tests in tests/integration.
"""
from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pandas as pd
import pytest
from sklearn.metrics import cohen_kappa_score, f1_score

from auditapp.engine import analysis, control, planning, preparation, recording
from auditapp.engine import launch as engine_launch
from auditapp.engine import recovery as engine_recovery
from auditapp.engine import runner as audit_runner
from auditapp.engine.errors import failure_advice
from auditapp.models import Audit, AuditMetric, AuditRequest, LLMEndpoint, LLMReply
from auditapp.paradigms.classification import services as classification_services
from tests.factories import AUDIT_POSITIVE_WORDS, make_audit_study
from tests.integration.support import canned_http_server, free_port, wait_for
from tests.llm_server import LLMServer, expected_label

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.integration]


@pytest.fixture
def no_tasks(monkeypatch):
    """Tasks are run by the test itself, in order, instead of by a worker."""
    sent = []
    for name in ("audit_prepare_task", "audit_work_task", "audit_analyse_task"):
        monkeypatch.setattr(f"tasks.audits.{name}.delay", lambda audit_id, _name=name: sent.append((_name, audit_id)))
    return sent


def run_audit(audit: Audit) -> Audit:
    preparation.audit_prepare(audit_id=audit.id)
    assert audit_runner.audit_work(audit.id) == "finished"
    analysis.audit_analyse(audit_id=audit.id)
    return Audit.objects.get(pk=audit.id)


@pytest.fixture(scope="module")
def server():
    with LLMServer(latency=0.002, fault_rate=0.1, retry_after=0.2, hang_seconds=3, permanent_error_rate=0.01,
                   positive_words=AUDIT_POSITIVE_WORDS) as running:
        yield running


def make_endpoint(server, **fields) -> LLMEndpoint:
    defaults = {"name": "test server", "protocol": "openai", "base_url": server.base_url, "max_concurrency": 16,
                "attempt_timeout_s": 1.0, "deadline_s": 30, "max_attempts": 4}
    return LLMEndpoint.objects.create(**{**defaults, **fields})


def test_audit_runs_end_to_end_and_metrics_equal_scikit_learn(server, no_tasks):
    study = make_audit_study(60, n_examples=6)
    endpoint = make_endpoint(server)
    server.reset_stats()
    audit = classification_services.audit_create(
        study=study, name="two models", conditions=["zs", "cot", "icl_a", "persona_ifl"],
        models=[engine_launch.ModelChoice(endpoint=endpoint, model="model-a"),
                engine_launch.ModelChoice(endpoint=endpoint, model="model-b")], n_resamples=200)
    audit = run_audit(audit)

    assert audit.status == Audit.Status.COMPLETED, audit.status_reason
    requests = AuditRequest.objects.filter(audit=audit)
    assert requests.count() == audit.n_requests == 60 * 4 * 2
    assert not requests.filter(state=AuditRequest.State.PENDING).exists()
    failed = requests.filter(state=AuditRequest.State.FAILED)
    assert all(r.error for r in failed), "every failure has its reason"
    assert failed.exists(), "1% of bodies always fail: some requests must end failed"
    outcomes = set(requests.values_list("outcome", flat=True))
    assert {"label", "refusal", "unparseable", "error"} <= outcomes
    # Each reply stored once per key.
    keys = set(requests.filter(state=AuditRequest.State.ANSWERED).values_list("key", flat=True))
    assert LLMReply.objects.filter(key__in=keys).count() == len(keys)
    stats = server.stats()
    assert stats["max_in_flight"] <= 16
    assert stats["rate_limited_then_early"] == 0

    # Parsed labels follow the server's rule.
    for row in requests.filter(outcome="label").select_related("audit_model")[:50]:
        messages = planning.request_builder(audit).payload(row)
        assert row.label == expected_label(row.audit_model.model, messages[0]["content"],
                                           positive_words=AUDIT_POSITIVE_WORDS)

    # Metrics equal scikit-learn on the exported labels.
    frame = pd.DataFrame(requests.values("audit_model_id", "condition", "item_id", "outcome", "label"))
    truth = pd.DataFrame(audit.items.values("item_id", "weighted_label", "majority_label")).set_index("item_id")
    for metric in AuditMetric.objects.filter(audit=audit):
        cell = frame[(frame.audit_model_id == metric.audit_model_id) & (frame.condition == metric.condition)
                     & (frame.outcome == "label")]
        reference = truth.loc[cell.item_id, f"{metric.reference}_label"].to_numpy()
        assert metric.values["n"] == len(cell)
        assert metric.values["kappa"] == pytest.approx(cohen_kappa_score(cell.label, reference))
        assert metric.values["f1"] == pytest.approx(f1_score(reference, cell.label, zero_division=0))
        assert metric.values["kappa_low"] <= metric.values["kappa"] <= metric.values["kappa_high"]
    gap = audit.analysis["kappa_gap"]
    assert len(gap["cells"]) == 8 and np.isfinite(gap["t_statistic"])


def test_rerun_sends_nothing_and_a_second_audit_takes_cached_replies(server, no_tasks):
    study = make_audit_study(20, n_examples=4)
    endpoint = make_endpoint(server)
    choice = [engine_launch.ModelChoice(endpoint=endpoint, model="model-a")]
    first = run_audit(classification_services.audit_create(study=study, name="first", conditions=["zs"], models=choice,
                                            n_resamples=100))
    server.reset_stats()
    assert audit_runner.audit_work(first.id) == "stopped"  # completed: a late duplicate task does nothing
    second = classification_services.audit_create(study=study, name="second", conditions=["zs", "cot"], models=choice,
                                   n_resamples=100)
    second = run_audit(second)
    zs = AuditRequest.objects.filter(audit=second, condition="zs")
    answered_first = AuditRequest.objects.filter(audit=first, state="answered").count()
    assert zs.filter(from_cache=True).count() == answered_first
    # Only the cot requests and the zs requests that failed the first time were sent.
    assert server.stats()["bodies"] == 20 + (20 - answered_first)
    third = classification_services.audit_create(study=study, name="no cache", conditions=["zs"], models=choice, use_cache=False,
                                  n_resamples=100)
    server.reset_stats()
    third = run_audit(third)
    assert not AuditRequest.objects.filter(audit=third, from_cache=True).exists()
    assert server.stats()["bodies"] == 20


def test_prompts_longer_than_the_models_context_stop_the_audit_saying_so(no_tasks):
    study = make_audit_study(12, n_examples=2)
    with LLMServer(context_words=20, positive_words=AUDIT_POSITIVE_WORDS) as short:
        endpoint = make_endpoint(short, max_attempts=1, max_concurrency=2)
        audit = classification_services.audit_create(study=study, name="context", conditions=["zs"],
                                                     error_budget=0.2,
                                                     models=[engine_launch.ModelChoice(endpoint=endpoint,
                                                                                       model="model-a")])
        preparation.audit_prepare(audit_id=audit.id)
        assert audit_runner.audit_work(audit.id) == "stopped"
    audit.refresh_from_db()
    assert "This model's maximum context length is 20 tokens" in audit.status_reason
    assert "The prompts are longer than the model's context: serve the model with a longer context" in \
        audit.status_reason


def test_failure_advice_reads_the_error_the_way_servers_word_it():
    assert failure_advice("failed after 1 attempts: HTTP 400: Requested tokens (5000) exceed context window of "
                          "4096").startswith("the prompts are longer than the model's context")
    assert failure_advice("HTTP 400: the request exceeds the available context size, try increasing it") \
        .startswith("the prompts are longer")
    assert failure_advice("failed after 3 attempts: HTTP 401: bad key").startswith("the endpoint refused the API key")
    assert failure_advice("HTTP 404: model 'x' not found").startswith("the model or the path was not found")
    assert failure_advice("failed after 5 attempts: HTTP 429: slow down").startswith("the endpoint's rate limit")
    assert failure_advice("HTTP 429: too many tokens per minute").startswith("the endpoint's rate limit")
    assert failure_advice("connection refused") == "check the endpoint and the model"


def test_error_budget_stops_the_audit_and_retry_failed_finishes_it(no_tasks):
    study = make_audit_study(30, n_examples=2)
    with LLMServer(permanent_error_rate=1.0, positive_words=AUDIT_POSITIVE_WORDS) as broken:
        endpoint = make_endpoint(broken, max_attempts=1, max_concurrency=2)
        audit = classification_services.audit_create(study=study, name="budget", conditions=["zs"], error_budget=0.2,
                                      models=[engine_launch.ModelChoice(endpoint=endpoint, model="model-a")])
        preparation.audit_prepare(audit_id=audit.id)
        assert audit_runner.audit_work(audit.id) == "stopped"
    audit.refresh_from_db()
    assert audit.status == Audit.Status.STOPPED and "error budget exceeded" in audit.status_reason
    assert "; most often (" in audit.status_reason and "HTTP 500" in audit.status_reason
    assert audit.status_reason.endswith("Check the endpoint and the model, then resume or retry failed")
    failed = AuditRequest.objects.filter(audit=audit, state="failed")
    assert failed.count() > 6 and all(r.error.startswith("failed after 1 attempts: HTTP 500") for r in failed)
    assert AuditRequest.objects.filter(audit=audit, state="pending", chunk__isnull=True).count() == 30 - failed.count()

    port = int(endpoint.base_url.rsplit(":", 1)[1])
    with LLMServer(port=port, positive_words=AUDIT_POSITIVE_WORDS):  # the endpoint is fixed, at the same URL
        control.audit_resume(audit=audit)  # after an error-budget stop, resuming sends the failed ones again
        assert audit_runner.audit_work(audit.id) == "finished"
        assert AuditRequest.objects.filter(audit=audit, state="answered").count() == 30
        AuditRequest.objects.filter(audit=audit, item__external_id="a00001").update(state="failed", error="x")
        Audit.objects.filter(pk=audit.pk).update(status=Audit.Status.COMPLETED)
        assert control.audit_retry_failed(audit=audit) == 1
        assert audit_runner.audit_work(audit.id) == "finished"
    assert AuditRequest.objects.filter(audit=audit, state="answered").count() == 30


def test_pause_keeps_unsent_requests_and_resume_sends_only_those(no_tasks):
    study = make_audit_study(40, n_examples=2)
    with LLMServer(latency=0.1, positive_words=AUDIT_POSITIVE_WORDS) as slow:
        endpoint = make_endpoint(slow, max_concurrency=2)
        audit = classification_services.audit_create(study=study, name="pause", conditions=["zs"],
                                      models=[engine_launch.ModelChoice(endpoint=endpoint, model="model-a")])
        preparation.audit_prepare(audit_id=audit.id)
        with ThreadPoolExecutor(1) as pool:
            work = pool.submit(audit_runner.audit_work, audit.id)
            answered = AuditRequest.objects.filter(audit=audit, state="answered")
            wait_for(lambda: answered.count() >= 5, timeout=30, what="5 answers")
            control.audit_pause(audit=audit)
            assert work.result(timeout=30) == "stopped"
        after_pause = answered.count()
        assert after_pause < 40
        assert not AuditRequest.objects.filter(audit=audit, state="pending", chunk__isnull=False,
                                               chunk__released_at__isnull=True).exists()
        control.audit_resume(audit=audit)
        assert audit_runner.audit_work(audit.id) == "finished"
        stats = slow.stats()
    assert answered.count() == 40
    # Nothing answered is sent again; at most the 2 requests in flight at the pause are (concurrency 2).
    assert stats["bodies"] == 40 and stats["requests"] <= 40 + 2
    assert LLMReply.objects.filter(key__in=AuditRequest.objects.filter(audit=audit).values("key")).count() == 40


def test_a_redis_outage_leaves_the_audit_waiting_and_the_recovery_resumes_it(server, no_tasks, settings):
    from datetime import timedelta

    from auditapp.models import AuditChunk

    settings.LLM_LIMITS_REDIS_URL = f"redis://127.0.0.1:{free_port()}/0"   # the limits' Redis is away
    settings.WORK_STALLED_SECONDS = 30
    study = make_audit_study(5, n_examples=2)
    audit = classification_services.audit_create(study=study, name="no redis", conditions=["zs"],
                                  models=[engine_launch.ModelChoice(endpoint=make_endpoint(server), model="model-a")])
    preparation.audit_prepare(audit_id=audit.id)
    no_tasks.clear()
    # The task waits for Redis until its slice is used; then a fresh task is to go on (or, lost, the recovery).
    assert audit_runner.audit_work(audit.id, slice_seconds=2) == "continue"
    audit.refresh_from_db()
    assert audit.status == Audit.Status.RUNNING, "a transient fault is a pause, not a failure"
    assert audit.status_reason.startswith("waiting since") and "ConnectionError" in audit.status_reason
    assert "resumes by itself" in audit.status_reason
    assert AuditRequest.objects.filter(audit=audit, state="pending", chunk__isnull=True).count() == 5
    assert engine_recovery.audits_resume_stalled(stalled_after=timedelta(seconds=30)) == [], "its lease was just held"

    settings.LLM_LIMITS_REDIS_URL = ""   # Redis is back; half a minute later nobody holds the audit's lease
    Audit.objects.filter(pk=audit.pk).update(started_at=audit.started_at - timedelta(minutes=5))
    AuditChunk.objects.filter(audit=audit).update(leased_until=audit.started_at - timedelta(minutes=1))
    assert engine_recovery.audits_resume_stalled(stalled_after=timedelta(seconds=30)) == [audit.id]
    assert no_tasks == [("audit_work_task", audit.id)]
    assert engine_recovery.audits_resume_stalled(stalled_after=timedelta(seconds=30)) == [], "claimed: not sent twice"
    assert no_tasks == [("audit_work_task", audit.id)]
    assert audit_runner.audit_work(audit.id) == "finished"
    audit.refresh_from_db()
    assert audit.status == Audit.Status.ANALYSING and audit.status_reason == ""
    assert AuditRequest.objects.filter(audit=audit, state="answered").count() == 5


def test_a_work_task_waits_out_a_redis_outage_and_goes_on_soon_after_it_is_back(server, no_tasks, settings):
    import threading
    import time

    settings.LLM_LIMITS_REDIS_URL = f"redis://127.0.0.1:{free_port()}/0"   # the limits' Redis is away
    study = make_audit_study(5, n_examples=2)
    audit = classification_services.audit_create(study=study, name="redis back", conditions=["zs"],
                                  models=[engine_launch.ModelChoice(endpoint=make_endpoint(server), model="model-a")])
    preparation.audit_prepare(audit_id=audit.id)
    no_tasks.clear()
    back = threading.Timer(3, setattr, (settings, "LLM_LIMITS_REDIS_URL", ""))
    back.start()
    started = time.monotonic()
    assert audit_runner.audit_work(audit.id) == "finished"
    assert 3 <= time.monotonic() - started < 8, "went on within a pause of Redis's return"
    assert no_tasks == [("audit_analyse_task", audit.id)], "no task sent again: the recovery was not needed"
    assert AuditRequest.objects.filter(audit=audit, state="answered").count() == 5


def test_a_model_the_endpoint_does_not_offer_fails_the_audit_before_any_request(server, no_tasks):
    study = make_audit_study(4, n_examples=2)
    audit = classification_services.audit_create(study=study, name="typo", conditions=["zs"],
                                  models=[engine_launch.ModelChoice(endpoint=make_endpoint(server), model="model-z")])
    preparation.audit_prepare(audit_id=audit.id)
    audit.refresh_from_db()
    assert audit.status == Audit.Status.FAILED
    assert "does not offer model 'model-z'" in audit.status_reason and "model-a" in audit.status_reason
    assert not AuditRequest.objects.filter(audit=audit).exists()


def test_an_endpoint_away_at_preparation_is_waited_for_until_it_answers(no_tasks, api_client):
    """Nothing listens on the endpoint's port: the preparation leaves the audit queued, saying since when it waits
    (status reason and the progress API's unreachable_endpoints), keeps that time when it is tried again, and
    prepares the audit once a server answers there."""
    study = make_audit_study(4, n_examples=2)
    port = free_port()
    endpoint = LLMEndpoint.objects.create(name="starting", base_url=f"http://127.0.0.1:{port}", deadline_s=600,
                                          team=study.team)
    audit = classification_services.audit_create(study=study, name="early", conditions=["zs"],
                                  models=[engine_launch.ModelChoice(endpoint=endpoint, model="model-a")])
    preparation.audit_prepare(audit_id=audit.id)
    audit.refresh_from_db()
    assert audit.status == Audit.Status.QUEUED and not AuditRequest.objects.filter(audit=audit).exists()
    waiting = audit.preparation_waiting
    assert waiting["endpoint"] == "starting" and waiting["endpoint_id"] == endpoint.id
    assert "Connection refused" in waiting["last_error"]
    assert audit.status_reason.startswith("waiting for endpoint starting, which could not be reached since ")
    assert "cancel it to stop waiting" in audit.status_reason
    progress = api_client.get(f"/api/audits/{audit.id}/progress/").json()
    assert progress["status"] == "queued"
    assert progress["unreachable_endpoints"] == [{"endpoint": "starting", "since": waiting["since"],
                                                  "last_error": waiting["last_error"]}]

    preparation.audit_prepare(audit_id=audit.id)
    audit.refresh_from_db()
    assert audit.status == Audit.Status.QUEUED and audit.preparation_waiting["since"] == waiting["since"]

    with LLMServer(port=port, latency=0.001, positive_words=AUDIT_POSITIVE_WORDS):
        preparation.audit_prepare(audit_id=audit.id)
    audit.refresh_from_db()
    assert audit.status == Audit.Status.RUNNING and audit.status_reason == "" and audit.preparation_waiting == {}
    assert AuditRequest.objects.filter(audit=audit).count() == 4
    assert api_client.get(f"/api/audits/{audit.id}/progress/").json()["unreachable_endpoints"] == []


def test_an_endpoint_away_at_preparation_fails_the_audit_at_its_deadline_and_resume_waits_again(no_tasks):
    from datetime import datetime, timedelta

    study = make_audit_study(4, n_examples=2)
    endpoint = LLMEndpoint.objects.create(name="down", base_url=f"http://127.0.0.1:{free_port()}", deadline_s=60)
    audit = classification_services.audit_create(study=study, name="down", conditions=["zs"],
                                  models=[engine_launch.ModelChoice(endpoint=endpoint, model="model-a")])
    preparation.audit_prepare(audit_id=audit.id)
    audit.refresh_from_db()
    since = datetime.fromisoformat(audit.preparation_waiting["since"])
    # A minute and a second later (the endpoint's deadline is 60 s): the wait is over.
    moved = {**audit.preparation_waiting, "since": (since - timedelta(seconds=61)).isoformat()}
    Audit.objects.filter(pk=audit.pk).update(preparation_waiting=moved)
    preparation.audit_prepare(audit_id=audit.id)
    audit.refresh_from_db()
    assert audit.status == Audit.Status.FAILED
    assert audit.status_reason.startswith(
        f"endpoint down could not be reached since {since - timedelta(seconds=61):%Y-%m-%d %H:%M:%S} UTC, longer "
        "than its deadline (60 s): ")
    assert "Connection refused" in audit.status_reason and audit.status_reason.endswith("resume the audit once it answers")

    control.audit_resume(audit=audit)
    audit.refresh_from_db()
    assert audit.status == Audit.Status.QUEUED and audit.preparation_waiting == {}
    assert no_tasks[-1] == ("audit_prepare_task", audit.id)
    preparation.audit_prepare(audit_id=audit.id)
    audit.refresh_from_db()
    assert audit.status == Audit.Status.QUEUED and datetime.fromisoformat(audit.preparation_waiting["since"]) > since


@pytest.mark.parametrize("answer", ["401 key refused", "tls on a plain port", "503 model loading"])
def test_an_endpoint_that_answers_wrongly_at_preparation_fails_the_audit_at_once_unless_it_is_busy(no_tasks,
                                                                                                   answer):
    """Asking again cannot help a refused key or a TLS failure: no wait. A server error (a server still loading
    its model answers 503) may pass: the audit waits."""
    body = b'{"error": "invalid api key"}'
    status = b"503 Service Unavailable" if answer.startswith("503") else b"401 Unauthorized"
    reply = b"HTTP/1.1 %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s" % (
        status, len(body), body)
    scheme = "https" if answer.startswith("tls") else "http"
    study = make_audit_study(4, n_examples=2)
    with canned_http_server(reply) as port:
        endpoint = LLMEndpoint.objects.create(name="wrong", base_url=f"{scheme}://127.0.0.1:{port}")
        audit = classification_services.audit_create(study=study, name="wrong", conditions=["zs"],
                                      models=[engine_launch.ModelChoice(endpoint=endpoint, model="model-a")])
        preparation.audit_prepare(audit_id=audit.id)
    audit.refresh_from_db()
    if answer.startswith("503"):
        assert audit.status == Audit.Status.QUEUED
        assert audit.preparation_waiting["last_error"] == "HTTP 503: invalid api key"
        return
    assert audit.status == Audit.Status.FAILED and audit.preparation_waiting == {}
    assert audit.status_reason.startswith("could not list the models of endpoint wrong: ")
    assert ("HTTP 401" in audit.status_reason) if scheme == "http" else ("SSL" in audit.status_reason)


def test_an_audit_launched_while_the_broker_is_away_is_stored_and_prepared_by_the_recovery(server, monkeypatch,
                                                                                         settings):
    from datetime import timedelta

    from django.core.cache import cache
    from kombu.exceptions import OperationalError as BrokerError

    def broker_away(audit_id):
        raise BrokerError("Error 111 connecting to 127.0.0.1:6379. Connection refused.")

    monkeypatch.setattr("tasks.audits.audit_prepare_task.delay", broker_away)
    study = make_audit_study(3, n_examples=2)
    # The launch commits and its task cannot be sent: logged, not raised (the API would answer 500).
    audit = classification_services.audit_create(study=study, name="launched in an outage", conditions=["zs"],
                                  models=[engine_launch.ModelChoice(endpoint=make_endpoint(server), model="model-a")])
    assert Audit.objects.get(pk=audit.pk).status == Audit.Status.QUEUED

    sent = []
    monkeypatch.setattr("tasks.audits.audit_prepare_task.delay", sent.append)
    cache.clear()
    stalled = timedelta(seconds=30)
    assert engine_recovery.audits_prepare_unsent(stalled_after=stalled) == [], "just launched: its task may be queued"
    Audit.objects.filter(pk=audit.pk).update(created_at=audit.created_at - timedelta(minutes=1))
    assert engine_recovery.audits_prepare_unsent(stalled_after=stalled) == [audit.id]
    assert engine_recovery.audits_prepare_unsent(stalled_after=stalled) == [], "sent once per stalled period"
    assert sent == [audit.id]
    preparation.audit_prepare(audit_id=audit.id)
    preparation.audit_prepare(audit_id=audit.id)  # a second delivery changes nothing
    assert AuditRequest.objects.filter(audit=audit).count() == 3
    cache.clear()
    assert engine_recovery.audits_prepare_unsent(stalled_after=stalled) == [], "running: nothing to prepare"


def test_work_waiting_in_a_busy_queue_is_not_sent_twice_but_a_dead_workers_audit_is(server, no_tasks, settings):
    from datetime import timedelta

    from auditapp.models import AuditChunk

    settings.WORK_QUEUED_GRACE_SECONDS = 600
    stalled = timedelta(seconds=30)
    study = make_audit_study(3, n_examples=2)
    audit = classification_services.audit_create(study=study, name="busy queue", conditions=["zs"],
                                  models=[engine_launch.ModelChoice(endpoint=make_endpoint(server), model="model-a")])
    preparation.audit_prepare(audit_id=audit.id)
    assert no_tasks == [("audit_prepare_task", audit.id), ("audit_work_task", audit.id)]
    audit.refresh_from_db()
    # Five minutes later its work task is still queued behind others: not lost, so not sent again.
    Audit.objects.filter(pk=audit.pk).update(started_at=audit.started_at - timedelta(minutes=5))
    AuditChunk.objects.filter(audit=audit).update(released_at=audit.started_at - timedelta(minutes=5))
    assert engine_recovery.audits_resume_stalled(stalled_after=stalled) == []

    # A worker takes it (its lease replaces the sent mark) and dies: a minute later the recovery sends it again.
    from django.db.models import F
    from django.utils import timezone

    recording.chunk_open(audit_id=audit.id)
    assert not AuditChunk.objects.filter(audit=audit, released_at__isnull=False,
                                         leased_until__gt=timezone.now()).exists(), "the sent mark is spent"
    AuditChunk.objects.filter(audit=audit).update(leased_until=F("leased_until") - timedelta(minutes=2))
    assert engine_recovery.audits_resume_stalled(stalled_after=stalled) == [audit.id]
    assert no_tasks[-1] == ("audit_work_task", audit.id)
    assert engine_recovery.audits_resume_stalled(stalled_after=stalled) == [], "just sent: marked"


def test_requests_keyed_for_a_server_are_not_sent_again_to_another(server, no_tasks):
    """An audit finished with a failed request; its endpoint then moved (another base URL: allowed, nothing was left
    to send). Sending the failed request again, or resuming the audit, is refused with the reason and changes
    nothing: keyed for the old server, it would fail as changed, and its reply would come from another server."""
    from auditapp.engine import endpoints as engine_endpoints
    from auditapp.engine.errors import AuditStateError

    study = make_audit_study(6, n_examples=2)
    endpoint = make_endpoint(server, name="moving", max_attempts=8)
    audit = classification_services.audit_create(study=study, name="moved", conditions=["zs"],
                                  models=[engine_launch.ModelChoice(endpoint=endpoint, model="model-a")])
    audit = run_audit(audit)
    failed = AuditRequest.objects.filter(audit=audit).order_by("id").first()
    AuditRequest.objects.filter(pk=failed.pk).update(state=AuditRequest.State.FAILED, error="HTTP 500")
    engine_endpoints.endpoint_update(endpoint=endpoint,
                                     changes={"base_url": server.base_url.replace("127.0.0.1", "localhost")})
    with pytest.raises(AuditStateError, match=r"changed since the audit was prepared, for model-a at moving: its "
                                              r"requests would go to another server"):
        control.audit_retry_failed(audit=audit)
    Audit.objects.filter(pk=audit.pk).update(status=Audit.Status.STOPPED)
    with pytest.raises(AuditStateError, match="launch a new audit for the new settings"):
        control.audit_resume(audit=Audit.objects.get(pk=audit.pk))
    assert AuditRequest.objects.get(pk=failed.pk).state == AuditRequest.State.FAILED
    assert Audit.objects.get(pk=audit.pk).status == Audit.Status.STOPPED

    engine_endpoints.endpoint_update(endpoint=endpoint, changes={"base_url": server.base_url})
    assert control.audit_retry_failed(audit=Audit.objects.get(pk=audit.pk)) == 1, "back where it was keyed"


def test_an_endpoint_changed_while_an_audit_is_prepared_leaves_it_queued_to_be_prepared_again(server, no_tasks,
                                                                                             monkeypatch):
    study = make_audit_study(6, n_examples=2)
    endpoint = make_endpoint(server, name="changing")
    audit = classification_services.audit_create(study=study, name="raced", conditions=["zs"],
                                  models=[engine_launch.ModelChoice(endpoint=endpoint, model="model-a")])
    moved = server.base_url.replace("127.0.0.1", "localhost")
    plan = preparation.planned_requests

    def planned_while_it_moves(audit, builder):
        # Another researcher's change, committed while the requests are keyed with the address the builder read.
        LLMEndpoint.objects.filter(pk=endpoint.pk).update(base_url=moved)
        return plan(audit, builder)

    monkeypatch.setattr(preparation, "planned_requests", planned_while_it_moves)
    preparation.audit_prepare(audit_id=audit.id)
    audit.refresh_from_db()
    assert audit.status == Audit.Status.QUEUED and not AuditRequest.objects.filter(audit=audit).exists()
    assert LLMEndpoint.objects.get(pk=endpoint.pk).base_url == moved

    monkeypatch.setattr(preparation, "planned_requests", plan)
    assert run_audit(audit).status == Audit.Status.COMPLETED
    assert not AuditRequest.objects.filter(audit=audit).exclude(state=AuditRequest.State.ANSWERED).exists()


@pytest.mark.parametrize("host", ["lab-gpu.invalid", "ollama"])
def test_a_domain_name_that_does_not_exist_fails_the_preparation_at_once_a_compose_service_is_waited_for(
        no_tasks, monkeypatch, host):
    """A typo in the endpoint's domain name: asking again cannot help, so the audit fails with the reason instead of
    waiting out the endpoint's deadline. A single-label name is a Docker Compose service's, unknown while it is
    stopped or starting: waited for. (The resolver is made to answer "no such name", as a real one does for a name
    under .invalid, so the test does not depend on this machine's name servers.)"""
    import socket

    def no_such_name(host, *args, **kwargs):
        raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")

    monkeypatch.setattr(socket, "getaddrinfo", no_such_name)
    study = make_audit_study(4, n_examples=2)
    endpoint = LLMEndpoint.objects.create(name="named", base_url=f"http://{host}:8000/v1")
    audit = classification_services.audit_create(study=study, name="named", conditions=["zs"],
                                  models=[engine_launch.ModelChoice(endpoint=endpoint, model="model-a")])
    preparation.audit_prepare(audit_id=audit.id)
    audit.refresh_from_db()
    if host == "ollama":
        assert audit.status == Audit.Status.QUEUED
        assert "Name or service not known" in audit.preparation_waiting["last_error"]
        return
    assert audit.status == Audit.Status.FAILED and audit.preparation_waiting == {}
    assert "Name or service not known" in audit.status_reason, audit.status_reason
