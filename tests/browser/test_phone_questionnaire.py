"""A questionnaire on a phone as a participant meets it in Chromium: one statement per card with whole-row
answer targets of at least 44 px that neither overlap nor touch, a progress bar, Back to change an answer, and
every answer stored as tapped; on a computer the questionnaire stays one page."""
from __future__ import annotations

from itertools import pairwise

import pytest
from playwright.sync_api import Page, expect

from psychometrics.models import Instrument, InstrumentResponse
from tests.browser.accessibility import assert_accessible
from tests.browser.test_touch_iat import PHONE
from tests.participant.helpers import flow_study, invite

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.django_db(transaction=True)]

SMALL_PHONE = {**PHONE, "viewport": {"width": 360, "height": 740}}


def open_aq(live_server, chromium, device: dict) -> tuple[Page, object]:
    study = flow_study()
    (participant,) = invite(study)
    context = chromium.new_context(**device)
    page = context.new_page()
    page.goto(f"{live_server.url}/p/{participant.invite_token}/")
    page.locator("#consent-button").click()
    expect(page.locator("h1")).to_have_text("Autism-Spectrum Quotient (AQ-50)")
    return page, participant


def target_boxes(page: Page) -> list[dict]:
    return page.locator("li.item:not([hidden]) .options label").evaluate_all(
        "els => els.map(e => { const r = e.getBoundingClientRect(); return {top: r.top, bottom: r.bottom, "
        "left: r.left, right: r.right, height: r.height}; })")


def assert_targets_large_and_apart(page: Page) -> None:
    boxes = target_boxes(page)
    assert len(boxes) == 4 and min(box["height"] for box in boxes) >= 44, boxes
    for upper, lower in pairwise(boxes):
        assert lower["top"] - upper["bottom"] >= 4, (upper, lower)  # a visible gap: neither overlapping nor touching


def shown_statement(page: Page) -> int:
    return int(page.locator("li.item:not([hidden])").get_attribute("data-item"))


@pytest.mark.parametrize("device", [PHONE, SMALL_PHONE], ids=["390x844", "360x740"])
def test_cards_have_large_separate_targets_and_a_progress_bar(live_server, chromium, device):
    page, _ = open_aq(live_server, chromium, device)
    expect(page.locator("li.item:not([hidden])")).to_have_count(1)
    expect(page.locator("#card-place")).to_have_text("Statement 1 of 50")
    assert_targets_large_and_apart(page)
    assert page.evaluate("() => document.documentElement.scrollHeight") <= device["viewport"]["height"] * 1.25
    assert_accessible(page, f"AQ-50 card ({device['viewport']['width']} px)")
    page.locator("li.item:not([hidden]) .options label").nth(2).tap()
    expect(page.locator("#card-place")).to_have_text("Statement 2 of 50")
    assert page.locator("#card-progress").evaluate("e => [e.value, e.max]") == [1, 50]
    expect(page.locator("#answered-count")).to_have_text("1 of 50 answered")
    page.context.close()


def test_fifty_statements_by_taps_with_one_changed_through_back_are_stored_as_tapped(live_server, chromium):
    page, participant = open_aq(live_server, chromium, PHONE)
    tapped = {}
    for n in range(50):
        expect(page.locator("#card-place")).to_have_text(f"Statement {n + 1} of 50")
        choice = n % 4
        tapped[shown_statement(page)] = choice
        page.locator("li.item:not([hidden]) .options label").nth(choice).tap()
        if n == 10:  # back to the statement before, and a different answer there
            expect(page.locator("#card-place")).to_have_text("Statement 12 of 50")
            page.locator("#card-back").tap()
            expect(page.locator("#card-place")).to_have_text("Statement 11 of 50")
            changed = shown_statement(page)
            tapped[changed] = (tapped[changed] + 1) % 4
            page.locator("li.item:not([hidden]) .options label").nth(tapped[changed]).tap()
            page.wait_for_timeout(600)  # a changed answer does not move on by itself
            expect(page.locator("#card-place")).to_have_text("Statement 11 of 50")
            page.locator("#card-next").tap()
    expect(page.locator("#answered-count")).to_have_text("50 of 50 answered")
    expect(page.locator("#card-next")).to_be_hidden()
    page.locator("#questionnaire-submit").tap()
    expect(page.locator("h1")).to_contain_text("SATA")
    aq = Instrument.objects.get(slug="aq50")
    stored = dict(InstrumentResponse.objects.filter(participant=participant, instrument=aq)
                  .values_list("item_number", "response_index"))
    assert stored == tapped
    page.context.close()


def test_on_a_computer_the_questionnaire_stays_one_page(live_server, chromium):
    page, _ = open_aq(live_server, chromium, {"viewport": {"width": 1366, "height": 900}})
    expect(page.locator("li.item:visible")).to_have_count(50)
    expect(page.locator("#card-place")).to_have_count(0)
    page.context.close()


def test_continuing_with_statements_unanswered_opens_the_first_of_them(live_server, chromium):
    page, _ = open_aq(live_server, chromium, PHONE)
    page.locator("li.item:not([hidden]) .options label").nth(0).tap()  # statement 1 answered
    expect(page.locator("#card-place")).to_have_text("Statement 2 of 50")
    for _ in range(48):
        page.locator("#card-next").tap()
    expect(page.locator("#card-place")).to_have_text("Statement 50 of 50")
    page.locator("#questionnaire-submit").tap()
    expect(page.locator("#error-summary")).to_contain_text("49 statements not answered yet")
    expect(page.locator("#card-place")).to_have_text("Statement 2 of 50")
    assert page.evaluate("() => document.activeElement.closest('li.item').hidden") is False
    page.locator("#error-summary a").nth(3).tap()  # the summary's fourth link: statement 5
    expect(page.locator("#card-place")).to_have_text("Statement 5 of 50")
    page.context.close()
