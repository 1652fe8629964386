"""A researcher finds every audit on the home page at 1440×900, ticks two and compares them, then opens a model's
card: the numbers shown are each audit's own Table 1 values and their differences; axe finds nothing serious on
the three pages."""
from __future__ import annotations

import pytest
from playwright.sync_api import expect

from auditapp.models import AuditMetric
from tests.auditapp.test_audit_dashboard_view import COMPLETED_PLAN, build_audit
from tests.browser.accessibility import serious_violations
from tests.browser.staff import assert_no_sideways_scroll, logged_in_page

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.django_db(transaction=True)]


def kappa(audit, model: str, condition: str) -> float:
    return AuditMetric.objects.get(audit=audit, audit_model__model=model, condition=condition,
                                   reference="weighted").values["kappa"]


def test_home_index_compare_and_a_models_card(live_server, browser_context):
    first = build_audit(COMPLETED_PLAN, name="First run")
    second = build_audit({**COMPLETED_PLAN, ("model-b", "zs"): {"wrong": set()}}, name="Second run")
    page, problems, _ = logged_in_page(browser_context, live_server, "overview-researcher")
    page.set_viewport_size({"width": 1440, "height": 900})
    page.goto(f"{live_server.url}/")

    rows = page.locator("#audits tr[data-audit]")
    expect(rows).to_have_count(2)
    second_row = page.locator(f'#audits tr[data-audit="{second.id}"]')
    expect(second_row.locator(".progress")).to_have_text("100% of 64 (1 failed)")
    expect(second_row.locator(".headline")).to_contain_text("Cohen's κ against the weighted ground truth (Table 1)")
    expect(second_row.get_by_role("link", name="Second run")).to_have_attribute("href", f"/audits/{second.id}/dashboard/")
    assert serious_violations(page) == []
    assert_no_sideways_scroll(page)

    page.get_by_label("Compare First run").check()
    page.get_by_label("Compare Second run").check()
    page.get_by_role("button", name="Compare the ticked audits").click()
    expect(page.locator("#compare-table")).to_be_visible()
    # The newest audit is listed first on the home page, so it is the baseline.
    headers = page.locator("#compare-table thead th[data-audit]")
    expect(headers).to_have_count(2)
    assert headers.nth(0).get_attribute("data-audit") == str(second.id)
    row = page.locator("#compare-table tbody tr", has=page.locator("th", has_text="Model B")).first
    values = row.locator("td.value-cell .value").all_text_contents()
    cell = row.get_attribute("data-cell")
    condition = "zs" if "zs" in cell.lower() or "zero" in cell.lower() else "cot"
    assert values == [f"{kappa(second, 'model-b', condition):.3f}", f"{kappa(first, 'model-b', condition):.3f}"]
    difference = kappa(first, "model-b", condition) - kappa(second, "model-b", condition)
    expect(row.locator("td.difference .value")).to_have_text(f"{'+' if difference > 0 else ''}{difference:.3f}")
    assert serious_violations(page) == []
    assert_no_sideways_scroll(page)

    page.goto(f"{live_server.url}/")
    page.locator(f'#audits tr[data-audit="{first.id}"] .models').get_by_role("link", name="model-b").click()
    expect(page.locator("#model-name")).to_have_text("model-b")
    cards = page.locator("article.card-audit")
    expect(cards).to_have_count(2)
    first_card = page.locator(f'article.card-audit[data-audit="{first.id}"]')
    expect(first_card.locator("tbody tr")).to_have_count(2)  # Model B's two conditions only
    shown = sorted(first_card.locator("td .value").all_text_contents())
    assert shown == sorted(f"{kappa(first, 'model-b', c):.3f}" for c in ("zs", "cot"))
    assert serious_violations(page) == []
    assert_no_sideways_scroll(page)
    assert problems == []
