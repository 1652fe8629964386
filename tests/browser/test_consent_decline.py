"""Consent as a visitor meets it in Chromium, on a desktop and on a phone: the duration on the first screen, a
decline button that ends the study there, storing nothing but the decline, and going on to the panel's
no-consent address when the study has one."""
from __future__ import annotations

import pytest
from django.forms.models import model_to_dict
from playwright.sync_api import expect

from annotation.models import Participant
from tests.browser.accessibility import assert_accessible
from tests.browser.test_touch_iat import PHONE
from tests.participant.helpers import flow_study, invite

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.django_db(transaction=True)]

DESKTOP = {"viewport": {"width": 1366, "height": 900}}


@pytest.mark.parametrize("panel", [False, True], ids=["thank-you page", "no-consent URL"])
@pytest.mark.parametrize("device", ["desktop", "phone"])
def test_decline_at_consent_stores_only_the_decline(live_server, chromium, device, panel):
    study = flow_study()
    if panel:  # a panel's no-consent address (here a page of the live server, as the network is closed)
        study.no_consent_url = f"{live_server.url}/healthz?cc=NOCONSENT"
        study.save()
    (participant,) = invite(study)
    before = model_to_dict(Participant.objects.get(pk=participant.pk))
    context = chromium.new_context(**(PHONE if device == "phone" else DESKTOP))
    page = context.new_page()
    page.goto(f"{live_server.url}/p/{participant.invite_token}/")
    duration = page.locator("#duration")
    expect(duration).to_contain_text("This study takes about")
    box = duration.bounding_box()
    assert box["y"] + box["height"] <= page.viewport_size["height"]  # on the first screen
    assert_accessible(page, f"consent ({device})")
    decline = page.locator("#decline-button")
    assert decline.bounding_box()["height"] >= 44
    if device == "phone":
        decline.tap()
    else:
        decline.click()
    if panel:
        page.wait_for_url(study.no_consent_url)
    else:
        expect(page.locator("#declined")).to_contain_text("Nothing about you has been recorded")
        assert_accessible(page, f"declined ({device})")
        expect(page.locator("#withdraw-link")).to_have_count(0)
    after = model_to_dict(Participant.objects.get(pk=participant.pk))
    assert {field for field in after if after[field] != before[field]} == {"status", "declined_at"}
    page.goto(f"{live_server.url}/p/{participant.invite_token}/")
    expect(page.locator("h1")).to_have_text("You chose not to take part")
    if panel:  # the page their link shows from now on offers the way back to the panel
        expect(page.locator("#no-consent-link")).to_have_attribute("href", study.no_consent_url)
        assert_accessible(page, f"declined, with the panel's address ({device})")
    context.close()
