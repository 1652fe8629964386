"""A researcher reads the robustness sections (alternative ground truths) in Debian Chromium: the study dashboard's
agreement heatmap of the alternative ground truths and the audit dashboard's κ per model under each alternative, drawn
by plotly."""
from __future__ import annotations

import pytest
from playwright.sync_api import expect

from tests.auditapp.test_robustness import audited_study
from tests.browser.staff import assert_no_sideways_scroll, logged_in_page, outside_requests

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.django_db(transaction=True)]


def test_the_robustness_sections_render(live_server, browser_context, audit_tasks_off):
    study, audit = audited_study()
    page, problems, requests = logged_in_page(browser_context, live_server)

    page.goto(f"{live_server.url}/studies/{study.id}/dashboard/")
    expect(page.locator("#robustness-alternatives")).to_be_hidden()  # folded away, counts in its summary
    page.locator("#robustness-details > summary").click()
    expect(page.locator("#robustness-alternatives")).to_be_visible()
    expect(page.locator("#chart-robustness-agreement .main-svg").first).to_be_attached()
    assert page.locator("#chart-robustness-agreement").bounding_box()["width"] > 600  # sized when opened
    assert page.locator("#chart-robustness-agreement .heatmaplayer image, "
                        "#chart-robustness-agreement .heatmaplayer .hm").count() >= 1
    expect(page.locator('#robustness-alternatives tr[data-alternative="dawid_skene"]')).to_contain_text("Dawid–Skene")
    flipped = page.locator("#robustness details.flipped")
    if flipped.count():  # collapsed until opened
        expect(flipped.first.locator("table")).not_to_be_visible()
        flipped.first.locator("summary").click()
        expect(flipped.first.locator("table")).to_be_visible()
    assert_no_sideways_scroll(page, unfold="details")

    page.goto(f"{live_server.url}/audits/{audit.id}/dashboard/")
    expect(page.locator("#chart-robustness .main-svg").first).to_be_attached()
    # One condition at a time (the menu picks it): 11 alternatives, each a point with its CI for the 2 models.
    assert page.locator("#chart-robustness .scatterlayer .trace").count() == 11
    assert page.locator("#chart-robustness .scatterlayer .point").count() == 22
    expect(page.locator("#chart-robustness .updatemenu-container")).to_be_attached()
    expect(page.locator('#robustness-tests tr[data-alternative="majority"]')).to_contain_text("Majority vote")
    assert outside_requests(requests, live_server) == []
    assert problems == []
