"""Taking simulated participants through a study, by the same services as a real participant's: consent,
``answer_save`` and ``questionnaire_finish`` for the study's AQ-50 and partial SATA, ``iat_session`` and
``iat_block_submit`` for the seven IAT blocks, ``instructions_read`` (which allocates their items) and
``label_submit`` for every assigned item.

What they answer comes from ``annotation.simulation`` (pure, reproducible from a seed), and so does how long they
take: the services stamp each step with the clock, so a simulated participant would take no time at all; their
consent is moved back by the time their simulated answers, IAT trials and labels add up to (plus a minute of reading
the instructions), so the monitor's time per participant reads as a person's. Used by ``manage.py
simulate_study`` (a whole simulated study) and ``manage.py load_demo`` (simulated annotators beside the demo's
imported ones, so its dashboard has weights to show).
"""
from __future__ import annotations

from collections.abc import Mapping
from datetime import timedelta

import numpy as np
from django.db.models import F

from annotation import simulation
from annotation.models import Assignment, Participant
from annotation.participation import instructions_read, label_submit, participant_consent
from psychometrics.models import Instrument
from psychometrics.services import (
    answer_save,
    iat_block_submit,
    iat_session,
    questionnaire_finish,
    questionnaire_session,
)

# Ours, for the simulated timeline: a minute on the instructions, half a minute from the link to the consent.
INSTRUCTIONS_READING_MS = 60_000
LINK_TO_CONSENT = timedelta(seconds=30)


def instrument_answers(traits: simulation.SimulatedParticipants, *, aq: Instrument, sata: Instrument,
                       seed: int) -> dict[Instrument, np.ndarray]:
    """Each simulated participant's chosen response index to every item of the AQ-50 and the partial SATA."""
    return {
        aq: simulation.aq_answers(traits, [aq.parsed.keys[i.key] for i in aq.parsed.items], seed=seed),
        sata: simulation.sata_answers(traits, [sata.parsed.keys[i.key] for i in sata.parsed.items], seed=seed),
    }


def participate(person: Participant, index: int, *, traits: simulation.SimulatedParticipants,
                answers: Mapping[Instrument, np.ndarray], labels: Mapping[int, int], seed: int) -> None:
    """Participant ``index`` of ``traits`` through the whole flow: consent, questionnaires, IAT (when the study runs
    it), instructions, then the label ``labels[item_id]`` for each item they are assigned."""
    participant_consent(participant=person)
    taken_ms = INSTRUCTIONS_READING_MS
    for stream, (instrument, chosen) in enumerate(answers.items()):
        column = {item.number: j for j, item in enumerate(instrument.parsed.items)}
        order = questionnaire_session(participant=person, instrument=instrument).item_order
        times = simulation.answer_times_ms(seed, index, len(order), stream=stream)
        taken_ms += sum(times)
        for number, rt_ms in zip(order, times, strict=True):
            answer_save(participant=person, instrument=instrument, item_number=number,
                        response_index=int(chosen[index, column[number]]), rt_ms=rt_ms)
        questionnaire_finish(participant=person, instrument=instrument)
    if person.study.iat_enabled:
        session = iat_session(participant=person)
        for number, trials in enumerate(simulation.iat_trials(session.design, float(traits.implicit_bias[index]),
                                                              seed=seed, participant=index), start=1):
            taken_ms += sum(trial["latency_correct_ms"] for trial in trials)
            iat_block_submit(participant=person, block_number=number, trials=trials)
    instructions_read(participant=person)
    assigned = list(Assignment.objects.filter(participant=person).order_by("position")
                    .values_list("item_id", flat=True))
    taken_ms += sum(simulation.label_times_ms(seed, index, len(assigned)))
    for item_id in assigned:
        label_submit(participant=person, item_id=item_id, value=int(labels[item_id]))
    taken = timedelta(milliseconds=taken_ms)
    # Earlier, never later: every other stamp of the flow stays between the link's opening, the consent and the end.
    Participant.objects.filter(pk=person.pk, completed_at__isnull=False).update(
        started_at=F("completed_at") - taken, opened_at=F("completed_at") - taken - LINK_TO_CONSENT)
