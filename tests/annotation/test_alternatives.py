"""Alternative ground truths (annotation.alternatives, the robustness of the weighted label): hand-worked
leave-one-instrument-out weights on the worked example, a planted reliable subgroup recovered by the paper's weights and
Dawid–Skene better than by majority vote, scikit-learn's κ, and crowd-kit's outputs stored unchanged (Dawid–Skene's and
GLAD's, from annotation.dawid_skene and annotation.glad, equal to crowd-kit's own; MACE's, from annotation.mace,
within rounding of crowd-kit's own)."""
from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest
from crowdkit.aggregation import GLAD as CrowdKitGLAD
from crowdkit.aggregation import MACE as CrowdKitMACE
from crowdkit.aggregation import DawidSkene as CrowdKitDawidSkene
from sklearn.metrics import cohen_kappa_score

from annotation import simulation
from annotation.alternatives import ALTERNATIVES, alternative_ground_truths, crowdkit_input, crowdkit_models
from annotation.mace import MACE
from tests.factories import WORKED_EXAMPLE_LABELS, WORKED_EXAMPLE_SCORES

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning:crowdkit")  # crowd-kit 1.4.2 on pandas 3

SCORES = pd.DataFrame([(p, team, aq, sata, d) for p, (team, aq, sata, d) in WORKED_EXAMPLE_SCORES.items()],
                      columns=["participant", "team", "aq", "sata", "iat_d"])
LABELS = pd.DataFrame(WORKED_EXAMPLE_LABELS, columns=["participant", "item", "value"])


@pytest.fixture(scope="module")
def worked():
    return alternative_ground_truths(SCORES, LABELS)


def test_leave_one_instrument_out_weights_equal_the_hand_worked_values(worked):
    # Standardised (eqs. 1–3): AQ 0, 1/3, 2/3, 1; SATA 0, 1, 1/2, 0; IAT 1/3, 1, 2/3, 0 (P1..P4; teams a = P1, P2
    # and b = P3, P4).
    # AQ + SATA: R = 0, 2/3, 7/12, 1/2; team a mean 1/3 -> W = 0, 2; team b mean 13/24 -> W = 14/13, 12/13.
    # AQ + IAT:  R = 1/6, 2/3, 2/3, 1/2; team a mean 5/12 -> W = 2/5, 8/5; team b mean 7/12 -> W = 8/7, 6/7.
    # SATA + IAT: R = 1/6, 1, 7/12, 0; team a mean 7/12 -> W = 2/7, 12/7; team b mean 7/24 -> W = 2, 0.
    # No team normalisation: W = R of all three = 1/9, 7/9, 11/18, 1/3.
    weights = worked.weights.set_index("participant")
    assert weights["loo_aq_sata"].tolist() == pytest.approx([0, 2, 14 / 13, 12 / 13])
    assert weights["loo_aq_iat"].tolist() == pytest.approx([2 / 5, 8 / 5, 8 / 7, 6 / 7])
    assert weights["loo_sata_iat"].tolist() == pytest.approx([2 / 7, 12 / 7, 2, 0])
    assert weights["no_team_norm"].tolist() == pytest.approx([1 / 9, 7 / 9, 11 / 18, 1 / 3])
    assert weights["weighted"].tolist() == pytest.approx([1 / 4, 7 / 4, 22 / 17, 12 / 17])  # the paper's, unchanged


def test_labels_follow_eq_6_under_each_weighting(worked):
    labels = worked.labels.set_index("item")
    # x: P1 = 1, P2 = 0, P3 = 1.  AQ + SATA: ŷ = (0 + 14/13) / (0 + 2 + 14/13) = 14/40 = 0.35 -> 0.
    # SATA + IAT: ŷ = (2/7 + 2) / (2/7 + 12/7 + 2) = 16/28 = 4/7 -> 1 (flips against the paper's 0).
    # Equal weights: ŷ = 2/3 -> 1.  Majority: 2 of 3 -> 1.
    assert labels.loc["x", ["weighted", "loo_aq_sata", "loo_sata_iat", "equal_weights", "majority"]].tolist() == [
        0, 0, 1, 1, 1]
    # y: P2 = 1, P4 = 0, a tie by count: majority has no label (tie rule "none"), equal weights ŷ = 0.5 -> 1.
    assert np.isnan(labels.loc["y", "majority"]) and labels.loc["y", "equal_weights"] == 1
    assert labels.loc["x", "soft"] == pytest.approx(0.46875)  # the paper's ŷ (15/32), stored as the soft label
    flipped = worked.flipped
    assert set(flipped.loc[flipped["alternative"] == "loo_sata_iat", "item"]) == {"x"}


def test_summary_kappa_and_agreement_equal_scikit_learn(worked):
    labels = worked.labels.set_index("item")
    summary = worked.summary.set_index("alternative")
    assert list(summary.index) == [a.name for a in ALTERNATIVES]
    for name in ("loo_sata_iat", "equal_weights", "dawid_skene"):
        both = labels[["weighted", name]].dropna()
        assert summary.at[name, "kappa"] == pytest.approx(cohen_kappa_score(both["weighted"], both[name]))
        assert summary.at[name, "share_differ"] == pytest.approx((both["weighted"] != both[name]).mean())
        assert worked.agreement.at["weighted", name] == pytest.approx(summary.at[name, "kappa"])
    assert summary.at["majority", "n_undefined"] == 2  # y and z are majority ties: no label to compare


def _planted_study(seed: int = 3, n_annotators: int = 30, n_items: int = 600, per_item: int = 5):
    """A study whose truth is known: the third of the annotators lowest in the simulation's insensitivity (more
    autistic traits, a more positive attitude, less implicit bias) label correctly 92% of the time; the others call
    a truly ableist item ableist only half the time and a non-ableist one correctly 80% of the time. Scores follow
    the latent traits, so reliability correlates with the psychometrics."""
    people = simulation.draw_participants(seed, n_annotators, teams=2)
    items = simulation.draw_items(seed, n_items)
    rng = np.random.default_rng(seed)
    reliable = people.insensitivity <= np.quantile(people.insensitivity, 1 / 3)
    rows = []
    for item in range(n_items):
        truth = items.ableist[item]
        for annotator in rng.choice(n_annotators, per_item, replace=False):
            if reliable[annotator]:
                label = truth if rng.random() < 0.92 else 1 - truth
            else:
                label = int(rng.random() < (0.5 if truth else 0.2))
            rows.append((f"A{annotator:02d}", f"i{item:04d}", label))
    scores = pd.DataFrame({"participant": [f"A{i:02d}" for i in range(n_annotators)], "team": people.team,
                           "aq": 20 + 7 * people.trait, "sata": 70 + 10 * people.attitude,
                           "iat_d": people.implicit_bias})
    truth = pd.Series(items.ableist, index=[f"i{i:04d}" for i in range(n_items)])
    return scores, pd.DataFrame(rows, columns=["participant", "item", "value"]), truth


def test_paper_weights_and_dawid_skene_recover_a_planted_reliable_subgroup_better_than_majority_vote():
    scores, labels, truth = _planted_study()
    result = alternative_ground_truths(scores, labels).labels.set_index("item")
    agreement = {name: float((result[name].dropna() == truth.reindex(result[name].dropna().index)).mean())
                 for name in ("majority", "weighted", "dawid_skene", "glad", "mace", "equal_weights")}
    print("agreement with the planted truth:", {k: round(v, 3) for k, v in agreement.items()})
    assert agreement["weighted"] > agreement["majority"]
    assert agreement["dawid_skene"] > agreement["majority"]


def analyse_with_alternatives(study_id: int):
    """The study's analysis, then its alternatives' task run here (a worker runs it after the analysis commits)."""
    from annotation.study_analysis import study_analysis_compute
    from tasks.analysis import study_alternatives_compute_task

    run = study_analysis_compute(study_id=study_id)
    assert study_alternatives_compute_task(run.id) == "stored"
    run.refresh_from_db()
    return run


@pytest.mark.django_db
def test_the_alternatives_task_stores_crowd_kit_outputs_unchanged():
    from tests.factories import make_worked_example_study

    study = make_worked_example_study()
    run = analyse_with_alternatives(study.id)
    assert run.alternatives_status == "ready" and run.alternatives_computed_at >= run.computed_at
    stored = run.alternatives["crowdkit"]
    data = crowdkit_input(LABELS)
    models = {name: model.fit(data) for name, model in crowdkit_models(stored["seed"]).items()}
    for name, model in models.items():
        assert stored[name]["labels"] == {task: int(label) for task, label in model.labels_.items()}
        assert np.array_equal(np.array(stored[name]["probas"]["values"]), model.probas_.to_numpy())
        assert stored[name]["probas"]["tasks"] == list(model.probas_.index)
        assert run.alternatives["labels"][name] == [float(model.labels_[item]) for item in run.alternatives["items"]]
    assert np.array_equal(np.array(stored["mace"]["spamming"]), models["mace"].spamming_)
    assert np.array_equal(np.array(stored["mace"]["thetas"]), models["mace"].thetas_)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)  # crowd-kit's inplace= on pandas 3
        dawid_skene = CrowdKitDawidSkene(n_iter=100, tol=1e-5).fit(data)
        glad = CrowdKitGLAD(n_iter=100, tol=1e-5).fit(data)
    # Dawid–Skene and GLAD are annotation.dawid_skene's and annotation.glad's: crowd-kit's own, with the same
    # settings, gives the same fit, bit for bit.
    for name, reference in (("dawid_skene", dawid_skene), ("glad", glad)):
        assert stored[name]["labels"] == {task: int(label) for task, label in reference.labels_.items()}
        assert stored[name]["probas"]["values"] == reference.probas_.to_numpy().tolist()
        assert stored[name]["probas"]["classes"] == list(reference.probas_.columns)
        assert stored[name]["priors"] == {str(c): float(p) for c, p in reference.priors_.items()}
    assert stored["dawid_skene"]["errors"]["values"] == dawid_skene.errors_.to_numpy().tolist()
    assert stored["dawid_skene"]["errors"]["index"] == [[w, int(c)] for w, c in dawid_skene.errors_.index]
    assert stored["glad"]["alphas"] == {w: float(a) for w, a in glad.alphas_.items()}
    assert stored["glad"]["betas"] == {t: float(b) for t, b in glad.betas_.items()}
    # MACE is annotation.mace's; crowd-kit's own, with the same settings and seed, gives the same fit. Close, not
    # equal: pandas' groupby sums round differently from annotation.mace's np.bincount, in the last bits.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)  # crowd-kit's inplace= on pandas 3
        reference = CrowdKitMACE(n_restarts=10, n_iter=50, method="vb", default_noise=0.5, alpha=0.5, beta=0.5,
                                 random_state=np.random.RandomState(stored["seed"])).fit(data)
    assert stored["mace"]["labels"] == {task: int(label) for task, label in reference.labels_.items()}
    assert stored["mace"]["probas"]["tasks"] == list(reference.probas_.index)
    assert stored["mace"]["probas"]["classes"] == list(reference.probas_.columns)
    for stored_values, values in ((stored["mace"]["probas"]["values"], reference.probas_.to_numpy()),
                                  (stored["mace"]["spamming"], reference.spamming_),
                                  (stored["mace"]["thetas"], reference.thetas_)):
        np.testing.assert_allclose(np.array(stored_values), values, rtol=1e-9, atol=1e-12)


@pytest.mark.django_db
def test_the_study_dashboard_shows_the_robustness_section(staff_client):
    from tests.factories import make_worked_example_study

    study = make_worked_example_study()
    analyse_with_alternatives(study.id)
    page = staff_client.get(f"/studies/{study.id}/dashboard/").content.decode()
    assert 'id="robustness"' in page and 'id="chart-robustness-agreement"' in page
    for alternative in ALTERNATIVES:
        assert f'data-alternative="{alternative.name}"' in page
    # SATA + IAT flips x (worked above); the flipped row shows x's labels and links to them in the admin.
    flipped = page[page.index('<details class="flipped" data-alternative="loo_sata_iat"'):]
    flipped = flipped[:flipped.index("</details>")]
    assert "1 flipped item" in flipped and "P1: 1" in flipped and "P2: 0" in flipped and "P3: 1" in flipped
    assert f"/admin/annotation/label/?item__study__id__exact={study.id}&amp;q=x" in flipped


@pytest.mark.django_db
def test_the_alternatives_export_names_a_wrong_table_and_needs_a_researcher(api_client, client):
    from tests.factories import make_worked_example_study

    study = make_worked_example_study()
    url = f"/api/studies/{study.id}/ground-truth-alternatives/"
    nothing = api_client.get(url)  # not an empty table: no analysis yet, said so
    assert nothing.status_code == 404 and nothing.json()["status"] == "none"
    answer = api_client.get(url + "?table=everything")
    assert answer.status_code == 400 and "everything" in answer.json()["table"][0]
    assert client.get(url).status_code in (401, 403)


def test_labels_of_one_class_or_none_give_every_alternative_without_error():
    one_class = alternative_ground_truths(SCORES, LABELS.assign(value=LABELS["value"].where(LABELS["value"] < 0, 1)))
    assert "every 0/1 label is 1: crowd-kit's models can only return that class" in one_class.notes
    assert set(one_class.labels["dawid_skene"].dropna()) == {1.0}
    nothing = alternative_ground_truths(SCORES, LABELS.assign(value=-1))
    assert nothing.labels[["weighted", "dawid_skene", "mace"]].isna().all().all()
    assert "mace: no 0/1 labels, no model fitted" in nothing.notes


def test_mace_restarts_start_from_different_draws_and_the_recorded_seed_reproduces_the_fit():
    data = crowdkit_input(_planted_study(n_annotators=8, n_items=60)[1])
    starts = []
    original = MACE._initialize

    def recording(self, *args):
        drawn = original(self, *args)
        starts.append(drawn[1].copy())
        return drawn

    mace = crowdkit_models(7)["mace"]
    mace._initialize = recording.__get__(mace)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        mace.fit(data)
        again = crowdkit_models(7)["mace"].fit(data)
    assert len(starts) == 10 and len({start.tobytes() for start in starts}) == 10, "ten different starts"
    assert again.probas_.equals(mace.probas_) and again.labels_.equals(mace.labels_)


def test_the_settings_record_crowd_kits_tie_rule_and_no_unused_mace_smoothing(worked):
    assert "idxmax" in worked.settings["crowdkit_tie_rule"] and "first column" in worked.settings["crowdkit_tie_rule"]
    mace = next(a for a in worked.settings["alternatives"] if a["name"] == "mace")
    assert "smoothing" not in mace["description"] and "RandomState(seed)" in mace["description"]


def test_a_leave_one_instrument_out_weighting_that_adds_annotators_says_so_beside_the_results():
    # P3 has no IAT: the paper's weights (rule "exclude") leave P3 out, AQ + SATA weights P3.
    scores = SCORES.assign(iat_d=SCORES["iat_d"].where(SCORES["participant"] != "P3"))
    result = alternative_ground_truths(scores, LABELS)
    weights = result.weights.set_index("participant")
    assert np.isnan(weights.at["P3", "weighted"]) and not np.isnan(weights.at["P3", "loo_aq_sata"])
    assert ("loo_aq_sata: also weights 1 annotator(s) without an IAT score, whom the paper's weights exclude (P3): "
            "its difference from the paper's label changes the annotators as well as the instruments") in result.notes
    assert not any(note.startswith(("loo_aq_iat: also", "loo_sata_iat: also")) for note in result.notes)
    assert not any("also weights" in note for note in alternative_ground_truths(scores, LABELS,
                                                                                missing="average").notes)
