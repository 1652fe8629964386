"""A researcher opens a study's dashboard in Debian Chromium: the plotly charts render from our static files.

Set DASHBOARD_SCREENSHOT=/tmp/dashboard.png to keep a full-page screenshot of the rendered dashboard.
"""
from __future__ import annotations

import pytest
from playwright.sync_api import expect

from annotation.study_analysis import study_analysis_compute
from tests.browser.staff import assert_no_sideways_scroll, logged_in_page, outside_requests, screenshot_if_asked
from tests.factories import make_study, make_worked_example_study

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.django_db(transaction=True)]

CHARTS = ("#chart-aq", "#chart-sata", "#chart-iat", "#chart-weight", "#chart-r", "#chart-kappa")


def test_dashboard_draws_its_charts_with_the_vendored_plotly(live_server, browser_context):
    study = make_worked_example_study()
    study_analysis_compute(study_id=study.id)
    page, problems, requests = logged_in_page(browser_context, live_server)
    page.goto(f"{live_server.url}/studies/{study.id}/dashboard/")

    for chart in CHARTS:
        expect(page.locator(f"{chart} .main-svg").first).to_be_attached()
    assert page.locator("#chart-r .main-svg .barlayer .trace").count() == 3   # x̂_AQ/3, x̂_SATA/3, x̂_IAT/3
    assert page.locator("#chart-r .main-svg .barlayer .point").count() == 12  # 4 annotators × 3 segments
    assert page.locator("#chart-aq .main-svg .barlayer .point").count() >= 1
    expect(page.locator("#last-computed")).to_contain_text("Last computed:")
    expect(page.locator("#contingency-total")).to_have_text("3")
    expect(page.locator('#disagreements tr[data-item="x"]')).to_contain_text("P2: 0")
    expect(page.locator('#ties tr[data-item="y"]')).to_contain_text("majority tie")

    plotly_src = page.locator("script[src*='plotly']").get_attribute("src")
    assert plotly_src == "/static/vendor/plotly/plotly.min.js"
    assert f"{live_server.url}/static/vendor/plotly/plotly.min.js" in requests
    assert page.evaluate("() => typeof Plotly.newPlot") == "function"
    assert outside_requests(requests, live_server) == []

    screenshot_if_asked(page, "DASHBOARD_SCREENSHOT")
    assert_no_sideways_scroll(page, unfold="details")
    assert problems == []


def test_dashboard_before_any_analysis_offers_the_computation(live_server, browser_context):
    study = make_worked_example_study()
    page, problems, _ = logged_in_page(browser_context, live_server)
    page.goto(f"{live_server.url}/studies/{study.id}/dashboard/")
    expect(page.locator("#no-analysis")).to_contain_text("No analysis has been computed")
    expect(page.locator("#recompute button")).to_have_text("Compute the analysis")
    assert page.locator("script[src*='plotly']").count() == 0
    assert_no_sideways_scroll(page)
    assert problems == []


def test_dashboard_of_an_analysis_without_data_has_no_errors(live_server, browser_context):
    study = make_study()
    study_analysis_compute(study_id=study.id)
    page, problems, _ = logged_in_page(browser_context, live_server)
    page.goto(f"{live_server.url}/studies/{study.id}/dashboard/")
    expect(page.locator("#chart-aq .chart-empty")).to_have_text("AQ: no scores.")
    expect(page.locator("#chart-r .chart-empty")).to_be_visible()
    expect(page.locator("#chart-kappa .chart-empty")).to_be_visible()
    assert problems == []
