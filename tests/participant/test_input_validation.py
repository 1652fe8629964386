"""What the browser sends is checked at the boundary: crafted numbers, shapes and characters get a clear 4xx
naming the field and store nothing; the IAT trials export survives a non-finite latency."""
from __future__ import annotations

import json
import math

import pytest
from django.test import Client

from annotation.models import Label, Participant
from annotation.participation import instructions_read, participant_consent
from common.participant_input import InputError, PageWrite, json_object
from psychometrics.models import IATTrial, Instrument, InstrumentResponse
from psychometrics.page_input import iat_block_post, questionnaire_answer
from psychometrics.services import IATBlockRejected, iat_block_submit, iat_session, questionnaire_session
from tests.participant.helpers import (
    consent_and_finish_questionnaires,
    flow_study,
    iat_block_posts,
    invite,
    page_config,
)


def test_json_numbers_that_are_not_finite_are_refused_by_name():
    for body in (b'{"item": 1, "response": 0, "rt_ms": 1e400}', b'{"item": 1, "response": 0, "rt_ms": NaN}',
                 b'{"item": 1, "response": 0, "rt_ms": -Infinity}'):
        with pytest.raises(InputError, match=r"rt_ms: .* is not a finite number"):
            questionnaire_answer(body)
    with pytest.raises(InputError, match="rt_ms"):
        questionnaire_answer(b'{"item": 1, "response": 0, "rt_ms": 1e12}')
    with pytest.raises(InputError, match="item"):
        questionnaire_answer(b'{"item": true, "response": 0}')
    assert questionnaire_answer(b'{"item": 3, "response": 1, "rt_ms": 812.4}').rt_ms == 812.4


def test_an_autosave_names_its_page_by_an_id_and_a_count_or_not_at_all():
    given = questionnaire_answer(b'{"item": 3, "response": 1, "writer": "5f0c-9a", "seq": 12}')
    assert (given.page.writer, given.page.seq) == ("5f0c-9a", 12)
    assert questionnaire_answer(b'{"item": 3, "response": 1}').page == PageWrite(writer="", seq=0)
    for body, field in ((b'{"item": 3, "response": 1, "writer": "a b"}', "writer"),
                        (b'{"item": 3, "response": 1, "writer": 7}', "writer"),
                        (b'{"item": 3, "response": 1, "writer": "' + b"x" * 65 + b'"}', "writer"),
                        (b'{"item": 3, "response": 1, "seq": -1}', "seq"),
                        (b'{"item": 3, "response": 1, "seq": 2.5}', "seq"),
                        (b'{"item": 3, "response": 1, "seq": 2147483648}', "seq")):
        with pytest.raises(InputError, match=field):
            questionnaire_answer(body)


def test_bodies_that_are_not_objects_or_nested_too_deep_are_refused():
    for body in (b"[1, 2]", b'"text"', b"\xff\xfe", b"[" * 100_000 + b"]" * 100_000,
                 b'{"a": ' * 30 + b"1" + b"}" * 30):
        with pytest.raises(InputError, match="body"):
            json_object(body)


def test_iat_trials_must_be_objects_with_finite_latencies():
    trial = {"stimulus": "x", "first_key": "e", "modality": "keyboard", "latency_first_ms": 500,
             "latency_correct_ms": 500}
    with pytest.raises(InputError, match=r"trials\[1\]"):
        iat_block_post(b'{"block": 1, "trials": [%s, 7]}' % str(trial).replace("'", '"').encode())
    with pytest.raises(InputError, match=r"trials\[0\].latency_correct_ms"):
        iat_block_post(b'{"block": 1, "trials": [{"stimulus": "x", "first_key": "e", "modality": "touch", '
                       b'"latency_first_ms": 1, "latency_correct_ms": 1e400}]}')
    with pytest.raises(InputError, match="trials"):
        iat_block_post(b'{"block": 1, "trials": {"0": 1}}')


def test_iat_trials_must_say_how_they_were_answered():
    for modality in (None, "", "mouse", "Touch", 1):
        trial = {"stimulus": "x", "first_key": "e", "latency_first_ms": 500, "latency_correct_ms": 500}
        if modality is not None:
            trial["modality"] = modality
        with pytest.raises(InputError, match=r"trials\[0\]\.modality: must be one of keyboard, touch"):
            iat_block_post(json.dumps({"block": 1, "trials": [trial]}).encode())
    for modality in ("keyboard", "touch"):
        trial = {"stimulus": "x", "first_key": "e", "modality": modality, "latency_first_ms": 5, "latency_correct_ms": 5}
        assert iat_block_post(json.dumps({"block": 1, "trials": [trial]}).encode()).trials[0]["modality"] == modality


@pytest.fixture
def at_the_iat(db):
    study = flow_study()
    (participant,) = invite(study)
    client = Client()
    base = consent_and_finish_questionnaires(client, participant)
    posts = iat_block_posts(page_config(client.get(base + "iat/").content.decode()))
    return client, base, posts, participant


@pytest.mark.django_db
@pytest.mark.parametrize("latency", ["1e400", "Infinity", "NaN", "-1", "3600001"])
def test_an_iat_block_with_a_crafted_latency_is_400_and_nothing_is_stored(at_the_iat, latency, api_client):
    client, base, posts, participant = at_the_iat
    trials = [{**t, "latency_correct_ms": "LATENCY"} for t in posts[0]["trials"]]
    body = str({"block": 1, "trials": trials}).replace("'", '"').replace('"LATENCY"', latency, 1)
    body = body.replace('"LATENCY"', "600")
    response = client.post(base + "iat/block/", body, content_type="application/json")
    assert response.status_code == 400 and "trials[0].latency_correct_ms" in response.json()["error"]
    assert not IATTrial.objects.filter(participant=participant).exists()
    export = api_client.get(f"/api/studies/{participant.study_id}/iat-trials/")
    assert export.status_code == 200 and export.json()["count"] == 0


@pytest.mark.django_db
@pytest.mark.parametrize(("key", "value", "field"), [('"stimulus"', '"a\\u0000b"', "trials[0].stimulus"),
                                                     ('"first_key"', '"\\udc00"', "trials[0].first_key"),
                                                     ('"extra"', "NaN", "trials[0].extra"),
                                                     ('"a\\u0000b"', "1", "trials[0].a\\x00b")])
def test_an_iat_trial_holding_what_no_column_takes_anywhere_is_400_naming_it(at_the_iat, key, value, field):
    """Every value of a participant's body is checked as it is read, by the rules of the API's bodies: a NUL
    character, a lone surrogate or a number that is not finite is named by its place (before, such a stimulus was a
    409 naming no field, and a member nothing reads was taken)."""
    client, base, posts, participant = at_the_iat
    trials = [dict(trial) for trial in posts[0]["trials"]]
    trials[0]["KEY"] = "VALUE"
    body = json.dumps({"block": 1, "trials": trials}).replace('"KEY"', key, 1).replace('"VALUE"', value, 1)
    response = client.post(base + "iat/block/", body, content_type="application/json")
    assert response.status_code == 400, response.content
    assert f"{field}: " in response.json()["error"]
    assert not IATTrial.objects.filter(participant=participant).exists()


@pytest.mark.django_db
def test_iat_trials_that_are_not_objects_are_400(at_the_iat):
    client, base, _, participant = at_the_iat
    for trials in ([1] * 20, ["a"] * 20, [[]] * 20, None):
        response = client.post(base + "iat/block/", {"block": 1, "trials": trials}, content_type="application/json")
        assert response.status_code == 400, response.content
        assert "trials" in response.json()["error"]
    assert not IATTrial.objects.filter(participant=participant).exists()


@pytest.mark.django_db
def test_the_service_itself_refuses_an_infinite_latency():
    study = flow_study()
    (participant,) = invite(study)
    participant_consent(participant=participant)
    post = iat_block_posts({"blocks": iat_session(participant=participant).design})[0]
    post["trials"][3]["latency_correct_ms"] = math.inf
    with pytest.raises(IATBlockRejected, match="finite"):
        iat_block_submit(participant=participant, block_number=1, trials=post["trials"])
    assert not IATTrial.objects.exists()


@pytest.mark.django_db
def test_a_legacy_infinite_latency_does_not_break_the_study_export(at_the_iat, api_client):
    client, base, posts, participant = at_the_iat
    assert client.post(base + "iat/block/", posts[0], content_type="application/json").status_code == 200
    IATTrial.objects.filter(participant=participant, trial=posts[0]["trials"][0]["index"]).update(
        latency_correct_ms=math.inf)
    export = api_client.get(f"/api/studies/{participant.study_id}/iat-trials/")
    assert export.status_code == 200
    latencies = [row["latency_correct_ms"] for row in export.json()["results"]]
    assert latencies.count(None) == 1 and len(latencies) == 20


@pytest.mark.django_db
@pytest.mark.parametrize("body", [
    '{"item": ITEM, "response": 0, "rt_ms": 1e400}', '{"item": ITEM, "response": 0, "rt_ms": Infinity}',
    '{"item": ITEM, "response": 0, "rt_ms": NaN}', '{"item": 1e400, "response": 0}', '[ITEM, 0]',
    '{"item": ITEM, "response": 1e400}', '{"item": ITEM, "response": 0, "rt_ms": -5}',
    '[' * 100_000 + ']' * 100_000,
])
def test_a_crafted_autosave_is_400_naming_the_field_and_stores_nothing(body):
    (participant,) = invite(flow_study())
    participant_consent(participant=participant)
    aq = Instrument.objects.get(slug="aq50")
    number = questionnaire_session(participant=participant, instrument=aq).item_order[0]
    response = Client().post(f"/p/{participant.invite_token}/questionnaire/{aq.pk}/answer/",
                             body.replace("ITEM", str(number)), content_type="application/json")
    assert response.status_code == 400
    assert any(name in response.json()["error"] for name in ("rt_ms", "item", "response", "body"))
    assert not InstrumentResponse.objects.exists()


@pytest.mark.django_db
def test_a_questionnaire_form_with_a_unicode_digit_is_not_a_server_error():
    (participant,) = invite(flow_study())
    participant_consent(participant=participant)
    aq = Instrument.objects.get(slug="aq50")
    number = questionnaire_session(participant=participant, instrument=aq).item_order[0]
    response = Client().post(f"/p/{participant.invite_token}/questionnaire/{aq.pk}/", {f"item-{number}": "²"})
    # A 400 that names the 50 statements still unanswered (the digit is no option), nothing stored.
    assert response.status_code == 400 and not InstrumentResponse.objects.exists()
    assert "50 statements not answered yet" in response.content.decode()


@pytest.fixture
def labelling(db):
    study = flow_study(iat=False, attention_check=False)
    study.study_instruments.all().delete()
    (participant,) = invite(study)
    participant_consent(participant=participant)
    instructions_read(participant=participant)
    item_id = participant.assignments.order_by("position").values_list("item_id", flat=True).first()
    return participant, item_id


@pytest.mark.django_db
def test_a_nul_byte_in_a_rationale_is_400_and_stores_nothing(labelling):
    participant, item_id = labelling
    response = Client().post(f"/p/{participant.invite_token}/label/",
                             {"item": item_id, "value": 1, "rationale": "fine\x00 really"})
    assert response.status_code == 400 and "NUL" in response.content.decode()
    assert not Label.objects.exists()


@pytest.mark.django_db
@pytest.mark.parametrize(("item", "value"), [("1e400", "1"), ("99999999999999999999", "1"), ("ITEM", "²"),
                                             ("ITEM", "-1"), ("ITEM", "")])
def test_a_crafted_label_post_is_400_and_stores_nothing(labelling, item, value):
    participant, item_id = labelling
    response = Client().post(f"/p/{participant.invite_token}/label/",
                             {"item": item.replace("ITEM", str(item_id)), "value": value})
    assert response.status_code == 400
    assert not Label.objects.exists()


@pytest.mark.django_db
def test_an_open_link_with_a_nul_in_the_prolific_id_is_400():
    study = flow_study()
    study.open_link_enabled = True
    study.save()
    response = Client().get(f"/join/{study.open_link_token}/", {"PROLIFIC_PID": "abc\x00def"})
    assert response.status_code == 400 and "PROLIFIC_PID" in response.content.decode()
    assert not Participant.objects.filter(study=study).exists()
