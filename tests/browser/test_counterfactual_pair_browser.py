"""A researcher browses a counterfactual audit's judged pairs in Debian Chromium (seed 002): on a names audit the
browser starts at the first model × task, pages through its 90 pairs, filters to the pairs whose answers differ
(the planted Black names), to a group, to refused pairs and searches a name, every shown row checked against the
API; a figure's point opens the page preset to its model × task (and group); on a dialect audit the rows match the
API and a side not in the batch says so. axe finds no serious or critical violation; no console error.

The audits are run by the engine in this process against the test LLM server's planted annotators, as in
tests/auditapp/test_counterfactual_pair_browser.py. Set PAIR_BROWSER_SCREENSHOT=/tmp/pairs.png to keep a full-page
screenshot of the names dashboard with refused pairs shown.
"""
from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from auditapp.models import LLMEndpoint
from tests.auditapp.test_counterfactual_audit import run
from tests.auditapp.test_counterfactual_pair_browser import ANNOTATORS
from tests.browser.accessibility import serious_violations
from tests.browser.staff import assert_no_sideways_scroll, logged_in_page, outside_requests, screenshot_if_asked
from tests.llm_server import LLMServer

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.django_db(transaction=True)]


def launch(api_client, paradigm: str, **body) -> int:
    response = api_client.post("/api/audits/", {"paradigm": paradigm, "name": f"{paradigm} pairs", **body},
                               format="json")
    assert response.status_code == 201, response.content
    return response.json()["id"]


def shown_rows(page) -> list[dict]:
    """The table's rows as the API's fields, read from the cells by their column keys."""
    return page.locator("#pair-table").evaluate("""table => {
      const keys = Array.from(table.querySelectorAll("thead th")).map(th => th.dataset.key);
      return Array.from(table.querySelectorAll("tbody tr")).map(tr => Object.fromEntries(
        Array.from(tr.cells).map((td, i) => [keys[i], td.textContent])));
    }""")


def click_plotted(point) -> None:
    """A click on a plotted point or bar where plotly listens for it (its drag layer lies over the marks)."""
    point.evaluate("mark => mark.scrollIntoView({block: 'center'})")
    box = point.bounding_box()
    point.page.mouse.click(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)


def expected_rows(api_client, audit_id: int, sides: tuple[str, str], **params) -> list[dict]:
    """The API's rows of the first page as the page should show them."""
    answer = api_client.get(f"/api/audits/{audit_id}/judged-pairs/", {**params, "page_size": 50}).json()
    differs = {True: "differ", False: "same", None: "—"}
    return [{"iteration": str(row["iteration"]), "pair": str(row["pair"]),
             **{f"{side}_label": row[f"{side}_label"] or row[f"{side}_missing"] for side in sides},
             **{f"{side}_text": row[f"{side}_text"] for side in sides}, "differs": differs[row["differs"]]}
            for row in answer["results"]]


def assert_rows_match(page, api_client, audit_id: int, sides: tuple[str, str], **params) -> None:
    wanted = expected_rows(api_client, audit_id, sides, **params)
    assert wanted, params
    expect(page.locator("#pair-table tbody tr")).to_have_count(len(wanted))
    shown = [{key: row[key] for key in wanted[0]} for row in shown_rows(page)]
    assert shown == wanted, params


def test_names_and_dialect_pairs_filter_page_and_match_the_api(live_server, browser_context, api_client, tasks_off):
    models = ("annotator-planted", "annotator-refuses", "annotator-aave")
    with LLMServer(latency=0.0, models=models, annotators={m: ANNOTATORS[m] for m in models}) as server:
        endpoint = LLMEndpoint.objects.create(name="annotators", protocol="openai", base_url=server.base_url,
                                              max_concurrency=8)
        names = run(launch(api_client, "names", iterations=3, seed=3,
                           material={"tasks": ["self_disciplined", "hireable"]},
                           models=[{"endpoint": endpoint.id, "model": "annotator-planted"},
                                   {"endpoint": endpoint.id, "model": "annotator-refuses"}]))
        dialect = run(launch(api_client, "dialect", iterations=6, seed=5, material={"tasks": ["toxic"]},
                             models=[{"endpoint": endpoint.id, "model": "annotator-aave"}]))
    assert names.status == dialect.status == "completed", (names.status_reason, dialect.status_reason)
    planted = names.models.get(model="annotator-planted").id
    refuses = names.models.get(model="annotator-refuses").id
    sides = ("minority", "reference")
    page, problems, requests = logged_in_page(browser_context, live_server, "pairs-researcher")

    page.goto(f"{live_server.url}/audits/{names.id}/dashboard/")
    browser = page.locator("#pair-browser")
    rows = browser.locator("#pair-table tbody tr")
    # The first model and task, 90 pairs (3 iterations × 30), 50 a page.
    expect(browser.get_by_label("Model")).to_have_value(str(planted))
    expect(browser.get_by_label("Task")).to_have_value("self_disciplined")
    expect(page.locator("#pair-count")).to_have_text("90 pairs match; showing 1–50.")
    assert_rows_match(page, api_client, names.id, sides, model=planted, task="self_disciplined")
    page.locator("#pair-next").click()
    expect(rows).to_have_count(40)
    expect(page.locator("#pair-count")).to_have_text("90 pairs match; showing 51–90.")

    browser.get_by_label("answers differ only").check()
    differ = api_client.get(f"/api/audits/{names.id}/judged-pairs/",
                            {"model": planted, "task": "self_disciplined", "differs": "true"}).json()
    expect(rows).to_have_count(differ["count"])
    expect(browser.locator("tr.marked")).to_have_count(differ["count"])
    expect(browser.locator("td[data-differs=true]")).to_have_count(differ["count"])
    assert {row["group"] for row in shown_rows(page)} == {"Black"}
    assert_rows_match(page, api_client, names.id, sides, model=planted, task="self_disciplined", differs="true")
    expect(page.locator("#pair-export")).to_have_attribute(
        "href", re.compile(rf"model={planted}&task=self_disciplined&ordering=iteration&differs=true&format=csv"))

    browser.get_by_label("answers differ only").uncheck()
    browser.get_by_label("Group").select_option("Asian")
    assert_rows_match(page, api_client, names.id, sides, model=planted, task="self_disciplined", group="Asian")
    assert {row["group"] for row in shown_rows(page)} == {"Asian"}
    name = shown_rows(page)[0]["minority_name"]
    browser.get_by_label("Group").select_option("")
    browser.get_by_label("Search").fill(name)
    browser.get_by_role("button", name="Show").click()
    assert_rows_match(page, api_client, names.id, sides, model=planted, task="self_disciplined", q=name)

    browser.get_by_label("Search").fill("")
    browser.get_by_label("Model").select_option(str(refuses))
    browser.get_by_label("Task").select_option("hireable")
    browser.get_by_label("Outcome").select_option("refusal")
    expect(page.locator("#pair-count")).to_have_text("90 pairs match; showing 1–50.")
    expect(rows.first.locator("td").nth(-3)).to_have_text("refusal: refused")
    assert_rows_match(page, api_client, names.id, sides, model=refuses, task="hireable", outcome="refusal")
    assert serious_violations(page) == []
    screenshot_if_asked(page, "PAIR_BROWSER_SCREENSHOT")
    assert_no_sideways_scroll(page)

    # A point of Figure 1 opens the page preset to its model × task × group.
    page.goto(f"{live_server.url}/audits/{names.id}/dashboard/?pairs_model={refuses}&pairs_task=hireable"
              "&pairs_group=Black")
    expect(browser.get_by_label("Group")).to_have_value("Black")
    assert_rows_match(page, api_client, names.id, sides, model=refuses, task="hireable", group="Black")
    black = page.locator('.figure-1-panel[data-group="Black"]')
    click_plotted(black.locator(".scatterlayer .trace").first.locator(".point").first)
    expect(page).to_have_url(re.compile(rf"pairs_model={planted}&pairs_task=\w+&pairs_group=Black#pair-browser$"))
    expect(browser.get_by_label("Model")).to_have_value(str(planted))

    dialect_sides = ("sae", "aave")
    page.goto(f"{live_server.url}/audits/{dialect.id}/dashboard/")
    model = dialect.models.get().id
    assert_rows_match(page, api_client, dialect.id, dialect_sides, model=model, task="toxic")
    expect(browser.get_by_text("not in this request's batch").first).to_be_visible()
    browser.get_by_label("answers differ only").check()
    assert_rows_match(page, api_client, dialect.id, dialect_sides, model=model, task="toxic", differs="true")
    browser.get_by_label("Sort").select_option("pair")
    assert_rows_match(page, api_client, dialect.id, dialect_sides, model=model, task="toxic", differs="true",
                      ordering="pair")
    assert browser.get_by_label("Group").count() == 0
    assert serious_violations(page) == []
    click_plotted(page.locator(".figure-2-panel .bars .point").first)
    expect(page).to_have_url(re.compile(rf"pairs_model={model}&pairs_task=toxic#pair-browser$"))
    assert_no_sideways_scroll(page)

    assert outside_requests(requests, live_server) == []
    assert problems == []


@pytest.fixture
def tasks_off(monkeypatch):
    for name in ("audit_prepare_task", "audit_work_task", "audit_analyse_task"):
        monkeypatch.setattr(f"tasks.audits.{name}.delay", lambda audit_id: None)
