"""The audit dashboard page (staff only): a completed audit built with the ORM and analysed, whose Tables 1–2
(κ and F1 against the weighted ground truth) must show the values scikit-learn computes on the same data.

The builders here are shared with tests/browser/test_audit_dashboard.py.
"""
from __future__ import annotations

import datetime
import hashlib
import itertools
import json
from html.parser import HTMLParser

import pytest
from django.test import Client
from django.urls import NoReverseMatch, reverse
from django.utils import timezone
from sklearn.metrics import cohen_kappa_score, f1_score

from annotation.models import Item
from auditapp.engine import analysis
from auditapp.models import (
    Audit,
    AuditChunk,
    AuditCondition,
    AuditItem,
    AuditModel,
    AuditRequest,
    LLMEndpoint,
    LLMReply,
)
from auditapp.paradigms.classification import services as classification_services
from tests.factories import make_study

# Weighted and majority references of 16 items: the two disagree on items 3 and 12; item 15 has no weighted label.
WEIGHTED = [1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, None]
MAJORITY = [1, 1, 1, 0, 1, 1, 1, 1, 0, 0, 0, 0, 1, 0, 0, 0]
HOSTILE = '<img src=x onerror="window.__xss = 1">'

# Per model × condition: items answered with the wrong label (against the weighted reference), refusals,
# unparseable replies, failed requests (outcome "error") and requests still waiting.
COMPLETED_PLAN = {
    ("model-a", "zs"): {"wrong": {0, 9}, "refusal": {5}, "unparseable": {14}},
    ("model-a", "cot"): {"wrong": {0}, "error": {7}},
    ("model-b", "zs"): {"wrong": {1, 2, 10}},
    ("model-b", "cot"): {"wrong": {1, 8, 9, 10, 11}, "refusal": {4}},
}
RUNNING_PLAN = {
    ("model-a", "zs"): {"wrong": {0}, "error": {1}, "pending": set(range(8, 16))},
    ("model-a", "cot"): {"pending": set(range(4, 16))},
    ("model-b", "zs"): {"pending": set(range(16))},
    ("model-b", "cot"): {"pending": set(range(16))},
}
_counter = itertools.count(1)


def build_audit(plan: dict, *, status: str = Audit.Status.COMPLETED, name: str = "Dashboard audit") -> Audit:
    """An audit of two models × two conditions over the 16 items, its requests following ``plan``; a
    completed audit is analysed (200 resamples), as a worker would after the last request."""
    classification_services.templates_sync_defaults()
    n = next(_counter)
    study = make_study()
    items = [Item.objects.create(study=study, external_id=f"it{i:02d}", target=f"Sentence {i}.", position=i)
             for i in range(len(WEIGHTED))]
    endpoint = LLMEndpoint.objects.create(name=f"dashboard endpoint {n}", base_url="http://127.0.0.1:9")
    audit = Audit.objects.create(name=name, study=study, status=Audit.Status.RUNNING, n_resamples=200,
                                 started_at=timezone.now())
    models = {}
    for position, model in enumerate(sorted({model for model, _ in plan})):
        models[model] = AuditModel.objects.create(audit=audit, endpoint=endpoint, model=model, position=position,
                                                  label=f"Model {model[-1].upper()}")
    conditions = list(dict.fromkeys(condition for _, condition in plan))
    for position, condition in enumerate(conditions):
        AuditCondition.objects.create(audit=audit, condition=condition, template=classification_services.template_current(condition),
                                      position=position)
    for item, weighted, majority in zip(items, WEIGHTED, MAJORITY, strict=True):
        AuditItem.objects.create(audit=audit, item=item, weighted_label=weighted, majority_label=majority)
    rows = []
    for (model, condition), cell in plan.items():
        for index, item in enumerate(items):
            rows.append(_request(audit, models[model], condition, item, index, cell))
    AuditRequest.objects.bulk_create(rows)
    audit.n_requests = len(rows)
    audit.status = Audit.Status.ANALYSING if status == Audit.Status.COMPLETED else status
    audit.save(update_fields=["n_requests", "status"])
    if status == Audit.Status.COMPLETED:
        analysis.audit_analyse(audit_id=audit.id)
    audit.refresh_from_db()
    assert audit.status == status
    return audit


def _request(audit: Audit, audit_model: AuditModel, condition: str, item: Item, index: int, cell: dict
             ) -> AuditRequest:
    key = hashlib.sha256(f"{audit.id}:{audit_model.model}:{condition}:{item.id}:0".encode()).hexdigest()
    row = AuditRequest(audit=audit, audit_model=audit_model, condition=condition, item=item, replicate=0,
                       order=index, key=key)
    if index in cell.get("pending", ()):
        return row
    row.finished_at = timezone.now()
    if index in cell.get("error", ()):
        row.state, row.outcome, row.attempts = AuditRequest.State.FAILED, AuditRequest.Outcome.ERROR, 5
        row.error = "HTTP 503 after 5 attempts: the server is overloaded"
        return row
    row.state, row.attempts = AuditRequest.State.ANSWERED, 1
    if index in cell.get("refusal", ()):
        text, row.outcome, row.parse_reason = "I cannot help with that.", AuditRequest.Outcome.REFUSAL, "refusal"
    elif index in cell.get("unparseable", ()):
        text, row.outcome, row.parse_reason = "Perhaps?", AuditRequest.Outcome.UNPARSEABLE, "no label found"
    else:
        truth = WEIGHTED[index] if WEIGHTED[index] is not None else MAJORITY[index]
        row.label = 1 - truth if index in cell.get("wrong", ()) else truth
        row.outcome, row.parse_reason = AuditRequest.Outcome.LABEL, "json"
        row.explanation = f"Item {index}: {HOSTILE}" if index == 9 else f"Explanation of item {index}."
        text = json.dumps({"label": row.label, "explanation": row.explanation})
    row.reply = LLMReply.objects.create(key=key, text=text, finish_reason="stop", latency_ms=120.0 + index,
                                        attempts=1)
    return row


def expected_metrics(audit: Audit) -> dict:
    """(model id, condition) → κ and F1 against the weighted reference, by scikit-learn on the parsed labels."""
    reference = dict(audit.items.values_list("item_id", "weighted_label"))
    out = {}
    for audit_model in audit.models.all():
        for condition in audit.conditions.values_list("condition", flat=True):
            parsed = AuditRequest.objects.filter(audit=audit, audit_model=audit_model, condition=condition,
                                                 outcome=AuditRequest.Outcome.LABEL).values_list("item_id", "label")
            pairs = [(reference[item], label) for item, label in parsed if reference[item] is not None]
            truth, predicted = [t for t, _ in pairs], [p for _, p in pairs]
            out[(audit_model.id, condition)] = {"kappa": cohen_kappa_score(truth, predicted),
                                                "f1": f1_score(truth, predicted)}
    return out


def best_conditions(expected: dict, metric: str) -> set[tuple[int, str]]:
    """The cells that must be bold: the best condition of each model (the plan has no ties)."""
    best = set()
    for model in {model for model, _ in expected}:
        row = {c: v[metric] for (m, c), v in expected.items() if m == model}
        top = max(row.values())
        assert sum(1 for v in row.values() if f"{v:.3f}" == f"{top:.3f}") == 1, "the plan must avoid ties"
        best |= {(model, c) for c, v in row.items() if v == top}
    return best


class HeatmapCells(HTMLParser):
    """The value cells of the page's heatmap tables: {(table id, model id, condition): (text, classes, title)}."""

    def __init__(self):
        super().__init__()
        self.cells: dict[tuple[str, str, str], tuple[str, set[str], str]] = {}
        self.table = self.model = None
        self.cell: dict | None = None
        self.in_value = False

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "table" and "heatmap" in (attrs.get("class") or ""):
            self.table = attrs["id"]
        elif tag == "tr" and self.table:
            self.model = attrs.get("data-model")
        elif tag == "td" and self.table and attrs.get("data-condition"):
            self.cell = {"condition": attrs["data-condition"], "classes": set((attrs.get("class") or "").split()),
                         "title": attrs.get("title", ""), "text": ""}
        elif tag == "span" and self.cell is not None and attrs.get("class") == "value":
            self.in_value = True

    def handle_endtag(self, tag):
        if tag == "span":
            self.in_value = False
        elif tag == "td" and self.cell is not None:
            self.cells[(self.table, self.model, self.cell["condition"])] = (
                self.cell["text"].strip(), self.cell["classes"], self.cell["title"])
            self.cell = None
        elif tag == "table":
            self.table = None

    def handle_data(self, data):
        if self.in_value and self.cell is not None:
            self.cell["text"] += data


def heatmap_cells(html: str) -> dict:
    parser = HeatmapCells()
    parser.feed(html)
    return parser.cells


@pytest.mark.django_db
def test_anonymous_is_sent_to_the_admin_login():
    audit = build_audit(COMPLETED_PLAN)
    url = reverse("audit-dashboard", args=[audit.id])
    response = Client().get(url)
    assert response.status_code == 302
    assert response["Location"].startswith(reverse("admin:login"))
    assert "next=" in response["Location"]


def test_completed_audit_shows_tables_1_and_2_with_the_values_of_scikit_learn(staff_client):
    audit = build_audit(COMPLETED_PLAN, name="<b>Audit</b> & co")
    expected = expected_metrics(audit)
    response = staff_client.get(reverse("audit-dashboard", args=[audit.id]))
    assert response.status_code == 200
    html = response.content.decode()
    cells = heatmap_cells(html)
    assert len(cells) == 2 * len(expected)
    for metric in ("kappa", "f1"):
        bold = best_conditions(expected, metric)
        for (model_id, condition), values in expected.items():
            text, classes, title = cells[(f"{metric}-table", str(model_id), condition)]
            assert text == f"{values[metric]:.3f}", (metric, model_id, condition)
            assert ("best" in classes) == ((model_id, condition) in bold)
            assert title.startswith("95% CI [")
            assert f"{values[metric]:.3f}" in html
    # Row means of Table 1.
    for audit_model in audit.models.all():
        mean = sum(v["kappa"] for (m, _), v in expected.items() if m == audit_model.id) / 2
        assert f"{mean:.3f}" in html
    # Header, links and the exports.
    assert "&lt;b&gt;Audit&lt;/b&gt; &amp; co" in html and "<b>Audit</b>" not in html
    assert audit.study.name in html
    assert 'data-status="completed">Completed</span>' in html
    assert f"/api/audits/{audit.id}/responses/?format=csv" in html
    assert f"/api/audits/{audit.id}/metrics/?format=csv" in html
    assert f"/api/audits/{audit.id}/manifest/" in html
    assert f"/api/audits/{audit.id}/progress/" in html
    # Figure 1's test in words, with how unparsed replies were treated.
    gap = audit.analysis["kappa_gap"]
    assert f"{gap['mean_delta']:.3f}" in html
    assert f"t({gap['df']}) = {gap['t_statistic']:.3f}" in html
    assert f"[{gap['bootstrap_low']:.3f}, {gap['bootstrap_high']:.3f}]" in html
    assert "excluded from the metrics" in html
    assert 'id="figure-1"' in html and 'id="chart-scatter"' in html
    assert "/static/vendor/plotly/plotly.min.js" in html and "cdn" not in html.lower()
    assert 'id="no-metrics"' not in html
    # Replies only reach the page through the API (escaped there by the JS), never in the HTML.
    assert HOSTILE not in html


def test_audit_without_metrics_says_so(staff_client):
    audit = build_audit(RUNNING_PLAN, status=Audit.Status.RUNNING)
    response = staff_client.get(reverse("audit-dashboard", args=[audit.id]))
    assert response.status_code == 200
    html = response.content.decode()
    assert "No metrics yet for this audit." in html
    assert 'id="kappa-table"' not in html and 'id="figure-1"' not in html
    assert "plotly" not in html
    assert 'data-status="running">Running</span>' in html
    assert 'name="csrfmiddlewaretoken"' in html
    assert response.cookies.get("csrftoken") is not None


def test_header_links_to_the_audit_in_the_admin(staff_client):
    audit = build_audit(RUNNING_PLAN, status=Audit.Status.RUNNING)
    try:
        admin_url = reverse("admin:auditapp_audit_change", args=[audit.id])
    except NoReverseMatch:
        pytest.skip("Audit is not registered in the admin (no auditapp/admin.py): the page leaves the link out")
    html = staff_client.get(reverse("audit-dashboard", args=[audit.id])).content.decode()
    assert f'id="admin-link" href="{admin_url}"' in html


def test_unknown_audit_is_404(staff_client):
    assert staff_client.get(reverse("audit-dashboard", args=[999999])).status_code == 404


def test_an_unreachable_endpoint_is_shown_with_since_when_in_the_progress(staff_client, api_client):
    """The endpoint circuit breaker: a worker's breaker finds the endpoint unreachable; the progress API (which the
    dashboard polls into #endpoint-unreachable) names it with since when; the earliest of two workers wins."""
    audit = build_audit(RUNNING_PLAN, status=Audit.Status.RUNNING)
    live = timezone.now() + datetime.timedelta(seconds=30)
    for since in ("2026-11-23T09:00:05+00:00", "2026-11-23T09:00:01+00:00"):
        AuditChunk.objects.create(audit=audit, leased_until=live, retry_state={
            "waiting": {}, "retries": {}, "last_reason": "ClientConnectorError: refused",
            "unreachable": {"local-llm": {"since": since, "last_error": "ClientConnectorError: refused"}}})
    progress = api_client.get(f"/api/audits/{audit.id}/progress/").json()
    assert progress["unreachable_endpoints"] == [{"endpoint": "local-llm", "since": "2026-11-23T09:00:01+00:00",
                                                  "last_error": "ClientConnectorError: refused"}]
    assert 'id="endpoint-unreachable"' in staff_client.get(reverse("audit-dashboard", args=[audit.id])).content.decode()
    AuditChunk.objects.filter(audit=audit).update(released_at=timezone.now())
    assert api_client.get(f"/api/audits/{audit.id}/progress/").json()["unreachable_endpoints"] == []


def test_an_audit_stopped_before_its_metrics_says_how_to_get_them(staff_client):
    audit = build_audit(RUNNING_PLAN, status=Audit.Status.STOPPED)
    html = staff_client.get(reverse("audit-dashboard", args=[audit.id])).content.decode()
    assert "No metrics yet for this audit." in html
    assert "<em>Re-parse and recompute</em> computes the metrics" in html and "higher budget" in html
    running = build_audit(RUNNING_PLAN, status=Audit.Status.RUNNING)
    html = staff_client.get(reverse("audit-dashboard", args=[running.id])).content.decode()
    assert "higher budget" not in html and "computed when every request has been answered" in html
