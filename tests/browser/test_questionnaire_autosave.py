"""Questionnaire autosaves in Chromium when the server does not answer as hoped: answers whose autosaves all
failed reach the server with their times through the page's Continue; an answer changed while the first one
is still on its way is stored over it, never under it; a changed answer ends a failing one's backoff; a request
that never gets an answer is given up, so the item's later answers are not held back."""
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


def _first_item_answered(browser_context, link: str, autosaves) -> tuple[object, int, object]:
    """A page whose autosaves go through the route handler ``autosaves``, its first item answered with the first
    option: the page, the item's number and its options."""
    page = browser_context.new_page()
    page.route("**/answer/", autosaves)
    page.goto(link)
    item = page.locator("li.item").first
    options = item.locator("input[type=radio]")
    options.nth(0).check()
    return page, int(item.get_attribute("data-item")), options


def _until(page, predicate, seconds: float) -> bool:
    """Whether ``predicate()`` came true within about ``seconds``, waiting with the page (Playwright's sync API runs
    route handlers only during its own calls)."""
    for _ in range(int(seconds * 10)):
        if predicate():
            return True
        page.wait_for_timeout(100)
    return predicate()


def test_an_answer_changed_while_the_first_is_on_its_way_is_stored_last(browser_context, questionnaire_link):
    link, participant = questionnaire_link
    seen = []  # every autosave request, in the order the page sent them; the first is held until released

    def hold_the_first(route):
        seen.append(route)
        if len(seen) > 1:
            route.continue_()

    page, item_number, options = _first_item_answered(browser_context, link, hold_the_first)
    assert _until(page, lambda: len(seen) == 1, 5)
    options.nth(2).check()
    page.wait_for_timeout(500)
    assert len(seen) == 1  # the second answer waits for the first: sent now, it could overtake it
    seen[0].continue_()
    assert seen[0].request.response().status == 200
    stored = InstrumentResponse.objects.filter(participant=participant, item_number=item_number)
    assert _until(page, lambda: stored.filter(response_index=2).exists(), 5)
    assert len(seen) == 2 and list(stored.values_list("response_index", flat=True)) == [2]
    expect(page.locator("#answered-count")).to_have_text("1 of 50 answered")


def test_a_changed_answer_ends_the_backoff_of_a_failing_one(browser_context, questionnaire_link):
    link, participant = questionnaire_link
    refused = []

    def refuse_the_first_answer(route):
        if '"response":0' in route.request.post_data:
            refused.append(route)
            route.fulfill(status=503, body="Service Unavailable")
        else:
            route.continue_()

    page, item_number, options = _first_item_answered(browser_context, link, refuse_the_first_answer)
    # Refused at 0, 0.5, 1.5, 3.5 and 7.5 s: the page then waits 8 s before sending it again.
    assert _until(page, lambda: len(refused) == 5, 15)
    options.nth(2).check()
    stored = InstrumentResponse.objects.filter(participant=participant, item_number=item_number)
    assert _until(page, lambda: stored.filter(response_index=2).exists(), 4)
    assert len(refused) == 5


def test_a_stalled_request_is_given_up_and_the_changed_answer_sent(browser_context, questionnaire_link):
    link, participant = questionnaire_link
    stalled = []  # the first autosave: never answered, as over a connection that died without a word

    def stall_the_first(route):
        if stalled:
            route.continue_()
        else:
            stalled.append(route)

    page, item_number, options = _first_item_answered(browser_context, link, stall_the_first)
    assert _until(page, lambda: len(stalled) == 1, 5)
    options.nth(2).check()
    stored = InstrumentResponse.objects.filter(participant=participant, item_number=item_number)
    # Given up after 15 s, then sent again after 0.5 s: now with the changed answer.
    assert _until(page, lambda: stored.filter(response_index=2).exists(), 25)
    assert list(stored.values_list("response_index", flat=True)) == [2]
