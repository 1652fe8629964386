"""The IAT's input modality: per trial as posted, per block and per participant (mixed when both), validated at
the boundary, refused as touch where the study requires a keyboard, exported with the trials and participants,
counted on the dashboard."""
from __future__ import annotations

import csv
import io
import json

import pytest
from django.test import Client
from rest_framework.test import APIClient

from annotation.dashboard import iat_modality_counts
from psychometrics.iat import combined_modality
from psychometrics.models import IATSession, IATTrial
from tests.factories import make_researcher
from tests.participant.helpers import (
    consent_and_finish_questionnaires,
    flow_study,
    iat_block_posts,
    invite,
    page_config,
)


def test_combined_modality_is_the_one_used_or_mixed():
    assert combined_modality(["keyboard"] * 3) == "keyboard"
    assert combined_modality(["touch"]) == "touch"
    assert combined_modality(["touch", "keyboard", "touch"]) == "mixed"
    assert combined_modality(["keyboard", "mixed"]) == "mixed"
    assert combined_modality([]) is None
    with pytest.raises(ValueError, match="unknown input modality \\['mouse'\\]"):
        combined_modality(["keyboard", "mouse"])


@pytest.fixture
def at_the_iat(db):
    study = flow_study()
    (participant,) = invite(study)
    client = Client()
    base = consent_and_finish_questionnaires(client, participant)
    return study, participant, client, base, page_config(client.get(base + "iat/").content.decode())


def post(client: Client, base: str, body: dict) -> int:
    return client.post(base + "iat/block/", json.dumps(body), content_type="application/json").status_code


@pytest.mark.django_db
def test_blocks_and_the_participant_record_how_they_were_answered(at_the_iat):
    study, participant, client, base, config = at_the_iat
    touch, keyboard = iat_block_posts(config, modality="touch"), iat_block_posts(config, modality="keyboard")
    assert post(client, base, touch[0]) == 200
    session = IATSession.objects.get(participant=participant)
    assert (session.block_modalities, session.input_modality) == (["touch"], "touch")
    # Block 2 switches to the keys half-way: the block is mixed, and so is the participant.
    mixed = {**touch[1], "trials": [*touch[1]["trials"][:10], *keyboard[1]["trials"][10:]]}
    assert post(client, base, mixed) == 200
    for number in range(3, 8):
        assert post(client, base, touch[number - 1]) == 200
    session.refresh_from_db()
    assert session.block_modalities == ["touch", "mixed", "touch", "touch", "touch", "touch", "touch"]
    assert session.input_modality == "mixed" and session.d_score is not None
    assert list(IATTrial.objects.filter(participant=participant, block=2).values_list("modality", flat=True)) == (
        ["touch"] * 10 + ["keyboard"] * 10)

    _, token = make_researcher("modality-researcher")
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Token {token}")
    trials = api.get(f"/api/studies/{study.id}/iat-trials/?page_size=1000").json()["results"]
    assert [t["modality"] for t in trials if t["block"] == 2] == ["touch"] * 10 + ["keyboard"] * 10
    exported = b"".join(api.get(f"/api/studies/{study.id}/iat-trials/?format=csv").streaming_content).decode()
    rows = list(csv.DictReader(io.StringIO(exported)))
    assert len(rows) == 200 and {r["modality"] for r in rows if r["block"] == "1"} == {"touch"}
    (row,) = api.get(f"/api/studies/{study.id}/participants/").json()["results"]
    assert (row["iat_modality"], row["iat_d"]) == ("mixed", pytest.approx(session.d_score))
    assert iat_modality_counts(study) == {"keyboard": 0, "touch": 0, "mixed": 1, "unknown": 0}


@pytest.mark.django_db
@pytest.mark.parametrize("modality", [None, "mouse", "Touch", ""])
def test_a_block_without_a_valid_modality_is_400_and_nothing_is_stored(at_the_iat, modality):
    _, participant, client, base, config = at_the_iat
    block = iat_block_posts(config)[0]
    for trial in block["trials"][5:6]:
        trial.pop("modality") if modality is None else trial.update(modality=modality)
    response = client.post(base + "iat/block/", json.dumps(block), content_type="application/json")
    assert response.status_code == 400
    assert "trials[5].modality: must be one of keyboard, touch" in response.json()["error"]
    assert not IATTrial.objects.filter(participant=participant).exists()
    assert IATSession.objects.get(participant=participant).block_modalities == []


@pytest.mark.django_db
def test_the_iat_page_offers_taps_unless_a_keyboard_is_required(at_the_iat):
    study, _, client, base, config = at_the_iat
    assert config["touch_allowed"] is True
    study.keyboard_required = True
    study.save()
    assert page_config(client.get(base + "iat/").content.decode())["touch_allowed"] is False


@pytest.mark.django_db
def test_a_touch_trial_in_a_keyboard_required_study_is_400_naming_it_and_nothing_is_stored(at_the_iat):
    study, participant, client, base, config = at_the_iat
    study.keyboard_required = True
    study.save()
    keyboard = iat_block_posts(config, modality="keyboard")[0]
    one_tap = {**keyboard, "trials": [*keyboard["trials"][:7], {**keyboard["trials"][7], "modality": "touch"},
                                      *keyboard["trials"][8:]]}
    for body, field in ((one_tap, "trials[7].modality"), (iat_block_posts(config, modality="touch")[0],
                                                          "trials[0].modality")):
        response = client.post(base + "iat/block/", json.dumps(body), content_type="application/json")
        assert response.status_code == 400
        assert response.json() == {
            "error": f"{field}: this study requires a keyboard; taps are not accepted", "field": field}
        assert not IATTrial.objects.filter(participant=participant).exists()
        session = IATSession.objects.get(participant=participant)
        assert (session.blocks_done, session.block_modalities) == (0, [])
    assert post(client, base, keyboard) == 200
    assert IATTrial.objects.filter(participant=participant, modality="keyboard").count() == len(keyboard["trials"])
