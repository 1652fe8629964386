"""A researcher opens finished counterfactual audits' dashboards in Debian Chromium (seed 002): the names audit's
Figure 1 (one panel per minority group, a point per model and the cross-model mean), its tables and completion,
and a drill-down from a progress row to a reply and from the reply to its request's 60 numbered texts; the
dialect audit's Figure 2 (one panel per task, several to a row, one gap scale); a researcher-entered model label shown as text; no console error.

The audits are run by the engine in this process against the test LLM server's batched annotators, as in
tests/auditapp/test_counterfactual_audit.py. Set COUNTERFACTUAL_DASHBOARD_SCREENSHOT=/tmp/names.png to keep a
full-page screenshot of the names dashboard.
"""
from __future__ import annotations

import pytest
from playwright.sync_api import expect

from auditapp.models import LLMEndpoint
from tests.auditapp.test_counterfactual_audit import ANNOTATORS, run
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

HOSTILE_LABEL = "<b>fair</b>"


@pytest.fixture
def tasks_off(monkeypatch):
    for name in ("audit_prepare_task", "audit_work_task", "audit_analyse_task"):
        monkeypatch.setattr(f"tasks.audits.{name}.delay", lambda audit_id: None)


def launch(api_client, paradigm: str, **body) -> int:
    response = api_client.post("/api/audits/", {"paradigm": paradigm, "name": f"{paradigm} in the browser", **body},
                               format="json")
    assert response.status_code == 201, response.content
    return response.json()["id"]


def test_names_and_dialect_dashboards_draw_figures_tables_and_drill_down(live_server, browser_context, api_client,
                                                                         tasks_off):
    models = ("annotator-biased", "annotator-fair", "annotator-dialect")
    with LLMServer(latency=0.0, models=models, annotators={m: ANNOTATORS[m] for m in models}) as server:
        endpoint = LLMEndpoint.objects.create(name="annotators", protocol="openai", base_url=server.base_url,
                                              max_concurrency=8)
        names = run(launch(api_client, "names", iterations=4, material={"tasks": ["self_disciplined", "warm"]},
                           models=[{"endpoint": endpoint.id, "model": "annotator-biased"},
                                   {"endpoint": endpoint.id, "model": "annotator-fair", "label": HOSTILE_LABEL}]))
        dialect = run(launch(api_client, "dialect", iterations=10,
                             material={"tasks": ["professional_tone", "angry", "toxic"]},
                             models=[{"endpoint": endpoint.id, "model": "annotator-dialect"}]))
    assert names.status == dialect.status == "completed", (names.status_reason, dialect.status_reason)
    page, problems, requests = logged_in_page(browser_context, live_server, "counterfactual-researcher")

    page.goto(f"{live_server.url}/audits/{names.id}/dashboard/")
    panels = page.locator(".figure-1-panel")
    expect(panels).to_have_count(4)  # Arab, Asian, Black, Hispanic against White
    for index in range(4):
        expect(panels.nth(index).locator(".main-svg").first).to_be_attached()
    assert_results_first(page)
    black = page.locator('.figure-1-panel[data-group="Black"]')
    expect(black.locator(".ytick text")).to_have_count(2)  # the two tasks
    assert HOSTILE_LABEL in black.locator(".legendtext").all_text_contents()
    expect(page.locator("#group-counts tbody tr")).to_have_count(5)  # four groups and All
    expect(page.locator("#summary-table tbody tr")).to_have_count(8)
    expect(page.locator(f'#completion-table tr[data-model="{HOSTILE_LABEL}"] .completion-rate')).to_have_text(
        "100.0%")
    assert page.locator("#summary-table b, #completion-table b").count() == 0

    # Drill-down: a progress row's replies, then one reply's whole request.
    expect(page.locator("#progress-text")).not_to_have_text("Loading the progress…")
    open_status_details(page)
    page.locator("#progress-table tbody tr").first.click()
    expect(page.locator("#drill-table tbody tr").first).to_be_visible()
    detail = page.locator("#drill-table tbody tr").first.locator("details.request-detail")
    detail.locator("summary").click()
    expect(detail.locator("ol.judgments li")).to_have_count(60)
    expect(detail.locator("pre.sent")).to_contain_text("Text 60: Hi, I'm ")
    expect(detail.locator("h3").first).to_have_text("Sent (rebuilt; matches its key)")
    screenshot_if_asked(page, "COUNTERFACTUAL_DASHBOARD_SCREENSHOT")

    page.goto(f"{live_server.url}/audits/{dialect.id}/dashboard/")
    figure_two = page.locator(".figure-2-panel")
    expect(figure_two).to_have_count(3)
    for index in range(3):
        expect(figure_two.nth(index).locator(".main-svg").first).to_be_attached()
    assert_results_first(page)
    # Several panels to a row, and one gap scale for all of them.
    first, second = (figure_two.nth(index).bounding_box() for index in range(2))
    assert first["y"] == second["y"] and first["x"] < second["x"]
    ranges = figure_two.evaluate_all("panels => panels.map(panel => panel.layout.xaxis.range)")
    assert ranges[0][0] < 0 < ranges[0][1] and ranges == [ranges[0]] * 3
    assert serious_violations(page) == []
    expect(page.locator("#cells-table tbody tr")).to_have_count(3)
    expect(page.locator('#cells-table tr[data-task="professional_tone"]')).to_have_class("significant")

    assert outside_requests(requests, live_server) == []
    assert problems == []
