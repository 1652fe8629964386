"""A real Celery worker on PostgreSQL and Redis follows a study analysis with its alternative ground truths
(annotation.study_alternatives), on the "analysis" queue; a lost alternatives task is sent again by the workers'
recovery."""
from __future__ import annotations

import json
import re
from datetime import timedelta

import pytest
import redis
from django.db import transaction
from django.utils import timezone

from annotation.models import AnalysisRun
from annotation.study_analysis import study_analysis_compute
from tests.factories import make_worked_example_study
from tests.integration.support import started_celery_worker, wait_for, worker_environment

pytestmark = [pytest.mark.integration, pytest.mark.slow, pytest.mark.django_db(transaction=True)]

ANALYSIS = r"Task annotation.study_analysis_compute\[\S+\] succeeded"
ALTERNATIVES = r"Task annotation.study_alternatives_compute\[\S+\] succeeded in \S+: 'stored'"


def alternatives_status(study_id: int) -> str | None:
    status = AnalysisRun.objects.get(study_id=study_id).alternatives_status
    return status if status != "computing" else None


def test_a_study_analysis_asked_for_through_the_api_is_followed_by_its_alternatives(api_client):
    study = make_worked_example_study()
    worker = started_celery_worker(worker_environment(), concurrency=1)
    try:
        assert api_client.post(f"/api/studies/{study.id}/analysis/").status_code == 202
        wait_for(lambda: AnalysisRun.objects.filter(study=study).exists(), timeout=60, what="the analysis")
        assert wait_for(lambda: alternatives_status(study.id), timeout=120, what="the alternatives") == "ready"
        wait_for(lambda: worker.count(ALTERNATIVES) == 1, timeout=10, what="the worker's log line")
        assert worker.count(ANALYSIS) == 1
        assert re.search(ANALYSIS, worker.output).start() < re.search(ALTERNATIVES, worker.output).start()
    finally:
        worker.stop()
    run = AnalysisRun.objects.get(study=study)
    assert run.alternatives_computed_at > run.computed_at and run.alternatives_error == ""
    assert set(run.alternatives["crowdkit"]) >= {"dawid_skene", "glad", "mace"}
    answer = api_client.get(f"/api/studies/{study.id}/ground-truth-alternatives/?table=summary")
    assert answer.status_code == 200 and answer.json()["count"] == 11


def test_an_alternatives_task_lost_from_the_queue_is_sent_again_by_a_starting_workers_recovery(api_client):
    env = worker_environment(ANALYSIS_RESEND_SECONDS="1")
    broker = redis.Redis.from_url(env["CELERY_BROKER_URL"])
    study = make_worked_example_study()
    with transaction.atomic():
        run = study_analysis_compute(study_id=study.id)  # the command line's way: no worker needed
    queued = [json.loads(message)["headers"]["task"] for message in broker.lrange("analysis", 0, -1)]
    assert queued == ["annotation.study_alternatives_compute"], "sent on the analysis queue when it committed"
    broker.delete("analysis")  # lost: the broker restarted without persistence
    answer = api_client.get(f"/api/studies/{study.id}/ground-truth-alternatives/")
    assert answer.status_code == 202 and answer.json()["status"] == "computing"
    AnalysisRun.objects.filter(pk=run.id).update(alternatives_sent_at=timezone.now() - timedelta(seconds=5))

    worker = started_celery_worker(env, concurrency=1)
    try:
        assert wait_for(lambda: alternatives_status(study.id), timeout=120, what="the alternatives") == "ready"
    finally:
        worker.stop()
    assert "never arrived; sending them again" in worker.output
