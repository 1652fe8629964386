"""axe-core on every participant page (consent, each questionnaire, the IAT by keys and by taps, labelling
instructions, labelling, done, withdrawal) and on the two dashboards: 0 serious or critical violations and a
name on every control; and a questionnaire answered with the keyboard alone."""
from __future__ import annotations

import pytest
from django.test import Client
from playwright.sync_api import expect

from annotation.study_analysis import study_analysis_compute
from auditapp.engine import analysis
from psychometrics.models import Instrument, InstrumentResponse
from tests.auditapp.test_audit_dashboard_view import COMPLETED_PLAN, build_audit
from tests.browser.accessibility import assert_accessible
from tests.browser.annotator import answer_questionnaire, consent, label_items, run_iat_blocks, tap_side
from tests.browser.staff import logged_in_page
from tests.browser.test_touch_iat import PHONE
from tests.factories import make_worked_example_study
from tests.participant.helpers import flow_study, invite

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.django_db(transaction=True)]


def test_every_participant_page_passes_axe_and_a_questionnaire_needs_only_the_keyboard(live_server, chromium):
    study = flow_study(n_items=2, items_per_annotator=2)
    (participant,) = invite(study)
    context = chromium.new_context(viewport={"width": 1280, "height": 800})
    page = context.new_page()
    page.goto(f"{live_server.url}/p/{participant.invite_token}/")
    assert_accessible(page, "consent")
    consent(page)
    expect(page.locator("h1")).to_have_text("Autism-Spectrum Quotient (AQ-50)")
    assert_accessible(page, "AQ-50")
    answer_questionnaire(page, 0)
    expect(page.locator("h1")).to_contain_text("SATA")
    assert_accessible(page, "SATA")

    # The SATA by keyboard alone: Tab reaches each statement's radio group, an arrow key picks an answer
    # (Right from nothing checked selects the second option), Tab goes on; Enter on Continue submits.
    items = page.locator("li.item")
    page.locator("body").focus()
    for n in range(items.count()):
        page.keyboard.press("Tab")
        while page.evaluate("() => document.activeElement.type") != "radio":
            page.keyboard.press("Tab")
        assert page.evaluate("() => document.activeElement.closest('li.item').dataset.position") == str(n)
        page.keyboard.press("ArrowRight")
    expect(page.locator("#answered-count")).to_have_text(f"{items.count()} of {items.count()} answered")
    page.keyboard.press("Tab")
    assert page.evaluate("() => document.activeElement.id") == "questionnaire-submit"
    page.keyboard.press("Enter")
    expect(page.locator("#iat-message")).to_contain_text("Block 1 of 7")
    assert set(InstrumentResponse.objects.filter(participant=participant, instrument__slug="sata_partial")
               .values_list("response_index", flat=True)) == {1}

    assert_accessible(page, "IAT instructions")
    page.keyboard.press(" ")
    expect(page.locator("#iat-stimulus")).not_to_be_empty()
    assert_accessible(page, "IAT trial")
    page.reload()
    run_iat_blocks(page)
    expect(page.locator("#start-labelling")).to_be_visible()
    assert_accessible(page, "labelling instructions")
    page.keyboard.press("Tab")
    while page.evaluate("() => document.activeElement.id") != "start-labelling":
        page.keyboard.press("Tab")
    page.keyboard.press("Enter")
    expect(page.locator("#progress")).to_have_text("Sentence 1 of 3")
    assert_accessible(page, "labelling")
    assert label_items(page) == 3
    expect(page.locator("#completion-code")).to_be_visible()
    assert_accessible(page, "done")
    page.click("#withdraw-link")
    assert_accessible(page, "withdrawal")
    context.close()


def test_every_page_after_the_iat_passes_axe_on_a_phone(live_server, chromium):
    """The questionnaire cards, the labelling instructions, labelling, done and withdrawal at 390×844 by taps
    (consent, the declined page, the touch IAT and the label page going back have their own tests)."""
    study = flow_study(n_items=1, items_per_annotator=1, iat=False, attention_check=False)
    (participant,) = invite(study)
    context = chromium.new_context(**PHONE)
    page = context.new_page()
    page.goto(f"{live_server.url}/p/{participant.invite_token}/")
    page.locator("#consent-button").tap()
    expect(page.locator("#card-place")).to_have_text("Statement 1 of 50")
    assert_accessible(page, "AQ-50 card on a phone")
    Client().post(f"/p/{participant.invite_token}/questionnaire/{Instrument.objects.get(slug='aq50').pk}/",
                  {f"item-{n}": 0 for n in range(1, 51)})
    page.goto(f"{live_server.url}/p/{participant.invite_token}/")
    expect(page.locator("#card-place")).to_have_text("Statement 1 of 5")
    assert_accessible(page, "SATA card on a phone")
    for _ in range(5):
        page.locator("li.item:not([hidden]) .options label").nth(1).tap()
        page.wait_for_timeout(450)
    page.locator("#questionnaire-submit").tap()
    expect(page.locator("#start-labelling")).to_be_visible()
    assert_accessible(page, "labelling instructions on a phone")
    page.locator("#start-labelling").tap()
    expect(page.locator("#progress")).to_have_text("Sentence 1 of 1")
    assert_accessible(page, "labelling on a phone")
    page.locator("#label-1").tap()
    expect(page.locator("#completion-code")).to_be_visible()
    assert_accessible(page, "done on a phone")
    page.locator("#withdraw-link").tap()
    expect(page.locator("#confirm-withdraw")).to_be_visible()
    assert_accessible(page, "withdrawal on a phone")
    page.locator("#confirm-withdraw").tap()
    expect(page.locator("#withdrawn")).to_be_visible()
    assert_accessible(page, "withdrawn on a phone")
    context.close()


def test_the_touch_iat_and_the_keyboard_notice_pass_axe_on_a_phone(live_server, chromium):
    study = flow_study(n_items=1, items_per_annotator=1)
    (participant,) = invite(study)
    phone = chromium.new_context(**PHONE)
    page = phone.new_page()
    page.goto(f"{live_server.url}/p/{participant.invite_token}/")
    consent(page)
    answer_questionnaire(page, 0)
    answer_questionnaire(page, 3)
    expect(page.locator("#iat-message")).to_contain_text("Tap anywhere to begin")
    assert_accessible(page, "touch IAT instructions")
    tap_side(page, "left")
    expect(page.locator("#iat-stimulus")).not_to_be_empty()
    assert_accessible(page, "touch IAT trial")

    study.keyboard_required = True
    study.save()
    (other,) = invite(study)
    page.goto(f"{live_server.url}/p/{other.invite_token}/")
    expect(page.locator("#no-keyboard")).to_be_visible()
    assert_accessible(page, "consent, keyboard required, on a phone")
    phone.close()


def test_the_study_and_audit_dashboards_pass_axe(live_server, browser_context):
    study = make_worked_example_study()
    study_analysis_compute(study_id=study.id)
    audit = build_audit(COMPLETED_PLAN)
    analysis.audit_analyse(audit_id=audit.id)
    page, _, _ = logged_in_page(browser_context, live_server, "axe-researcher")
    page.goto(f"{live_server.url}/studies/{study.id}/dashboard/")
    expect(page.locator("#iat-modalities")).to_be_visible()
    assert_accessible(page, "study dashboard")
    page.goto(f"{live_server.url}/audits/{audit.id}/dashboard/")
    expect(page.locator("#figure-1 .main-svg").first).to_be_attached()
    assert_accessible(page, "audit dashboard")
