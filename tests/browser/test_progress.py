"""Progress as an annotator sees it in Chromium: "Step n of N" across the study, "n of 50 answered" live and
without JavaScript, the summary and focus on the first unanswered statement at submit, the IAT's trial counter
per block, and the labelling page's sentence counter."""
from __future__ import annotations

import pytest
from playwright.sync_api import expect

from tests.browser.annotator import answer_questionnaire, consent, label_items, run_iat_blocks
from tests.participant.helpers import flow_study, invite

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.django_db(transaction=True)]


def test_progress_texts_across_the_study(live_server, chromium):
    study = flow_study(n_items=4, items_per_annotator=3)
    (participant,) = invite(study)
    link = f"{live_server.url}/p/{participant.invite_token}/"
    context = chromium.new_context(viewport={"width": 1280, "height": 800})
    page = context.new_page()
    page.goto(link)
    expect(page.locator("#study-step")).to_have_text("Step 1 of 5: Consent")
    consent(page)

    # Questionnaire: the count follows each answer; a submit with 38 unanswered stays, lists them and focuses
    # the first of them (the 13th statement on the page).
    expect(page.locator("#study-step")).to_have_text("Step 2 of 5: Autism-Spectrum Quotient (AQ-50)")
    expect(page.locator("#answered-count")).to_have_text("0 of 50 answered")
    answer_questionnaire(page, 0, limit=12, submit=False)
    expect(page.locator("#answered-count")).to_have_text("12 of 50 answered")
    questionnaire_url = page.url
    page.evaluate("() => { window.notReloaded = true; }")
    page.click("#questionnaire-submit")
    expect(page.locator("#error-summary h2")).to_have_text("38 statements not answered yet")
    expect(page.locator("#error-summary a")).to_have_count(38)
    assert page.evaluate("() => window.notReloaded") is True  # the script answered, not a round trip
    assert page.evaluate("() => document.activeElement.closest('li.item').dataset.position") == "12"
    assert page.evaluate("() => document.activeElement.getBoundingClientRect().top") < 800  # scrolled to it
    page.wait_for_timeout(500)  # the autosaves land

    # Without JavaScript the server counts the saved answers and answers a short form with the same summary.
    no_script = chromium.new_context(java_script_enabled=False)
    plain = no_script.new_page()
    plain.goto(questionnaire_url)
    expect(plain.locator("#answered-count")).to_have_text("12 of 50 answered")
    plain.click("#questionnaire-submit")
    expect(plain.locator("#error-summary h2")).to_have_text("38 statements not answered yet")
    expect(plain.locator("li.item.missing")).to_have_count(38)
    expect(plain.locator("li.item input:checked")).to_have_count(12)  # the answers given are kept
    no_script.close()

    answer_questionnaire(page, 0)
    expect(page.locator("#study-step")).to_contain_text("Step 3 of 5: ")
    answer_questionnaire(page, 3)

    # IAT: the block's length before it starts, then the trial in the block.
    expect(page.locator("#study-step")).to_have_text("Step 4 of 5: Reaction-time task")
    expect(page.locator("#iat-progress")).to_have_text("Block 1 of 7 · 20 trials")
    run_iat_blocks(page, until_block=2, stop_after_trials=5)
    expect(page.locator("#iat-progress")).to_have_text("Block 2 of 7 · trial 6 of 20")
    page.reload()  # block 2 restarts from its first trial
    expect(page.locator("#iat-progress")).to_have_text("Block 2 of 7 · 20 trials")
    run_iat_blocks(page)

    expect(page.locator("#study-step")).to_have_text("Step 5 of 5: Labelling")
    page.click("#start-labelling")
    expect(page.locator("#study-step")).to_have_text("Step 5 of 5: Labelling")
    expect(page.locator("#progress")).to_have_text("Sentence 1 of 4")
    assert label_items(page, count=1) == 1
    expect(page.locator("#progress")).to_have_text("Sentence 2 of 4")
    assert label_items(page) == 3
    expect(page.locator("#completion-code")).to_be_visible()
    expect(page.locator("#study-step")).to_have_count(0)
    context.close()


def test_the_unanswered_summary_appears_in_a_browser_without_replace_children(live_server, chromium):
    """Safari before 14 has no ``replaceChildren``: with it removed before the page's scripts run, a submit with
    statements unanswered still shows the summary on the page (no round trip), focuses the first one, and throws
    nothing; where even building the summary fails, the submit is not held back and the server shows it."""
    study = flow_study(n_items=4, items_per_annotator=3)
    (participant,) = invite(study)
    context = chromium.new_context(viewport={"width": 1280, "height": 800})
    context.add_init_script("for (const type of [Element, Document, DocumentFragment]) {"
                            " delete type.prototype.replaceChildren; }")
    page = context.new_page()
    errors = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.goto(f"{live_server.url}/p/{participant.invite_token}/")
    consent(page)
    assert page.evaluate("() => typeof document.body.replaceChildren") == "undefined"
    answer_questionnaire(page, 0, limit=48, submit=False)
    page.evaluate("() => { window.notReloaded = true; }")
    page.click("#questionnaire-submit")
    expect(page.locator("#error-summary h2")).to_have_text("2 statements not answered yet")
    expect(page.locator("#error-summary a")).to_have_count(2)
    assert page.evaluate("() => window.notReloaded") is True
    assert page.evaluate("() => document.activeElement.closest('li.item').dataset.position") == "48"
    # A second submit rebuilds the summary in place rather than adding to it.
    page.locator("li.item").nth(48).locator("input[type=radio]").first.check()
    page.click("#questionnaire-submit")
    expect(page.locator("#error-summary h2")).to_have_text("1 statement not answered yet")
    expect(page.locator("#error-summary h2")).to_have_count(1)
    expect(page.locator("#error-summary a")).to_have_count(1)
    assert errors == []
    context.close()

    # A browser that cannot build the summary at all (no append either) is not left with a dead button: the
    # submit goes on to the server, which answers with the same summary and keeps the answers given.
    broken = chromium.new_context(viewport={"width": 1280, "height": 800})
    broken.add_init_script("for (const type of [Element, Document, DocumentFragment]) {"
                           " delete type.prototype.replaceChildren; delete type.prototype.append; }")
    page = broken.new_page()
    page.goto(f"{live_server.url}/p/{participant.invite_token}/")
    page.wait_for_timeout(500)  # the first context's autosaves have landed
    page.evaluate("() => { window.notReloaded = true; }")
    page.click("#questionnaire-submit")
    expect(page.locator("#error-summary h2")).to_have_text("1 statement not answered yet")
    assert page.evaluate("() => window.notReloaded") is None  # the server's page, not the script's
    expect(page.locator("li.item input:checked")).to_have_count(49)
    broken.close()
