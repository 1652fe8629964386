"""A researcher perturbs their own texts (seed 001 §3.1) in Debian Chromium: the corpus admin's form previews the
first texts and the rows left out without storing anything, then stores the corpus; the audit's dashboard opens on
Table 6 with its per-source tables, the planted group marked, on a desktop and at a phone's width, and passes axe.
"""
from __future__ import annotations

import pytest
from playwright.sync_api import expect

from auditapp.models import Audit, Corpus, LLMEndpoint
from auditapp.paradigms.bits.corpus import paper_spec
from tests.auditapp import bits_posts_files
from tests.auditapp.test_bits_audit import launch, run, tasks_off  # noqa: F401 (tasks_off is a fixture)
from tests.auditapp.test_bits_posts_audit import upload
from tests.browser.accessibility import assert_accessible
from tests.browser.staff import assert_no_sideways_scroll, assert_results_first, logged_in_page, screenshot_if_asked
from tests.llm_server import LLMServer

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.django_db(transaction=True)]

TEXTS = {"name": "texts.csv", "mimeType": "text/csv", "buffer": bits_posts_files.csv_bytes()}


def send_texts(page, button: str, name: str = "") -> None:
    """Choose the texts file in the admin's perturbation form, give the corpus ``name`` if any, press ``button``."""
    form = page.locator("#posts-form")
    form.locator('input[type="file"]').set_input_files(TEXTS)
    if name:
        form.locator('input[name="posts-name"]').fill(name)
    form.locator(f'input[name="{button}"]').click()


def test_the_admin_form_previews_the_texts_then_stores_them(live_server, browser_context):
    page, problems, _ = logged_in_page(browser_context, live_server, "posts-admin-researcher")
    page.goto(f"{live_server.url}/admin/auditapp/corpus/add/")
    send_texts(page, "posts-preview")

    preview = page.locator("#posts-preview")
    expect(preview.locator("#posts-preview-counts")).to_contain_text("43 rows: 40 texts with 40 mentions would give "
                                                                     "840 sentences; 3 left out")
    expect(preview.locator("#posts-preview-counts")).to_contain_text("Reddit: 20, Twitter: 20")
    first = preview.locator(".posts-preview-post").first
    expect(first.locator("caption")).to_have_text("Row 2, id r1 (Reddit)")
    expect(first.locator("tr").nth(1).locator("td")).to_have_text(
        "Finally got my parking permit approved after six months of paperwork.")
    expect(first.locator("tr")).to_have_count(2 + 20)
    expect(preview.locator("#posts-preview-skipped tr")).to_have_count(1 + 3)
    assert not Corpus.objects.exists()
    assert_accessible(page, "corpus admin's preview of perturbed texts", within=("#posts-preview",))
    assert_no_sideways_scroll(page)  # the reload sends the texts again: a preview still
    assert not Corpus.objects.exists()

    send_texts(page, "posts-store", name="My posts")
    expect(page.locator(".messagelist").filter(has_text="Stored")).to_contain_text("Stored My posts (840 units)")
    corpus = Corpus.objects.get()
    assert corpus.name == "My posts" and corpus.n_units == 40 * 21
    assert corpus.provenance["report"]["skipped"] == 3
    assert problems == []


def test_a_name_is_asked_for_before_storing(live_server, browser_context):
    page, _, _ = logged_in_page(browser_context, live_server, "posts-admin-researcher")
    page.goto(f"{live_server.url}/admin/auditapp/corpus/add/")
    send_texts(page, "posts-store")
    expect(page.locator("#posts-form .errorlist")).to_contain_text("a name is required")
    assert not Corpus.objects.exists()


def test_the_dashboard_opens_on_table_6_with_its_sources_on_a_desktop_and_a_phone(live_server, browser_context,
                                                                                   api_client, tasks_off):  # noqa: F811
    response = upload(api_client, name="posts")
    assert response.status_code == 201, response.content
    pwd_c = next(group.terms for group in paper_spec().groups if group.name == "PWD:C")
    with LLMServer(models=["scorer-planted", "scorer-null"],
                   score_effects={"scorer-planted": dict.fromkeys(pwd_c, -0.3)}) as server:
        endpoint = LLMEndpoint.objects.create(name="llm", protocol="openai", base_url=server.base_url)
        audit = run(launch(api_client, corpus=response.json()["id"], models=[
            {"endpoint": endpoint.id, "model": "scorer-planted"}, {"endpoint": endpoint.id, "model": "scorer-null"}]))
    assert audit.status == Audit.Status.COMPLETED, audit.status_reason

    page, problems, _ = logged_in_page(browser_context, live_server, "posts-dashboard-researcher")
    page.goto(f"{live_server.url}/audits/{audit.id}/dashboard/")
    assert_results_first(page)
    assert page.locator("#progress-section ~ section h2").first.inner_text().startswith("Table 6")
    for table in ("#table-6", "#table-6-source-0", "#table-6-source-1"):
        planted = page.locator(f'{table} tr[data-scorer="scorer-planted"]')
        expect(planted.locator('td[data-group="PWD:C"] .mark')).to_have_text("**")
        expect(page.locator(f"{table} .mark").filter(has_text="*")).to_have_count(1)
    expect(page.locator(".source-name")).to_have_text(["Reddit", "Twitter"])
    expect(page.locator("#table-6 thead th")).to_have_text(["Scorer", "PWD:C", "PWD:SD", "PWoD", "NRMA", "control"])
    expect(page.locator("#table-9")).to_have_count(0)
    expect(page.locator("#posts-counts")).to_contain_text("40 texts with 40 mentions gave 840 sentences")
    expect(page.locator("#posts-skipped tbody tr")).to_have_count(3)
    expect(page.locator("#comparability")).to_contain_text("your own texts")
    assert "None" not in page.locator("main").inner_text()
    assert_accessible(page, "BITS dashboard of perturbed texts", within=("#table-6-section", "#posts-section"))

    page.set_viewport_size({"width": 390, "height": 844})
    page.reload()
    expect(page.locator("#bits-heatmap .main-svg").first).to_be_attached()
    # The table scrolls within its box; the page does not scroll sideways.
    box = page.locator("#table-6-section .scroll").first.bounding_box()
    assert box is not None and box["x"] >= 0 and box["x"] + box["width"] <= 390 + 1, box
    overflow = page.evaluate("document.documentElement.scrollWidth - document.documentElement.clientWidth")
    assert overflow <= 1, f"the page scrolls sideways by {overflow}px at a phone's width"
    assert_accessible(page, "BITS dashboard of perturbed texts at a phone's width",
                      within=("#table-6-section", "#table-7-section", "#coverage-section"))
    screenshot_if_asked(page, "BITS_POSTS_SCREENSHOT")
    assert problems == []
