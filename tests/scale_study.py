"""A simulated study at the scale of seed 000 (50 annotators × 2,121 items), written with bulk inserts and
analysed by the real analysis, for the dashboard's scale tests and ``benchmarks/dashboard_scale.py``.

Going through the annotator flow (``manage.py simulate_study``) takes minutes at this size; the dashboard only
reads what the analysis stores, so here participants, their scores, IAT D scores and labels are inserted
directly from the same simulation (``annotation.simulation``: traits, items, each participant's labels), and
``study_analysis_compute`` then computes the weights, both ground truths, agreement and item sets as it would
for a real study. Each item is labelled by ``annotators_per_item`` annotators in rotation.
"""
from __future__ import annotations

from datetime import datetime

import numpy as np
from django.utils import timezone

from annotation import simulation
from annotation.models import Item, Label, Participant, Study
from annotation.study_analysis import study_analysis_compute
from psychometrics.models import IATSession, InstrumentScore, StudyInstrument
from psychometrics.services import instruments_sync_shipped


def scale_study(*, n_participants: int = 50, n_items: int = 2121, annotators_per_item: int = 3, seed: int = 1,
                slug: str = "scale", with_scores: bool = True) -> Study:
    """The study, analysed. AQ (0–50) and SATA totals follow the simulated trait and attitude, the IAT D the
    simulated implicit bias; labels are the simulation's own draws for each (annotator, item). Without scores
    no annotator has a weight, so every item lacks a weighted label: the longest list the dashboard can have."""
    traits = simulation.draw_participants(seed, n_participants)
    truth = simulation.draw_items(seed, n_items)
    study = Study.objects.create(
        name=f"Scale study ({n_participants} × {n_items})", slug=slug, status=Study.Status.OPEN, iat_enabled=True,
        label_scheme=Study.LabelScheme.BINARY_WITH_UNRELATED, annotators_per_item=annotators_per_item,
        items_per_annotator=simulation.items_per_annotator(n_items, annotators_per_item, n_participants))
    items = Item.objects.bulk_create(
        [Item(study=study, external_id=f"sim-{n:04d}", position=n, target=f"Simulated sentence {n}.",
              preceding=f"Before {n}.", following=f"After {n}.") for n in range(n_items)], batch_size=1000)
    now = timezone.now()
    people = Participant.objects.bulk_create(
        [Participant(study=study, pseudonym=f"P{i + 1:04d}", team=f"team-{int(traits.team[i]) + 1}",
                     status=Participant.Status.COMPLETED, started_at=now, read_instructions_at=now, completed_at=now)
         for i in range(n_participants)])

    shipped = {instrument.slug: instrument for instrument in instruments_sync_shipped()}
    StudyInstrument.objects.create(study=study, instrument=shipped["aq50"], position=0, role=StudyInstrument.Role.AQ)
    StudyInstrument.objects.create(study=study, instrument=shipped["sata_partial"], position=1,
                                   role=StudyInstrument.Role.SATA)
    if with_scores:
        _scores(people, traits, shipped, now)
    values = np.stack([simulation.participant_labels(traits, i, truth, seed=seed) for i in range(n_participants)])
    Label.objects.bulk_create(
        [Label(participant=people[annotator], item=item, value=int(values[annotator, n]))
         for n, item in enumerate(items)
         for annotator in ((n * annotators_per_item + r) % n_participants for r in range(annotators_per_item))],
        batch_size=2000)
    study_analysis_compute(study_id=study.id)
    return study


def _scores(people: list[Participant], traits: simulation.SimulatedParticipants, shipped: dict,
            now: datetime) -> None:
    """AQ and SATA totals and a finished IAT session with its D score for each participant."""
    aq = np.clip(np.round(20 + 8 * traits.trait), 0, 50)
    sata = np.clip(np.round(12 + 3 * traits.attitude), 5, 20)
    InstrumentScore.objects.bulk_create(
        [InstrumentScore(participant=person, instrument=shipped[slug_], total=float(totals[i]))
         for i, person in enumerate(people) for slug_, totals in (("aq50", aq), ("sata_partial", sata))])
    IATSession.objects.bulk_create(
        [IATSession(participant=person, seed=i, stimuli={}, design=[], blocks_done=7, completed_at=now,
                    d_score=float(traits.implicit_bias[i])) for i, person in enumerate(people)])
