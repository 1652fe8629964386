"""Recomputation requests coalesce (annotation.study_analysis): at most one run queued and one running per
study, a request during a run makes exactly one more run follow, and the recovery sends again what was
never sent or whose worker died. The task is sent on commit, so these tests run in real transactions;
tests/integration/test_celery_worker.py checks the same against Redis and a worker process."""
from __future__ import annotations

from datetime import timedelta

import pytest
from django.db import transaction
from django.utils import timezone
from kombu.exceptions import OperationalError as BrokerError

from annotation import study_analysis
from annotation.models import AnalysisRun, AnalysisState
from annotation.study_analysis import (
    study_analyses_recover,
    study_analysis_enqueue,
    study_analysis_request,
    study_analysis_run,
)
from tests.factories import make_worked_example_study

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def sent(monkeypatch) -> list[int]:
    """Study ids handed to the Celery task (not run: each test runs the worker's side itself)."""
    ids: list[int] = []
    monkeypatch.setattr("tasks.analysis.study_analysis_compute_task.delay", ids.append)
    return ids


@pytest.fixture
def study():
    return make_worked_example_study()


def state_of(study) -> AnalysisState:
    return AnalysisState.objects.get(study=study)


def test_a_hundred_requests_before_a_worker_starts_send_one_task_and_cost_one_run(study, sent, settings):
    settings.ANALYSIS_AUTO_RECOMPUTE = True
    for _ in range(100):
        with transaction.atomic():   # as a hundred annotators finishing, each in its own request
            study_analysis_enqueue(study_id=study.id)
    assert sent == [study.id]
    assert state_of(study).status == AnalysisState.Status.QUEUED
    assert study_analysis_run(study_id=study.id) != "already running"
    assert state_of(study).status == AnalysisState.Status.IDLE and sent == [study.id]
    assert AnalysisRun.objects.filter(study=study).exists()


def test_requests_during_a_run_make_exactly_one_more_run(study, sent, monkeypatch):
    compute = study_analysis.study_analysis_compute
    during_run = []

    def compute_while_annotators_finish(*, study_id):
        during_run.append([study_analysis_request(study_id=study_id) for _ in range(5)])
        return compute(study_id=study_id)

    monkeypatch.setattr(study_analysis, "study_analysis_compute", compute_while_annotators_finish)
    assert study_analysis_request(study_id=study.id) is True
    study_analysis_run(study_id=study.id)
    assert during_run == [[False] * 5], "a request during a run queues nothing at once"
    assert sent == [study.id, study.id], "one more run follows the run they came in during"
    assert state_of(study).status == AnalysisState.Status.QUEUED
    study_analysis_run(study_id=study.id)
    assert sent == [study.id, study.id, study.id]   # requests during the second run: one third run
    monkeypatch.setattr(study_analysis, "study_analysis_compute", compute)
    study_analysis_run(study_id=study.id)
    assert len(sent) == 3 and state_of(study).status == AnalysisState.Status.IDLE


def test_a_duplicate_message_while_another_worker_computes_does_nothing(study, sent):
    study_analysis_request(study_id=study.id)
    AnalysisState.objects.filter(study=study).update(status=AnalysisState.Status.RUNNING,
                                                     started_at=timezone.now())
    assert study_analysis_run(study_id=study.id) == "already running"
    assert not AnalysisRun.objects.filter(study=study).exists()


def test_a_failed_run_releases_the_study(study, sent, monkeypatch):
    def broken(*, study_id):
        raise RuntimeError("boom")

    monkeypatch.setattr(study_analysis, "study_analysis_compute", broken)
    study_analysis_request(study_id=study.id)
    with pytest.raises(RuntimeError):
        study_analysis_run(study_id=study.id)
    assert state_of(study).status == AnalysisState.Status.IDLE
    assert study_analysis_request(study_id=study.id) is True and sent == [study.id, study.id]


def test_a_request_while_the_broker_is_away_is_kept_and_sent_by_the_recovery(study, monkeypatch):
    def broker_away(study_id):
        raise BrokerError("Error 111 connecting to 127.0.0.1:6379. Connection refused.")

    monkeypatch.setattr("tasks.analysis.study_analysis_compute_task.delay", broker_away)
    study_analysis_request(study_id=study.id)   # the annotator's request does not fail
    assert state_of(study).status == AnalysisState.Status.QUEUED and state_of(study).queued_at is None
    assert study_analysis_request(study_id=study.id) is False
    sent: list[int] = []
    monkeypatch.setattr("tasks.analysis.study_analysis_compute_task.delay", sent.append)
    assert study_analyses_recover() == [study.id] and sent == [study.id]
    assert study_analyses_recover() == [] and sent == [study.id], "sent once, not on every recovery"


def test_the_recovery_takes_over_a_run_whose_lease_expired_and_leaves_a_live_one(study, sent, settings):
    settings.ANALYSIS_LEASE_SECONDS = 60
    AnalysisState.objects.create(study=study, status=AnalysisState.Status.RUNNING, dirty=True,
                                 started_at=timezone.now() - timedelta(seconds=30))
    assert study_analyses_recover() == [] and sent == []
    AnalysisState.objects.filter(study=study).update(started_at=timezone.now() - timedelta(seconds=90))
    assert study_analyses_recover() == [study.id] and sent == [study.id]
    assert state_of(study).status == AnalysisState.Status.QUEUED
    study_analysis_run(study_id=study.id)
    assert state_of(study).status == AnalysisState.Status.IDLE and sent == [study.id]


def test_the_recovery_resends_a_queued_run_only_after_its_message_looks_lost(study, sent, settings):
    settings.ANALYSIS_RESEND_SECONDS = 600
    study_analysis_request(study_id=study.id)
    assert study_analyses_recover() == [] and sent == [study.id]
    AnalysisState.objects.filter(study=study).update(queued_at=timezone.now() - timedelta(seconds=601))
    assert study_analyses_recover() == [study.id] and sent == [study.id, study.id]
