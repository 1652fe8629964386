"""An item import that succeeds has the study's analysis recomputed with no other step (annotation.services
item_import_run → annotation.study_analysis): the worker's import asks for a run in its own transaction, and
the analysis task, sent when the import commits, is run here at once as a worker would run it."""
from __future__ import annotations

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from annotation.models import AnalysisRun, AnalysisState, ItemImport
from annotation.services import item_import_create, item_import_run, items_import_file
from tasks.analysis import study_analysis_compute_task
from tasks.imports import item_import_run_task
from tests.factories import make_study

# The import commits, then sends the analysis task: these tests need real commits.
pytestmark = pytest.mark.django_db(transaction=True)

# Three annotators; the majority over the 0/1 labels (-1 is left out), worked by hand:
# a: 1,1,0 → 1    b: 0,0,1 → 0    c: 1,-1,1 → 1 (2 labels, 1 left out)    d: 0,1,0 → 0    e: -1,0,-1 → 0
LABELLED = (b"id,sentence,A1_Score,A2_Score,A3_Score\n"
            b"a,One,1,1,0\nb,Two,0,0,1\nc,Three,1,-1,1\nd,Four,0,1,0\ne,Five,-1,0,-1\n")
MAJORITY = {"a": (1, 3, 0), "b": (0, 3, 0), "c": (1, 2, 1), "d": (0, 3, 0), "e": (0, 1, 2)}


@pytest.fixture
def analyses_run_by_a_worker(monkeypatch, settings) -> list[int]:
    """The analysis task, when sent, runs at once in this process (eagerly, through Celery's own apply);
    returns the study ids it was sent for."""
    settings.ANALYSIS_AUTO_RECOMPUTE = True
    sent: list[int] = []

    def run_now(study_id):
        sent.append(study_id)
        study_analysis_compute_task.apply(args=[study_id], throw=True)

    monkeypatch.setattr("tasks.analysis.study_analysis_compute_task.delay", run_now)
    return sent


def ground_truth(api_client, study) -> dict:
    rows = api_client.get(f"/api/studies/{study.id}/ground-truth/").json()["results"]
    return {r["item"]: (r["majority_label"], r["n_labels"], r["n_excluded"]) for r in rows}


def test_an_import_through_the_service_computes_the_analysis(analyses_run_by_a_worker, api_client):
    study = make_study()
    item_import = items_import_file(study=study, filename="labels.csv", content=LABELLED)
    assert item_import.status == ItemImport.Status.SUCCEEDED, item_import.errors
    assert analyses_run_by_a_worker == [study.id]
    assert ground_truth(api_client, study) == MAJORITY
    state = AnalysisState.objects.get(study=study)
    assert (state.status, state.error) == (AnalysisState.Status.IDLE, "")
    analysis = api_client.get(f"/api/studies/{study.id}/analysis/").json()
    assert analysis["state"] == "done" and analysis["computed_at"] is not None
    # Imported annotators have no instrument scores: no weights, and the analysis says so.
    assert [n for n in analysis["notes"] if "no weight" in n] == [
        f"{a}: no weight (missing instrument score; rule 'exclude')" for a in ("A1", "A2", "A3")]


def test_an_upload_through_the_api_computes_the_analysis_with_no_other_step(analyses_run_by_a_worker, api_client,
                                                                          monkeypatch):
    monkeypatch.setattr("tasks.imports.item_import_run_task.delay",
                        lambda item_import_id: item_import_run_task.apply(args=[item_import_id], throw=True))
    study = make_study()
    response = api_client.post(f"/api/studies/{study.id}/imports/",
                               {"file": SimpleUploadedFile("labels.csv", LABELLED)}, format="multipart")
    assert response.status_code == 202, response.json()
    assert api_client.get(f"/api/imports/{response.json()['id']}/").json()["status"] == "succeeded"
    assert analyses_run_by_a_worker == [study.id]
    assert ground_truth(api_client, study) == MAJORITY
    assert api_client.get(f"/api/studies/{study.id}/analysis/").json()["state"] == "done"


def test_a_second_run_of_a_finished_import_and_a_failed_import_ask_for_nothing(analyses_run_by_a_worker):
    study = make_study()
    done = items_import_file(study=study, filename="labels.csv", content=LABELLED)
    assert analyses_run_by_a_worker == [study.id]
    item_import_run(item_import_id=done.id)   # a duplicated message
    assert analyses_run_by_a_worker == [study.id]
    bad = item_import_create(study=study, filename="bad.csv", content=b"id,sentence,A1_Score\nx,One,9\n")
    assert item_import_run(item_import_id=bad.id).status == ItemImport.Status.FAILED
    assert analyses_run_by_a_worker == [study.id]


def test_an_import_while_a_run_is_queued_adds_no_second_run(settings, monkeypatch):
    settings.ANALYSIS_AUTO_RECOMPUTE = True
    sent: list[int] = []
    monkeypatch.setattr("tasks.analysis.study_analysis_compute_task.delay", sent.append)
    study = make_study()
    items_import_file(study=study, filename="one.csv", content=LABELLED)
    items_import_file(study=study, filename="two.csv", content=b"id,sentence,A1_Score\nf,Six,1\n")
    assert sent == [study.id], "the queued run reads both imports when it starts"
    assert AnalysisState.objects.get(study=study).status == AnalysisState.Status.QUEUED
    assert not AnalysisRun.objects.filter(study=study).exists()


def test_the_test_settings_keep_imports_from_sending_analyses(monkeypatch):
    sent: list[int] = []
    monkeypatch.setattr("tasks.analysis.study_analysis_compute_task.delay", sent.append)
    items_import_file(study=make_study(), filename="labels.csv", content=LABELLED)
    assert sent == [] and not AnalysisState.objects.exists()
