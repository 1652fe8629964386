"""Researchers upload instruments and configure a study's flow in the admin."""
from __future__ import annotations

import json

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from annotation.models import Participant
from psychometrics.instruments import INSTRUMENTS_DIR
from psychometrics.models import Instrument
from tests.factories import make_study

pytestmark = pytest.mark.django_db


@pytest.fixture
def logged_in(client, researcher):
    client.force_login(researcher[0])
    return client


def sata_variant() -> dict:
    data = json.loads((INSTRUMENTS_DIR / "sata_partial.json").read_text())
    return {**data, "slug": "sata_full_lab", "name": "SATA (our lab's copy)", "version": "lab-1"}


def test_upload_a_valid_instrument(logged_in):
    content = json.dumps(sata_variant()).encode()
    response = logged_in.post("/admin/psychometrics/instrument/upload/",
                              {"file": SimpleUploadedFile("sata.json", content)})
    instrument = Instrument.objects.get(slug="sata_full_lab")
    assert response["Location"] == f"/admin/psychometrics/instrument/{instrument.pk}/change/"
    assert not instrument.shipped and instrument.uploaded_by is not None
    again = logged_in.post("/admin/psychometrics/instrument/upload/", {"file": SimpleUploadedFile("s.json", content)})
    assert again.status_code == 302 and Instrument.objects.filter(slug="sata_full_lab").count() == 1  # same hash


def test_an_invalid_instrument_lists_every_problem_and_stores_nothing(logged_in):
    data = sata_variant()
    data["items"][1]["key"] = "sideways"
    data["items"][2]["number"] = data["items"][0]["number"]
    response = logged_in.post("/admin/psychometrics/instrument/upload/",
                              {"file": SimpleUploadedFile("bad.json", json.dumps(data).encode())})
    page = response.content.decode()
    assert "items[1].key" in page and "sideways" in page and "items[2].number" in page
    assert not Instrument.objects.filter(slug="sata_full_lab").exists()
    broken = logged_in.post("/admin/psychometrics/instrument/upload/",
                            {"file": SimpleUploadedFile("bad.json", b"{not json")})
    assert "JSON" in broken.content.decode()


def test_study_page_configures_the_flow_and_invites(logged_in):
    study = make_study(name="Configured")
    page = logged_in.get(f"/admin/annotation/study/{study.pk}/change/").content.decode()
    for text in ("study_instruments-TOTAL_FORMS", "iat_enabled", "items_per_annotator", "open_link_cap",
                 "completion_url", f"/join/{study.open_link_token}/"):
        assert text in page
    response = logged_in.post(f"/admin/annotation/study/{study.pk}/invite/", {"count": 3, "team": "b"})
    assert response["Location"] == f"/admin/annotation/study/{study.pk}/change/"
    logged_in.post(f"/admin/annotation/study/{study.pk}/invite/", {"count": 2, "team": "a"})
    participants = list(Participant.objects.filter(study=study).order_by("pseudonym"))
    assert [(p.pseudonym, p.team) for p in participants] == [
        ("P0001", "b"), ("P0002", "b"), ("P0003", "b"), ("P0004", "a"), ("P0005", "a")]
    listing = logged_in.get(f"/admin/annotation/participant/?study__id__exact={study.pk}").content.decode()
    assert f"/p/{participants[0].invite_token}/" in listing
    csv_text = b"".join(logged_in.get(f"/admin/annotation/study/{study.pk}/invite-links.csv").streaming_content)
    lines = csv_text.decode().splitlines()
    assert lines[0] == "participant,team,status,link"
    assert lines[1] == f'"P0001","b","invited","http://testserver/p/{participants[0].invite_token}/"'
    assert len(lines) == 6
    assert logged_in.post(f"/admin/annotation/study/{study.pk}/invite/", {"count": 0}).status_code == 200


def test_invalid_iat_stimuli_are_refused_on_the_study_form(logged_in):
    from django.core.exceptions import ValidationError

    from annotation.models import Study

    study = make_study()
    study.iat_stimuli = {"target_a_label": "Autistic"}
    with pytest.raises(ValidationError, match="Not a valid IAT"):
        study.full_clean()
    study.iat_stimuli = {"target_a_label": "A", "target_a_words": ["x"], "target_b_label": "B",
                         "target_b_words": ["x"], "attribute_pos_label": "P", "attribute_pos_words": ["p"],
                         "attribute_neg_label": "N", "attribute_neg_words": ["n"]}
    with pytest.raises(ValidationError, match="is in both"):
        study.full_clean()
    study.iat_stimuli = {}
    study.full_clean()
    assert isinstance(study, Study)


def test_an_instrument_file_saved_with_a_byte_order_mark_is_accepted(logged_in):
    content = b"\xef\xbb\xbf" + json.dumps(sata_variant()).encode()
    logged_in.post("/admin/psychometrics/instrument/upload/", {"file": SimpleUploadedFile("sata.json", content)})
    assert Instrument.objects.filter(slug="sata_full_lab").exists()


def test_an_instrument_nested_100000_deep_is_refused_and_nothing_stored(logged_in):
    before = Instrument.objects.count()
    content = b'{"slug": "deep", "items": ' + b"[" * 100_000 + b"]" * 100_000 + b"}"
    response = logged_in.post("/admin/psychometrics/instrument/upload/",
                              {"file": SimpleUploadedFile("deep.json", content)})
    assert response.status_code == 200
    assert "(json): JSON nested more than 64 levels deep" in response.content.decode()
    assert Instrument.objects.count() == before
