"""The label pages' reads in SQL (annotation.page_reads) against the ORM queries they stand for, state by state:
the same participant and study, the same step of the flow, the same facts for a write, the same next sentence."""
from __future__ import annotations

import dataclasses
from datetime import timedelta

import pytest
from django.db.models import Exists, OuterRef
from django.utils import timezone

from annotation import page_reads
from annotation.models import Assignment, Label, Participant, Study
from annotation.participation import (
    Step,
    flow_facts_read_with,
    instructions_read,
    label_skip,
    label_submit,
    next_step,
    participant_consent,
    step_position,
)
from psychometrics.models import IATSession, Instrument, QuestionnaireSession, StudyInstrument
from psychometrics.services import iat_session, iat_stimuli_for
from tests.participant.helpers import flow_study, invite, labelling_study

pytestmark = pytest.mark.django_db


def fields(instance) -> dict:
    return {field.attname: getattr(instance, field.attname) for field in type(instance)._meta.concrete_fields}


def step_both_ways(participant: Participant):
    """The step the page lookup routes to, and the one the ORM queries give for the same participant."""
    read = page_reads.participant_for_page(participant.invite_token)
    orm = Participant.objects.get(pk=participant.pk)
    assert fields(read) == fields(orm)
    assert fields(read.study) == fields(Study.objects.get(pk=participant.study_id))
    # The labelling pages' "Step n of m", counted from the facts, is the one the study's flow gives.
    for labelling in (Step("instructions"), Step("label")):
        assert (step_position(participant=read, step=labelling, facts=flow_facts_read_with(read))
                == step_position(participant=orm, step=labelling))
    return next_step(read, facts=flow_facts_read_with(read)), next_step(orm)


def test_the_page_lookup_routes_every_step_of_the_flow_as_the_orm_queries_do():
    study = flow_study()
    # A JSON field, read back as the ORM reads it.
    study.iat_stimuli = {**dataclasses.asdict(iat_stimuli_for(study)), "target_b_label": "Nicht autistisch ü"}
    study.save(update_fields=["iat_stimuli"])
    (participant,) = invite(study)
    aq, sata = (setting.instrument for setting in study.study_instruments.order_by("position"))
    seen = [step_both_ways(participant)]
    participant_consent(participant=participant)
    seen.append(step_both_ways(participant))
    started = QuestionnaireSession.objects.create(participant=participant, instrument=aq, item_order=[1])
    seen.append(step_both_ways(participant))  # started is not finished
    QuestionnaireSession.objects.filter(pk=started.pk).update(completed_at=timezone.now())
    seen.append(step_both_ways(participant))
    QuestionnaireSession.objects.create(participant=participant, instrument=sata, item_order=[1],
                                        completed_at=timezone.now())
    seen.append(step_both_ways(participant))
    iat_session(participant=participant)
    seen.append(step_both_ways(participant))
    IATSession.objects.filter(participant=participant).update(completed_at=timezone.now())
    seen.append(step_both_ways(participant))
    instructions_read(participant=participant)
    seen.append(step_both_ways(participant))
    # An instrument added while they label sends them to it, both ways.
    another = Instrument.objects.get(slug="aq50")
    another.pk, another.slug, another.content_hash = None, "aq50-again", "0" * 64
    another.save()
    StudyInstrument.objects.create(study=study, instrument=another, position=2)
    seen.append(step_both_ways(participant))
    StudyInstrument.objects.filter(instrument=another).delete()
    Participant.objects.filter(pk=participant.pk).update(completed_at=timezone.now(), status="completed")
    seen.append(step_both_ways(participant))
    assert [page for page, _ in seen] == [orm for _, orm in seen]
    assert [(step.kind, step.instrument_id) for step, _ in seen] == [
        ("consent", None), ("questionnaire", aq.pk), ("questionnaire", aq.pk), ("questionnaire", sata.pk),
        ("iat", None), ("iat", None), ("instructions", None), ("label", None),
        ("questionnaire", another.pk), ("done", None)]


def test_an_unknown_link_reads_no_participant():
    assert page_reads.participant_for_page("no-such-token") is None


def orm_write_facts(assignment: Assignment, due) -> tuple[bool, bool, bool]:
    participant_id, item_id = assignment.participant_id, assignment.item_id
    labelled = Label.objects.filter(participant_id=participant_id, item_id=OuterRef("item_id"))
    pending = (Assignment.objects.filter(participant_id=participant_id, skipped_at__isnull=True)
               .exclude(Exists(labelled)).exclude(item_id=item_id))
    return (Label.objects.filter(participant_id=participant_id, item_id=item_id).exists(), pending.exists(),
            Assignment.objects.filter(participant_id=participant_id, expires_at__lt=due).exists())


def test_what_a_label_write_reads_agrees_with_the_orm_for_every_sentence():
    study = labelling_study(n_items=4, per_annotator=4)
    (participant,) = invite(study)
    participant_consent(participant=participant)
    instructions_read(participant=participant)
    first, second, third, fourth = Assignment.objects.filter(participant=participant).order_by("position")
    for done in (second, third):
        label_submit(participant=participant, item_id=done.item_id, value=1)
    label_skip(participant=participant, item_id=fourth.item_id, reason="cannot judge")
    expiry = Assignment.objects.get(pk=first.pk).expires_at
    checked = []
    for due in (expiry, expiry + timedelta(microseconds=1)):
        for assignment in (first, second, third, fourth):
            read = page_reads.assignment_for_write(participant_id=participant.pk, item_id=assignment.item_id,
                                                   due=due)
            assert fields(read) == fields(Assignment.objects.get(pk=assignment.pk))
            facts = (read.labelled, read.others_pending, read.expiry_due)
            assert facts == orm_write_facts(assignment, due)
            checked.append(facts)
    # The cases are all there: labelled or not, others left or not, expiry due or not.
    assert {facts[0] for facts in checked} == {facts[1] for facts in checked} == {facts[2] for facts in checked} == {
        True, False}
    assert page_reads.assignment_for_write(participant_id=participant.pk, item_id=-1, due=expiry) is None


def orm_next_sentence(participant: Participant):
    labelled = Exists(Label.objects.filter(participant=participant, item_id=OuterRef("item_id")))
    assignments = Assignment.objects.filter(participant=participant).annotate(labelled=labelled)
    finished = [a for a in assignments if a.labelled or a.skipped_at is not None]
    following = (Assignment.objects.filter(participant=participant, skipped_at__isnull=True).exclude(labelled)
                 .order_by("position").first())
    if following is None:
        return None
    previous = max((a.position for a in finished if a.position < following.position), default=None)
    return following.pk, following.item.target, assignments.count(), len(finished), previous


def test_the_next_sentence_and_its_counts_agree_with_the_orm_whatever_the_order_of_the_answers():
    study = labelling_study(n_items=5, per_annotator=5)
    (participant,) = invite(study)
    participant_consent(participant=participant)
    instructions_read(participant=participant)
    in_order = list(Assignment.objects.filter(participant=participant).order_by("position"))
    answers = [("label", 2), ("skip", 0), ("label", 1), ("label", 4), ("label", 0), ("skip", 3)]
    seen = []
    for action, position in [(None, None), *answers]:
        if action == "label":
            label_submit(participant=participant, item_id=in_order[position].item_id, value=1)
        elif action == "skip":
            label_skip(participant=participant, item_id=in_order[position].item_id, reason="cannot judge")
        read = page_reads.next_sentence(participant_id=participant.pk)
        expected = orm_next_sentence(participant)
        seen.append(None if read is None else (read.assignment.pk, read.assignment.item.target, read.total,
                                               read.done, read.previous_position))
        assert seen[-1] == expected
    assert [None if s is None else (s[3], s[4]) for s in seen] == [
        (0, None), (1, None), (2, 0), (3, 2), (4, 2), (4, 2), None]  # labelling a skipped one: still done
