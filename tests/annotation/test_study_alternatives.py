"""The alternative ground truths in their own task after the study analysis (annotation.study_alternatives): the
analysis no longer runs crowd-kit; the task computes from the inputs the run kept (whatever labels arrive
meanwhile, with the touch-D setting applied as in the weights), stores once, skips for a newer run, records
crowd-kit's failure; the dashboard and the API say "being computed" or why it failed; the recovery sends again what
was lost."""
from __future__ import annotations

import io
from datetime import timedelta

import pandas as pd
import pytest
from django.utils import timezone

from annotation import study_alternatives
from annotation.alternatives import (
    alternative_ground_truths,
    alternatives_inputs_digest,
    alternatives_inputs_unpack,
)
from annotation.dawid_skene import DawidSkene
from annotation.glad import GLAD
from annotation.mace import MACE
from annotation.models import AnalysisRun, AnalysisRunInputs, ItemGroundTruth, Label, Participant, StudyAnalysisSettings
from annotation.selectors import study_labels_frame, study_scores_frame
from annotation.study_alternatives import (
    INPUTS_MISSING,
    alternatives_json,
    study_alternatives_compute,
    study_alternatives_recover,
)
from annotation.study_analysis import study_analysis_compute
from psychometrics.models import IATSession
from tasks.analysis import study_alternatives_compute_task
from tests.annotation.test_alternatives import analyse_with_alternatives
from tests.factories import make_worked_example_study

pytestmark = pytest.mark.django_db


def test_the_study_analysis_runs_no_crowd_kit_model_and_asks_for_the_alternatives_when_it_commits(
        monkeypatch, django_capture_on_commit_callbacks):
    def refuse(self, data):
        raise AssertionError("the study analysis fitted a crowd-kit model")

    for model in (DawidSkene, GLAD, MACE):
        monkeypatch.setattr(model, "fit", refuse)
    sent = []
    monkeypatch.setattr(study_alternatives, "_send", lambda run_id, requested_at: sent.append((run_id, requested_at)))
    study = make_worked_example_study()
    with django_capture_on_commit_callbacks(execute=True):
        run = study_analysis_compute(study_id=study.id)
    run.refresh_from_db()
    assert run.alternatives == {} and run.alternatives_status == "computing"
    assert run.alternatives_requested_at >= run.computed_at and run.alternatives_inputs_digest
    assert sent == [(run.id, run.alternatives_requested_at)], "sent once, after the commit"


def test_the_task_is_idempotent_and_a_new_analysis_forgets_the_old_alternatives():
    study = make_worked_example_study()
    run = analyse_with_alternatives(study.id)
    stored, computed_at = run.alternatives, run.alternatives_computed_at
    assert study_alternatives_compute_task(run.id) == "nothing to compute: ready"
    run.refresh_from_db()
    assert run.alternatives == stored and run.alternatives_computed_at == computed_at

    again = study_analysis_compute(study_id=study.id)  # same row, a new request
    assert again.id == run.id and again.alternatives == {} and again.alternatives_status == "computing"
    assert study_alternatives_compute_task(run.id) == "stored"
    again.refresh_from_db()
    assert again.alternatives == stored  # the same inputs give the same alternatives
    assert study_alternatives_compute_task(987654) == "no such analysis run"


def test_a_task_overtaken_by_a_newer_analysis_stores_nothing_and_the_newer_ones_task_stores(monkeypatch):
    study = make_worked_example_study()
    run = study_analysis_compute(study_id=study.id)
    first_request = run.alternatives_requested_at
    compute = study_alternatives.alternative_ground_truths

    def while_the_study_is_analysed_again(*args, **kwargs):
        study_analysis_compute(study_id=study.id)
        return compute(*args, **kwargs)

    monkeypatch.setattr(study_alternatives, "alternative_ground_truths", while_the_study_is_analysed_again)
    outcome = study_alternatives_compute(run_id=run.id)
    assert not outcome.stored and outcome.message == "a newer analysis asked for its own alternatives"
    run.refresh_from_db()
    assert run.alternatives_requested_at > first_request and run.alternatives_status == "computing"
    monkeypatch.setattr(study_alternatives, "alternative_ground_truths", compute)
    assert study_alternatives_compute_task(run.id) == "stored"


def test_labels_arriving_after_the_analysis_do_not_prevent_its_alternatives_which_are_those_of_its_inputs():
    study = make_worked_example_study()
    scores, labels = study_scores_frame(study=study), study_labels_frame(study=study)
    run = study_analysis_compute(study_id=study.id)
    kept = AnalysisRunInputs.objects.get(run=run)
    assert kept.requested_at == run.alternatives_requested_at and len(kept.data) < 4000
    Label.objects.filter(item__study=study, item__external_id="x", participant__pseudonym="P2").update(value=1)
    late = Participant.objects.create(study=study, pseudonym="P9", team="A", status="completed")
    Label.objects.create(participant=late, item=study.items.get(external_id="y"), value=0)

    assert study_alternatives_compute_task(run.id) == "stored"
    run.refresh_from_db()
    expected = alternatives_json(alternative_ground_truths(scores.loc[:, ["participant", "team", "aq", "sata", "iat_d"]],
                                                           labels))
    assert run.alternatives == expected and run.alternatives_status == "ready"
    assert not AnalysisRunInputs.objects.filter(run=run).exists(), "the kept inputs are deleted once stored"


def test_the_kept_inputs_unpack_to_the_run_s_inputs_and_a_run_without_them_is_recorded_as_failed():
    study = make_worked_example_study()
    run = study_analysis_compute(study_id=study.id)
    scores, labels, missing, aggregation = alternatives_inputs_unpack(AnalysisRunInputs.objects.get(run=run).data)
    assert alternatives_inputs_digest(scores, labels, missing=missing, aggregation=aggregation) == \
        run.alternatives_inputs_digest
    AnalysisRunInputs.objects.filter(run=run).delete()  # a request from before the inputs were kept
    assert study_alternatives_compute_task(run.id) == INPUTS_MISSING
    run.refresh_from_db()
    assert run.alternatives == {} and run.alternatives_status == "failed" and run.alternatives_error == INPUTS_MISSING
    assert study_alternatives_compute_task(study_analysis_compute(study_id=study.id).id) == "stored"


def test_with_touch_d_left_out_the_alternatives_weighted_label_is_the_stored_ground_truth():
    study = make_worked_example_study()
    StudyAnalysisSettings.objects.update_or_create(study=study, defaults={"touch_iat_in_weights": False})
    IATSession.objects.filter(participant__study=study, participant__pseudonym__in=["P2", "P4"]).update(
        input_modality="touch")
    run = study_analysis_compute(study_id=study.id)
    assert study_alternatives_compute_task(run.id) == "stored"
    run.refresh_from_db()
    stored = dict(ItemGroundTruth.objects.filter(item__study=study).values_list("item__external_id", "weighted_label"))
    alternatives = dict(zip(run.alternatives["items"], run.alternatives["labels"]["weighted"], strict=True))
    assert alternatives == {item: None if label is None else float(label) for item, label in stored.items()}
    weights = {row["participant"]: row["weighted"] for row in run.alternatives["weights"]}
    assert weights["P2"] is None and weights["P4"] is None, "touch D is a missing IAT: no weight under 'exclude'"
    assert weights["P1"] is not None


def test_a_crowd_kit_failure_is_recorded_with_its_reason_and_shown(monkeypatch, staff_client, api_client):
    def fail(self, data):
        raise ValueError("MACE cannot fit these labels")

    monkeypatch.setattr(MACE, "fit", fail)
    study = make_worked_example_study()
    run = study_analysis_compute(study_id=study.id)
    assert study_alternatives_compute_task(run.id) == "failed: ValueError: MACE cannot fit these labels"
    run.refresh_from_db()
    assert run.alternatives == {} and run.alternatives_status == "failed"
    assert run.alternatives_error == "ValueError: MACE cannot fit these labels"
    assert study_alternatives_compute_task(run.id) == "nothing to compute: failed"  # not retried into a loop
    page = staff_client.get(f"/studies/{study.id}/dashboard/").content.decode()
    assert 'id="robustness-failed"' in page and "ValueError: MACE cannot fit these labels" in page
    for suffix in ("", "?format=csv", "?table=summary&format=csv"):
        answer = api_client.get(f"/api/studies/{study.id}/ground-truth-alternatives/{suffix}")
        assert answer.status_code == 409, suffix
        assert answer.json()["status"] == "failed" and answer.json()["error"] == run.alternatives_error


def test_being_computed_is_said_with_when_it_was_asked_on_the_dashboard_and_the_api(staff_client, api_client):
    study = make_worked_example_study()
    run = study_analysis_compute(study_id=study.id)
    page = staff_client.get(f"/studies/{study.id}/dashboard/").content.decode()
    section = page[page.index('<section id="robustness">'):]
    section = section[:section.index("</section>")]
    asked = timezone.localtime(run.alternatives_requested_at)
    assert 'id="robustness-computing"' in section and "Being computed" in section
    assert asked.strftime("%Y-%m-%d %H:%M:%S") in section and 'id="robustness-alternatives"' not in section
    url = f"/api/studies/{study.id}/ground-truth-alternatives/"
    for suffix in ("", "?format=csv"):
        answer = api_client.get(url + suffix)
        assert answer.status_code == 202 and answer["Content-Type"] == "application/json", suffix
        assert answer.json()["status"] == "computing"
        assert answer.json()["requested_at"] == run.alternatives_requested_at.isoformat()
    assert api_client.get(url + "?table=nope").status_code == 400  # a bad table is still named first

    assert study_alternatives_compute_task(run.id) == "stored"
    page = staff_client.get(f"/studies/{study.id}/dashboard/").content.decode()
    assert 'id="robustness-alternatives"' in page and 'id="robustness-computing"' not in page
    labels = pd.read_csv(io.StringIO(b"".join(api_client.get(url + "?format=csv").streaming_content).decode()))
    assert list(labels["item"]) == ["x", "y", "z"] and "dawid_skene" in labels.columns


def test_the_recovery_sends_again_what_was_never_sent_or_lost_but_not_what_was_just_sent(monkeypatch, settings):
    sent = []
    monkeypatch.setattr(study_alternatives, "_send", lambda run_id, requested_at: sent.append(run_id))
    settings.ANALYSIS_RESEND_SECONDS = 600
    fresh = study_analysis_compute(study_id=make_worked_example_study().id)
    unsent = study_analysis_compute(study_id=make_worked_example_study(slug="unsent").id)
    lost = study_analysis_compute(study_id=make_worked_example_study(slug="lost").id)
    done = analyse_with_alternatives(make_worked_example_study(slug="done").id)
    AnalysisRun.objects.filter(pk=unsent.id).update(alternatives_sent_at=None)
    AnalysisRun.objects.filter(pk__in=[lost.id, done.id]).update(
        alternatives_sent_at=timezone.now() - timedelta(seconds=601))
    sent.clear()
    assert sorted(study_alternatives_recover()) == sorted([unsent.id, lost.id])
    assert study_alternatives_recover() == [], "sent again once, not at every recovery"
    assert fresh.id not in sent
