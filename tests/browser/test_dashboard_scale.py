"""The study dashboard of a simulated 50-annotator × 2,121-item study in Chromium at 1280 × 800: the study monitor
in one screen on top, then the analysis under three screens (2,400 px) before any list is expanded, with the
weights and without (every item then lacks a weighted label), and the lists open and page from there.

The load time is recorded (printed, and kept as a JUnit property) from the browser's navigation timing: the
server's part (request sent → first byte) and the whole load with plotly and the charts drawn. The only timed
assertion is that the server's part stays under 5 s, five times the 1 s aimed for, because this test shares two
cores with other runs; benchmarks/dashboard_scale.py measures the server time on its own (about 30–60 ms).
Set DASHBOARD_SCALE_SCREENSHOT=/tmp/scale.png to keep a full-page screenshot.
"""
from __future__ import annotations

import pytest
from playwright.sync_api import expect

from tests.browser.staff import assert_no_sideways_scroll, logged_in_page, outside_requests, screenshot_if_asked
from tests.scale_study import scale_study

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.django_db(transaction=True)]

SCREEN = 800
NAVIGATION_TIMING = """() => { const t = performance.getEntriesByType("navigation")[0];
    return {server: t.responseStart - t.requestStart, load: t.loadEventEnd - t.startTime}; }"""


@pytest.mark.parametrize("with_scores", [True, False], ids=["weighted", "no weights"])
def test_the_2121_item_dashboard_stays_under_three_screens(live_server, chromium, with_scores, record_property):
    from auditapp.worker_status import worker_heartbeat

    study = scale_study(with_scores=with_scores)
    worker_heartbeat(hostname="celery@test")  # a worker is alive, as on a running server: no banner
    context = chromium.new_context(viewport={"width": 1280, "height": SCREEN})
    page, problems, requests = logged_in_page(context, live_server)
    page.goto(f"{live_server.url}/studies/{study.id}/dashboard/")
    expect(page.locator("#chart-kappa > *").first).to_be_attached()  # the last chart drawn, or its note
    page.wait_for_function("() => performance.getEntriesByType('navigation')[0].loadEventEnd > 0")
    timing = page.evaluate(NAVIGATION_TIMING)
    height = page.evaluate("() => document.documentElement.scrollHeight")
    monitor = page.locator("#monitor").bounding_box()
    analysis_top = page.locator("#analysis-heading").bounding_box()["y"]
    record_property("dashboard_server_ms", round(timing["server"]))
    record_property("dashboard_load_ms", round(timing["load"]))
    record_property("dashboard_height_px", height)
    print(f"2,121-item dashboard ({'weighted' if with_scores else 'no weights'}): server {timing['server']:.0f} ms, "
          f"load {timing['load']:.0f} ms, {height} px tall")
    screenshot_if_asked(page, "DASHBOARD_SCALE_SCREENSHOT")
    assert monitor["height"] < SCREEN
    assert height - analysis_top < 3 * SCREEN
    assert timing["server"] < 5000

    ties = page.locator("#ties-details")
    n_ties = int(page.locator("#ties-section h2").text_content().rsplit("(", 1)[1].rstrip(")"))
    if not with_scores:
        assert n_ties == 2121
    expect(page.locator("#ties tbody tr").first).to_be_hidden()
    ties.locator("summary").click()
    expect(page.locator("#ties tbody tr")).to_have_count(min(n_ties, 50))
    if n_ties > 50:
        page.click("#ties-next")
        expect(page.locator("#ties-range")).to_contain_text(f"Items 51–{min(n_ties, 100)} of {n_ties}")
        expect(page.locator("#ties-details")).to_have_attribute("open", "")
        page.fill("#ties-q", "sentence 212")
        page.press("#ties-q", "Enter")
        expect(page.locator("#ties-range")).to_contain_text("containing “sentence 212”")
    assert_no_sideways_scroll(page, unfold="#ties-details")
    assert outside_requests(requests, live_server) == []
    assert problems == []
    context.close()
