"""A label given while the database is unreachable is kept by the page and arrives once it is back, also when
the tab was closed meanwhile."""
from __future__ import annotations

import pytest
from django.db import OperationalError
from playwright.sync_api import expect

from annotation import views
from annotation.models import Label
from annotation.participation import instructions_read, participant_consent
from tests.participant.helpers import flow_study, invite

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def labelling_participant():
    study = flow_study(n_items=2, items_per_annotator=2, iat=False, attention_check=False)
    study.study_instruments.all().delete()
    (participant,) = invite(study)
    participant_consent(participant=participant)
    instructions_read(participant=participant)
    return participant


@pytest.fixture
def database_outage(monkeypatch):
    """The label posts fail as with PostgreSQL down while ``outage["down"]`` is true; counts the failures."""
    outage = {"down": True, "refused": 0}
    real_label_submit = views.label_submit

    def label_submit(**kwargs):
        if outage["down"]:
            outage["refused"] += 1
            raise OperationalError("connection to server at 127.0.0.1 failed: Connection refused")
        return real_label_submit(**kwargs)
    monkeypatch.setattr(views, "label_submit", label_submit)
    return outage


def test_a_label_posted_during_an_outage_arrives_when_the_database_is_back(
        live_server, browser_context, labelling_participant, database_outage):
    page = browser_context.new_page()
    page.goto(f"{live_server.url}/p/{labelling_participant.invite_token}/label/")
    expect(page.locator("#progress")).to_have_text("Sentence 1 of 2")
    page.fill("#rationale", "kept through the outage")
    page.locator("#target").click()
    page.keyboard.press("1")
    expect(page.locator("#label-status")).to_contain_text("Your answer is kept")
    page.wait_for_function("() => true")
    page.wait_for_timeout(1500)
    assert database_outage["refused"] >= 2 and not Label.objects.exists()
    database_outage["down"] = False
    expect(page.locator("#progress")).to_have_text("Sentence 2 of 2", timeout=20_000)
    label = Label.objects.get(participant=labelling_participant)
    assert (label.value, label.rationale) == (1, "kept through the outage")


def test_a_label_left_unacknowledged_in_a_closed_tab_is_sent_when_the_link_is_opened_again(
        live_server, browser_context, labelling_participant, database_outage):
    link = f"{live_server.url}/p/{labelling_participant.invite_token}/"
    page = browser_context.new_page()
    page.goto(link + "label/")
    page.keyboard.press("0")
    expect(page.locator("#label-status")).to_contain_text("Your answer is kept")
    page.close()
    database_outage["down"] = False
    assert not Label.objects.exists()
    page = browser_context.new_page()
    page.goto(link)
    expect(page.locator("#progress")).to_have_text("Sentence 2 of 2", timeout=20_000)
    assert Label.objects.get(participant=labelling_participant).value == 0
