"""A researcher watches a running study on its dashboard in Debian Chromium, at 1440×900: the monitor's funnel as
shown for tests/monitor_study.py's study (a participant at every step), its export links downloading the right files,
the page refreshing itself after "Recompute" once a worker has stored the new analysis, and axe-core.

Set MONITOR_SCREENSHOT=/tmp/monitor.png to keep a full-page screenshot of the dashboard.
"""
from __future__ import annotations

import csv
import io
import json

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command
from playwright.sync_api import expect

from annotation.models import AnalysisRun, Study
from annotation.study_alternatives import study_alternatives_compute
from annotation.study_analysis import study_analysis_compute, study_analysis_run
from teams import roles
from teams.models import Membership
from tests.browser.accessibility import assert_accessible
from tests.browser.staff import assert_no_sideways_scroll, logged_in_page, outside_requests, screenshot_if_asked
from tests.monitor_study import make_monitor_study

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.django_db(transaction=True)]

AQ, SATA = "Autism-Spectrum Quotient (AQ-50)", "SATA (partial: 5 published items, demo only)"
# (milestone, reached, now at the next step) as tests/monitor_study.py puts its participants.
FUNNEL = [
    ("invited", "Invited (a link issued)", "11", "1 have not opened their link yet"),
    ("opened", "Opened their link", "10", "1 at the consent page"),
    ("consented", "Consented", "8", f"1 answering {AQ}"),
    ("step-0", f"Finished {AQ}", "6", f"1 answering {SATA}"),
    ("step-1", f"Finished {SATA}", "5", "1 taking the reaction-time task (IAT)"),
    ("step-2", "Finished the reaction-time task (IAT)", "4", "1 at the labelling instructions"),
    ("labelling", "Started labelling (read the instructions)", "3", "1 labelling"),
    ("completed", "Completed", "2", ""),
]
# The CSV exports: (link title, the header's first columns, a cell of the study's data that must be in the file).
CSV_EXPORTS = [
    ("Labels", ["participant", "item", "value"], "P0008"),
    ("Ground truth", ["item", "n_labels", "n_excluded"], "i0"),
    ("Participants", ["participant", "team", "status", "n_labels", "created_at", "opened_at"], "P0011"),
    ("IAT trials", ["participant", "block", "trial"], "P0007"),
    ("Instrument responses", ["participant", "instrument", "item_number"], "aq50"),
    ("Alternative ground truths", ["item"], "i0"),
    ("Item sets", ["set", "item", "label"], None),
    ("Items", ["item", "target", "preceding"], "Target 3."),
    ("Label changes", ["participant", "item"], None),
    ("Skips and flags", ["participant", "item", "skipped_at"], None),
]


@pytest.fixture
def wide_context(chromium):
    context = chromium.new_context(viewport={"width": 1440, "height": 900})
    yield context
    context.close()


@pytest.fixture
def study():
    study = make_monitor_study()
    run = study_analysis_compute(study_id=study.id)
    study_alternatives_compute(run_id=run.id)
    return study


def test_the_monitor_shows_the_funnel_first_and_links_every_export(live_server, wide_context, study):
    page, problems, requests = logged_in_page(wide_context, live_server)
    page.goto(f"{live_server.url}/studies/{study.id}/dashboard/")

    rows = page.locator("#funnel tbody tr")
    expect(rows).to_have_count(len(FUNNEL))
    for n, (key, milestone, reached, waiting) in enumerate(FUNNEL):
        row = rows.nth(n)
        assert row.get_attribute("data-step") == key
        expect(row.locator("th")).to_have_text(milestone)
        expect(row.locator("td.reached")).to_have_text(reached)
        expect(row.locator("td.waiting")).to_have_text(waiting)
    expect(page.locator("#monitor-statuses")).to_have_text(
        "Participants now: invited, not yet consented 2 · in progress 5 · completed 2 · withdrawn 1 · declined "
        "consent 1 · imported with a data file 1")
    expect(page.locator("#funnel-exits")).to_contain_text("1 declined consent, 1 withdrew")
    expect(page.locator("#funnel-exits")).to_contain_text("1 imported with a data file")
    expect(page.locator("#annotators-arrived")).to_have_text(
        "3 annotators have labels, of the 10 participants who opened their link; and 1 imported with a data file.")
    expect(page.locator("#items-needing-labels")).to_contain_text("of 6 items still need")
    expect(page.locator("#attention-checks")).to_contain_text("1 of 2 passed (50%)")
    expect(page.locator("#completion-time")).to_contain_text("Median 27 min 30 s from consent to completion")
    expect(page.locator("#chart-times .main-svg").first).to_be_attached()
    # The histogram counts people: its y ticks are whole numbers.
    ticks = page.locator("#chart-times .ytick text").all_text_contents()
    assert ticks and all(tick.isdigit() for tick in ticks), ticks
    # Its bins are 2 minutes wide (20 and 35 min: tests/annotation/test_monitor_stats.py), ticked on their edges.
    assert page.locator("#chart-times .xtick text").all_text_contents() == [str(m) for m in range(20, 38, 2)]
    expect(page.locator("#last-activity time")).to_be_visible()

    # The first screen (1440×900) is the monitor: the whole funnel and the key numbers without scrolling.
    for element in ("#funnel", "#exports", "#items-needing-labels", "#completion-time", "#attention-checks",
                    "#last-activity"):
        box = page.locator(element).bounding_box()
        assert box is not None and box["y"] + box["height"] <= 900, f"{element} is below the first screen: {box}"

    links = page.locator("#exports a")
    titles = [t.strip() for t in links.evaluate_all("links => links.map(a => a.firstChild.textContent)")]
    assert titles == [title for title, _, _ in CSV_EXPORTS[:6]] + ["Item sets", "Items", "Label changes",
                                                                  "Skips and flags", "Analysis"]
    for title, columns, cell in CSV_EXPORTS:
        href = page.locator("#exports a", has_text=title).first.get_attribute("href")
        answer = page.request.get(f"{live_server.url}{href}")
        assert answer.status == 200, (title, answer.status, answer.text()[:200])
        assert answer.headers["content-type"].startswith("text/csv"), (title, answer.headers["content-type"])
        table = list(csv.reader(io.StringIO(answer.text())))
        assert table[0][:len(columns)] == columns, (title, table[0])
        if cell is not None:
            assert any(cell in row for row in table[1:]), (title, cell)
    analysis = page.request.get(f"{live_server.url}{page.locator('#exports a', has_text='Analysis').get_attribute('href')}")
    assert analysis.status == 200 and json.loads(analysis.text())["state"] == "done"

    assert_accessible(page, "study monitor")
    assert_no_sideways_scroll(page, unfold="details")
    assert outside_requests(requests, live_server) == []
    screenshot_if_asked(page, "MONITOR_SCREENSHOT")
    assert problems == []


def test_the_admin_page_of_the_study_links_the_dashboard_and_every_export(live_server, wide_context, study):
    page, _, _ = logged_in_page(wide_context, live_server)
    page.goto(f"{live_server.url}/admin/annotation/study/{study.id}/change/")
    box = page.locator("#study-exports")
    expect(box.locator("a").first).to_have_text("Study dashboard")
    for title, _, _ in CSV_EXPORTS:
        href = box.locator("a", has_text=f"{title} (CSV)").first.get_attribute("href")
        assert href.endswith("?format=csv")
    labels = box.locator("a", has_text="Labels (CSV)").first.get_attribute("href")
    assert page.request.get(f"{live_server.url}{labels}").status == 200


def test_after_recompute_the_page_refreshes_itself_when_the_worker_is_done(live_server, wide_context, study,
                                                                            monkeypatch):
    sent: list[int] = []
    monkeypatch.setattr("tasks.analysis.study_analysis_compute_task.delay", sent.append)  # no worker: the test is it
    page, problems, _ = logged_in_page(wide_context, live_server)
    page.goto(f"{live_server.url}/studies/{study.id}/dashboard/")
    before = page.locator("#last-computed time").get_attribute("datetime")

    page.locator("#recompute button").click()
    expect(page.locator("#messages")).to_have_text("Recomputation queued: this page refreshes itself when it is done.")
    expect(page.locator("#analysis-state")).to_contain_text("waiting for a worker; this page refreshes itself")
    assert sent == [study.id]
    page.wait_for_load_state("load")
    page.evaluate("() => { window.shownBeforeTheRefresh = true; }")  # gone once the page has loaded itself again

    assert study_analysis_run(study_id=study.id) != "already running"  # the worker's side
    after = AnalysisRun.objects.get(study=study).computed_at
    expect(page.locator("#last-computed time")).not_to_have_attribute("datetime", before, timeout=15_000)
    assert page.locator("#last-computed time").get_attribute("datetime") == after.isoformat()
    expect(page.locator("#analysis-state")).to_have_count(0)
    assert page.evaluate("() => window.shownBeforeTheRefresh === undefined"), "the page reloaded itself"
    assert problems == []


def test_the_demo_study_dashboard_passes_axe(live_server, wide_context, settings, tmp_path):
    """The demo study (manage.py load_demo) has annotators without a weight, whose rows were once grey at 3.54:1."""
    settings.VAR_DIR = tmp_path
    call_command("load_demo", stdout=io.StringIO())
    study = Study.objects.get(slug="demo")
    study_analysis_compute(study_id=study.id)
    page, problems, _ = logged_in_page(wide_context, live_server)
    Membership.objects.create(team=study.team, user=get_user_model().objects.get(username="dashboard-researcher"),
                              role=roles.VIEWER)
    page.goto(f"{live_server.url}/studies/{study.id}/dashboard/")
    expect(page.locator("#annotators tr.excluded").first).to_be_visible()
    expect(page.locator("#chart-times .main-svg").first).to_be_attached()
    assert_accessible(page, "demo study dashboard")
    assert_no_sideways_scroll(page, unfold="details")
    assert problems == []
