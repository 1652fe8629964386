"""A real Celery worker process takes import tasks from Redis and writes to PostgreSQL, then computes the study's
analysis."""
from __future__ import annotations

import signal

import pytest
from django.db import transaction

from annotation.models import Item, ItemGroundTruth, ItemImport, Label
from annotation.services import item_import_create, item_import_enqueue
from tasks.imports import item_import_run_task
from tests.factories import autalic_like_csv, make_study
from tests.integration.support import celery_worker, started_celery_worker, wait_for, worker_environment

pytestmark = [pytest.mark.integration, pytest.mark.slow, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def worker():
    process = celery_worker(env=worker_environment())
    process.wait_for_output(r"celery@\S+ ready", timeout=60)
    assert "transport:   redis://" in process.output
    yield process
    process.stop()


def import_status(pk: int) -> str | None:
    status = ItemImport.objects.filter(pk=pk).values_list("status", flat=True).get()
    return status if status != ItemImport.Status.PENDING else None


def test_worker_imports_2400_items_through_redis_into_postgres(worker):
    study = make_study()
    with transaction.atomic():
        item_import = item_import_create(study=study, filename="autalic.csv", content=autalic_like_csv(2400))
        item_import_enqueue(item_import=item_import)
    assert wait_for(lambda: import_status(item_import.pk), timeout=60, what="the import") == "succeeded"
    assert Item.objects.filter(study=study).count() == 2400
    assert Label.objects.filter(item__study=study).count() == 7200
    assert worker.count(r"Task annotation.item_import_run\[\S+\] succeeded") == 1

    # The same task delivered twice more (a retry, a duplicate message) changes nothing.
    item_import_run_task.delay(item_import.pk)
    item_import_run_task.delay(item_import.pk)
    wait_for(lambda: worker.count(r"Task annotation.item_import_run\[\S+\] succeeded") == 3, timeout=30,
             what="two more task runs")
    assert Item.objects.filter(study=study).count() == 2400
    assert Label.objects.filter(item__study=study).count() == 7200


def test_worker_records_a_bad_file_and_writes_nothing(worker):
    study = make_study()
    with transaction.atomic():
        item_import = item_import_create(study=study, filename="bad.csv",
                                         content=b"id,sentence,A1_Score\na,One,1\nb,Two,9\n")
        item_import_enqueue(item_import=item_import)
    assert wait_for(lambda: import_status(item_import.pk), timeout=60, what="the import") == "failed"
    item_import.refresh_from_db()
    assert item_import.errors == [{"row": 3, "column": "A1_Score", "message": "label '9' is not one of -1, 0, 1"}]
    assert not Item.objects.filter(study=study).exists()


def test_worker_recomputes_the_analysis_when_an_annotator_finishes(worker, settings):
    from annotation.models import AnalysisRun, ItemGroundTruth, Participant
    from annotation.participation import participant_complete

    settings.ANALYSIS_AUTO_RECOMPUTE = True
    study = make_study()
    with transaction.atomic():
        item_import = item_import_create(study=study, filename="a.csv", content=autalic_like_csv(30))
        item_import_enqueue(item_import=item_import)
    wait_for(lambda: import_status(item_import.pk), timeout=60, what="the import")
    with transaction.atomic():
        participant_complete(participant=Participant.objects.get(study=study, pseudonym="A1"))
    run = wait_for(lambda: AnalysisRun.objects.filter(study=study).first(), timeout=60, what="the analysis")
    assert ItemGroundTruth.objects.filter(item__study=study).count() == 30
    assert run.settings["aggregation"]["threshold"] == 0.5
    # Each item has one 1, one 0 and one -1 (autalic_like_csv): a majority tie with one label excluded; the
    # imported annotators have no scores, so no weights and no weighted label.
    truth = ItemGroundTruth.objects.filter(item__study=study)
    assert truth.filter(majority_tie=True, n_labels=2, n_excluded=1, weighted_label__isnull=True).count() == 30


def clear_majority_csv(n_items: int) -> tuple[bytes, dict[str, int]]:
    """Three annotators agreeing two to one: even items 1,1,0 (majority 1), odd items 0,0,1 (majority 0)."""
    rows = ["id,sentence,A1_Score,A2_Score,A3_Score"]
    majority = {}
    for i in range(n_items):
        labels, majority[f"s{i:05d}"] = ("1,1,0", 1) if i % 2 == 0 else ("0,0,1", 0)
        rows.append(f"s{i:05d},Sentence {i}.,{labels}")
    return ("\n".join(rows) + "\n").encode(), majority


def test_the_worker_computes_the_analysis_after_an_import_with_no_other_step(api_client):
    process = started_celery_worker(worker_environment(ANALYSIS_AUTO_RECOMPUTE="1"), concurrency=1)
    try:
        study = make_study()
        content, majority = clear_majority_csv(2400)
        with transaction.atomic():
            item_import = item_import_create(study=study, filename="autalic.csv", content=content)
            item_import_enqueue(item_import=item_import)
        assert wait_for(lambda: import_status(item_import.pk), timeout=60, what="the import") == "succeeded"
        analysis = wait_for(lambda: (body := api_client.get(f"/api/studies/{study.id}/analysis/").json())
                            ["state"] in ("done", "failed") and body, timeout=120, what="the analysis")
        assert analysis["state"] == "done", analysis
        assert process.count(r"Task annotation.study_analysis_compute\[\S+\] succeeded") == 1
    finally:
        process.stop()
    assert dict(ItemGroundTruth.objects.filter(item__study=study)
                .values_list("item__external_id", "majority_label")) == majority
    assert [n for n in analysis["notes"] if "no weight" in n] == [
        f"{a}: no weight (missing instrument score; rule 'exclude')" for a in ("A1", "A2", "A3")]


def test_a_worker_writes_its_heartbeat_and_pages_see_it_go_silent(settings):
    from auditapp.models import WorkerHeartbeat
    from auditapp.worker_status import worker_status

    settings.WORKER_SILENT_SECONDS = 4
    process = started_celery_worker(worker_environment(WORK_RECOVERY_SECONDS="1"))
    try:
        beat = wait_for(lambda: WorkerHeartbeat.objects.first(), timeout=10, what="the worker's first heartbeat")
        assert beat.hostname.startswith("celery@")
        wait_for(lambda: WorkerHeartbeat.objects.get().seen_at > beat.seen_at, timeout=10, what="a second heartbeat")
        assert worker_status().alive
    finally:
        process.stop(signal.SIGKILL)
    wait_for(lambda: not worker_status().alive, timeout=15, what="the status to say no worker is alive")
    assert worker_status().message.startswith("No worker has been seen for ")
