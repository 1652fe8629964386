"""Audit metrics against many references (auditapp.audit_metrics.reference_metrics) and a classification audit
re-scored under every alternative ground truth (robustness of the weighted label): equal to the single-reference code
and to scikit-learn, recomputed from the exports."""
from __future__ import annotations

import io

import numpy as np
import pandas as pd
import pytest
from scipy import stats
from sklearn.metrics import cohen_kappa_score, f1_score

from auditapp.audit_metrics import classification_metrics, kappa_gap, reference_metrics
from tests.annotation.test_alternatives import analyse_with_alternatives

RNG = np.random.default_rng(1)
N_ITEMS = 240
REFERENCES = np.stack([(RNG.random(N_ITEMS) < 0.3), (RNG.random(N_ITEMS) < 0.4)]).astype(float)
PREDICTIONS = (RNG.random((4, N_ITEMS)) < 0.4).astype(float)


@pytest.mark.parametrize("unparsed", ["exclude", "wrong"])
def test_every_cell_and_reference_equals_classification_metrics_with_its_bootstrap(unparsed):
    result = reference_metrics(PREDICTIONS, REFERENCES, unparsed=unparsed, n_resamples=400, seed=5)
    for cell in range(len(PREDICTIONS)):
        for r in range(len(REFERENCES)):
            one = classification_metrics(PREDICTIONS[cell], REFERENCES[r], unparsed=unparsed, n_resamples=400, seed=5)
            for name in ("kappa", "f1"):
                assert result.point[name][cell, r] == pytest.approx(getattr(one, name))
                assert (result.low[name][cell, r], result.high[name][cell, r]) == pytest.approx(one.ci[name])


@pytest.mark.parametrize("unparsed", ["exclude", "wrong"])
def test_the_delta_kappa_test_equals_kappa_gap_with_missing_labels(unparsed):
    predictions, references = PREDICTIONS.copy(), REFERENCES.copy()
    predictions[0, :12] = np.nan       # unparsed replies
    references[1, :7] = np.nan         # majority ties
    result = reference_metrics(predictions, references, base=0, unparsed=unparsed, n_resamples=300, seed=2)
    gap = kappa_gap(predictions, references[1], references[0], unparsed=unparsed, n_resamples=300, seed=2)
    assert result.delta[:, 1] == pytest.approx(gap.delta)
    assert result.t_statistic[1] == pytest.approx(gap.t_statistic) and result.df[1] == gap.df
    assert (result.delta_low[1], result.delta_high[1]) == pytest.approx(gap.bootstrap_ci)
    assert np.all(result.delta[:, 0] == 0) and "t_test" in result.test_notes[0]


def test_a_soft_reference_gives_scikit_learns_weighted_kappa_and_f1():
    soft = RNG.random(N_ITEMS)
    result = reference_metrics(PREDICTIONS, soft[None, :], n_resamples=100, seed=0)
    for cell, prediction in enumerate(PREDICTIONS):
        # Each item counts as a positive with weight s and a negative with weight 1 − s.
        y_true, y_pred = np.r_[np.ones(N_ITEMS), np.zeros(N_ITEMS)], np.r_[prediction, prediction]
        weight = np.r_[soft, 1 - soft]
        assert result.point["kappa"][cell, 0] == pytest.approx(cohen_kappa_score(y_true, y_pred,
                                                                                 sample_weight=weight))
        assert result.point["f1"][cell, 0] == pytest.approx(f1_score(y_true, y_pred, sample_weight=weight))


def test_kendall_tau_and_ranks_of_the_robustness_tables():
    from auditapp.paradigms.classification.robustness import robustness

    items = np.arange(N_ITEMS)
    replies = pd.DataFrame([(m, c, i, 0, PREDICTIONS[2 * m + c, i]) for m in range(2) for c in range(2)
                            for i in items], columns=["model", "condition", "item", "replicate", "label"])
    references = pd.DataFrame({"item": items, "weighted": REFERENCES[0], "majority": REFERENCES[1]})
    tables = robustness(replies, references, alternatives=["weighted", "majority"], models=[0, 1], conditions=[0, 1],
                        n_resamples=100)
    cells = pd.DataFrame(tables["cells"])
    for row in tables["cells"]:
        reference = references[row["alternative"]].to_numpy()
        assert row["kappa"] == pytest.approx(cohen_kappa_score(reference, PREDICTIONS[2 * row["model"]
                                                                                      + row["condition"]]))
    means = cells.groupby(["model", "alternative"])["kappa"].mean().unstack()
    tau = next(t for t in tables["tau"] if t["scope"] == "cell" and t["alternative"] == "majority")
    by_cell = cells.pivot_table(index=["model", "condition"], columns="alternative", values="kappa")
    assert tau["tau"] == pytest.approx(stats.kendalltau(by_cell["weighted"], by_cell["majority"]).statistic)
    ranks = {(r["key"], r["alternative"]): r["rank"] for r in tables["ranks"] if r["scope"] == "model"}
    best = means["majority"].idxmax()
    assert ranks[(best, "majority")] == 1


def test_robustness_tables_of_replies_none_of_which_parsed_are_undefined_with_their_reasons():
    from auditapp.paradigms.classification.robustness import robustness

    items = np.arange(20)
    replies = pd.DataFrame([(m, "zs", i, 0, np.nan) for m in range(2) for i in items],
                           columns=["model", "condition", "item", "replicate", "label"])
    references = pd.DataFrame({"item": items, "weighted": REFERENCES[0, :20], "majority": REFERENCES[1, :20]})
    tables = robustness(replies, references, alternatives=["weighted", "majority"], models=[0, 1], conditions=["zs"],
                        n_resamples=100)
    assert all(row["kappa"] is None and "undefined" in row["kappa_note"] for row in tables["cells"])
    assert all(row["mean_kappa"] is None and row["rank"] is None for row in tables["ranks"])
    assert all(row["tau"] is None and row["note"] for row in tables["tau"])


# ------------------------------------------------------------------------------- a real audit, through the API

def _csv(response) -> pd.DataFrame:
    return pd.read_csv(io.StringIO(b"".join(response.streaming_content).decode()), keep_default_na=True)


def _labelled_study(n_items: int = 60):
    """make_audit_study's items with six annotators (scores and labels) whose analysis gives the alternatives."""
    from annotation.models import Item, Label, Participant
    from psychometrics.models import IATSession, Instrument, InstrumentScore, StudyInstrument
    from tests.factories import make_audit_study

    study = make_audit_study(n_items, n_examples=4)
    aq, sata = Instrument.objects.get(slug="aq50"), Instrument.objects.get(slug="sata_partial")
    StudyInstrument.objects.create(study=study, instrument=aq, role="aq", position=0)
    StudyInstrument.objects.create(study=study, instrument=sata, role="sata", position=1)
    rng = np.random.default_rng(7)
    items = list(Item.objects.filter(study=study).order_by("position"))
    for k in range(6):
        participant = Participant.objects.create(study=study, pseudonym=f"P{k}", team="ab"[k % 2], status="completed")
        InstrumentScore.objects.create(participant=participant, instrument=aq, total=10 + 6 * k)
        InstrumentScore.objects.create(participant=participant, instrument=sata, total=90 - 5 * k + 3 * (k % 2))
        IATSession.objects.create(participant=participant, condition_index=0, seed=0, stimuli={}, design=[],
                                  blocks_done=7, completed_at="2026-01-01T00:00Z", d_score=0.1 * k - 0.2)
        accuracy = 0.9 - 0.07 * k
        Label.objects.bulk_create([
            Label(participant=participant, item=item,
                  value=(i % 3 == 0) if rng.random() < accuracy else (i % 3 != 0))
            for i, item in enumerate(items)])
    return study


def audited_study(*, alternatives_first: bool = True, models: tuple[str, str] = ("model-a", "model-b")):
    """A labelled study, its analysis with the alternatives, and a finished audit of two models × two conditions
    against the real test LLM server, analysed (so its robustness is stored). ``alternatives_first=False``: the
    alternatives' task has not run when the audit is analysed (it is still computing them). ``models``: the server's
    models audited (``prose-`` ones answer in prose the strict parser finds no label in)."""
    from annotation.models import StudyAnalysisSettings
    from annotation.study_analysis import study_analysis_compute
    from auditapp.engine import analysis as engine_analysis
    from auditapp.engine import launch, preparation
    from auditapp.engine import runner as audit_runner
    from auditapp.models import LLMEndpoint
    from auditapp.paradigms.classification import services as classification_services
    from tests.factories import AUDIT_POSITIVE_WORDS
    from tests.llm_server import LLMServer

    study = _labelled_study(120)
    StudyAnalysisSettings.objects.create(study=study, icl_size=2)  # keep the items for the evaluation set
    if alternatives_first:
        analyse_with_alternatives(study.id)
    else:
        study_analysis_compute(study_id=study.id)
    with LLMServer(latency=0.001, positive_words=AUDIT_POSITIVE_WORDS, models=models) as server:
        endpoint = LLMEndpoint.objects.create(name="test server", protocol="openai", base_url=server.base_url,
                                              max_concurrency=8, attempt_timeout_s=2.0, deadline_s=30, max_attempts=3)
        audit = classification_services.audit_create(
            study=study, name="robustness", conditions=["zs", "cot"],
            models=[launch.ModelChoice(endpoint=endpoint, model=model) for model in models], n_resamples=200)
        preparation.audit_prepare(audit_id=audit.id)
        assert audit_runner.audit_work(audit.id) == "finished"
        engine_analysis.audit_analyse(audit_id=audit.id)
    audit.refresh_from_db()
    return study, audit


@pytest.mark.integration
@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_the_robustness_export_equals_scikit_learn_recomputed_from_the_exports(api_client, staff_client,
                                                                              audit_tasks_off):
    study, audit = audited_study()
    alternatives = _csv(api_client.get(f"/api/studies/{study.id}/ground-truth-alternatives/?format=csv"))
    cells = _csv(api_client.get(f"/api/audits/{audit.id}/robustness/?format=csv"))
    requests = _csv(api_client.get(f"/api/audits/{audit.id}/responses/?format=csv"))
    names = {m.model: m.display_name for m in audit.models.all()}
    requests["model"] = requests["model"].map(names)
    assert set(cells["alternative"]) == set(alternatives.columns) - {"item"}
    assert len(cells) == 2 * 2 * (len(alternatives.columns) - 1)
    snapshot = pd.DataFrame(audit.items.values("item__external_id", "weighted_label")).set_index("item__external_id")
    references = alternatives.set_index("item").astype(float)
    references["weighted"] = snapshot["weighted_label"].astype(float).reindex(references.index)
    labelled = requests[requests["outcome"] == "label"]
    checked = 0
    for row in cells.itertuples():
        cell = labelled[(labelled["model"] == row.model) & (labelled["condition"] == row.condition)]
        reference = references.loc[cell["item"].astype(str), row.alternative].to_numpy()
        keep = ~np.isnan(reference)
        prediction, reference = cell["label"].to_numpy()[keep], reference[keep]
        if row.alternative == "soft":
            y_true = np.r_[np.ones(len(reference)), np.zeros(len(reference))]
            y_pred, weight = np.r_[prediction, prediction], np.r_[reference, 1 - reference]
            assert row.kappa == pytest.approx(cohen_kappa_score(y_true, y_pred, sample_weight=weight))
            assert row.f1 == pytest.approx(f1_score(y_true, y_pred, sample_weight=weight))
        else:
            assert row.kappa == pytest.approx(cohen_kappa_score(reference, prediction))
            assert row.f1 == pytest.approx(f1_score(reference, prediction))
        assert row.kappa_low <= row.kappa <= row.kappa_high or "undefined in some bootstrap" in row.kappa_note
        checked += 1
    assert checked == len(cells)
    tests = api_client.get(f"/api/audits/{audit.id}/robustness/?table=tests").json()["results"]
    majority = next(t for t in tests if t["alternative"] == "majority")
    # The §4.1 test against majority vote is the audit's own Δκ test.
    assert majority["mean_delta"] == pytest.approx(audit.analysis["kappa_gap"]["mean_delta"])
    assert majority["t_statistic"] == pytest.approx(audit.analysis["kappa_gap"]["t_statistic"])
    assert majority["bootstrap_low"] == pytest.approx(audit.analysis["kappa_gap"]["bootstrap_low"])
    assert api_client.get(f"/api/audits/{audit.id}/robustness/?table=nope").status_code == 400
    page = staff_client.get(f"/audits/{audit.id}/dashboard/").content.decode()
    assert 'id="chart-robustness"' in page and 'data-alternative="dawid_skene"' in page
    assert '"robustness": {"available": true' in page
    assert api_client.get(f"/api/studies/{study.id}/ground-truth-alternatives/?table=nope").status_code == 400


@pytest.mark.integration
@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_an_audit_analysed_before_its_studys_alternatives_waits_for_them_then_is_rescored(api_client, staff_client,
                                                                                         audit_tasks_off):
    from annotation.models import AnalysisRun
    from tasks.analysis import study_alternatives_compute_task

    study, audit = audited_study(alternatives_first=False)
    run = AnalysisRun.objects.get(study=study)
    robustness = audit.analysis["robustness"]
    assert robustness["available"] is False and robustness["pending"] is True
    assert robustness["study_alternatives_requested_at"] == run.alternatives_requested_at.isoformat()
    assert "being computed" in robustness["notes"][0]
    page = staff_client.get(f"/audits/{audit.id}/dashboard/").content.decode()
    assert "the study&#x27;s alternative ground truths are being computed" in page
    for suffix in ("", "?format=csv&table=tests"):
        answer = api_client.get(f"/api/audits/{audit.id}/robustness/{suffix}")
        assert answer.status_code == 202 and answer.json()["status"] == "computing", suffix
        assert answer.json()["requested_at"] == run.alternatives_requested_at.isoformat()
    kappa_gap = audit.analysis["kappa_gap"]

    assert study_alternatives_compute_task(run.id) == "stored"  # the task tells the waiting audits
    audit.refresh_from_db()
    robustness = audit.analysis["robustness"]
    assert robustness["available"] is True and "pending" not in robustness
    assert len(robustness["cells"]) == 2 * 2 * 11 and audit.analysis["kappa_gap"] == kappa_gap
    assert robustness["study_analysis_computed_at"] == run.computed_at.isoformat()
    assert api_client.get(f"/api/audits/{audit.id}/robustness/").json()["count"] == 44


@pytest.mark.integration
@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_labels_added_after_the_launch_leave_weighted_and_majority_at_the_audit_s_snapshot_and_are_counted(
        api_client, audit_tasks_off):
    from annotation.models import ItemGroundTruth, Label, Participant
    from auditapp.paradigms.classification.services import audit_robustness

    study, audit = audited_study()
    snapshot = dict(audit.items.values_list("item_id", "majority_label"))
    flipped = sorted(item for item, label in snapshot.items() if label is not None)[:15]
    for k in range(7):  # seven late annotators (no scores, so no weight) outvote the six on 15 items
        late = Participant.objects.create(study=study, pseudonym=f"late{k}", team="a", status="completed")
        Label.objects.bulk_create([Label(participant=late, item_id=item, value=1 - snapshot[item]) for item in flipped])
    analyse_with_alternatives(study.id)
    latest = dict(ItemGroundTruth.objects.filter(item__study=study).values_list("item_id", "majority_label"))
    assert sum(latest[item] != snapshot[item] for item in flipped) == 15

    robustness = audit_robustness(audit)
    majority = next(t for t in robustness["tests"] if t["alternative"] == "majority")
    # Still the audit's own §4.1 test: its majority is the snapshot's, not the latest analysis's.
    assert majority["mean_delta"] == pytest.approx(audit.analysis["kappa_gap"]["mean_delta"])
    assert majority["t_statistic"] == pytest.approx(audit.analysis["kappa_gap"]["t_statistic"])
    drift = {row["alternative"]: row for row in robustness["snapshot"]}
    assert drift["majority"] == {"alternative": "majority", "source": "audit snapshot", "n_items": len(snapshot),
                                 "n_changed": 15, "n_missing": 0,
                                 "n_unlabelled": sum(label is None for label in snapshot.values())}
    assert drift["weighted"]["n_changed"] == 0 and drift["weighted"]["source"] == "audit snapshot"
    assert drift["dawid_skene"]["n_changed"] is None and drift["dawid_skene"]["source"].startswith("study analysis")
    assert any("changes 15 items' majority label (0 more without one)" in note for note in robustness["notes"])


@pytest.mark.integration
@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_an_audit_whose_every_reply_is_unparseable_completes_with_undefined_metrics_and_their_reasons(
        audit_tasks_off):
    """The audit a second-pass extraction is for: it completes (its robustness step failed on it with a TypeError),
    every metric undefined with the reason, no label imputed; then a rules extraction runs on it."""
    from auditapp.models import AuditExtraction, AuditMetric, AuditRequest
    from auditapp.paradigms.classification.extraction_services import extraction_create, extraction_run

    _, audit = audited_study(models=("prose-a", "prose-b"))
    assert audit.status == "completed", audit.status_reason
    requests = AuditRequest.objects.filter(audit=audit)
    assert set(requests.values_list("outcome", flat=True)) == {"unparseable"}
    assert not requests.filter(label__isnull=False).exists()
    for metric in AuditMetric.objects.filter(audit=audit):
        assert metric.values["kappa"] is None and "unparsed" in metric.values["kappa_note"]
        assert metric.values["n_label"] == 0 and metric.values["n_unparseable"] > 0
    robustness = audit.analysis["robustness"]
    assert robustness["available"] is True and len(robustness["cells"]) == 2 * 2 * len(robustness["alternatives"])
    for row in robustness["cells"]:
        assert row["kappa"] is None and row["f1"] is None and "undefined" in row["kappa_note"]
    assert all(row["mean_kappa"] is None and row["rank"] is None for row in robustness["ranks"])
    assert all(row["tau"] is None and row["note"] for row in robustness["tau"])
    assert all(row["mean_delta"] is None and "no cell has a defined Δκ" in row["note"] for row in robustness["tests"])

    extraction, _ = extraction_create(audit=audit, mode="rules")
    assert extraction_run(extraction_id=extraction.id) == AuditExtraction.Status.COMPLETED


def test_an_unparsed_reply_against_a_soft_reference_is_the_opposite_of_the_label_the_score_is_cut_to():
    soft = np.array([0.8, 0.3, 0.5, 1.0, 0.0])
    predictions = np.array([[np.nan, np.nan, np.nan, 1.0, 0.0]])
    # Tie label 1 (rule "positive"): the unparsed replies become 1 − L(s) = 0, 1, 0; with p = [0, 1, 0, 1, 0]
    # tp = Σ p·s = 0.3 + 1 = 1.3, fp = Σ p(1 − s) = 0.7, fn = Σ (1 − p)s = 0.8 + 0.5 = 1.3,
    # tn = Σ (1 − p)(1 − s) = 0.2 + 0.5 + 1 = 1.7; p_o = 3/5, p_e = (2.0·2.6 + 3.0·2.4)/25 = 0.496,
    # κ = 0.104/0.504, F1 = 2.6/4.6.
    result = reference_metrics(predictions, soft[None, :], unparsed="wrong", n_resamples=50, seed=0)
    assert result.counts[0, 0] == pytest.approx([1.3, 0.7, 1.3, 1.7])
    assert result.point["kappa"][0, 0] == pytest.approx(0.104 / 0.504)
    assert result.point["f1"][0, 0] == pytest.approx(2.6 / 4.6)
    # Tie label 0 (rule "negative"): the tied item's reply becomes 1: tp 1.8, fp 1.2, fn 0.8, tn 1.2.
    negative = reference_metrics(predictions, soft[None, :], unparsed="wrong", soft_tie_label=0.0, n_resamples=50)
    assert negative.counts[0, 0] == pytest.approx([1.8, 1.2, 0.8, 1.2])
    # A threshold of 0.9 cuts 0.8, 0.3 and 0.5 to 0: their replies become 1, p = [1, 1, 1, 1, 0]:
    # tp = 0.8 + 0.3 + 0.5 + 1 = 2.6, fp = 0.2 + 0.7 + 0.5 = 1.4, fn = 0, tn = 1.
    high = reference_metrics(predictions, soft[None, :], unparsed="wrong", soft_threshold=0.9, n_resamples=50)
    assert high.counts[0, 0] == pytest.approx([2.6, 1.4, 0.0, 1.0])
    y_true, y_pred = np.r_[np.ones(5), np.zeros(5)], np.r_[[0, 1, 0, 1, 0], [0, 1, 0, 1, 0]]
    weight = np.r_[soft, 1 - soft]
    assert result.point["kappa"][0, 0] == pytest.approx(cohen_kappa_score(y_true, y_pred, sample_weight=weight))


def test_the_audit_cuts_the_soft_score_with_its_study_s_threshold_and_weighted_tie_rule():
    from auditapp.paradigms.classification.services import _soft_cut

    def settings(**aggregation):
        return {"settings": {"aggregation": aggregation}}

    assert _soft_cut(settings(threshold=0.6, weighted_tie_rule="negative")) == {"soft_threshold": 0.6,
                                                                               "soft_tie_label": 0.0}
    assert _soft_cut(settings(threshold=0.5, weighted_tie_rule="none"))["soft_tie_label"] == 1.0
    assert _soft_cut({}) == {"soft_threshold": 0.5, "soft_tie_label": 1.0}
