"""A researcher downloads a dashboard's charts in Debian Chromium (static/auditapp/charts.js): each chart as SVG and
as PNG from the line under it, and all of the page's figures at once as one ZIP of both; on the classification
scatter, points that share a spot are labelled once and hovering one lists them all; a page opened before its
audit was prepared counts the requests in its header once the progress does.

The audits are built as tests/browser/test_audit_dashboard.py builds them (tests/auditapp/test_audit_dashboard_view).
"""
from __future__ import annotations

import io
import zipfile

import pytest
from playwright.sync_api import expect

from annotation.study_analysis import study_analysis_compute
from auditapp.models import Audit
from tests.auditapp.test_audit_dashboard_view import COMPLETED_PLAN, RUNNING_PLAN, build_audit
from tests.browser.accessibility import serious_violations
from tests.browser.staff import logged_in_page
from tests.factories import make_worked_example_study

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.django_db(transaction=True)]

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"

# Three cells answer the same items wrongly: the same recall and precision, one spot on the scatter.
TIED_PLAN = {
    ("model-a", "zs"): {"wrong": {0, 9}},
    ("model-a", "cot"): {"wrong": {0, 9}},
    ("model-b", "zs"): {"wrong": {0, 9}},
    ("model-b", "cot"): {"wrong": {1, 8, 9, 10, 11}, "refusal": {4}},
}


def downloaded(page, control) -> tuple[str, bytes]:
    """The suggested name and the bytes of what clicking ``control`` downloads."""
    with page.expect_download() as event:
        control.click()
    download = event.value
    with open(download.path(), "rb") as file:
        return download.suggested_filename, file.read()


def test_each_chart_downloads_as_svg_and_png_and_the_page_as_one_zip(live_server, browser_context):
    audit = build_audit(COMPLETED_PLAN)
    page, problems, _ = logged_in_page(browser_context, live_server, "download-researcher")
    page.goto(f"{live_server.url}/audits/{audit.id}/dashboard/")
    expect(page.locator("#chart-scatter .main-svg").first).to_be_attached()
    figure = page.locator(".chart-frame", has=page.locator("#figure-1"))
    expect(figure.locator(".chart-downloads button")).to_have_count(2)
    expect(page.locator(".chart-downloads")).to_have_count(2)  # Figure 1 and the scatter

    name, svg = downloaded(page, figure.locator("button.chart-download", has_text="SVG"))
    assert name.startswith("figure-1") and name.endswith(".svg")
    assert svg.startswith(b"<svg") and b"</svg>" in svg
    name, png = downloaded(page, figure.locator("button.chart-download", has_text="PNG"))
    assert name.endswith(".png") and png.startswith(PNG_SIGNATURE)

    everything = page.locator("#download-figures")
    expect(everything).to_be_visible()
    expect(page.locator(".exports #download-figures")).to_have_count(1)  # with the page's other exports
    name, archive = downloaded(page, everything)
    assert name.endswith("-figures.zip")
    with zipfile.ZipFile(io.BytesIO(archive)) as figures:
        assert figures.testzip() is None  # every stored CRC matches
        names = figures.namelist()
        assert [n.rsplit(".", 1)[1] for n in names] == ["svg", "png", "svg", "png"]
        assert names[0].startswith("01-figure-1") and names[2].startswith("02-")
        for stored in names:
            content = figures.read(stored)
            assert content.startswith(b"<svg" if stored.endswith(".svg") else PNG_SIGNATURE), stored
    assert serious_violations(page) == []
    assert problems == []


def test_the_study_dashboard_charts_download_too_and_histogram_ticks_are_whole_annotators(live_server,
                                                                                         browser_context):
    study = make_worked_example_study()
    study_analysis_compute(study_id=study.id)
    page, problems, _ = logged_in_page(browser_context, live_server, "study-download-researcher")
    page.goto(f"{live_server.url}/studies/{study.pk}/dashboard/")
    expect(page.locator("#chart-aq .main-svg").first).to_be_attached()
    expect(page.locator("#download-figures")).to_be_visible()
    frame = page.locator(".chart-frame", has=page.locator("#chart-aq"))
    name, svg = downloaded(page, frame.locator("button.chart-download", has_text="SVG"))
    assert name.endswith(".svg") and svg.startswith(b"<svg")

    for chart in ("#chart-aq", "#chart-sata", "#chart-weight"):
        expect(page.locator(f"{chart} .ytick text").first).to_be_attached()
        ticks = page.locator(f"{chart} .ytick text").all_text_contents()
        assert ticks and all(tick.isdigit() for tick in ticks), (chart, ticks)
    assert problems == []


def test_tied_points_are_labelled_once_and_hovering_lists_them_all(live_server, browser_context):
    audit = build_audit(TIED_PLAN)
    page, problems, _ = logged_in_page(browser_context, live_server, "tied-researcher")
    page.goto(f"{live_server.url}/audits/{audit.id}/dashboard/")
    expect(page.locator("#chart-scatter .main-svg").first).to_be_attached()

    labels = [text for text in page.locator("#chart-scatter .textpoint text").all_text_contents() if text]
    assert sorted(labels) == ["Model A · zs (+2)", "Model B · cot"]
    boxes = [box for box in (node.bounding_box() for node in page.locator("#chart-scatter .textpoint text").all())
             if box and box["width"]]
    for i, first in enumerate(boxes):
        for second in boxes[i + 1:]:
            apart = (first["x"] + first["width"] <= second["x"] or second["x"] + second["width"] <= first["x"]
                     or first["y"] + first["height"] <= second["y"] or second["y"] + second["height"] <= first["y"])
            assert apart, (first, second)

    page.locator("#chart-scatter").scroll_into_view_if_needed()
    marker = page.locator("#chart-scatter .scatterlayer .trace").first.locator(".point").first.bounding_box()
    page.mouse.move(marker["x"] - 30, marker["y"] - 30)
    page.mouse.move(marker["x"] + marker["width"] / 2, marker["y"] + marker["height"] / 2, steps=5)
    hover = page.locator("#chart-scatter .hovertext").first
    expect(hover).to_contain_text("at the same spot")
    for name in ("Model A · zs", "Model A · cot", "Model B · zs"):
        expect(hover).to_contain_text(name)
    assert problems == []


def test_a_page_opened_before_the_preparation_counts_the_requests_once_the_progress_does(live_server,
                                                                                         browser_context):
    audit = build_audit(RUNNING_PLAN, status=Audit.Status.RUNNING)
    n_requests = audit.n_requests
    Audit.objects.filter(pk=audit.pk).update(status=Audit.Status.QUEUED, n_requests=0)
    page, problems, _ = logged_in_page(browser_context, live_server, "queued-researcher")
    page.goto(f"{live_server.url}/audits/{audit.id}/dashboard/")
    count = page.locator("header .request-count")
    expect(count).to_have_text("no requests built yet")

    Audit.objects.filter(pk=audit.pk).update(status=Audit.Status.RUNNING, n_requests=n_requests)
    expect(count).to_have_text(f"{n_requests} requests", timeout=10_000)
    expect(page.locator("#progress-text")).to_contain_text(f"of {n_requests} requests finished")
    assert problems == []
