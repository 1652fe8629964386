"""A researcher opens finished word association and affective attribution dashboards in Debian Chromium (seed 003):
the radar charts (Figure 3, one per model, scatterpolar traces per dimension and the dashed
reference at 0 the help text names), the stacked bars (Figure 4, one
chart per model), Table 4 and Table 5, and a drill-down from a progress row to a reply and from the reply to its
request's prompt, reply and parse; on the two-turn AAT dashboard (the paper's form) the conversation count, and a
second turn's drill-down showing the whole conversation (Q1, the model's description, Q2) and its first turn; a
researcher-entered model label shown as text; no console error.

The audits are run by the engine in this process against the test LLM server's personas, as in
tests/auditapp/test_implicit_bias_audit.py. Set IMPLICIT_BIAS_DASHBOARD_SCREENSHOT=/tmp/wabt.png to keep a full-page
screenshot of the word association dashboard.
"""
from __future__ import annotations

import pytest
from playwright.sync_api import expect

from auditapp.models import LLMEndpoint
from tests.auditapp.test_implicit_bias_audit import MODELS, launch, run
from tests.browser.accessibility import serious_violations
from tests.browser.staff import (
    assert_results_first,
    logged_in_page,
    open_status_details,
    outside_requests,
    screenshot_if_asked,
)
from tests.llm_server import LLMServer

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.django_db(transaction=True)]

HOSTILE_LABEL = "<b>neutral</b>"


@pytest.fixture
def tasks_off(monkeypatch):
    for name in ("audit_prepare_task", "audit_work_task", "audit_analyse_task"):
        monkeypatch.setattr(f"tasks.audits.{name}.delay", lambda audit_id: None)


def test_radar_and_stacked_bars_render_and_the_drill_down_opens(live_server, browser_context, api_client,
                                                                tasks_off):
    with LLMServer(latency=0.0, models=MODELS) as server:
        endpoint = LLMEndpoint.objects.create(name="personas", protocol="openai", base_url=server.base_url,
                                              max_concurrency=8)
        wabt = run(launch(api_client, "word_association",
                          [{"endpoint": endpoint.id, "model": "wabt-consistent"},
                           {"endpoint": endpoint.id, "model": "wabt-neutral", "label": HOSTILE_LABEL}],
                          samples_per_combination=2).json()["id"])
        aat = run(launch(api_client, "affective_attribution", [{"endpoint": endpoint.id, "model": "aat-stereotyped"}],
                         combinations=20).json()["id"])
    assert wabt.status == aat.status == "completed", (wabt.status_reason, aat.status_reason)
    page, problems, requests = logged_in_page(browser_context, live_server, "implicit-bias-researcher")

    page.goto(f"{live_server.url}/audits/{wabt.id}/dashboard/")
    radars = page.locator(".radar-panel")
    expect(radars).to_have_count(2)
    for index in range(2):
        expect(radars.nth(index).locator(".main-svg").first).to_be_attached()
        # One trace per dimension, and the dashed reference at 0 the help text promises.
        expect(radars.nth(index).locator(".polarlayer .trace")).to_have_count(4)
        reference = radars.nth(index).locator(".polarlayer .trace").last.locator("path.js-line")
        assert "dash" not in (radars.nth(index).locator(".polarlayer .trace").first.locator("path.js-line")
                              .get_attribute("style") or "")
        assert "stroke-dasharray" in reference.get_attribute("style")
        # The titles (the model, what the radius is) sit above the radar, none in its middle.
        disc = radars.nth(index).locator(".polarsublayer.plotbg").bounding_box()
        for text in radars.nth(index).locator(".gtitle, .gtitle-subtitle, text:has-text('bias score')").all():
            box = text.bounding_box()
            assert box["y"] + box["height"] <= disc["y"] + 1, (text.text_content(), box, disc)
    expect(radars.first.locator(".gtitle-subtitle")).to_have_text(
        "radius: mean bias score, −1 at the centre to +1 at the rim")
    expect(page.locator("#figure-3-section .help")).to_contain_text("the dashed line at 0")
    assert serious_violations(page) == []
    assert_results_first(page)
    drawn = page.evaluate("""() => Array.from(document.querySelectorAll(".radar-panel")).map(node => {
        const reference = node.data[node.data.length - 1];
        return {name: reference.name, dash: reference.line.dash, r: reference.r,
                range: node._fullLayout.polar.radialaxis.range};
    })""")
    for chart in drawn:
        assert chart["name"] == "0 (no bias)" and chart["dash"] == "dash" and set(chart["r"]) == {0}
        assert chart["range"][0] < 0 < chart["range"][1]  # the radius reaches negative scores, 0 is a ring
    expect(page.locator(f'.radar-panel[data-model="{HOSTILE_LABEL}"] .gtitle')).to_have_text(HOSTILE_LABEL)
    expect(page.locator("#table-4 tbody tr")).to_have_count(6)  # 2 models × 3 dimensions
    expect(page.locator('#table-4 tr[data-model="wabt-consistent"] .mean').first).to_have_text("1.000")
    assert page.locator("#table-4 b, #reasons-table b").count() == 0

    # Drill-down: a progress row's replies, then one reply's request: its prompt, reply and parse.
    expect(page.locator("#progress-text")).not_to_have_text("Loading the progress…")
    open_status_details(page)
    page.locator("#progress-table tbody tr").first.click()
    expect(page.locator("#drill-table tbody tr").first).to_be_visible()
    row = page.locator("#drill-table tbody tr").first
    expect(row).to_contain_text("n_sa_xa")  # the parse: eq. 1's counts and the pairs read, in the explanation
    detail = row.locator("details.request-detail")
    detail.locator("summary").click()
    expect(detail.locator("pre.sent")).to_contain_text("The words are")
    expect(detail.locator("ol.judgments li")).to_have_count(1)
    screenshot_if_asked(page, "IMPLICIT_BIAS_DASHBOARD_SCREENSHOT")

    page.goto(f"{live_server.url}/audits/{aat.id}/dashboard/")
    bars = page.locator(".bars-panel")
    expect(bars).to_have_count(1)
    expect(bars.first.locator(".main-svg").first).to_be_attached()
    assert_results_first(page)
    expect(bars.first.locator(".barlayer .trace")).to_have_count(3)  # comedy, tragedy, neutral stacked
    expect(page.locator("#table-5 tbody tr")).to_have_count(1)
    # 20 combinations × 3 templates = 60 conversations of two turns, 120 requests.
    expect(page.locator("#conversations")).to_contain_text("60 conversations of 2 turns")
    expect(page.locator("#conversations")).to_contain_text("120 requests")

    # A second turn's drill-down: the whole conversation as sent, and the first turn it continues.
    expect(page.locator("#progress-text")).not_to_have_text("Loading the progress…")
    open_status_details(page)
    page.locator("#progress-table tbody tr").first.click()
    expect(page.locator("#drill-table tbody tr").first).to_be_visible()
    second = page.locator("#drill-table details.request-detail",
                          has=page.locator("summary", has_text="turn 2")).first
    second.locator("summary").click()
    sent = second.locator("pre.sent")
    expect(sent).to_contain_text("user: ")
    expect(sent).to_contain_text("assistant: Thinking of")  # the persona's own description, quoted back
    expect(sent).to_contain_text("tragedy")  # Q2
    expect(second.locator("ol.conversation li")).to_have_count(1)
    expect(second.locator("ol.conversation li")).to_contain_text("turn 1")
    expect(second.locator("ol.judgments li")).to_have_count(1)

    assert outside_requests(requests, live_server) == []
    assert problems == []


def test_a_model_whose_answers_could_not_be_read_says_so_not_that_they_are_to_come(live_server, browser_context,
                                                                                    api_client, tasks_off):
    """A two-turn AAT whose second model (a WABT persona) never names comedy, tragedy or neutral: its chart's place
    says how many conversations it had and why none was usable, not "No answer for this model yet."."""
    with LLMServer(latency=0.0, models=MODELS) as server:
        endpoint = LLMEndpoint.objects.create(name="personas", protocol="openai", base_url=server.base_url,
                                              max_concurrency=8)
        aat = run(launch(api_client, "affective_attribution", [{"endpoint": endpoint.id, "model": "aat-stereotyped"},
                                                                {"endpoint": endpoint.id, "model": "wabt-neutral"}],
                         combinations=4).json()["id"])
    assert aat.status == "completed", aat.status_reason
    page, problems, _ = logged_in_page(browser_context, live_server, "implicit-bias-researcher")
    page.goto(f"{live_server.url}/audits/{aat.id}/dashboard/")
    expect(page.locator('.bars-panel[data-model="aat-stereotyped"] .main-svg').first).to_be_attached()
    unread = page.locator('.bars-panel[data-model="wabt-neutral"] .chart-empty')
    expect(unread).to_have_text("wabt-neutral: none of its 12 conversations could be read as comedy, tragedy or "
                                "neutral (12 no choice); see “Replies without a usable answer” below.")
    expect(page.locator('#reasons-table tr[data-model="wabt-neutral"]')).to_contain_text("no choice")
    assert serious_violations(page) == []
    assert problems == []
