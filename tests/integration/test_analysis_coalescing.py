"""Analysis recomputations coalesce through Redis and a real worker (annotation.study_analysis): requests while
one run waits add no message to the broker, a run serves them all, and the last request is never lost."""
from __future__ import annotations

import json
import time

import pytest
import redis
from django.db import transaction

from annotation.models import AnalysisRun, AnalysisState
from annotation.services import items_import_file
from annotation.study_analysis import study_analysis_enqueue
from tests.factories import autalic_like_csv, make_study
from tests.integration.support import celery_worker, wait_for, worker_environment

pytestmark = [pytest.mark.integration, pytest.mark.slow, pytest.mark.django_db(transaction=True)]

COMPUTE = r"Task annotation.study_analysis_compute\[\S+\] succeeded in \S+: '\d{4}-"


def analysis_runs_waiting(broker: redis.Redis) -> int:
    """The study-analysis messages on the "analysis" queue (each run's alternatives task waits there too)."""
    return sum(json.loads(message)["headers"]["task"] == "annotation.study_analysis_compute"
               for message in broker.lrange("analysis", 0, -1))


def request_like_a_finishing_annotator(study_id: int) -> None:
    with transaction.atomic():
        study_analysis_enqueue(study_id=study_id)


def test_fifty_requests_are_one_message_and_one_run_and_a_burst_ends_with_a_run_after_the_last(settings):
    settings.ANALYSIS_AUTO_RECOMPUTE = True
    env = worker_environment()
    broker = redis.Redis.from_url(env["CELERY_BROKER_URL"])
    study = make_study()
    items_import_file(study=study, filename="a.csv", content=autalic_like_csv(2000))

    for _ in range(50):   # before any worker runs
        request_like_a_finishing_annotator(study.id)
    assert analysis_runs_waiting(broker) == 1, "fifty requests, one message on the analysis queue"

    worker = celery_worker(env=env)
    try:
        worker.wait_for_output(r"celery@\S+ ready", timeout=60)
        wait_for(lambda: AnalysisState.objects.get(study=study).status == AnalysisState.Status.IDLE, timeout=60,
                 what="the first run")
        assert worker.count(COMPUTE) == 1 and AnalysisRun.objects.filter(study=study).exists()

        waiting = []
        for _ in range(40):   # annotators finishing while runs wait and compute
            last_request = time.time()
            request_like_a_finishing_annotator(study.id)
            waiting.append(analysis_runs_waiting(broker))
            time.sleep(0.025)
        wait_for(lambda: AnalysisState.objects.get(study=study).status == AnalysisState.Status.IDLE, timeout=60,
                 what="the runs after the burst")
        time.sleep(1)   # a further run, if one were wrongly queued, would have started
        state = AnalysisState.objects.get(study=study)
    finally:
        worker.stop()
    assert max(waiting) <= 1, f"never more than one queued run: {waiting}"
    assert state.status == AnalysisState.Status.IDLE
    assert state.started_at.timestamp() >= last_request, "the last run started after the last request"
    runs = worker.count(COMPUTE) - 1
    print(f"40 requests over {40 * 0.025:.1f} s took {runs} runs")
    assert 1 <= runs <= 20, f"40 requests took {runs} runs"
