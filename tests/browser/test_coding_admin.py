"""A researcher runs a round without the API, in Chromium: from a completed audit's dashboard to the admin form,
draws a 12-excerpt round with two lenses, invites an outside coder and reads the invite link from the round's
page; the coder opens it on another device and lands on their lens's intro."""
from __future__ import annotations

import pytest
from django.test import Client
from playwright.sync_api import expect

from coding.codebook_selectors import codebook_defaults_latest
from coding.models import Coder, CodingRound
from tests.browser.staff import assert_no_sideways_scroll
from tests.coding.round_support import make_completed_audit
from tests.factories import make_researcher

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.django_db(transaction=True)]


def test_a_researcher_draws_a_round_and_invites_a_coder_in_the_browser(live_server, chromium):
    audit = make_completed_audit(12)
    researcher = Client()
    researcher.force_login(make_researcher("round-runner")[0])
    context = chromium.new_context(viewport={"width": 1200, "height": 900})
    context.add_cookies([{"name": "sessionid", "value": researcher.cookies["sessionid"].value,
                          "url": live_server.url}])
    page = context.new_page()
    problems: list[str] = []
    page.on("pageerror", lambda error: problems.append(str(error)))

    page.goto(f"{live_server.url}/audits/{audit.id}/dashboard/")
    page.click("#new-coding-round")
    expect(page.locator("#round-create")).to_be_visible()
    assert_no_sideways_scroll(page)
    lenses = codebook_defaults_latest()
    page.fill("input[name=name]", "Pilot round")
    page.fill("input[name=sample_size]", "12")
    page.fill("input[name=seed]", "2024")
    page.select_option("select[name=lens_3]", "")  # two lenses: the shipped thematic and linguistic codebooks
    page.click("#round-create input[type=submit]")

    expect(page.locator("#strata")).to_be_visible()
    coding_round = CodingRound.objects.get()
    assert coding_round.excerpts.count() == 12 and coding_round.seed == 2024
    assert [lens.codebook_id for lens in coding_round.lenses.order_by("position")] == [c.id for c in lenses[:2]]
    second_lens = coding_round.lenses.get(position=1)
    page.select_option("#coder-add select[name=lens]", str(second_lens.id))
    page.fill("#coder-add input[name=name]", "Analyst 2")
    page.click("#coder-add input[type=submit]")
    link = page.get_attribute('input[aria-label="Invite link of Analyst 2"]', "value")
    assert link == f"{live_server.url}/c/{Coder.objects.get(name='Analyst 2').invite_token}/"
    assert_no_sideways_scroll(page)
    assert problems == []
    context.close()

    elsewhere = chromium.new_context()
    coder_page = elsewhere.new_page()
    coder_page.goto(link)
    expect(coder_page.locator("#lens-name")).to_have_text(lenses[1].name)
    elsewhere.close()
