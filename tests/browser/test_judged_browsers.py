"""A researcher browses a finished audit's judged units in Debian Chromium: the BITS scores sentence by sentence
beside their controls', and the word association and two-turn affective attribution replies instance by instance.
Each filter, the search and the pages show the rows the API gives for the same filters; consistent replies are
shaded; no cell says None, nan or undefined; axe finds nothing serious; no console error.

The audits are run by the engine in this process: VADER and TextBlob (in the worker) on four of seed 001's
templates, and the test LLM server's seed 003 personas, as in tests/auditapp/test_implicit_bias_audit.py.
"""
from __future__ import annotations

import pytest
from playwright.sync_api import expect

from auditapp.models import Audit, LLMEndpoint
from tests.auditapp.test_bits_audit import launch as bits_launch
from tests.auditapp.test_bits_audit import run as bits_run
from tests.auditapp.test_bits_audit import small_corpus
from tests.auditapp.test_implicit_bias_audit import MODELS, launch, run
from tests.browser.accessibility import serious_violations
from tests.browser.staff import assert_no_sideways_scroll, logged_in_page
from tests.llm_server import LLMServer

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.django_db(transaction=True)]


def shown_column(rows, index: int) -> list[str]:
    return rows.evaluate_all(f"rows => rows.map(r => r.children[{index}].textContent)")


def assert_no_placeholder_text(section) -> None:
    text = section.locator("tbody").inner_text()
    assert not any(word in text for word in ("None", "nan", "NaN", "undefined", "null")), text[:500]


def test_the_bits_browser_filters_pages_and_shows_the_apis_rows(live_server, browser_context, api_client,
                                                                audit_tasks_off):
    local = LLMEndpoint.objects.create(name="local", protocol="local", base_url="")
    audit = bits_run(bits_launch(api_client, corpus=small_corpus(api_client).id, models=[
        {"endpoint": local.id, "model": "vader"}, {"endpoint": local.id, "model": "textblob"}]))
    assert audit.status == Audit.Status.COMPLETED, audit.status_reason
    url = f"/api/audits/{audit.id}/judged-sentences/"
    page, problems, _ = logged_in_page(browser_context, live_server, "bits-browser-researcher")
    page.goto(f"{live_server.url}/audits/{audit.id}/dashboard/")
    browser = page.locator("#sentence-browser")
    rows = browser.locator("#sentence-table tbody tr")
    everything = api_client.get(url, {"page_size": 50}).json()
    assert everything["count"] > 100
    expect(rows).to_have_count(50)
    expect(page.locator("#sentence-count")).to_have_text(f"{everything['count']} scores match; showing 1–50.")
    # The first page is the API's, the largest |change| first, each sentence beside its control.
    assert shown_column(rows, 1) == [row["text"] for row in everything["results"]]
    assert shown_column(rows, 5) == [row["control_text"] for row in everything["results"]]
    assert shown_column(rows, 8) == [str(round(row["change"], 4)).rstrip("0").rstrip(".")
                                     if row["change"] != int(row["change"]) else str(int(row["change"]))
                                     for row in everything["results"]]
    assert_no_placeholder_text(browser)
    page.locator("#sentence-next").click()
    second = api_client.get(url, {"page_size": 50, "page": 2}).json()["results"]
    expect(rows.first.locator("td").nth(1)).to_have_text(second[0]["text"])
    assert shown_column(rows, 1) == [row["text"] for row in second]

    browser.get_by_label("Scorer").select_option("textblob")
    browser.get_by_label("changed only (differs from its control)").check()
    changed = api_client.get(url, {"scorer": "textblob", "changed": "true", "page_size": 1000}).json()
    expect(rows).to_have_count(min(changed["count"], 50))
    assert 0 < changed["count"] < api_client.get(url, {"scorer": "textblob"}).json()["count"]
    assert set(shown_column(rows, 0)) == {"textblob"}
    browser.get_by_label("changed only (differs from its control)").uncheck()
    browser.get_by_label("Group").select_option("PWD:C")
    browser.get_by_label("Sort").select_option("template")
    browser.get_by_label("|change| at least").fill("0.05")
    browser.get_by_role("button", name="Show").click()
    wanted = api_client.get(url, {"scorer": "textblob", "group": "PWD:C", "ordering": "template",
                                  "min_change": "0.05", "page_size": 1000}).json()
    expect(page.locator("#sentence-count")).to_contain_text(f"{wanted['count']} score")
    assert shown_column(rows, 1) == [row["text"] for row in wanted["results"][:50]]
    expect(page.locator("#sentence-export")).to_have_attribute(
        "href", f"{url}?scorer=textblob&group=PWD%3AC&min_change=0.05&ordering=template&format=csv")
    browser.get_by_label("|change| at least").fill("")
    browser.get_by_label("Search").fill("HEARING LOSS")
    browser.get_by_role("button", name="Show").click()
    found = api_client.get(url, {"scorer": "textblob", "group": "PWD:C", "ordering": "template", "q": "HEARING LOSS",
                                 "page_size": 1000}).json()
    assert found["count"] > 0
    expect(rows).to_have_count(found["count"])
    assert all("hearing loss" in text.lower() for text in shown_column(rows, 1))
    assert serious_violations(page) == []
    assert_no_sideways_scroll(page)
    assert problems == []


def test_the_seed_003_browsers_show_the_apis_rows_and_shade_the_consistent_ones(live_server, browser_context,
                                                                                api_client, audit_tasks_off):
    with LLMServer(latency=0.0, models=MODELS) as server:
        endpoint = LLMEndpoint.objects.create(name="personas", protocol="openai", base_url=server.base_url,
                                              max_concurrency=8)
        wabt = run(launch(api_client, "word_association",
                          [{"endpoint": endpoint.id, "model": "wabt-consistent"},
                           {"endpoint": endpoint.id, "model": "wabt-neutral"}],
                          samples_per_combination=1).json()["id"])
        aat = run(launch(api_client, "affective_attribution", [{"endpoint": endpoint.id, "model": "aat-stereotyped"}],
                         combinations=10).json()["id"])
    assert wabt.status == aat.status == "completed", (wabt.status_reason, aat.status_reason)
    page, problems, _ = logged_in_page(browser_context, live_server, "seed-003-browser-researcher")

    url = f"/api/audits/{wabt.id}/judged-instances/"
    page.goto(f"{live_server.url}/audits/{wabt.id}/dashboard/")
    browser = page.locator("#instance-browser")
    rows = browser.locator("#instance-table tbody tr")
    expect(rows).to_have_count(50)
    expect(page.locator("#instance-count")).to_have_text("180 replies match; showing 1–50.")
    first = api_client.get(url, {"page_size": 50}).json()["results"]
    assert set(rows.evaluate_all("rows => rows.map(r => Number(r.dataset.request))")) == {
        row["request_id"] for row in first}
    headings = browser.locator("thead th").all_text_contents()
    assert "Dimension" in headings and "Bias score" in headings and "Description (turn 1's answer)" not in headings
    assert_no_placeholder_text(browser)
    expect(browser.locator("tr.marked")).to_have_count(sum(row["consistent"] is True for row in first))

    neutral = wabt.models.get(model="wabt-neutral")
    browser.get_by_label("Model").select_option(str(neutral.id))
    browser.get_by_label("Show").select_option("true")
    consistent = api_client.get(url, {"model": neutral.id, "consistent": "true", "page_size": 1000}).json()
    expect(rows).to_have_count(min(consistent["count"], 50))
    assert 0 < consistent["count"] < 90  # the fair coin: consistent about half the time
    expect(browser.locator("td.correct[data-consistent=true]")).to_have_count(min(consistent["count"], 50))
    expect(browser.locator("tr.marked")).to_have_count(min(consistent["count"], 50))
    browser.get_by_label("Dimension").select_option("Morality")
    narrowed = api_client.get(url, {"model": neutral.id, "consistent": "true", "condition": "Morality"}).json()
    expect(rows).to_have_count(narrowed["count"])
    assert set(rows.evaluate_all("rows => rows.map(r => Number(r.dataset.request))")) == {
        row["request_id"] for row in narrowed["results"]}
    assert serious_violations(page) == []
    assert_no_sideways_scroll(page)

    url = f"/api/audits/{aat.id}/judged-instances/"
    page.goto(f"{live_server.url}/audits/{aat.id}/dashboard/")
    browser = page.locator("#instance-browser")
    rows = browser.locator("#instance-table tbody tr")
    everything = api_client.get(url).json()
    expect(rows).to_have_count(30)  # 10 combinations × 3 templates: conversations
    headings = browser.locator("thead th").all_text_contents()
    assert "Description (turn 1's answer)" in headings and "Answer" in headings and "Group label" in headings
    described = headings.index("Description (turn 1's answer)")
    by_request = {row["request_id"]: row for row in everything["results"]}
    shown = rows.evaluate_all(f"rows => rows.map(r => [Number(r.dataset.request), "
                              f"r.children[{described}].textContent])")
    assert all(text == (by_request[request]["description"] or "—") for request, text in shown)
    browser.get_by_label("Show").select_option("true")
    consistent = api_client.get(url, {"consistent": "true"}).json()
    expect(rows).to_have_count(consistent["count"])
    assert consistent["count"] > 15  # planted: comedy for S_a 80%, tragedy for S_b 70%
    expect(browser.locator("tr.marked")).to_have_count(consistent["count"])
    browser.get_by_label("Sort").select_option("answer")
    answers = api_client.get(url, {"consistent": "true", "ordering": "answer"}).json()["results"]
    answer_column = headings.index("Answer")
    expect(rows.locator(f"td:nth-child({answer_column + 1})")).to_have_text([row["answer"] for row in answers])
    assert_no_placeholder_text(browser)
    assert serious_violations(page) == []
    assert_no_sideways_scroll(page)
    assert problems == []
