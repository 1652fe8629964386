"""Questionnaire autosaves in Chromium when the server does not answer as hoped: answers whose autosaves all
failed reach the server with their times through the page's Continue, and an answer changed while the first one
is still on its way is stored over it, never under it."""
from __future__ import annotations

import pytest
from playwright.sync_api import expect

from annotation.participation import participant_consent
from psychometrics.models import InstrumentResponse
from tests.browser.annotator import answer_questionnaire
from tests.participant.helpers import flow_study, invite

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def questionnaire_link(live_server) -> tuple[str, object]:
    study = flow_study(n_items=2, items_per_annotator=2, iat=False, attention_check=False)
    (participant,) = invite(study)
    participant_consent(participant=participant)
    return f"{live_server.url}/p/{participant.invite_token}/", participant


def test_answers_whose_autosaves_all_failed_reach_the_server_with_their_times(browser_context, questionnaire_link):
    link, participant = questionnaire_link
    page = browser_context.new_page()
    page.route("**/answer/", lambda route: route.fulfill(status=503, body="Service Unavailable"))
    page.goto(link)
    expect(page.locator("h1")).to_have_text("Autism-Spectrum Quotient (AQ-50)")
    assert answer_questionnaire(page, 1) == 50
    expect(page.locator("h1")).not_to_have_text("Autism-Spectrum Quotient (AQ-50)")
    answers = InstrumentResponse.objects.filter(participant=participant, instrument__slug="aq50")
    assert answers.count() == 50
    assert not answers.filter(rt_ms__isnull=True).exists()


def test_an_answer_changed_while_the_first_is_on_its_way_is_stored_last(browser_context, questionnaire_link):
    link, participant = questionnaire_link
    held = []  # the first autosave, kept from the server until the answer has been changed

    def hold_the_first(route):
        if held:
            route.continue_()
        else:
            held.append(route)

    page = browser_context.new_page()
    page.route("**/answer/", hold_the_first)
    page.goto(link)
    first_item = page.locator("li.item").first
    item_number = int(first_item.get_attribute("data-item"))
    first_item.locator("input[type=radio]").nth(0).check()
    page.wait_for_timeout(300)
    first_item.locator("input[type=radio]").nth(2).check()
    page.wait_for_timeout(500)  # without one sender per item, the second answer is stored now
    assert len(held) == 1
    held[0].continue_()
    assert held[0].request.response().status == 200  # the first answer is stored by now
    stored = InstrumentResponse.objects.filter(participant=participant, item_number=item_number)
    for _ in range(50):
        if stored.filter(response_index=2).exists():
            break
        page.wait_for_timeout(100)  # the page sends the second answer once the first is acknowledged
    assert list(stored.values_list("response_index", flat=True)) == [2]
    expect(page.locator("#answered-count")).to_have_text("1 of 50 answered")
