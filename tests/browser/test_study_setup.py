"""A researcher sets a study up in its admin page in Debian Chromium: the page passes axe-core with its instrument
rows, asks for no missing file (the site's icon), edits the IAT categories and words, copies the open link, and
opens the preview as a participant; the import pages fit a phone.

Set STUDY_SETUP_SCREENSHOT=/tmp/study-setup.png to keep a full-page screenshot of the study's admin page.
"""
from __future__ import annotations

import pytest
from playwright.sync_api import expect

from annotation.models import Study
from psychometrics.services import StudyInstrumentChoice, instruments_sync_shipped, study_instruments_set
from tests.browser.accessibility import assert_accessible
from tests.browser.staff import assert_no_sideways_scroll, logged_in_page, screenshot_if_asked
from tests.factories import make_study

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.django_db(transaction=True)]


def _study_with_instruments() -> Study:
    study = make_study(name="Setup in the browser", open_link_enabled=True)
    shipped = {instrument.slug: instrument for instrument in instruments_sync_shipped()}
    study_instruments_set(study=study, choices=[StudyInstrumentChoice(instrument=shipped["aq50"]),
                                                StudyInstrumentChoice(instrument=shipped["sata_partial"], position=1)])
    return study


def _failed_responses(page) -> list[str]:
    failed: list[str] = []
    page.on("response", lambda response: failed.append(f"{response.status} {response.url}")
            if response.status >= 400 else None)
    return failed


def test_the_study_admin_page_passes_axe_and_asks_for_no_missing_file(live_server, browser_context):
    study = _study_with_instruments()
    page, problems, requests = logged_in_page(browser_context, live_server)
    failed = _failed_responses(page)
    page.goto(f"{live_server.url}/admin/annotation/study/{study.pk}/change/")
    expect(page.locator("#id_study_instruments-1-role")).to_have_value("sata")
    assert_accessible(page, "study admin page")
    page.get_by_text("Add another Study instrument").click()
    expect(page.locator("#id_study_instruments-2-role")).to_have_value("")
    assert_accessible(page, "study admin page with a new instrument row")
    screenshot_if_asked(page, "STUDY_SETUP_SCREENSHOT")
    assert_no_sideways_scroll(page)
    page.goto(f"{live_server.url}/admin/")
    page.wait_for_load_state("networkidle")
    assert f"{live_server.url}/static/site/favicon.svg" in requests
    assert failed == [] and problems == []


def test_the_iat_editor_counts_words_marks_a_repeat_and_saves_the_study_own(live_server, browser_context):
    study = _study_with_instruments()
    page, problems, _ = logged_in_page(browser_context, live_server)
    page.goto(f"{live_server.url}/admin/annotation/study/{study.pk}/change/")
    expect(page.locator("#id_iat_stimuli-source-default")).to_be_checked()
    unpleasant = page.locator("#id_iat_stimuli-attribute_neg-words")
    unpleasant.fill("Agony\nJoy")  # "Joy" is a pleasant word too
    expect(page.locator("#id_iat_stimuli-source-custom")).to_be_checked()  # an edit means the study's own words
    expect(page.locator("#id_iat_stimuli-attribute_neg-count")).to_have_text("2 words (at least 2)")
    expect(page.locator(".iat-stimuli-hints")).to_have_text("\u201cJoy\u201d is in both Pleasant and Unpleasant")
    expect(unpleasant).to_have_class("has-repeat")
    assert_accessible(page, "IAT editor with a hint")

    page.click("input[name=_continue]")  # the server refuses it too, naming the category
    expect(page.locator(".field-iat_stimuli .errorlist")).to_contain_text(
        "'Joy' is in both Pleasant attribute ('Pleasant') and Unpleasant attribute ('Unpleasant')")
    unpleasant = page.locator("#id_iat_stimuli-attribute_neg-words")
    expect(unpleasant).to_have_value("Agony\nJoy")  # the edit is kept
    unpleasant.fill("Agony\nHurt")
    page.locator("#id_iat_stimuli-attribute_neg-label").fill("Bad")
    expect(page.locator(".iat-stimuli-hints")).to_be_hidden()
    page.click("input[name=_continue]")
    expect(page.locator(".messagelist .success")).to_be_visible()
    study.refresh_from_db()
    assert study.iat_stimuli["attribute_neg_label"] == "Bad"
    assert study.iat_stimuli["attribute_neg_words"] == ["Agony", "Hurt"]
    assert study.iat_stimuli["attribute_pos_words"][:2] == ["Friendly", "Joy"]
    assert problems == []


def test_the_open_link_is_absolute_and_copied(live_server, browser_context):
    study = _study_with_instruments()
    browser_context.grant_permissions(["clipboard-read", "clipboard-write"], origin=live_server.url)
    page, problems, _ = logged_in_page(browser_context, live_server)
    page.goto(f"{live_server.url}/admin/annotation/study/{study.pk}/change/")
    link = f"{live_server.url}/join/{study.open_link_token}/"
    expect(page.locator("#open-link")).to_have_value(link)
    page.click("#copy-open-link")
    expect(page.locator("#copy-open-link-status")).to_have_text("Copied.")
    assert page.evaluate("() => navigator.clipboard.readText()") == link
    assert problems == []


def test_the_preview_opens_from_the_study_page_and_passes_axe(live_server, browser_context):
    study = _study_with_instruments()
    study.status = Study.Status.OPEN
    study.save()
    page, problems, _ = logged_in_page(browser_context, live_server)
    page.goto(f"{live_server.url}/admin/annotation/study/{study.pk}/change/")
    page.click("#preview-as-participant")
    expect(page.locator("#preview-banner")).to_contain_text("nothing you do here is stored")
    assert_accessible(page, "preview: consent")
    assert_no_sideways_scroll(page)
    page.click("#consent-button")
    expect(page.locator("h1")).to_have_text("Autism-Spectrum Quotient (AQ-50)")
    page.locator("li.item").first.locator("input[type=radio]").first.check()
    expect(page.locator("#answered-count")).to_have_text("1 of 50 answered")
    assert_accessible(page, "preview: questionnaire")
    assert_no_sideways_scroll(page)
    assert problems == []


def test_the_study_import_pages_fit_a_phone_and_pass_axe(live_server, browser_context):
    """The import forms' encoding menu (its longest choice wider than a phone) keeps within the screen."""
    study = _study_with_instruments()
    page, problems, _ = logged_in_page(browser_context, live_server)
    for step, title in (("import-items", "Import items"), ("import-annotator-data", "Import annotator data")):
        page.goto(f"{live_server.url}/admin/annotation/study/{study.pk}/{step}/")
        expect(page.locator(".breadcrumbs")).to_contain_text(title)
        assert_accessible(page, title)
        assert_no_sideways_scroll(page)
    assert problems == []
