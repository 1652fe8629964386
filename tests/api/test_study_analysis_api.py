"""``/api/studies/{id}/analysis/``: GET shows where a study's analysis stands, POST asks for a recomputation
(coalesced by annotation.study_analysis: idempotent while one is queued, one more run while one is running)."""
from __future__ import annotations

from datetime import datetime

import pytest
from rest_framework.test import APIClient

from annotation import study_analysis
from annotation.models import AnalysisRun, AnalysisState, ItemGroundTruth
from annotation.study_analysis import study_analysis_run
from tests.factories import make_participant_user, make_study, make_worked_example_study

# The task is sent when the request's transaction commits.
pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def sent(monkeypatch) -> list[int]:
    """Study ids handed to the analysis task (not run: each test runs the worker's side itself)."""
    ids: list[int] = []
    monkeypatch.setattr("tasks.analysis.study_analysis_compute_task.delay", ids.append)
    return ids


@pytest.fixture
def study():
    return make_worked_example_study()


def url(study) -> str:
    return f"/api/studies/{study.id}/analysis/"


def test_state_goes_from_not_computed_to_queued_to_done(study, api_client, sent):
    before = api_client.get(url(study))
    assert before.status_code == 200
    assert before.json() | {"ground_truth_url": None, "item_sets_url": None, "participants_url": None,
                            "dashboard_url": None} == {
        "state": "not_computed", "rerun_requested": False, "requested_at": None, "started_at": None,
        "finished_at": None, "error": None, "computed_at": None, "duration_ms": None, "notes": [],
        "ground_truth_url": None, "item_sets_url": None, "participants_url": None, "dashboard_url": None}
    assert before.json()["ground_truth_url"] == f"http://testserver/api/studies/{study.id}/ground-truth/"
    assert before.json()["item_sets_url"] == f"http://testserver/api/studies/{study.id}/item-sets/"
    assert before.json()["dashboard_url"] == f"http://testserver/studies/{study.id}/dashboard/"

    asked = api_client.post(url(study))
    assert asked.status_code == 202 and asked.json()["state"] == "queued" and asked.json()["requested_at"]
    again = api_client.post(url(study))
    assert again.status_code == 202 and again.json()["state"] == "queued"
    assert again.json()["requested_at"] == asked.json()["requested_at"]
    assert sent == [study.id], "asking again while a run waits sends nothing more"
    assert api_client.get(url(study)).json()["state"] == "queued"

    study_analysis_run(study_id=study.id)   # the worker
    done = api_client.get(url(study)).json()
    assert done["state"] == "done" and done["error"] is None
    requested, started, finished = (datetime.fromisoformat(done[k]) for k in ("requested_at", "started_at",
                                                                                 "finished_at"))
    assert requested <= started <= finished and done["computed_at"]
    assert done["duration_ms"] == AnalysisRun.objects.get(study=study).duration_ms
    # Every annotator has every score, so no weight is missing; the ICL sets ask for more examples than exist.
    assert done["notes"] == AnalysisRun.objects.get(study=study).notes
    assert "icl_a: only 0 of 284 examples available from high_aq" in done["notes"]
    assert not [n for n in done["notes"] if "no weight" in n]
    assert ItemGroundTruth.objects.filter(item__study=study).count() == 3
    truth = api_client.get(done["ground_truth_url"]).json()["results"]
    assert {r["item"] for r in truth} == {"x", "y", "z"}


def test_a_request_while_running_is_accepted_and_one_more_run_follows(study, api_client, sent, monkeypatch):
    compute = study_analysis.study_analysis_compute
    seen = []

    def compute_while_a_script_asks(*, study_id):
        seen.append(api_client.post(url(study)).json())
        return compute(study_id=study_id)

    monkeypatch.setattr(study_analysis, "study_analysis_compute", compute_while_a_script_asks)
    api_client.post(url(study))
    study_analysis_run(study_id=study.id)
    assert [(s["state"], s["rerun_requested"]) for s in seen] == [("running", True)]
    assert sent == [study.id, study.id]
    assert api_client.get(url(study)).json()["state"] == "queued"


def test_a_failed_run_is_shown_with_its_error_and_the_earlier_results_kept(study, api_client, sent, monkeypatch):
    api_client.post(url(study))
    study_analysis_run(study_id=study.id)
    computed_at = api_client.get(url(study)).json()["computed_at"]

    def broken(*, study_id):
        raise ValueError("the labels frame is empty")

    monkeypatch.setattr(study_analysis, "study_analysis_compute", broken)
    api_client.post(url(study))
    with pytest.raises(ValueError, match="the labels frame is empty"):
        study_analysis_run(study_id=study.id)
    failed = api_client.get(url(study)).json()
    assert failed["state"] == "failed" and failed["error"] == "ValueError: the labels frame is empty"
    assert failed["computed_at"] == computed_at
    assert AnalysisState.objects.get(study=study).status == AnalysisState.Status.IDLE

    monkeypatch.undo()
    monkeypatch.setattr("tasks.analysis.study_analysis_compute_task.delay", sent.append)
    assert api_client.post(url(study)).json()["state"] == "queued"
    assert api_client.get(url(study)).json()["error"] == "ValueError: the labels frame is empty", \
        "the last run's error is kept until a run ends"
    study_analysis_run(study_id=study.id)
    recovered = api_client.get(url(study)).json()
    assert (recovered["state"], recovered["error"]) == ("done", None)
    assert datetime.fromisoformat(recovered["computed_at"]) > datetime.fromisoformat(computed_at)


def test_an_unknown_study_is_404_and_nothing_is_queued(api_client, sent):
    assert api_client.get("/api/studies/999999/analysis/").status_code == 404
    assert api_client.post("/api/studies/999999/analysis/").status_code == 404
    assert sent == [] and not AnalysisState.objects.exists()


def test_anonymous_is_401_and_a_user_who_is_not_staff_is_403(sent):
    study = make_study()
    anonymous = APIClient()
    assert anonymous.get(url(study)).status_code == 401
    assert anonymous.post(url(study)).status_code == 401
    not_staff = APIClient()
    not_staff.force_authenticate(make_participant_user())
    assert not_staff.get(url(study)).status_code == 403
    assert not_staff.post(url(study)).status_code == 403
    assert sent == [] and not AnalysisState.objects.exists()


def test_the_schema_documents_both_operations(api_client):
    paths = api_client.get("/api/schema/?format=json").json()["paths"]
    operations = paths["/api/studies/{id}/analysis/"]
    assert {"200", "401", "403", "404"} <= set(operations["get"]["responses"])
    assert {"202", "401", "403", "404"} <= set(operations["post"]["responses"])
    assert "requestBody" not in operations["post"]
