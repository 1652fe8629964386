"""A researcher previews a launch in Chromium: the launch form's *Preview* shows the requests the options plan,
the count follows the options when they change and are previewed again, and *Launch audit* opens the dashboard.

The count is computed on a Preview step, not live as each box is ticked: it runs the paradigm's own launch and
request builder in a rolled-back transaction (a corpus snapshot, the evaluation set, thousands of keyed requests),
which is too heavy to run on every click, and needs the whole form valid so its problems show beside it."""
from __future__ import annotations

import pytest
from playwright.sync_api import expect

from auditapp.models import Audit, LLMEndpoint
from tests.browser.accessibility import serious_violations
from tests.browser.staff import assert_no_sideways_scroll, logged_in_page, screenshot_if_asked
from tests.factories import make_audit_study

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.django_db(transaction=True)]


def test_the_preview_counts_the_requests_and_follows_the_options(browser_context, live_server):
    study = make_audit_study(6, n_examples=2, name="Small study")
    endpoint = LLMEndpoint.objects.create(name="chat", base_url="http://127.0.0.1:9/v1", requests_per_minute=30,
                                          listed_models=[{"name": "model-a", "digest": "", "details": {}}])
    page, problems, _ = logged_in_page(browser_context, live_server, "launcher")
    page.goto(f"{live_server.url}/admin/auditapp/audit/add/")
    expect(page.locator("#launch-preview")).to_contain_text("then Preview")
    expect(page.locator("input[name=_save]")).to_have_count(0)
    assert_no_sideways_scroll(page)

    page.fill("input[name=name]", "pilot")
    page.select_option("select[name=study]", str(study.id))
    page.check(f"input[name=models][value='{endpoint.id}:model-a']")
    page.click("input[name=_preview]")
    # 6 items × 7 conditions × 1 replicate.
    expect(page.locator("#launch-preview-total")).to_have_text("42")
    expect(page.locator("#launch-preview-time")).to_contain_text("at least about 1 minute")
    assert not Audit.objects.exists()
    assert serious_violations(page) == []
    screenshot_if_asked(page, "LAUNCH_PREVIEW_SCREENSHOT")
    assert_no_sideways_scroll(page)  # the preview's reload sends the form again: it stores nothing
    assert not Audit.objects.exists()

    page.uncheck("input[name=conditions][value=icl_a]")
    page.uncheck("input[name=conditions][value=icl_b]")
    page.fill("input[name=replicates]", "2")
    page.click("input[name=_preview]")
    # 6 items × 5 conditions × 2 replicates.
    expect(page.locator("#launch-preview-total")).to_have_text("60")

    page.click("input[name=_save]")
    page.wait_for_url(f"{live_server.url}/audits/*/dashboard/")
    audit = Audit.objects.get()
    assert page.url.endswith(f"/audits/{audit.id}/dashboard/")
    assert audit.replicates == 2 and sorted(audit.conditions.values_list("condition", flat=True)) == [
        "cot", "persona_ifl", "persona_pfl", "persona_sic", "zs"]
    # The admin's pages link no favicon, so Chromium's own request for /favicon.ico (which the page's request
    # events do not see) is a 404: nothing else may fail.
    assert [problem for problem in problems if "status of 404" not in problem] == []
