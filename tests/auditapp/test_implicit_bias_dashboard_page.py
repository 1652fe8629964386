"""The word association and affective attribution dashboard pages (templates/auditapp/word_association_dashboard.html,
affective_attribution_dashboard.html) rendered after a real audit against the test LLM server's personas (as in
tests/auditapp/test_implicit_bias_audit.py): Table 4, the radar panels, Table 5, the bar panels, the reasons, the
notes stating every choice, the exports; a researcher-entered model label shown as text, never as markup."""
from __future__ import annotations

import math

import pytest
from scipy import stats as scipy_stats

from auditapp.models import Audit, LLMEndpoint
from tests.auditapp.test_implicit_bias_audit import MODELS, launch, run
from tests.auditapp.test_self_report_dashboard_view import page_text
from tests.llm_server import LLMServer

pytestmark = [pytest.mark.django_db(transaction=True)]

HOSTILE_LABEL = "<b>neutral</b>"


@pytest.fixture
def tasks_off(monkeypatch):
    for name in ("audit_prepare_task", "audit_work_task", "audit_analyse_task"):
        monkeypatch.setattr(f"tasks.audits.{name}.delay", lambda audit_id: None)


def test_both_dashboards_render_their_tables_figures_and_notes(api_client, staff_client, tasks_off):
    with LLMServer(latency=0.0, models=MODELS) as server:
        source = LLMEndpoint.objects.create(name="personas", protocol="openai", base_url=server.base_url,
                                            max_concurrency=8)
        wabt = launch(api_client, "word_association",
                      [{"endpoint": source.id, "model": "wabt-consistent"},
                       {"endpoint": source.id, "model": "wabt-neutral", "label": HOSTILE_LABEL}],
                      samples_per_combination=2, dimension_draw="balanced", word_order="paper")
        aat = launch(api_client, "affective_attribution", [{"endpoint": source.id, "model": "aat-stereotyped"}],
                     combinations=40, form="single_prompt")
        wabt_audit, aat_audit = run(wabt.json()["id"]), run(aat.json()["id"])

    page = staff_client.get(f"/audits/{wabt_audit.id}/dashboard/").content.decode()
    assert 'id="table-4"' in page and page.count('class="chart radar-panel"') == 2
    assert "Word order: paper (the 5 X_a words, then the 5 X_b words" in page
    assert "Dimension draw: balanced" in page and "undefined score" in page
    assert 'data-model="&lt;b&gt;neutral&lt;/b&gt;"' in page and "<b>neutral</b>" not in page.split("audit-data")[0]
    assert "all scores equal: no variance" in page  # wabt-consistent's t is undefined, and the page says why
    for name in ("table4", "radar", "reasons", "replies"):
        assert f'data-table="{name}"' in page
    assert "implicit_bias_dashboard.js" in page and "plotly.min.js" in page

    page = staff_client.get(f"/audits/{aat_audit.id}/dashboard/").content.decode()
    assert 'id="table-5"' in page and page.count('class="chart wide bars-panel"') == 1
    assert "FAR = N_f / N_{S_a}" in page and "sum to 1" in page
    assert "Form: single_prompt" in page and "Neutral" in page
    for name in ("table5", "bars", "reasons", "replies"):
        assert f'data-table="{name}"' in page

    # The headlines: Table 4's means with the interval of their t-test, Table 5's FAR and UAR.
    table4 = api_client.get(f"/api/audits/{wabt_audit.id}/tables/table4/").json()["results"]
    rows = api_client.get(f"/api/audits/{wabt_audit.id}/headline/").json()["rows"]
    assert [(row["model"], row["cell"]) for row in rows] == [(row["model"], row["dimension"]) for row in table4]
    for row, stored in zip(rows, table4, strict=True):
        assert row["value"] == stored["mean"] and row["n"] == stored["n"]
        if stored["sd"]:
            low, high = scipy_stats.t.interval(0.95, stored["df"], loc=stored["mean"],
                                               scale=stored["sd"] / math.sqrt(stored["n"]))
            assert (row["low"], row["high"]) == pytest.approx((low, high))
        else:  # no variance: the t-test is undefined and so is its interval
            assert row["low"] is None and row["high"] is None
    assert any(row["low"] is not None for row in rows) and any(row["low"] is None for row in rows)
    table5 = api_client.get(f"/api/audits/{aat_audit.id}/tables/table5/").json()["results"]
    rows = api_client.get(f"/api/audits/{aat_audit.id}/headline/").json()["rows"]
    assert [(row["cell"], row["value"], row["n"]) for row in rows] == [
        ("FAR", table5[0]["far"], table5[0]["sa_n"]), ("UAR", table5[0]["uar"], table5[0]["sb_n"])]


def test_the_reasons_count_and_share_the_same_model_s_replies(api_client, staff_client, tasks_off):
    """wabt-neutral gives many AAT replies no choice: its reasons row's count and share are of its own 12 replies
    (4 combinations × 3 templates), and the row says 12, not the 24 replies of both models (a note once read
    "(900 in all)" beside a share of one model's 450)."""
    with LLMServer(latency=0.0, models=MODELS) as server:
        source = LLMEndpoint.objects.create(name="personas", protocol="openai", base_url=server.base_url,
                                            max_concurrency=8)
        audit = run(launch(api_client, "affective_attribution",
                           [{"endpoint": source.id, "model": "aat-stereotyped"},
                            {"endpoint": source.id, "model": "wabt-neutral"}],
                           combinations=4, form="single_prompt").json()["id"])
    assert audit.status == "completed", audit.status_reason
    page = page_text(staff_client.get(f"/audits/{audit.id}/dashboard/").content.decode())
    rows = [cells for attrs, cells in page.rows["reasons-table"] if attrs.get("data-model") == "wabt-neutral"]
    assert audit.analysis["n_replies"] == 24
    [[_, reason, n, share, of]] = rows
    assert reason == "no choice" and of == "12" and int(n) > 0
    assert float(share) == pytest.approx(int(n) / 12, abs=0.0005)
    assert "(24 in all)" not in page.text("reasons-section")

    # An audit analysed before the per-model counts is analysed again by the upgrade, and only such an audit.
    from auditapp import upgrade_steps

    assert upgrade_steps.implicit_bias_audits_before_per_model_counts() == []
    stored = audit.analysis
    stored["tables"]["reasons"] = [{k: v for k, v in row.items() if k != "n_replies"}
                                   for row in stored["tables"]["reasons"]]
    Audit.objects.filter(pk=audit.pk).update(analysis=stored)
    assert upgrade_steps.implicit_bias_audits_before_per_model_counts() == [audit.id]
    step = next(step for step in upgrade_steps.STEPS if step.name == "implicit-bias-reasons-per-model")
    assert step.run() == "1 audits analysed again"
    assert upgrade_steps.implicit_bias_audits_before_per_model_counts() == []
