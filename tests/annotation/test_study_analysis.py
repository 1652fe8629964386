"""A study's analysis computed from stored scores and labels, stored, and exported (worked numbers from
tests/psychometrics/test_trust.py and tests/annotation/test_aggregation.py)."""
from __future__ import annotations

import pytest

from annotation.models import AnalysisRun, Participant, ParticipantWeight, StudyAnalysisSettings
from annotation.participation import participant_withdraw
from annotation.study_analysis import study_analysis_compute
from tests.factories import make_worked_example_study

pytestmark = pytest.mark.django_db

@pytest.fixture
def study():
    return make_worked_example_study()


def test_weights_and_ground_truth_are_stored_with_the_worked_numbers(study, api_client):
    run = study_analysis_compute(study_id=study.id)
    weights = dict(ParticipantWeight.objects.values_list("participant__pseudonym", "weight"))
    assert [weights[p] for p in ("P1", "P2", "P3", "P4")] == pytest.approx([0.25, 1.75, 22 / 17, 12 / 17])
    rows = api_client.get(f"/api/studies/{study.id}/participants/").json()["results"]
    assert [r["trust_raw"] for r in rows] == pytest.approx([1 / 9, 7 / 9, 11 / 18, 1 / 3])
    truth = {r["item"]: r for r in api_client.get(f"/api/studies/{study.id}/ground-truth/").json()["results"]}
    assert set(truth) == {"x", "y", "z"}
    assert truth["x"]["weighted_score"] == pytest.approx(105 / 224) and truth["x"]["weighted_label"] == 0
    assert truth["x"]["majority_label"] == 1 and not truth["x"]["majority_tie"]
    assert truth["y"]["majority_label"] is None and truth["y"]["majority_tie"]
    assert (truth["z"]["n_labels"], truth["z"]["n_excluded"]) == (2, 1)
    assert run.settings["aggregation"] == {"threshold": 0.5, "weighted_tie_rule": "positive",
                                           "majority_tie_rule": "none"}
    csv_text = b"".join(api_client.get(f"/api/studies/{study.id}/ground-truth/?format=csv").streaming_content)
    assert csv_text.decode().splitlines()[0] == ("item,n_labels,n_excluded,majority_label,majority_tie,n_weighted,"
                                                 "weighted_score,weighted_label,weighted_tie")


def test_recomputing_twice_stores_the_same_and_settings_change_the_result(study):
    study_analysis_compute(study_id=study.id)
    first = list(ParticipantWeight.objects.order_by("participant__pseudonym").values_list("weight", flat=True))
    study_analysis_compute(study_id=study.id)
    assert list(ParticipantWeight.objects.order_by("participant__pseudonym").values_list("weight", flat=True)) == first
    assert AnalysisRun.objects.count() == 1
    StudyAnalysisSettings.objects.filter(study=study).update(threshold=0.4)
    study_analysis_compute(study_id=study.id)
    assert study.items.get(external_id="x").ground_truth.weighted_label == 1  # 105/224 ≥ 0.4


def test_groups_test_sets_and_icl_sets(study, api_client):
    StudyAnalysisSettings.objects.create(study=study, aq_high=30, aq_low=20, min_group_labels=1, icl_size=1)
    study_analysis_compute(study_id=study.id)
    groups = {w.participant.pseudonym: (w.high_aq, w.low_aq) for w in ParticipantWeight.objects.all()}
    assert groups == {"P1": (False, True), "P2": (False, False), "P3": (True, False), "P4": (True, False)}
    sets = api_client.get(f"/api/studies/{study.id}/item-sets/").json()["results"]
    by_set = {}
    for row in sets:
        by_set.setdefault(row["set"], []).append((row["item"], row["label"]))
    # high_aq = P3, P4: x (P3: 1), y (P4: 0), z (P4: 1, P3: 0 → disagree) → test set x=1, y=0
    assert sorted(by_set["high_aq"]) == [("x", 1), ("y", 0)]
    assert sorted(by_set["low_aq"]) == [("x", 1)]      # P1 labelled x=1 (z was -1)
    assert len(by_set["icl_a"]) == 1 and by_set["icl_a"][0] in by_set["high_aq"]
    assert by_set["icl_b"] == [("x", 1)]


def test_agreement_is_stored_per_scope(study):
    run = study_analysis_compute(study_id=study.id)
    scopes = {(row["scope"], row["group"]) for row in run.agreement}
    assert {("overall", "all"), ("team", "a"), ("team", "b"), ("psychometric group", "high_aq")} <= scopes
    overall = next(r for r in run.agreement if r["scope"] == "overall")
    assert overall["n_labels"] == 7 and overall["fleiss_kappa"] is None  # raters per item vary: 3, 2, 2
    assert "raters per item vary" in overall["fleiss_note"]
    assert run.cohen_kappa["annotators"] == ["P1", "P2", "P3", "P4"]


def test_withdrawn_participants_leave_the_analysis(study):
    participant_withdraw(participant=Participant.objects.get(pseudonym="P2"))
    study_analysis_compute(study_id=study.id)
    assert set(ParticipantWeight.objects.values_list("participant__pseudonym", flat=True)) == {"P1", "P3", "P4"}
