"""A study with a participant at every step of its flow, put there by the participant services (as the pages
do), for the study monitor's tests (tests/annotation/test_monitor.py, tests/browser/test_study_monitor.py).

Flow: consent → AQ-50 → partial SATA → IAT → labelling; 6 items, 2 labels wanted per item, 4 items per
annotator, one attention check (answer 0). Where each participant stands:

    P0001  invited, never opened their link         P0007  finished the IAT, at the labelling instructions
    P0002  opened their link, at the consent page   P0008  labelling: one label given
    P0003  declined consent                         P0009  completed in 20 min, attention check right
    P0004  consented, answering the AQ-50           P0010  completed in 35 min, attention check wrong
    P0005  finished the AQ-50, answering the SATA   P0011  finished the AQ-50, then withdrew
    P0006  finished the SATA, taking the IAT        A1     imported with a data file: labels on items i0 and i1

So the funnel reads: invited 11, opened 10, consented 8, finished AQ-50 6, SATA 5, IAT 4, started labelling 3,
completed 2; one now at each step (two completed), one declined, one withdrawn, one imported.
"""
from __future__ import annotations

from datetime import timedelta

from django.utils import timezone

from annotation import simulation
from annotation.models import Assignment, Item, Label, Participant, Study
from annotation.participation import (
    instructions_read,
    label_submit,
    participant_consent,
    participant_decline,
    participant_opened,
    participant_withdraw,
    participants_invite,
)
from psychometrics.models import Instrument, StudyInstrument
from psychometrics.services import (
    answer_save,
    iat_block_submit,
    iat_session,
    questionnaire_finish,
    questionnaire_session,
)

COMPLETION_MINUTES = {"P0009": 20, "P0010": 35}


def _finish_questionnaire(participant: Participant, instrument: Instrument) -> None:
    for number in questionnaire_session(participant=participant, instrument=instrument).item_order:
        answer_save(participant=participant, instrument=instrument, item_number=number, response_index=0, rt_ms=900)
    questionnaire_finish(participant=participant, instrument=instrument)


def _take_iat(participant: Participant, index: int) -> None:
    session = iat_session(participant=participant)
    for number, trials in enumerate(simulation.iat_trials(session.design, 0.2, seed=7, participant=index), start=1):
        iat_block_submit(participant=participant, block_number=number, trials=trials)


def _label_everything(participant: Participant, *, check_value: int) -> None:
    for item_id, check in (Assignment.objects.filter(participant=participant).order_by("position")
                           .values_list("item_id", "item__attention_check_answer")):
        label_submit(participant=participant, item_id=item_id, value=1 if check is None else check_value)


def make_monitor_study(**fields) -> Study:
    """The study of the module docstring (``fields`` override the Study's, e.g. its name)."""
    study = Study.objects.create(**{
        "name": "Monitor", "slug": "monitor", "status": Study.Status.OPEN, "iat_enabled": True,
        "items_per_annotator": 4, "annotators_per_item": 2, "content_warning": "Some sentences hurt.", **fields})
    Item.objects.bulk_create([Item(study=study, external_id=f"i{n}", target=f"Target {n}.", position=n)
                              for n in range(6)])
    Item.objects.create(study=study, external_id="check", target="Choose 'not ableist'.", attention_check_answer=0,
                        position=6)
    aq, sata = Instrument.objects.get(slug="aq50"), Instrument.objects.get(slug="sata_partial")
    StudyInstrument.objects.create(study=study, instrument=aq, position=0, role="aq")
    StudyInstrument.objects.create(study=study, instrument=sata, position=1, role="sata")

    people = {p.pseudonym: p for p in participants_invite(study=study, count=11)}
    participant_opened(participant=people["P0002"])
    participant_decline(participant=people["P0003"])
    for index, pseudonym in enumerate(("P0004", "P0005", "P0006", "P0007", "P0008", "P0009", "P0010", "P0011")):
        person = people[pseudonym]
        participant_consent(participant=person)
        if pseudonym == "P0004":
            continue
        _finish_questionnaire(person, aq)
        if pseudonym in ("P0005", "P0011"):
            continue
        _finish_questionnaire(person, sata)
        if pseudonym == "P0006":
            continue
        _take_iat(person, index)
        if pseudonym == "P0007":
            continue
        instructions_read(participant=person)
        if pseudonym == "P0008":
            first = Assignment.objects.filter(participant=person, item__attention_check_answer__isnull=True).first()
            label_submit(participant=person, item_id=first.item_id, value=1)
            continue
        _label_everything(person, check_value=0 if pseudonym == "P0009" else 1)
    participant_withdraw(participant=people["P0011"])

    now = timezone.now()
    for pseudonym, minutes in COMPLETION_MINUTES.items():
        Participant.objects.filter(pk=people[pseudonym].pk).update(started_at=now - timedelta(minutes=minutes),
                                                                   completed_at=now)
    imported = Participant.objects.create(study=study, pseudonym="A1", status=Participant.Status.IMPORTED)
    Label.objects.bulk_create([Label(participant=imported, item=item, value=0)
                               for item in Item.objects.filter(study=study, external_id__in=("i0", "i1"))])
    return study
