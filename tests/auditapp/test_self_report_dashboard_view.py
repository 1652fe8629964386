"""The dashboard page of a self-report audit (seed 000 §4.4, Figure 2), run in-process against the test LLM
server's scripted personas (``tests.self_report_personas``), and of a classification audit, which is unchanged.

The figures are worked by hand from the personas' rules (as in tests/auditapp/test_self_report_audit.py):
on the AQ-50 (0–50; tiers < 26, 26–31, ≥ 32) persona-agree takes the most-agreeing option everywhere and
scores the 24 agree-keyed items on both forms; persona-key and persona-dummy answer by a fixed key per
statement (28 on both forms); persona-recognise answers the original form as persona-agree (24) and the
masked one as persona-key (28): +4, that is +8.0% of 50, from "below screening threshold" to "elevated",
crossing 26 upward. Over the four models with both scores the differences are (0, 0, 0, 4): mean 1, SD 2,
t(3) = 1 / (2 / √4) = 1.00, p = 0.391 (two-sided), d_z = 1 / 2 = 0.50. On the partial SATA (5 items, 5–20)
the same models score 8 (agree) and 12 (key): persona-recognise +4 = +20.0% of 20. persona-refuse refuses
every item, so it has no score and is flagged ("refused 100% of the items"); persona-agree and persona-dummy
endorse the 52 dummy items of the masked form (> 26: flagged).

The builders here are shared with tests/browser/test_self_report_dashboard.py.
"""
from __future__ import annotations

import json
import re
from html.parser import HTMLParser

import pytest
from django.test import Client
from django.urls import reverse

from auditapp.engine import analysis as engine_analysis
from auditapp.engine import launch, preparation, registry
from auditapp.engine import runner as audit_runner
from auditapp.models import Audit, LLMEndpoint
from auditapp.paradigms.self_report import services as self_report
from auditapp.paradigms.self_report.design import ValidityRule
from psychometrics.services import instruments_sync_shipped
from tests.auditapp.test_audit_dashboard_view import COMPLETED_PLAN, build_audit
from tests.llm_server import PERSONAS

HOSTILE_LABEL = "<b>x</b>"  # persona-dummy's label: a researcher-entered name that must show as text


def build_personas_audit(base_url: str, *, personas=PERSONAS, name: str = "Personas", run: bool = True,
                         **options) -> Audit:
    """A batch self-report audit of the AQ-50 and the partial SATA, every persona a model (persona-dummy
    labelled ``HOSTILE_LABEL``), run to completion in-process as a worker would (unless ``run`` is False)."""
    instruments = {instrument.slug: instrument for instrument in instruments_sync_shipped()}
    endpoint = LLMEndpoint.objects.create(name=f"personas {LLMEndpoint.objects.count()}", protocol="openai",
                                          base_url=base_url, max_concurrency=8, attempt_timeout_s=5, deadline_s=30,
                                          max_attempts=2)
    models = [launch.ModelChoice(endpoint=endpoint, model=persona,
                                   label=HOSTILE_LABEL if persona == "persona-dummy" else "")
              for persona in personas]
    audit = self_report.self_report_audit_create(
        name=name, models=models, instruments=[instruments["aq50"], instruments["sata_partial"]],
        **{"mode": "batch", "seed": 7, **options})
    if run:
        preparation.audit_prepare(audit_id=audit.id)
        assert audit_runner.audit_work(audit.id) == "finished"
        engine_analysis.audit_analyse(audit_id=audit.id)
    audit = Audit.objects.get(pk=audit.id)
    if run:
        assert audit.status == Audit.Status.COMPLETED, audit.status_reason
    return audit


VOID = {"area", "base", "br", "col", "hr", "img", "input", "link", "meta", "source", "wbr"}


class PageText(HTMLParser):
    """The text of every element with an id (``texts``) and the rows of every table (``rows``: table id →
    list of (the row's attributes, its cells' texts)), whitespace collapsed."""

    def __init__(self):
        super().__init__()
        self.texts: dict[str, str] = {}
        self.rows: dict[str, list[tuple[dict, list[str]]]] = {}
        self.stack: list[tuple[str, str | None]] = []
        self.table = self.row = self.cell = None

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag in VOID:
            return
        self.stack.append((tag, attrs.get("id")))
        if attrs.get("id"):
            self.texts.setdefault(attrs["id"], "")
        if tag == "table":
            self.table = attrs.get("id")
            self.rows.setdefault(self.table, [])
        elif tag == "tr" and self.table:
            self.row = (attrs, [])
        elif tag in ("td", "th") and self.row is not None:
            self.cell = ""

    def handle_endtag(self, tag):
        while self.stack and self.stack.pop()[0] != tag:
            pass
        if tag in ("td", "th") and self.cell is not None:
            self.row[1].append(" ".join(self.cell.split()))
            self.cell = None
        elif tag == "tr" and self.row is not None:
            self.rows[self.table].append(self.row)
            self.row = None
        elif tag == "table":
            self.table = None

    def handle_data(self, data):
        for _, element_id in self.stack:
            if element_id:
                self.texts[element_id] += data
        if self.cell is not None:
            self.cell += data

    def text(self, element_id: str) -> str:
        return " ".join(self.texts[element_id].split())

    def model_rows(self, table: str) -> dict[str, list[str]]:
        """Model id → the row's cells, for the rows of a table that name a model."""
        return {attrs["data-model"]: cells for attrs, cells in self.rows[table] if "data-model" in attrs}

    def row_classes(self, table: str) -> dict[str, set[str]]:
        return {attrs["data-model"]: set((attrs.get("class") or "").split())
                for attrs, _ in self.rows[table] if "data-model" in attrs}


def page_text(html: str) -> PageText:
    parser = PageText()
    parser.feed(html)
    return parser


def model_ids(audit: Audit) -> dict[str, str]:
    """Persona → its model id as the page writes it."""
    return {m.model: str(m.id) for m in audit.models.all()}


# ------------------------------------------------------------------------------------------- the page


@pytest.mark.django_db(transaction=True)
@pytest.mark.integration
def test_completed_self_report_audit_shows_figure_2_the_comparison_and_validity(persona_server, audit_tasks_off, staff_client):
    audit = build_personas_audit(persona_server.base_url)
    ids = model_ids(audit)
    response = staff_client.get(reverse("audit-dashboard", args=[audit.id]))
    assert response.status_code == 200
    html = response.content.decode()
    page = page_text(html)

    # Header: name, paradigm, status, mode and replicates; no study, so no study link.
    assert page.text("audit-name") == "Personas"
    assert page.text("audit-paradigm") == "Self-report on instruments (seed 000 §3.3)"
    assert 'data-status="completed">Completed</span>' in html
    assert page.text("audit-mode") == "batch" and page.text("audit-replicates") == "1 replicate"
    assert "5 models × 3 forms" in page.text("audit-design")
    assert "Study dashboard" not in html and "/studies/" not in html and 'id="audit-study"' not in html
    # The exports and the live progress through the API.
    assert f'href="/api/audits/{audit.id}/answers/?format=csv"' in html
    assert f'href="/api/audits/{audit.id}/scores/?format=csv"' in html
    assert f'href="/api/audits/{audit.id}/validity/?format=csv"' in html
    assert f'href="/api/audits/{audit.id}/manifest/"' in html
    for export in ("answers/?format=csv", "scores/?format=csv", "validity/?format=csv", "manifest/"):
        assert staff_client.get(f"/api/audits/{audit.id}/{export}").status_code == 200, export
    assert f'data-progress-url="/api/audits/{audit.id}/progress/"' in html
    assert "<th>Form</th>" in html and 'name="csrfmiddlewaretoken"' in html
    data = json.loads(re.search(r'<script id="audit-data" type="application/json">(.*?)</script>', html, re.S)[1])
    assert data["conditions"] == [
        {"code": "original:aq50", "name": "Original: Autism-Spectrum Quotient (AQ-50)"},
        {"code": "original:sata_partial", "name": "Original: SATA (partial: 5 published items, demo only)"},
        {"code": "masked", "name": "Masked: all instruments' items with filler and dummy items"}]
    assert data["audit"]["status"] == "completed" and len(data["models"]) == 5

    # AQ-50 (Figure 2's right panel): scores, tiers, change, % of 50, crossings, flags.
    assert page.text("instrument-0").startswith("Autism-Spectrum Quotient (AQ-50)")
    assert "partial instrument" not in page.text("instrument-0")
    assert "change shown as % of the scale maximum (50)" in page.text("instrument-0")
    aq = page.model_rows("scores-0")
    # Model, original, tier, masked, tier, change, % of max, crossings, validity.
    assert aq[ids["persona-agree"]][1:8] == ["24", "below screening threshold (< 26)", "24",
                                             "below screening threshold (< 26)", "0", "0.0%", "—"]
    assert aq[ids["persona-recognise"]][1:8] == ["24", "below screening threshold (< 26)", "28",
                                                 "elevated (26–31) tier changed", "+4", "+8.0%", "↑ reaches 26"]
    assert aq[ids["persona-key"]][1:8] == ["28", "elevated (26–31)", "28", "elevated (26–31)", "0", "0.0%", "—"]
    assert aq[ids["persona-refuse"]][0] == "persona-refuse †"
    assert aq[ids["persona-refuse"]][1:8] == ["—", "—", "—", "—", "—", "—", "—"]
    assert aq[ids["persona-refuse"]][8] == ("flagged on the original form: refused 100% of the items "
                                            "flagged on the masked form: refused 100% of the items")
    assert aq[ids["persona-agree"]][8] == "flagged on the masked form: endorsed 52 of 52 dummy items"
    assert aq[ids["persona-key"]][8] == "—"
    # The headline is Figure 2's change as % of the maximum: the same figures, with why a bar is missing.
    headline = {(row.model, row.cell): row for row in registry.get("self_report").headline(audit).rows}
    recognise = headline[("persona-recognise", "Autism-Spectrum Quotient (AQ-50)")]
    assert (recognise.value, recognise.n, recognise.note) == (pytest.approx(8.0), 1, "tier changed")
    refuse = headline[("persona-refuse", "Autism-Spectrum Quotient (AQ-50)")]
    assert refuse.value is None and refuse.note.startswith("no score on both forms")
    classes = page.row_classes("scores-0")
    assert "level-tier" in classes[ids["persona-recognise"]] and "level-none" in classes[ids["persona-agree"]]
    assert "flagged" in classes[ids["persona-refuse"]] and "flagged" not in classes[ids["persona-key"]]
    assert 'class="tier tier-changed"' in html
    # The threshold crossings: 26 crossed upward by persona-recognise only; 32 by none.
    assert re.search(r'<li class="threshold crossed" data-threshold="26.0">', html)
    assert re.search(r'<li class="threshold" data-threshold="32.0">', html)
    thresholds = page.text("thresholds-0")
    assert ("≥ 26 (elevated: Woodbury-Smith et al. 2005 screening threshold (seed 000 uses AQ < 26 for ICL-B)): "
            "upward (reached only on the masked form): persona-recognise; downward (reached only on the original "
            "form): none.") in thresholds
    assert "≥ 32 (clinical range" in thresholds and thresholds.endswith("upward (reached only on the masked form): "
                                                                       "none; downward (reached only on the "
                                                                       "original form): none.")
    # The paired comparison, worked in the module docstring.
    paired = page.text("paired-0")
    assert paired.startswith(f"Over n = 4 models (persona-agree, persona-key, {HOSTILE_LABEL}, persona-recognise)")
    assert "mean difference (masked − original) = +1.00" in paired
    assert "t(3) = 1.00" in paired and "p = 0.391" in paired and "Cohen's d_z for paired samples: d_z = 0.50" in paired
    assert "No bar for persona-refuse: no score on both forms" in page.text("instrument-0")
    # The AQ's licence note is shown with its scores.
    assert "ARC asks that they not be adapted or modified without its permission" in page.text("instrument-0")

    # The partial SATA: the flag, its licence note, +20.0% of 20, no tiers, no thresholds.
    sata = page.text("instrument-1")
    assert sata.startswith("SATA (partial: 5 published items, demo only) partial instrument")
    assert "Partial: not the full published scale" in sata
    assert "Licence note: Only items quoted in publications are included" in sata
    assert "Scale 5–20" in sata and "This instrument defines no tiers." in sata
    assert "No thresholds: the instrument defines no cut-offs and no tiers." in sata
    rows = page.model_rows("scores-1")
    assert rows[ids["persona-recognise"]][1:7] == ["8", "—", "12", "—", "+4", "+20.0%"]
    assert "t(3) = 1.00" in page.text("paired-1") and "d_z = 0.50" in page.text("paired-1")

    # Validity per model × form: refusals (count, share), unparseable, missing, dummies of 52, flags; the rule.
    validity = {(attrs["data-model"], attrs["data-form"]): cells
                for attrs, cells in page.rows["validity-table"] if "data-model" in attrs}
    assert len(validity) == 5 * 3
    assert validity[(ids["persona-refuse"], "masked")][2:] == [
        "1", "157", "157 (100%)", "0", "0", "0 of 52", "flagged: refused 100% of the items"]
    assert validity[(ids["persona-refuse"], "original:aq50")][2:] == [
        "1", "50", "50 (100%)", "0", "0", "—", "flagged: refused 100% of the items"]
    assert validity[(ids["persona-agree"], "masked")][2:] == [
        "1", "157", "0 (0%)", "0", "0", "52 of 52", "flagged: endorsed 52 of 52 dummy items"]
    assert validity[(ids["persona-key"], "masked")][2:] == ["1", "157", "0 (0%)", "0", "0", "24 of 52", "no"]
    assert validity[(ids["persona-key"], "masked")][1] == ("Masked: all instruments' items with filler and dummy "
                                                           "items masked")
    assert page.text("validity-rule") == f"Rule: {audit.analysis['rule']['text']}"
    assert audit.analysis["rule"]["text"] == ValidityRule().describe()

    # The chart is drawn by the page's script with the vendored plotly; the label shows as text.
    assert 'id="figure-2-0"' in html and 'id="figure-2-1"' in html
    assert "/static/vendor/plotly/plotly.min.js" in html and "/static/auditapp/self_report_dashboard.js" in html
    assert "cdn" not in html.lower()
    assert "&lt;b&gt;x&lt;/b&gt;" in html and HOSTILE_LABEL not in html.replace("\\u003Cb\\u003E", "")
    assert "<b>" not in html
    assert 'id="no-metrics"' not in html and 'id="kappa-table"' not in html


@pytest.mark.django_db(transaction=True)
@pytest.mark.integration
def test_paired_comparison_that_cannot_be_computed_says_why(persona_server, audit_tasks_off, staff_client):
    # Two models whose differences do not vary (0 and 0): n = 2 but no t and no d_z.
    alike = build_personas_audit(persona_server.base_url, personas=("persona-agree", "persona-key"), name="Alike")
    page = page_text(staff_client.get(reverse("audit-dashboard", args=[alike.id])).content.decode())
    paired = page.text("paired-0")
    assert "Over n = 2 models (persona-agree, persona-key): mean difference (masked − original) = 0.00." in paired
    assert "No t-test and no Cohen's d_z: the differences do not vary" in paired
    assert "t(" not in paired
    # One model: no comparison at all.
    alone = build_personas_audit(persona_server.base_url, personas=("persona-recognise",), name="Alone")
    page = page_text(staff_client.get(reverse("audit-dashboard", args=[alone.id])).content.decode())
    assert page.text("paired-0") == ("No paired comparison: it needs at least two models with a score on both "
                                     "forms; one model has both scores.")
    assert page.model_rows("scores-0")[model_ids(alone)["persona-recognise"]][5:7] == ["+4", "+8.0%"]


@pytest.mark.django_db(transaction=True)
@pytest.mark.integration
def test_models_the_rule_excludes_are_marked_and_left_out(persona_server, audit_tasks_off, staff_client):
    audit = build_personas_audit(persona_server.base_url, personas=("persona-agree", "persona-key", "persona-recognise"),
                                 name="Exclude", validity=ValidityRule(action="exclude"))
    ids = model_ids(audit)
    page = page_text(staff_client.get(reverse("audit-dashboard", args=[audit.id])).content.decode())
    agree = page.model_rows("scores-0")[ids["persona-agree"]]
    assert agree[0] == "persona-agree † ‡"
    assert agree[8] == ("flagged on the masked form: endorsed 52 of 52 dummy items "
                        "left out of the paired comparison")
    assert "excluded" in page.row_classes("scores-0")[ids["persona-agree"]]
    # Paired over persona-key (0) and persona-recognise (+4): mean 2, SD 2√2, t(1) = 2 / (2√2 / √2) = 1.00,
    # two-sided p = 0.5, d_z = 2 / (2√2) = 0.71.
    paired = page.text("paired-0")
    assert paired.startswith("Over n = 2 models (persona-key, persona-recognise)")
    assert "t(1) = 1.00" in paired and "p = 0.500" in paired and "d_z = 0.71" in paired
    assert "Not in the comparison: persona-agree (no score on both forms, or excluded by the validity rule)." in (
        page.text("instrument-0"))
    assert page.text("validity-rule") == f"Rule: {ValidityRule(action='exclude').describe()}"


@pytest.mark.django_db(transaction=True)
@pytest.mark.integration
def test_replicates_are_stated_and_validity_counts_every_administration(persona_server, audit_tasks_off, staff_client):
    audit = build_personas_audit(persona_server.base_url, personas=("persona-refuse", "persona-key"), name="Twice",
                                 replicates=2)
    ids = model_ids(audit)
    page = page_text(staff_client.get(reverse("audit-dashboard", args=[audit.id])).content.decode())
    assert page.text("audit-replicates") == "2 replicates"
    validity = {(attrs["data-model"], attrs["data-form"]): cells
                for attrs, cells in page.rows["validity-table"] if "data-model" in attrs}
    # Two administrations of the 157-item masked form: 314 items; the dummies are "of 52" per administration.
    assert validity[(ids["persona-refuse"], "masked")][2:8] == ["2", "314", "314 (100%)", "0", "0", "0 of 52"]
    assert validity[(ids["persona-key"], "masked")][2:8] == ["2", "314", "0 (0%)", "0", "0", "24 of 52"]
    # persona-key scores 28 on the AQ in each replicate: the mean of the two.
    assert page.model_rows("scores-0")[ids["persona-key"]][1:4] == ["28", "elevated (26–31)", "28"]


# ------------------------------------------------------------------------------- before the analysis


def test_self_report_audit_before_its_analysis_shows_the_header_and_says_so(staff_client, audit_tasks_off):
    audit = build_personas_audit("http://127.0.0.1:9", name="<i>Waiting</i>", run=False, mode="item",
                                 replicates=2)
    assert audit.status == Audit.Status.QUEUED
    html = staff_client.get(reverse("audit-dashboard", args=[audit.id])).content.decode()
    page = page_text(html)
    assert page.text("audit-name") == "<i>Waiting</i>" and "<i>" not in html
    assert page.text("audit-mode") == "item" and page.text("audit-replicates") == "2 replicates"
    assert "(one item per request)" in page.text("audit-design")
    assert "No scores yet for this audit." in page.text("no-metrics")
    assert page.text("validity-rule") == f"Validity rule: {ValidityRule().describe()}"
    assert 'data-status="queued">Queued</span>' in html
    assert "plotly" not in html and "self_report_dashboard.js" not in html
    assert "/static/auditapp/audit_dashboard.js" in html  # progress and controls
    assert 'data-empty="No counts per model × form."' in html


def test_anonymous_is_sent_to_the_admin_login(db, audit_tasks_off):
    audit = build_personas_audit("http://127.0.0.1:9", run=False)
    response = Client().get(reverse("audit-dashboard", args=[audit.id]))
    assert response.status_code == 302 and response["Location"].startswith(reverse("admin:login"))


def test_classification_audit_keeps_its_page(staff_client):
    audit = build_audit(COMPLETED_PLAN)
    html = staff_client.get(reverse("audit-dashboard", args=[audit.id])).content.decode()
    assert f'href="/studies/{audit.study_id}/dashboard/">Study dashboard</a>' in html
    assert 'id="audit-study"' in html and "<th>Condition</th>" in html and 'id="kappa-table"' in html
    assert "self_report_dashboard.js" not in html and "data-empty" not in html and "audit-paradigm" not in html
