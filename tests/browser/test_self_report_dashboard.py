"""A researcher opens a completed self-report audit's dashboard in Debian Chromium: Figure 2 drawn with the
vendored plotly (one bar per model with a score on both forms, coloured by what the change does), the scores,
crossings, paired comparison and validity tables, a researcher-entered model name shown as text in the
tables and the chart, and the progress table and drill-down naming forms.

The audit is the one of tests/auditapp/test_self_report_dashboard_view.py, whose docstring works the figures.
Set SELF_REPORT_DASHBOARD_SCREENSHOT=/tmp/self-report.png to keep a full-page screenshot.
"""
from __future__ import annotations

import json

import pytest
from playwright.sync_api import expect

from tests.auditapp.test_self_report_dashboard_view import HOSTILE_LABEL, build_personas_audit
from tests.browser.staff import (
    assert_results_first,
    logged_in_page,
    open_status_details,
    outside_requests,
    screenshot_if_asked,
)

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.django_db(transaction=True)]

TIER_CHANGED = "rgb(8, 48, 107)"  # self_report_dashboard.js: the darkest bar, the tier changes
NO_CROSSING = "rgb(158, 202, 225)"


def test_completed_self_report_audit_draws_figure_2_and_its_tables(live_server, browser_context, persona_server, audit_tasks_off):
    audit = build_personas_audit(persona_server.base_url)
    ids = {m.model: str(m.id) for m in audit.models.all()}
    page, problems, requests = logged_in_page(browser_context, live_server, "self-report-dashboard-researcher")
    page.goto(f"{live_server.url}/audits/{audit.id}/dashboard/")

    # Figure 2, AQ-50: one bar per model with both scores (persona-refuse has none), in the models' order.
    expect(page.locator("#figure-2-0 .main-svg").first).to_be_attached()
    assert_results_first(page)
    bars = page.locator("#figure-2-0 .barlayer .point")
    expect(bars).to_have_count(4)
    ticks = page.locator("#figure-2-0 .xtick text").all_text_contents()
    assert ticks == ["persona-agree †", "persona-key", f"{HOSTILE_LABEL} †", "persona-recognise"]
    # The name is drawn as typed: no bold run, no element made from it.
    assert page.locator("#figure-2-0 .xtick text tspan").evaluate_all(
        "spans => spans.filter(s => (s.getAttribute('style') || '').includes('bold')).length") == 0
    assert page.locator("#figure-2-0 .bartext").all_text_contents() == ["0.0%", "0.0%", "0.0%", "+8.0%"]
    fills = bars.locator("path").evaluate_all("paths => paths.map(p => p.style.fill)")
    assert fills == [NO_CROSSING, NO_CROSSING, NO_CROSSING, TIER_CHANGED]
    # The partial SATA: persona-recognise +4 of a maximum of 20; no tiers, so no bar is dark.
    expect(page.locator("#figure-2-1 .barlayer .point")).to_have_count(4)
    assert page.locator("#figure-2-1 .bartext").all_text_contents()[-1] == "+20.0%"
    expect(page.locator("#figure-2-1 .ytitle")).to_have_text("change, % of the scale maximum (20)")

    # The tables: scores with the tier change and crossing highlighted, the comparison, validity.
    recognise = page.locator(f'#scores-0 tr[data-model="{ids["persona-recognise"]}"]')
    expect(recognise.locator("td.original")).to_have_text("24")
    expect(recognise.locator("td.masked")).to_have_text("28")
    expect(recognise.locator("td.change")).to_have_text("+4")
    expect(recognise.locator("td.change-percent")).to_have_text("+8.0%")
    expect(recognise.locator("td.tier-changed")).to_have_count(2)
    expect(recognise.locator(".badge.crossing.upward")).to_have_text("↑ reaches 26")
    assert recognise.locator("td.change-percent").evaluate("td => getComputedStyle(td).backgroundColor") == TIER_CHANGED
    expect(page.locator('#thresholds-0 li.crossed[data-threshold="26.0"] .upward')).to_have_text("persona-recognise")
    expect(page.locator("#paired-0")).to_contain_text("t(3) = 1.00")
    expect(page.locator("#paired-0")).to_contain_text("d_z = 0.50")
    refuse = page.locator(f'#validity-table tr[data-model="{ids["persona-refuse"]}"][data-form="masked"]')
    expect(refuse.locator("td.refusals")).to_have_text("157 (100%)")
    expect(refuse.locator("td.flag-reasons")).to_have_text("flagged: refused 100% of the items")
    expect(page.locator(f'#validity-table tr[data-model="{ids["persona-agree"]}"][data-form="masked"] td.dummies')
           ).to_have_text("52 of 52")
    expect(page.locator("#validity-rule")).to_contain_text(audit.analysis["rule"]["text"])
    # The researcher-entered name in the tables, as text.
    expect(page.locator(f'#scores-0 tr[data-model="{ids["persona-dummy"]}"] .model-name')).to_have_text(HOSTILE_LABEL)
    assert page.locator("#self-report-results b, #validity-section b").count() == 0

    # Progress of the finished audit, the buttons that make sense, the exports.
    expect(page.locator("#progress-text")).to_contain_text("15 of 15 requests finished")
    expect(page.locator("#progress-table tfoot tr.total td").nth(0)).to_have_text("15")
    visible = page.eval_on_selector_all("#controls button[data-action]",
                                        "buttons => buttons.filter(b => !b.hidden).map(b => b.dataset.action)")
    assert visible == ["reparse"]
    expect(page.locator("#export-answers")).to_have_attribute("href", f"/api/audits/{audit.id}/answers/?format=csv")

    assert f"{live_server.url}/static/vendor/plotly/plotly.min.js" in requests
    assert outside_requests(requests, live_server) == []
    screenshot_if_asked(page, "SELF_REPORT_DASHBOARD_SCREENSHOT")
    assert problems == []


def test_progress_rows_name_forms_and_open_their_replies(live_server, browser_context, persona_server, audit_tasks_off):
    """The shared progress script with forms for conditions: rows named after the form, and a row's replies
    through the real responses API. The progress payload is the API's own with two model × form cells put in
    (shaped as audit_progress writes them), so the rows do not depend on how the API counts forms."""
    audit = build_personas_audit(persona_server.base_url, personas=("persona-agree", "persona-refuse"), name="Forms")
    ids = {m.model: m.id for m in audit.models.all()}
    page, problems, _ = logged_in_page(browser_context, live_server, "self-report-dashboard-researcher")

    def progress_with_cells(route):
        progress = route.fetch().json()
        counts = {"answered": 1, "failed": 0, "waiting": 0, "from_cache": 0, "retries": 0, "retrying_now": 0,
                  "rate_per_s": 0.0, "eta_s": 0.0}
        progress["cells"] = [{"model_id": ids["persona-refuse"], "model": "persona-refuse", "condition": "masked",
                              **counts},
                             {"model_id": ids["persona-agree"], "model": "persona-agree",
                              "condition": "original:aq50", **counts}]
        route.fulfill(status=200, content_type="application/json", body=json.dumps(progress))

    page.route(f"**/api/audits/{audit.id}/progress/", progress_with_cells)
    page.goto(f"{live_server.url}/audits/{audit.id}/dashboard/")
    rows = page.locator("#progress-table tbody tr")
    expect(rows).to_have_count(2)
    masked = rows.nth(0).locator("td").nth(1)
    expect(masked).to_contain_text("Masked: all instruments' items with filler and dummy items")
    expect(masked.locator(".code")).to_have_text("masked")
    expect(rows.nth(1).locator("td").nth(1)).to_contain_text("Original: Autism-Spectrum Quotient (AQ-50)")

    open_status_details(page)
    rows.nth(0).click()
    expect(page.locator("#drill-title")).to_have_text(
        "persona-refuse · Masked: all instruments' items with filler and dummy items")
    replies = page.locator("#drill-table tbody tr")
    expect(replies).to_have_count(1)  # batch mode: one request per form
    expect(replies.first).to_have_attribute("data-outcome", "refusal")
    assert problems == []


def test_the_answers_browser_shows_where_the_forms_differ(live_server, browser_context, persona_server, audit_tasks_off,
                                                          api_client):
    from tests.browser.accessibility import assert_accessible

    audit = build_personas_audit(persona_server.base_url, personas=("persona-key", "persona-recognise"), name="Items")
    page, problems, _ = logged_in_page(browser_context, live_server, "self-report-dashboard-researcher")
    page.goto(f"{live_server.url}/audits/{audit.id}/dashboard/")
    browser = page.locator("#item-browser")
    rows = browser.locator("#item-table tbody tr")
    expect(rows).to_have_count(50)
    browser.get_by_label("Show").select_option("true")
    differing = api_client.get(f"/api/audits/{audit.id}/judged-items/", {"differs": "true"}).json()
    assert 0 < differing["count"]
    expect(page.locator("#item-count")).to_contain_text(f"{differing['count']} answer")
    expect(rows).to_have_count(min(50, differing["count"]))
    expect(browser.locator("tr.marked")).to_have_count(min(50, differing["count"]))  # every one shaded
    shown = rows.evaluate_all("rows => rows.map(r => r.children[0].textContent)")
    assert set(shown) == {"persona-recognise"}  # the planted form effect; persona-key answers both forms alike
    browser.get_by_label("Model").select_option(str(audit.models.get(model="persona-key").id))
    expect(rows).to_have_count(1)
    expect(rows.first).to_have_text("Nothing matches these filters.")
    assert "None" not in browser.inner_text() and "undefined" not in browser.inner_text()
    assert_accessible(page, "self-report answers browser")
    assert problems == []
