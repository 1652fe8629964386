"""A study previewed as a participant from its admin page: every page of the flow, and nothing stored."""
from __future__ import annotations

import json

import pytest
from django.apps import apps

from annotation.models import Study
from psychometrics.models import Instrument
from tests.participant.helpers import flow_study, iat_block_posts, page_config

pytestmark = pytest.mark.django_db


def row_counts() -> dict[str, list[tuple]]:
    """Every row, whole, of every table of the apps that hold a study's data (participants, answers, scores, IAT
    sessions and trials, labels, assignments, the study itself, ...): an insert, an update or a delete shows."""
    return {model._meta.label: list(model._base_manager.order_by("pk").values_list())
            for label in ("annotation", "psychometrics", "auditapp", "coding", "teams")
            for model in apps.get_app_config(label).get_models()}


@pytest.fixture
def study(shipped_instruments) -> Study:
    return flow_study(n_items=3, items_per_annotator=2)


def test_the_preview_walks_every_page_and_stores_nothing(staff_client, study):
    before = row_counts()
    base = f"/studies/{study.pk}/preview/"
    aq, sata = (Instrument.objects.get(slug=slug) for slug in ("aq50", "sata_partial"))

    consent = staff_client.get(base)
    page = consent.content.decode()
    assert consent.status_code == 200 and "Some sentences hurt." in page
    assert "Preview as a participant: nothing you do here is stored." in page
    assert f'href="/admin/annotation/study/{study.pk}/change/"' in page and "withdraw-link" not in page
    assert "Step 1 of 5: Consent" in page
    assert staff_client.post(base, {"consent": "no"}).content.decode().count("You chose not to take part") == 1
    moved = staff_client.post(base, {"consent": "yes"})
    assert moved["Location"] == f"{base}questionnaire/{aq.pk}/"

    questionnaire = staff_client.get(moved["Location"]).content.decode()
    assert "Step 2 of 5: Autism-Spectrum Quotient (AQ-50)" in questionnaire
    assert f'data-answer-url="{base}questionnaire/{aq.pk}/answer/"' in questionnaire
    autosave = staff_client.post(f"{base}questionnaire/{aq.pk}/answer/",
                                 json.dumps({"item": 1, "response": 0, "rt_ms": 900}), content_type="application/json")
    assert autosave.status_code == 200 and autosave.json() == {"saved": False, "preview": True}
    partial = staff_client.post(moved["Location"], {"item-1": "0", "item-2": "3"})
    assert partial.status_code == 400 and "48 statements not answered yet" in partial.content.decode()
    answered = staff_client.post(moved["Location"], {f"item-{n}": "1" for n in range(1, 51)})
    assert answered["Location"] == f"{base}questionnaire/{sata.pk}/"
    done_sata = staff_client.post(answered["Location"], {f"item-{n}": "0" for n in range(1, 6)})
    assert done_sata["Location"] == f"{base}iat/"

    iat = staff_client.get(done_sata["Location"])
    config = page_config(iat.content.decode())
    assert config["post_url"] == f"{base}iat/block/" and config["next_url"] == f"{base}instructions/"
    assert [len(block["trials"]) for block in config["blocks"]] == [20, 20, 20, 40, 40, 20, 40]
    for post in iat_block_posts(config):
        answer = staff_client.post(config["post_url"], json.dumps(post), content_type="application/json").json()
        assert answer == {"next_block": post["block"] + 1, "finished": post["block"] == 7}
    malformed = staff_client.post(config["post_url"], b"{}", content_type="application/json")
    assert malformed.status_code == 400

    assert staff_client.post(f"{base}instructions/")["Location"] == f"{base}label/"
    sentence = staff_client.get(f"{base}label/").content.decode()
    assert "Target 0." in sentence and "Sentence 1 of 2" in sentence and "Step 5 of 5: Labelling" in sentence
    assert staff_client.post(f"{base}label/?at=0", {"value": "7"}).status_code == 400
    assert staff_client.post(f"{base}label/?at=0", {"value": "1", "rationale": "why"})["Location"] == \
        f"{base}label/?at=1"
    assert staff_client.post(f"{base}label/?at=1", {"action": "skip", "skip_reason": "unsure"})["Location"] == \
        f"{base}done/"
    finished = staff_client.get(f"{base}done/").content.decode()
    assert study.completion_code in finished

    assert row_counts() == before


def test_the_study_page_links_to_its_preview(staff_client, study):
    page = staff_client.get(f"/admin/annotation/study/{study.pk}/change/").content.decode()
    assert f'<a href="/studies/{study.pk}/preview/" id="preview-as-participant">Preview as a participant</a>' in page


def test_a_draft_study_is_previewed_with_a_note_and_a_study_without_items_says_so(staff_client, shipped_instruments):
    study = flow_study(n_items=0, attention_check=False, iat=False)
    study.status = Study.Status.DRAFT
    study.save()
    page = staff_client.get(f"/studies/{study.pk}/preview/").content.decode()
    assert "The study is draft: a participant would be told that it is not open at the moment." in page
    sata = Instrument.objects.get(slug="sata_partial")
    after_sata = staff_client.post(f"/studies/{study.pk}/preview/questionnaire/{sata.pk}/",
                                   {f"item-{n}": "0" for n in range(1, 6)})
    assert after_sata["Location"] == f"/studies/{study.pk}/preview/instructions/"  # no IAT in this study
    empty = staff_client.get(f"/studies/{study.pk}/preview/label/").content.decode()
    assert "This study has no sentences yet: import its items first." in empty


def test_the_preview_is_for_staff_of_the_study_team_only(client, staff_client, study):
    from teams.models import Team

    assert client.get(f"/studies/{study.pk}/preview/")["Location"].startswith("/admin/login/")
    assert client.post(f"/studies/{study.pk}/preview/iat/block/")["Location"].startswith("/admin/login/")
    study.team = Team.objects.create(name="Another lab")
    study.save()
    assert staff_client.get(f"/studies/{study.pk}/preview/").status_code == 404
    assert staff_client.post(f"/studies/{study.pk}/preview/iat/block/", b"{}",
                             content_type="application/json").status_code == 404
