"""An annotator takes the whole study in Debian Chromium, then the exports show exactly what they did."""
from __future__ import annotations

import pytest
from django.db.models import Count
from playwright.sync_api import expect
from rest_framework.test import APIClient

from annotation.models import Label
from psychometrics.iat import iat_d_score
from psychometrics.models import IATTrial, InstrumentResponse
from tests.browser.annotator import answer_questionnaire, consent, iat_config, label_items, run_iat_blocks
from tests.factories import make_researcher
from tests.participant.helpers import flow_study, invite, trials_frame

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def researcher_api():
    _, token = make_researcher("browser-researcher")
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {token}")
    return client


def test_whole_flow_in_chromium(live_server, browser_context, researcher_api):
    study = flow_study(n_items=4, items_per_annotator=3)
    (participant,) = invite(study)
    page = browser_context.new_page()
    page.goto(f"{live_server.url}/p/{participant.invite_token}/")
    consent(page)
    expect(page.locator("h1")).to_have_text("Autism-Spectrum Quotient (AQ-50)")
    answer_questionnaire(page, 0)   # all "Definitely agree"
    expect(page.locator("h1")).to_contain_text("SATA")
    answer_questionnaire(page, 3)   # all "Strongly agree"
    errors = run_iat_blocks(page, wrong_first_on=(0, 5))
    expect(page.locator("#start-labelling")).to_be_visible()
    page.click("#start-labelling")
    expect(page.locator("#progress")).to_have_text("Sentence 1 of 4")
    assert label_items(page) == 4
    expect(page.locator("#completion-code")).to_have_text(study.completion_code)

    row = researcher_api.get(f"/api/studies/{study.id}/participants/").json()["results"][0]
    assert (row["aq"], row["sata"], row["status"], row["n_labels"]) == (24, 8, "completed", 4)
    assert (row["attention_check_score"], row["attention_checks_passed"]) == (1.0, True)
    trials = researcher_api.get(f"/api/studies/{study.id}/iat-trials/?page_size=10000").json()["results"]
    assert len(trials) == 200
    assert sorted((t["block"], t["trial"]) for t in trials if t["error"]) == sorted(errors)
    assert all(t["latency_correct_ms"] > t["latency_first_ms"] for t in trials if t["error"])
    assert all(t["latency_correct_ms"] == t["latency_first_ms"] for t in trials if not t["error"])
    assert row["iat_d"] == pytest.approx(iat_d_score(trials_frame(trials)).d)
    answers = InstrumentResponse.objects.filter(participant=participant)
    assert answers.count() == 55
    assert set(answers.filter(instrument__slug="aq50").values_list("response_index", flat=True)) == {0}
    assert answers.filter(rt_ms__isnull=False).count() == 55  # every answer autosaved with its time
    assert set(Label.objects.filter(participant=participant, item__attention_check_answer__isnull=True)
               .values_list("value", flat=True)) == {1}


def test_closing_the_tab_mid_questionnaire_mid_iat_and_mid_labelling_loses_nothing(live_server, chromium):
    study = flow_study(n_items=4, items_per_annotator=4)
    (participant,) = invite(study)
    link = f"{live_server.url}/p/{participant.invite_token}/"

    def reopen():
        context = chromium.new_context()  # a fresh browser: nothing kept but the link
        page = context.new_page()
        page.goto(link)
        return context, page

    context, page = reopen()
    consent(page)
    assert answer_questionnaire(page, 1, limit=10, submit=False) == 10
    page.wait_for_function("() => true")
    expect(page.locator("#answered-count")).to_have_text("10 of 50 answered")
    page.wait_for_timeout(500)  # let the last autosave land before the tab is closed
    context.close()

    context, page = reopen()
    expect(page.locator("#answered-count")).to_have_text("10 of 50 answered")
    assert answer_questionnaire(page, 1) == 40
    answer_questionnaire(page, 0)
    run_iat_blocks(page, until_block=3, stop_after_trials=7)
    context.close()
    assert IATTrial.objects.filter(participant=participant).count() == 40  # blocks 1 and 2; block 3 restarts

    context, page = reopen()
    assert iat_config(page)["start_block"] == 3
    run_iat_blocks(page)
    page.click("#start-labelling")
    assert label_items(page, count=2) == 2
    context.close()

    context, page = reopen()
    expect(page.locator("#progress")).to_have_text("Sentence 3 of 5")
    assert label_items(page) == 3
    expect(page.locator("#completion-code")).to_be_visible()
    context.close()

    assert IATTrial.objects.filter(participant=participant).count() == 200
    per_block = dict(IATTrial.objects.filter(participant=participant).order_by().values("block")
                     .annotate(n=Count("id")).values_list("block", "n"))
    assert per_block == {1: 20, 2: 20, 3: 20, 4: 40, 5: 40, 6: 20, 7: 40}  # nothing lost, nothing twice
    assert InstrumentResponse.objects.filter(participant=participant).count() == 55
    assert Label.objects.filter(participant=participant).count() == 5
