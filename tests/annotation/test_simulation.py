"""Simulated studies: the pure model (``annotation.simulation``) and ``manage.py simulate_study``."""
from __future__ import annotations

import dataclasses
import io

import numpy as np
import pandas as pd
import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from annotation import simulation
from annotation.models import Item, Label, Participant, Study
from annotation.study_analysis import study_analysis_compute
from psychometrics.iat import DEFAULT_STIMULI, build_iat, iat_d_score
from psychometrics.instruments import shipped_instrument
from psychometrics.models import IATSession, IATTrial, InstrumentResponse, InstrumentScore

AQ = shipped_instrument("aq50")
SATA = shipped_instrument("sata_partial")
AQ_KEYS = [AQ.keys[item.key] for item in AQ.items]
SATA_KEYS = [SATA.keys[item.key] for item in SATA.items]


def simulate(**options) -> tuple[Study, str]:
    out = io.StringIO()
    call_command("simulate_study", stdout=out, **options)
    slug = options.get("slug") or f"simulated-{options.get('seed', 1)}"
    return Study.objects.get(slug=slug), out.getvalue()


def snapshot(study: Study) -> dict:
    """Everything the simulation decides, by pseudonym and external id (no database ids)."""
    return {
        "labels": sorted(Label.objects.filter(item__study=study)
                         .values_list("participant__pseudonym", "item__external_id", "value")),
        "scores": sorted(InstrumentScore.objects.filter(participant__study=study)
                         .values_list("participant__pseudonym", "instrument__slug", "total")),
        "iat": sorted(IATSession.objects.filter(participant__study=study)
                      .values_list("participant__pseudonym", "condition_index", "d_score", "d600_score")),
        "teams": sorted(Participant.objects.filter(study=study).values_list("pseudonym", "team", "seed")),
    }


def by_pseudonym(study: Study, **filters) -> list[float]:
    return [value for _, value in sorted(InstrumentScore.objects.filter(participant__study=study, **filters)
                                         .values_list("participant__pseudonym", "total"))]


def iat_rows(design: list[dict], blocks: list[list[dict]]) -> list[dict]:
    return [{"block": block["number"], "pairing": block["pairing"], "error": t["first_key"] != p["correct_key"],
             "latency_first_ms": t["latency_first_ms"], "latency_correct_ms": t["latency_correct_ms"]}
            for block, trials in zip(design, blocks, strict=True)
            for p, t in zip(block["trials"], trials, strict=True)]


# ------------------------------------------------------------------------------------------ the command

@pytest.mark.django_db
def test_command_takes_every_participant_through_the_flow():
    study, out = simulate(participants=6, items=30, seed=3)
    assert (study.status, study.iat_enabled, study.label_scheme) == ("open", True, "binary_unrelated")
    assert (study.annotators_per_item, study.items_per_annotator) == (3, 15)
    assert study.items.count() == 30
    assert Label.objects.filter(item__study=study).count() == 90
    assert set(Item.objects.filter(study=study).values_list("labels__participant", flat=True).distinct()) == set(
        study.participants.values_list("id", flat=True))
    assert {item.labels.count() for item in study.items.all()} == {3}
    people = study.participants.order_by("pseudonym")
    assert [p.pseudonym for p in people] == ["P0001", "P0002", "P0003", "P0004", "P0005", "P0006"]
    assert [p.team for p in people] == ["team-1"] * 3 + ["team-2"] * 3
    assert [p.seed for p in people] == simulation.participant_seeds(3, 6)
    assert all(p.status == Participant.Status.COMPLETED and p.completed_at for p in people)
    for person in people:
        assert IATTrial.objects.filter(participant=person).count() == 200
        assert person.iat.completed_at is not None and person.iat.d_score is not None
        assert sorted(InstrumentScore.objects.filter(participant=person).values_list("instrument__slug", flat=True)) \
            == ["aq50", "sata_partial"]
    assert InstrumentResponse.objects.filter(participant__study=study).count() == 6 * (50 + 5)
    assert sorted(study.study_instruments.values_list("role", flat=True)) == ["aq", "sata"]
    item = study.items.get(external_id="sim-17")
    assert (item.target, item.position) == ("Simulated sentence 17.", 17)
    truth = simulation.draw_items(3, 30)
    assert item.metadata["simulated"]["contested"] == bool(truth.contested[17])
    assert sum(i.metadata["simulated"]["contested"] for i in study.items.all()) == 6
    assert f"Simulated study 'simulated-3' (id {study.pk})" in out
    assert "6 participants in 2 team(s) (6 completed), 30 items, 90 labels" in out
    assert "1200 IAT trials, 12 instrument scores" in out and " s." in out


@pytest.mark.django_db
def test_command_refuses_an_existing_slug_and_bad_options():
    simulate(participants=2, items=4, seed=5, slug="taken")
    with pytest.raises(CommandError, match="already exists"):
        simulate(participants=2, items=4, seed=6, slug="taken")
    with pytest.raises(CommandError, match="teams"):
        simulate(participants=2, items=4, teams=3)
    with pytest.raises(CommandError, match="not a slug"):
        simulate(participants=2, items=4, slug="no spaces")
    assert Study.objects.count() == 1


@pytest.mark.django_db
def test_too_few_participants_or_items_still_complete_everyone():
    # 2 participants cannot give 3 labels per item: each labels every item.
    study, _ = simulate(participants=2, items=5, seed=1, teams=1)
    assert Label.objects.filter(item__study=study).count() == 10
    # 4 participants, 2 items, 1 label each: the last two have nothing to label and are done at once.
    study, _ = simulate(participants=4, items=2, seed=2, annotators_per_item=1, slug="few-items")
    assert Label.objects.filter(item__study=study).count() == 2
    assert set(study.participants.values_list("status", flat=True)) == {Participant.Status.COMPLETED}


@pytest.mark.django_db
def test_a_failure_leaves_no_half_study(monkeypatch):
    def broken(**kwargs):
        raise RuntimeError("boom")

    monkeypatch.setattr("annotation.simulated_participation.instructions_read", broken)
    with pytest.raises(RuntimeError, match="boom"):
        simulate(participants=2, items=4, seed=1)
    assert not Study.objects.exists() and not Participant.objects.exists()


@pytest.mark.django_db
def test_same_seed_same_scores_and_label_values_in_two_studies():
    first, _ = simulate(participants=6, items=30, seed=7, slug="first")
    second, _ = simulate(participants=6, items=30, seed=7, slug="second")
    a, b = snapshot(first), snapshot(second)
    assert a["scores"] == b["scores"] and a["iat"] == b["iat"] and a["teams"] == b["teams"]
    # A participant gives the same item the same label in both studies.
    values_a = {(p, i): v for p, i, v in a["labels"]}
    shared = [(p, i) for p, i, _ in b["labels"] if (p, i) in values_a]
    assert shared and all(values_a[key] == v for p, i, v in b["labels"] if (key := (p, i)) in values_a)
    other, _ = simulate(participants=6, items=30, seed=8, slug="other")
    assert snapshot(other)["scores"] != a["scores"]


@pytest.mark.django_db
def test_same_seed_same_labels_in_two_studies_side_by_side():
    first, _ = simulate(participants=3, items=9, seed=7, slug="first", annotators_per_item=1)
    second, _ = simulate(participants=3, items=9, seed=7, slug="second", annotators_per_item=1)
    assert snapshot(first)["labels"] == snapshot(second)["labels"]


@pytest.mark.django_db
def test_latent_traits_move_the_scores_in_the_intended_direction():
    study, _ = simulate(participants=12, items=12, seed=11, annotators_per_item=1)
    traits = simulation.draw_participants(11, 12)
    d_scores = [d for _, d in sorted(IATSession.objects.filter(participant__study=study)
                                     .values_list("participant__pseudonym", "d_score"))]
    assert np.corrcoef(traits.implicit_bias, d_scores)[0, 1] > 0.5
    assert np.corrcoef(traits.trait, by_pseudonym(study, instrument__slug="aq50"))[0, 1] > 0.5
    assert np.corrcoef(traits.attitude, by_pseudonym(study, instrument__slug="sata_partial"))[0, 1] > 0.3


@pytest.mark.django_db
def test_weighting_changes_the_ground_truth_of_some_items():
    study, _ = simulate(participants=12, items=90, seed=4)
    study_analysis_compute(study_id=study.pk)
    truths = list(Item.objects.filter(study=study).values_list("ground_truth__majority_label",
                                                               "ground_truth__weighted_label"))
    assert len(truths) == 90
    assert any(m is not None and w is not None and m != w for m, w in truths)


# ------------------------------------------------------------------------------------------ pure functions

def test_pure_functions_are_reproducible_from_the_seed():
    people = simulation.draw_participants(5, 20, teams=3)
    again = simulation.draw_participants(5, 20, teams=3)
    for field in dataclasses.fields(people):
        assert np.array_equal(getattr(people, field.name), getattr(again, field.name))
    assert not np.array_equal(people.trait, simulation.draw_participants(6, 20, teams=3).trait)
    assert list(people.team) == [0] * 7 + [1] * 7 + [2] * 6
    assert simulation.participant_seeds(5, 20) == simulation.participant_seeds(5, 20)
    assert len(set(simulation.participant_seeds(5, 20))) == 20
    assert np.array_equal(simulation.aq_answers(people, AQ_KEYS, seed=5), simulation.aq_answers(people, AQ_KEYS, seed=5))
    assert np.array_equal(simulation.sata_answers(people, SATA_KEYS, seed=5),
                          simulation.sata_answers(people, SATA_KEYS, seed=5))
    items = simulation.draw_items(5, 50)
    assert np.array_equal(items.true_ableism, simulation.draw_items(5, 50).true_ableism)
    assert np.array_equal(simulation.participant_labels(people, 3, items, seed=5),
                          simulation.participant_labels(people, 3, items, seed=5))
    design = [dataclasses.asdict(b) for b in build_iat(DEFAULT_STIMULI, condition_index=1, seed=9)]
    assert simulation.iat_trials(design, 0.4, seed=5, participant=2) == simulation.iat_trials(design, 0.4, seed=5,
                                                                                              participant=2)
    assert simulation.iat_trials(design, 0.4, seed=5, participant=2) != simulation.iat_trials(design, 0.4, seed=5,
                                                                                              participant=3)
    assert simulation.answer_times_ms(5, 1, 10) == simulation.answer_times_ms(5, 1, 10)
    assert simulation.items_per_annotator(2121, 3, 50) == 128


def test_questionnaire_answers_follow_the_traits():
    people = simulation.draw_participants(2, 400)
    aq = simulation.aq_answers(people, AQ_KEYS, seed=2)
    sata = simulation.sata_answers(people, SATA_KEYS, seed=2)
    assert aq.shape == (400, 50) and sata.shape == (400, 5)
    assert aq.min() >= 0 and aq.max() <= 3 and sata.min() >= 0 and sata.max() <= 3
    aq_totals = [sum(AQ.keys[item.key][a] for item, a in zip(AQ.items, row, strict=True)) for row in aq]
    sata_totals = [sum(SATA.keys[item.key][a] for item, a in zip(SATA.items, row, strict=True)) for row in sata]
    assert 14 < np.mean(aq_totals) < 26
    assert np.corrcoef(people.trait, aq_totals)[0, 1] > 0.8
    assert np.corrcoef(people.attitude, sata_totals)[0, 1] > 0.6


def test_iat_trials_match_the_design_and_the_latency_model():
    people = simulation.draw_participants(8, 60)
    d_scores, errors, n_trials = [], 0, 0
    for i in range(60):
        design = [dataclasses.asdict(b) for b in build_iat(DEFAULT_STIMULI, condition_index=i, seed=i)]
        blocks = simulation.iat_trials(design, float(people.implicit_bias[i]), seed=8, participant=i)
        for block, trials in zip(design, blocks, strict=True):
            assert [t["index"] for t in trials] == [p["index"] for p in block["trials"]]
            assert [t["stimulus"] for t in trials] == [p["stimulus"] for p in block["trials"]]
            for planned, trial in zip(block["trials"], trials, strict=True):
                assert set(trial) == {"index", "stimulus", "first_key", "modality", "latency_first_ms",
                                      "latency_correct_ms"}
                assert 0 <= trial["latency_first_ms"] <= trial["latency_correct_ms"]
                wrong = trial["first_key"] != planned["correct_key"]
                assert wrong == (trial["latency_correct_ms"] > trial["latency_first_ms"])
                errors += wrong
                n_trials += 1
        d_scores.append(iat_d_score(pd.DataFrame(iat_rows(design, blocks))).d)
    assert 0.04 < errors / n_trials < 0.09
    assert np.corrcoef(people.implicit_bias, d_scores)[0, 1] > 0.6
    assert np.mean(d_scores) > 0


def test_more_biased_annotators_call_contested_items_not_ableist_more_often():
    items = simulation.draw_items(3, 400)
    assert items.contested.sum() == 80 and items.ableist[items.contested].all()
    p = simulation.label_probabilities(np.array([-1.0, 0.0, 1.0]), items)
    assert (np.diff(p[:, items.contested], axis=0) < 0).all()
    # Perspective matters far less on clear items.
    assert np.ptp(p[:, ~items.contested], axis=0).max() < np.ptp(p[:, items.contested], axis=0).mean()
    people = simulation.draw_participants(3, 300)
    labels = np.array([simulation.participant_labels(people, i, items, seed=3) for i in range(300)])
    assert 0.01 < (labels == -1).mean() < 0.03
    said_ableist = (labels[:, items.contested] == 1).mean(axis=1)
    assert np.corrcoef(people.insensitivity, said_ableist)[0, 1] < -0.5
    assert np.corrcoef(people.implicit_bias, said_ableist)[0, 1] < 0
    clear = ~items.contested
    agree = (labels[:, clear] == items.ableist[clear]).mean()
    assert agree > 0.85


def test_items_from_labels_follow_where_annotators_agreed_and_contest_where_they_did_not():
    labels = np.array([[1, 1, 1],     # clear, ableist: +2.5
                       [0, 0, -1],    # clear, not ableist: -2.5 (an unrelated label is no vote)
                       [1, 0, 1],     # contested, ableist as every contested item: 0.2
                       [-1, -1, 0],   # clear, not ableist; most called it unrelated
                       [-1, -1, -1]])  # no 0/1 label: clear, not ableist; unrelated
    items, unrelated = simulation.items_from_labels(labels)
    assert items.ableist.tolist() == [1, 0, 1, 0, 0]
    assert items.contested.tolist() == [False, False, True, False, False]
    assert items.true_ableism.tolist() == [2.5, -2.5, 0.2, -2.5, -2.5]
    assert unrelated.tolist() == [False, False, False, True, True]
    with pytest.raises(ValueError, match="M × K"):
        simulation.items_from_labels(np.array([1, 0]))
