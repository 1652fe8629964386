"""A researcher opens a finished BITS audit's dashboard in Debian Chromium: the Figure 1 heatmap and the score
distributions drawn with the vendored plotly, Tables 7–10 and coverage filled, a researcher-entered scorer name
shown as text in the tables and the charts, and no console error.

The analysis is a real ``analyse()`` on the paper's corpus: a scorer with a planted effect (−0.3 for PWD:C) and
an imported one with none, some of whose sentences timed out. The audit is stored as the engine leaves it
(tests/auditapp/test_bits_dashboard_page.py's ``bits_audit``) and the page is the real dashboard view's.
Set BITS_DASHBOARD_SCREENSHOT=/tmp/bits.png to keep a full-page screenshot.

An audit of an uploaded corpus (the public repository's shape) with a sentence no pairing rule finds a control for
and a recorded scorer whose controls have no scores shows its pairing section and the undefined cells' reasons, and
those sections pass axe.
"""
from __future__ import annotations

import pandas as pd
import pytest
from playwright.sync_api import expect

from auditapp.models import Audit
from auditapp.paradigms.bits.analysis import AnalysisSettings, analyse
from auditapp.paradigms.bits.corpus import corpus_frame, generate, paper_spec
from tests.auditapp.bits_upload_files import PERTURBED_ROWS
from tests.auditapp.test_bits_analysis import planted_scores
from tests.auditapp.test_bits_audit import launch, run, tasks_off  # noqa: F401 (tasks_off is a fixture)
from tests.auditapp.test_bits_dashboard_page import bits_audit
from tests.auditapp.test_bits_recorded import recorded_ids, upload
from tests.browser.accessibility import assert_accessible
from tests.browser.staff import assert_results_first, logged_in_page, outside_requests, screenshot_if_asked

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.django_db(transaction=True)]

HOSTILE_SCORER = "<b>recorded</b>"


def finished_bits_audit() -> Audit:
    spec = paper_spec()
    corpus = corpus_frame(generate(spec))
    recorded = planted_scores(corpus, scorer=HOSTILE_SCORER, effect={}, seed=5).assign(imported=True)
    timed_out = recorded["unit"].isin(corpus["key"].iloc[1:4])
    recorded.loc[timed_out, ["value", "reason"]] = [float("nan"), "timeout"]
    scores = pd.concat([planted_scores(corpus, scorer="planted", effect={"PWD:C": -0.3}, seed=11), recorded])
    analysis = analyse(corpus, scores, settings=AnalysisSettings())
    return bits_audit("BITS in the browser", spec, status=Audit.Status.COMPLETED, analysis=analysis.to_dict(),
                      scorer="planted", recorded=HOSTILE_SCORER, replicates=2,
                      kinds={"planted": "sentiment", HOSTILE_SCORER: "sentiment"},
                      corpus_name="BITS (seed 001 Tables 3–5)")


def test_finished_bits_audit_draws_its_heatmap_distributions_and_tables(live_server, browser_context):
    audit = finished_bits_audit()
    # A mean just below zero (the planted scorer's PWoD): its cell reads 0.00, never -0.00.
    for record in audit.analysis["tables"]["group_means"]:
        if (record["scorer"], record["group"]) == ("planted", "PWoD"):
            record["mean_score"] = -0.0004
    audit.save(update_fields=["analysis"])
    page, problems, requests = logged_in_page(browser_context, live_server, "bits-dashboard-researcher")
    page.goto(f"{live_server.url}/audits/{audit.id}/dashboard/")

    # Figure 1: one row per scorer, one column per group and the control, every cell annotated.
    expect(page.locator("#bits-heatmap .main-svg").first).to_be_attached()
    assert_results_first(page)
    expect(page.locator("#bits-heatmap .heatmaplayer .hm")).to_have_count(1)
    assert page.locator("#bits-heatmap .xtick text").all_text_contents() == [
        "PWD:C", "PWD:SD", "PWoD", "NRMA", "control"]
    # The scorers top to bottom in the tables' order (the axis is reversed, so the DOM lists them bottom up).
    assert page.locator("#bits-heatmap .ytick text").all_text_contents()[::-1] == [
        "planted", f"{HOSTILE_SCORER} (imported)"]
    assert page.locator("#bits-heatmap .ytick text tspan").evaluate_all(
        "spans => spans.filter(s => (s.getAttribute('style') || '').includes('bold')).length") == 0
    annotations = page.locator("#bits-heatmap text.text-annotation, #bits-heatmap .heatmaplayer text")
    assert annotations.count() == 10
    texts = annotations.all_text_contents()
    assert "0.00" in texts and not any(text.startswith("-0.00") for text in texts), texts

    # A box per group (4 groups and the control) for each scorer.
    for index in (0, 1):
        expect(page.locator(f"#distribution-{index} .main-svg").first).to_be_attached()
        expect(page.locator(f"#distribution-{index} .boxlayer path.box")).to_have_count(5)

    # The tables: Table 7 marks the planted effect, nothing else; the imported scorer is marked.
    planted = page.locator('#table-7 tr[data-scorer="planted"]')
    expect(planted.locator('td[data-group="PWD:C"] .mark')).to_have_text("**")
    expect(planted.locator('td[data-group="PWD:C"] .value')).to_have_text("-0.30")
    expect(planted.locator('td[data-group="PWoD"] .mark')).to_have_text("")
    recorded = page.locator(f'#table-7 tr[data-scorer="{HOSTILE_SCORER}"]')
    expect(recorded.locator(".scorer-name")).to_have_text(HOSTILE_SCORER)
    expect(recorded.locator(".badge.imported")).to_have_text("imported")
    expect(page.locator("#table-8 tbody tr")).to_have_count(2)
    expect(page.locator("#table-9 tbody tr")).to_have_count(10)
    expect(page.locator("#table-10 tbody tr")).to_have_count(20)
    coverage = page.locator(f'#coverage-table tr[data-scorer="{HOSTILE_SCORER}"]')
    expect(coverage.locator("td.missing")).to_have_text("3")
    expect(coverage.locator(".reason-row")).to_have_text("timeout: 3")
    expect(page.locator("#notes li").first).to_contain_text("means, not sums")
    assert page.locator("#bits-notes b, #table-7 b, #table-10 b").count() == 0

    # The shared progress script ran against the real API.
    expect(page.locator("#progress-text")).not_to_have_text("Loading the progress…")
    assert f"{live_server.url}/api/audits/{audit.id}/progress/" in requests
    assert f"{live_server.url}/static/vendor/plotly/plotly.min.js" in requests
    assert outside_requests(requests, live_server) == []
    screenshot_if_asked(page, "BITS_DASHBOARD_SCREENSHOT")
    assert problems == []


def test_an_uploaded_corpus_shows_its_pairing_and_why_a_cell_is_undefined(live_server, browser_context, api_client,
                                                                          tasks_off):  # noqa: F811
    neutral = ["4", "T6", "They were <emotion state> because of the Blind neighbour.", "Neutral", "Disable", "Blind",
               "0.0", "-0.2", "0.0"]
    corpus = upload(api_client, perturbed_rows=[*PERTURBED_ROWS, neutral])
    audit = run(launch(api_client, corpus=corpus["id"], recorded_scorers=recorded_ids(corpus, "Google", "VADER")))
    page, problems, _ = logged_in_page(browser_context, live_server, "bits-pairing-researcher")
    page.goto(f"{live_server.url}/audits/{audit.id}/dashboard/")

    google = page.locator('#table-7 tr[data-scorer="Google"] td[data-group="Disable"]')
    expect(google.locator(".value")).to_have_text("—")
    expect(google.locator(".mark")).to_have_text("")
    expect(google.locator(".undefined-note")).to_contain_text("the control file has no column 'Google'")
    expect(page.locator('#table-7 tr[data-scorer="VADER"] td[data-group="Disable"] .unpaired-count')).to_have_text(
        "1 without a control")
    expect(page.locator('#pairing-table tr[data-rule="unpaired"] td').nth(1)).to_have_text("1")
    expect(page.locator("#unpaired-table tbody tr th")).to_have_text("template T6 has no control with emotion Neutral")
    expect(page.locator("#corpus-warnings")).to_contain_text("the control file has no Google scores")
    assert "None" not in page.locator("main").inner_text()
    # The sections this test is about. The plotly charts are left out: axe finds plotly's own controls inside each
    # chart's role="img" (nested-interactive), which is the shared chart code's matter, not this page's.
    assert_accessible(page, "BITS dashboard of an uploaded corpus", within=("#table-7-section", "#coverage-section",
                                                                           "#pairing-section"))
    assert problems == []
