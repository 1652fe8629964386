"""A researcher sees a running audit's parse quality in Chromium: the warning for a cell whose replies are mostly
prose cut off at the token limit, its reply shapes and finish reasons, and one click to its unparseable replies."""
from __future__ import annotations

import pytest
from playwright.sync_api import expect

from tests.auditapp.test_parse_quality_report import COT, ZS, planted
from tests.browser.staff import logged_in_page

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.django_db(transaction=True)]


def test_parse_quality_section_warns_and_opens_the_unparseable_replies(live_server, browser_context):
    audit = planted({"zs": ZS, "cot": COT})
    page, problems, _ = logged_in_page(browser_context, live_server, "parse-quality-researcher")
    page.goto(f"{live_server.url}/audits/{audit.id}/dashboard/")

    rows = page.locator("#parse-quality-table tbody tr")
    expect(rows).to_have_count(2)
    expect(page.locator("#parse-quality-warnings li")).to_have_count(1)
    expect(page.locator("#parse-quality-warnings")).to_contain_text("16 of 28 answered replies are unparseable")
    expect(page.locator("#status-attention")).to_have_text(
        "Needs attention: 1 request failed; 1 row's replies are mostly unparseable or cut off (see the progress "
        "and parse quality below).")
    zs = page.locator('#parse-quality-table tr[data-condition="zs"]')
    expect(zs).to_have_class("warning")
    expect(zs.locator('td[data-outcome="unparseable"]')).to_have_text("14 (47%)")
    expect(zs.locator(".finish-reasons .truncated")).to_have_text("length: 12")
    expect(zs.locator(".finish-reasons")).to_contain_text("12 cut off at the token limit: raise max_tokens")
    expect(zs.locator(".shapes li").first).to_have_text('prose "the given sentences" · 20–99 chars · cut off × 10')
    expect(page.locator('#parse-quality-table tr[data-condition="cot"] .shapes')).to_have_text("—")

    zs.get_by_role("button", name="Unparseable replies").click()
    expect(page.locator("#drilldown")).to_be_visible()
    expect(page.locator('#drill-filters button[data-outcome="unparseable"]')).to_have_attribute("aria-pressed",
                                                                                                "true")
    expect(page.locator("#drill-table tbody tr")).to_have_count(14)
    assert problems == []
