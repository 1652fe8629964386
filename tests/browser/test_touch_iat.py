"""A participant on a phone (touch emulation, 390×844) takes the whole study by taps: the IAT's trials are
exported as touch and its D score is flagged as touch; a tap of a second finger while another rests counts,
once; with "keyboard required" the same phone stops at consent, or before joining through the open link,
with nothing stored."""
from __future__ import annotations

import re

import pytest
from django.test import Client
from playwright.sync_api import expect
from rest_framework.test import APIClient

from annotation.models import Label, Participant
from annotation.study_analysis import study_analysis_compute
from psychometrics.iat import iat_d_score
from psychometrics.models import IATSession, IATTrial, InstrumentResponse, QuestionnaireSession
from tests.browser.annotator import (
    TwoThumbs,
    answer_questionnaire,
    consent,
    iat_config,
    label_items_by_taps,
    run_iat_by_taps,
    wait_for_tap_to_begin,
)
from tests.factories import make_researcher
from tests.participant.helpers import consent_and_finish_questionnaires, flow_study, invite, trials_frame

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.django_db(transaction=True)]

PHONE = {"viewport": {"width": 390, "height": 844}, "has_touch": True, "is_mobile": True, "device_scale_factor": 3}


@pytest.fixture
def phone(chromium):
    context = chromium.new_context(**PHONE)
    yield context
    context.close()


@pytest.fixture
def researcher_api():
    _, token = make_researcher("touch-researcher")
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {token}")
    return client


def test_a_phone_participant_takes_the_whole_study_by_taps(live_server, phone, researcher_api, client):
    study = flow_study(n_items=3, items_per_annotator=3)
    (participant,) = invite(study)
    page = phone.new_page()
    page.goto(f"{live_server.url}/p/{participant.invite_token}/")
    assert page.evaluate("matchMedia('(pointer: coarse)').matches && !matchMedia('(any-pointer: fine)').matches")
    consent(page)
    answer_questionnaire(page, 0)
    answer_questionnaire(page, 3)
    expect(page.locator("#iat")).to_have_class(re.compile(r"\btouch\b"))
    assert page.evaluate("getComputedStyle(document.getElementById('iat')).touchAction") == "manipulation"
    expect(page.locator("#iat-left")).to_be_visible()
    errors = run_iat_by_taps(page, wrong_first_on=(0, 3))
    page.locator("#start-labelling").tap()
    expect(page.locator("#progress")).to_have_text("Sentence 1 of 4")
    assert label_items_by_taps(page) == 4
    expect(page.locator("#completion-code")).to_have_text(study.completion_code)

    trials = researcher_api.get(f"/api/studies/{study.id}/iat-trials/?page_size=10000").json()["results"]
    assert len(trials) == 200 and {t["modality"] for t in trials} == {"touch"}
    assert sorted((t["block"], t["trial"]) for t in trials if t["error"]) == sorted(errors)
    # Tap latencies are real: measured from the paint to the pointerdown, never negative, errors corrected later.
    assert all(0 < t["latency_first_ms"] < t["latency_correct_ms"] for t in trials if t["error"])
    assert all(t["latency_first_ms"] == t["latency_correct_ms"] > 0 for t in trials if not t["error"])
    session = IATSession.objects.get(participant=participant)
    assert session.input_modality == "touch" and session.block_modalities == ["touch"] * 7
    row = researcher_api.get(f"/api/studies/{study.id}/participants/").json()["results"][0]
    assert row["iat_d"] == pytest.approx(iat_d_score(trials_frame(trials)).d)
    assert row["iat_modality"] == "touch"
    assert Label.objects.filter(participant=participant).count() == 4

    study_analysis_compute(study_id=study.id)
    client.force_login(make_researcher("touch-staff")[0])
    dashboard = client.get(f"/studies/{study.id}/dashboard/").content.decode()
    assert "IAT input: 0 by keyboard, 1 by touch" in dashboard
    assert 'class="modality-flag" title="D measured from tap latencies (touch)">touch</span>' in dashboard


def test_a_second_fingers_tap_counts_once(live_server, phone):
    """Two thumbs, each tap landing while the other thumb still rests (a non-primary pointer): every tap
    answers, the first after the word and the first correct one timed, and one tap answers one trial only."""
    study = flow_study(n_items=1, items_per_annotator=1)
    (participant,) = invite(study)
    page = phone.new_page()
    page.goto(f"{live_server.url}/p/{participant.invite_token}/")
    consent(page)
    answer_questionnaire(page, 0)
    answer_questionnaire(page, 3)
    block = iat_config(page)["blocks"][0]
    wait_for_tap_to_begin(page, block["number"])
    page.evaluate("""() => { window.nonPrimaryDowns = 0; window.addEventListener("pointerdown",
        (event) => { if (!event.isPrimary) window.nonPrimaryDowns++; }, true); }""")
    thumbs = TwoThumbs(page)
    side_of = {"e": "left", "i": "right"}
    other = {"left": "right", "right": "left"}
    first = block["trials"][0]
    page.evaluate("""() => { window.iatShown = 0; new MutationObserver((records) => {
        for (const r of records) for (const n of r.addedNodes) if (n.textContent) window.iatShown++;
        }).observe(document.getElementById("iat-stimulus"), {childList: true}); }""")
    # The block is started with a whole tap (a finger down, then up) of trial 0's correct thumb.
    thumbs.tap(side_of[first["correct_key"]])
    thumbs.lift()
    wrong_first_on = {0, 3}
    for shown, trial in enumerate(block["trials"], start=1):
        page.wait_for_function("n => window.iatShown >= n", arg=shown)
        expect(page.locator("#iat-stimulus")).to_have_text(trial["stimulus"])
        correct = side_of[trial["correct_key"]]
        if trial["index"] in wrong_first_on:
            thumbs.tap(other[correct])
            expect(page.locator("#iat-error")).to_be_visible()  # the second finger's wrong tap counted
        thumbs.tap(correct)
        if trial["index"] == 0:
            # Answered once: the next word comes and is still waiting for its own answer.
            page.wait_for_function("n => window.iatShown >= n", arg=shown + 1)
            page.wait_for_timeout(150)
            expect(page.locator("#iat-stimulus")).to_have_text(block["trials"][1]["stimulus"])
            expect(page.locator("#iat-error")).to_be_hidden()
    # The last thumb still rests when block 2 asks for its tap: lifting it is not a tap that starts the block.
    wait_for_tap_to_begin(page, 2)
    thumbs.lift()
    page.wait_for_timeout(600)
    expect(page.locator("#iat-message")).to_contain_text("Tap anywhere to begin")
    expect(page.locator("#iat-stimulus")).to_be_empty()
    # Most of the block's taps came while the other thumb rested.
    assert page.evaluate("window.nonPrimaryDowns") >= 2

    stored = list(IATTrial.objects.filter(participant=participant, block=1).order_by("trial"))
    assert [t.trial for t in stored] == [t["index"] for t in block["trials"]]
    for row, trial in zip(stored, block["trials"], strict=True):
        error = trial["index"] in wrong_first_on
        expected_first = trial["correct_key"] if not error else {"e": "i", "i": "e"}[trial["correct_key"]]
        assert (row.first_key, row.error, row.modality) == (expected_first, error, "touch")
        assert 0 < row.latency_first_ms < row.latency_correct_ms if error else (
            0 < row.latency_first_ms == row.latency_correct_ms)


def test_keyboard_required_stops_a_phone_on_the_consent_page_with_nothing_stored(live_server, phone, chromium):
    study = flow_study(n_items=2, items_per_annotator=2)
    study.keyboard_required = True
    study.save()
    (participant,) = invite(study)
    page = phone.new_page()
    page.goto(f"{live_server.url}/p/{participant.invite_token}/")
    expect(page.locator("#keyboard-required")).to_contain_text("You need a keyboard")
    expect(page.locator("#no-keyboard")).to_be_visible()
    expect(page.locator("#no-keyboard")).to_contain_text("cannot start this study here")
    expect(page.locator("#consent-button")).to_be_hidden()
    page.reload()
    expect(page.locator("#no-keyboard")).to_be_visible()
    participant.refresh_from_db()
    assert participant.started_at is None and participant.status == Participant.Status.INVITED
    for model in (QuestionnaireSession, InstrumentResponse, IATSession, IATTrial, Label):
        assert not model.objects.filter(participant=participant).exists()

    # Consent given without the page's check (scripts off): at the IAT the phone is told what to do, not stuck.
    (scriptless,) = invite(study)
    consent_and_finish_questionnaires(Client(), scriptless)
    page.goto(f"{live_server.url}/p/{scriptless.invite_token}/")
    expect(page.locator("#iat-message")).to_contain_text("This study needs a keyboard for this task")
    expect(page.locator("#iat-left")).to_be_empty()
    assert not IATTrial.objects.filter(participant=scriptless).exists()

    # A computer with a keyboard reads the same notice before consent, and goes on.
    desktop = chromium.new_context(viewport={"width": 1280, "height": 800})
    page = desktop.new_page()
    page.goto(f"{live_server.url}/p/{participant.invite_token}/")
    expect(page.locator("#keyboard-required")).to_be_visible()
    expect(page.locator("#no-keyboard")).to_be_hidden()
    consent(page)
    expect(page.locator("h1")).to_have_text("Autism-Spectrum Quotient (AQ-50)")
    desktop.close()



def test_keyboard_required_open_link_stops_a_phone_before_any_participant_exists(live_server, phone, chromium):
    study = flow_study(n_items=2, items_per_annotator=2)
    study.keyboard_required, study.open_link_enabled, study.open_link_cap = True, True, 1
    study.save()
    url = f"{live_server.url}/join/{study.open_link_token}/?PROLIFIC_PID=pp-phone&STUDY_ID=st&SESSION_ID=se"
    page = phone.new_page()
    page.goto(url)
    expect(page.locator("#keyboard-required")).to_contain_text("You need a keyboard")
    expect(page.locator("#no-keyboard")).to_be_visible()
    expect(page.locator("#no-keyboard")).to_contain_text("Nothing has been recorded")
    expect(page.locator("#join-button")).to_be_hidden()
    page.reload()
    expect(page.locator("#no-keyboard")).to_be_visible()
    assert not Participant.objects.filter(study=study).exists()  # no row, no PROLIFIC_PID, no place taken

    # Without scripts the device cannot be checked: the page says what is needed and offers no way on.
    scriptless = chromium.new_context(viewport={"width": 1280, "height": 800}, java_script_enabled=False)
    page = scriptless.new_page()
    page.goto(url)
    expect(page.locator("#needs-scripts")).to_be_visible()
    expect(page.locator("#join-button")).to_be_hidden()
    scriptless.close()
    assert not Participant.objects.filter(study=study).exists()

    # A computer with a keyboard reads the same notice, goes on, and is the one participant, with their ids.
    desktop = chromium.new_context(viewport={"width": 1280, "height": 800})
    page = desktop.new_page()
    page.goto(url.replace("pp-phone", "pp-desk"))
    expect(page.locator("#keyboard-required")).to_be_visible()
    expect(page.locator("#no-keyboard")).to_be_hidden()
    page.click("#join-button")
    expect(page.locator("#content-warning")).to_be_visible()
    (participant,) = Participant.objects.filter(study=study)
    assert (participant.prolific_pid, participant.via_open_link, participant.started_at) == ("pp-desk", True, None)
    desktop.close()
