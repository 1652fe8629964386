"""Withdrawal wins: every participant write path is refused once the withdrawal has committed, even when the
request read the participant before it (a stale instance stands for a request in flight), and nothing of
the participant is stored again. The real race, with concurrent requests against gunicorn and PostgreSQL,
is tests/integration/test_withdrawal_race.py."""
from __future__ import annotations

import pytest
from django.test import Client

from annotation import access
from annotation.models import Assignment, Label, Participant, ParticipantWeight
from annotation.participation import (
    ParticipantWithdrawn,
    instructions_read,
    label_submit,
    participant_complete,
    participant_consent,
    participant_withdraw,
)
from psychometrics.models import (
    IATSession,
    IATTrial,
    Instrument,
    InstrumentResponse,
    InstrumentScore,
    QuestionnaireSession,
)
from psychometrics.services import (
    answer_save,
    iat_block_submit,
    iat_session,
    questionnaire_finish,
    questionnaire_session,
)
from tests.participant.helpers import flow_study, iat_block_posts, invite

pytestmark = pytest.mark.django_db


def _nothing_stored_for(participant: Participant) -> None:
    fresh = Participant.objects.get(pk=participant.pk)
    assert fresh.status == Participant.Status.WITHDRAWN and fresh.withdrawn_at is not None
    for model in (Label, Assignment, InstrumentResponse, InstrumentScore, QuestionnaireSession, IATTrial, IATSession):
        assert not model.objects.filter(participant_id=participant.pk).exists(), model


def _stale_then_withdrawn(participant: Participant) -> Participant:
    """An instance read before the withdrawal, as a request in flight holds it."""
    stale = Participant.objects.select_related("study").get(pk=participant.pk)
    participant_withdraw(participant=Participant.objects.get(pk=participant.pk))
    return stale


def _labelling_participant(**study_options) -> Participant:
    study = flow_study(iat=False, attention_check=False, **study_options)
    study.study_instruments.all().delete()
    (participant,) = invite(study)
    participant_consent(participant=participant)
    instructions_read(participant=participant)
    return participant


def test_consent_after_withdrawal_does_not_reactivate():
    (participant,) = invite(flow_study())
    stale = _stale_then_withdrawn(participant)
    with pytest.raises(ParticipantWithdrawn):
        participant_consent(participant=stale)
    _nothing_stored_for(participant)


def test_instructions_after_withdrawal_allocate_nothing():
    study = flow_study(iat=False)
    study.study_instruments.all().delete()
    (participant,) = invite(study)
    participant_consent(participant=participant)
    stale = _stale_then_withdrawn(participant)
    with pytest.raises(ParticipantWithdrawn):
        instructions_read(participant=stale)
    _nothing_stored_for(participant)


def test_label_after_withdrawal_is_refused():
    participant = _labelling_participant()
    item_id = Assignment.objects.filter(participant=participant).values_list("item_id", flat=True).first()
    stale = _stale_then_withdrawn(participant)
    with pytest.raises(ParticipantWithdrawn):
        label_submit(participant=stale, item_id=item_id, value=1)
    _nothing_stored_for(participant)


def test_completion_after_withdrawal_keeps_the_withdrawal():
    participant = _labelling_participant()
    stale = _stale_then_withdrawn(participant)
    with pytest.raises(ParticipantWithdrawn):
        participant_complete(participant=stale)
    _nothing_stored_for(participant)
    assert Participant.objects.get(pk=participant.pk).completed_at is None


def test_questionnaire_writes_after_withdrawal_are_refused():
    (participant,) = invite(flow_study())
    participant_consent(participant=participant)
    aq = Instrument.objects.get(slug="aq50")
    number = questionnaire_session(participant=participant, instrument=aq).item_order[0]
    stale = _stale_then_withdrawn(participant)
    for write in (lambda: questionnaire_session(participant=stale, instrument=aq),
                  lambda: answer_save(participant=stale, instrument=aq, item_number=number, response_index=0,
                                      rt_ms=900),
                  lambda: questionnaire_finish(participant=stale, instrument=aq)):
        with pytest.raises(ParticipantWithdrawn):
            write()
    _nothing_stored_for(participant)


def test_iat_writes_after_withdrawal_are_refused():
    (participant,) = invite(flow_study())
    participant_consent(participant=participant)
    session = iat_session(participant=participant)
    post = iat_block_posts({"blocks": session.design})[0]
    stale = _stale_then_withdrawn(participant)
    with pytest.raises(ParticipantWithdrawn):
        iat_session(participant=stale)
    with pytest.raises(ParticipantWithdrawn):
        iat_block_submit(participant=stale, block_number=1, trials=post["trials"])
    _nothing_stored_for(participant)


def test_withdrawing_twice_keeps_the_first_withdrawal():
    participant = _labelling_participant()
    stale = _stale_then_withdrawn(participant)
    first = Participant.objects.get(pk=participant.pk).withdrawn_at
    participant_withdraw(participant=stale)
    assert stale.status == Participant.Status.WITHDRAWN
    assert Participant.objects.get(pk=participant.pk).withdrawn_at == first


@pytest.fixture
def request_in_flight(monkeypatch):
    """Make the next participant page see the participant as it was before their withdrawal committed."""
    def hold(stale: Participant) -> None:
        monkeypatch.setattr(access, "participant_by_token", lambda request, token: stale)
    return hold


def test_a_label_post_in_flight_gets_the_withdraw_page_with_410(request_in_flight):
    participant = _labelling_participant()
    item_id = Assignment.objects.filter(participant=participant).values_list("item_id", flat=True).first()
    request_in_flight(_stale_then_withdrawn(participant))
    response = Client().post(f"/p/{participant.invite_token}/label/", {"item": item_id, "value": 1})
    assert response.status_code == 410 and "You have withdrawn" in response.content.decode()
    _nothing_stored_for(participant)


def test_an_autosave_in_flight_gets_410_json(request_in_flight):
    (participant,) = invite(flow_study())
    participant_consent(participant=participant)
    aq = Instrument.objects.get(slug="aq50")
    number = questionnaire_session(participant=participant, instrument=aq).item_order[0]
    request_in_flight(_stale_then_withdrawn(participant))
    response = Client().post(f"/p/{participant.invite_token}/questionnaire/{aq.pk}/answer/",
                             {"item": number, "response": 0, "rt_ms": 800}, content_type="application/json")
    assert response.status_code == 410 and response.json()["withdrawn"] is True
    _nothing_stored_for(participant)


def test_an_iat_block_after_withdrawal_gets_410():
    (participant,) = invite(flow_study())
    participant_consent(participant=participant)
    post = iat_block_posts({"blocks": iat_session(participant=participant).design})[0]
    participant_withdraw(participant=participant)
    response = Client().post(f"/p/{participant.invite_token}/iat/block/", post, content_type="application/json")
    assert response.status_code == 410
    _nothing_stored_for(participant)


def test_withdrawal_deletes_the_scores_the_last_analysis_kept_at_once():
    participant = _labelling_participant()
    ParticipantWeight.objects.create(participant=participant, aq=31, sata=4.2, iat_d=0.4, included=True,
                                     high_aq=True, low_aq=False, low_bias=False, high_bias=True)
    participant_withdraw(participant=participant)
    assert not ParticipantWeight.objects.filter(participant_id=participant.pk).exists()


def test_a_questionnaire_answer_after_withdrawal_gets_410_not_a_redirect():
    # A redirect would be followed by the page's fetch and taken as an acknowledged answer.
    (participant,) = invite(flow_study())
    participant_consent(participant=participant)
    aq = Instrument.objects.get(slug="aq50")
    number = questionnaire_session(participant=participant, instrument=aq).item_order[0]
    participant_withdraw(participant=participant)
    response = Client().post(f"/p/{participant.invite_token}/questionnaire/{aq.pk}/answer/",
                             {"item": number, "response": 0, "rt_ms": 800}, content_type="application/json")
    assert response.status_code == 410 and response.json()["withdrawn"] is True
    _nothing_stored_for(participant)
