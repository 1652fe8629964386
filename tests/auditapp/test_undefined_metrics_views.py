"""Undefined metrics through the stored analysis, the metrics export (JSON and CSV) and the dashboard's HTML:
a metric over no items, or in a degenerate cell, is null / empty / "—" with its reason, never 0.

Two planted audits, analysed as a worker would:
- ``no_weighted``: no item has a weighted ground truth (n = 0 against it, for every metric and Δκ), and the
  majority vote holds only 0s (recall undefined; in the cell answering 0 everywhere, precision, F1 and κ too).
- ``degenerate``: a cell that never predicts 1 (precision undefined), and a cell whose every reply is
  unparseable (n = 0: every item with a reference got no label).
"""
from __future__ import annotations

import csv
import hashlib
import io
import json
import math

import pytest
from django.urls import reverse
from django.utils import timezone

from annotation.models import Item
from auditapp.engine import analysis as engine_analysis
from auditapp.models import (
    Audit,
    AuditCondition,
    AuditItem,
    AuditMetric,
    AuditModel,
    AuditRequest,
    LLMEndpoint,
    LLMReply,
)
from auditapp.paradigms.classification import services as classification_services
from tests.factories import make_study

METRICS = ("kappa", "f1", "precision", "recall", "accuracy")
NO_REFERENCE = "no items with a reference label"


def planted_audit(weighted: list, majority: list, cells: dict[str, list]) -> Audit:
    """One model; per condition, one reply per item: a label (0/1) or None for an unparseable reply."""
    classification_services.templates_sync_defaults()
    study = make_study()
    items = [Item.objects.create(study=study, external_id=f"u{i}", target=f"Sentence {i}.", position=i)
             for i in range(len(weighted))]
    endpoint = LLMEndpoint.objects.create(name=f"undefined-{study.id}", base_url="http://127.0.0.1:9")
    audit = Audit.objects.create(name="Undefined metrics", study=study, status=Audit.Status.ANALYSING,
                                 n_resamples=100, started_at=timezone.now())
    model = AuditModel.objects.create(audit=audit, endpoint=endpoint, model="model-a", position=0, label="Model A")
    for position, condition in enumerate(cells):
        AuditCondition.objects.create(audit=audit, condition=condition, position=position,
                                      template=classification_services.template_current(condition))
    AuditItem.objects.bulk_create([AuditItem(audit=audit, item=item, weighted_label=w, majority_label=m)
                                   for item, w, m in zip(items, weighted, majority, strict=True)])
    rows = []
    for condition, labels in cells.items():
        for index, (item, label) in enumerate(zip(items, labels, strict=True)):
            key = hashlib.sha256(f"{audit.id}:{condition}:{item.id}".encode()).hexdigest()
            text = "Hard to say." if label is None else json.dumps({"label": label, "explanation": "x"})
            rows.append(AuditRequest(
                audit=audit, audit_model=model, condition=condition, item=item, order=index, key=key,
                state=AuditRequest.State.ANSWERED, finished_at=timezone.now(), attempts=1, label=label,
                outcome=AuditRequest.Outcome.UNPARSEABLE if label is None else AuditRequest.Outcome.LABEL,
                reply=LLMReply.objects.create(key=key, text=text, finish_reason="stop", latency_ms=5, attempts=1)))
    AuditRequest.objects.bulk_create(rows)
    Audit.objects.filter(pk=audit.pk).update(n_requests=len(rows))
    engine_analysis.audit_analyse(audit_id=audit.id)
    audit.refresh_from_db()
    assert audit.status == Audit.Status.COMPLETED
    return audit


@pytest.fixture
def no_weighted(db) -> Audit:
    return planted_audit([None] * 6, [0] * 6, {"zs": [0, 0, 0, 0, 0, 0], "cot": [1, 0, 1, 0, 0, 0]})


@pytest.fixture
def degenerate(db) -> Audit:
    return planted_audit([1, 0, 1, 0, 0, 0], [1, 0, 1, 0, 0, 0],
                         {"zs": [0, 0, 0, 0, 0, 0], "cot": [None] * 6})


def metric_rows(api_client, audit: Audit) -> dict:
    body = api_client.get(f"/api/audits/{audit.id}/metrics/").json()
    return {(row["condition"], row["reference"]): row for row in body["results"]}


def csv_rows(api_client, audit: Audit) -> dict:
    response = api_client.get(f"/api/audits/{audit.id}/metrics/?format=csv")
    assert response.status_code == 200
    text = b"".join(response.streaming_content).decode()
    return {(row["condition"], row["reference"]): row for row in csv.DictReader(io.StringIO(text))}


def test_no_weighted_ground_truth_makes_every_metric_null_with_its_reason(api_client, no_weighted):
    rows, table = metric_rows(api_client, no_weighted), csv_rows(api_client, no_weighted)
    for condition in ("zs", "cot"):
        row, line = rows[(condition, "weighted")], table[(condition, "weighted")]
        assert row["n"] == 0 and row["n_items"] == 0
        for name in METRICS:
            assert row[name] is None and row[f"{name}_low"] is None and row[f"{name}_high"] is None, name
            assert row[f"{name}_note"] == NO_REFERENCE
            assert line[name] == "" and line[f"{name}_low"] == "" and line[f"{name}_note"] == NO_REFERENCE
        assert row["coverage"] is None and row["coverage_note"] == NO_REFERENCE
        assert row["delta_kappa"] is None and line["delta_kappa"] == ""
        assert "κ(weighted) is undefined: no items with both a reference label" in row["delta_kappa_note"]
    # Against the majority (all 0s): recall undefined in both cells; the cell answering 0 everywhere has only
    # accuracy (1.0) defined; the other has precision 0 and F1 0, which are measured, not undefined.
    all_zero, mixed = rows[("zs", "majority")], rows[("cot", "majority")]
    assert all_zero["accuracy"] == 1.0 and all_zero["accuracy_note"] is None
    for name in ("kappa", "f1", "precision", "recall"):
        assert all_zero[name] is None and all_zero[f"{name}_note"], name
        assert table[("zs", "majority")][name] == ""
    assert all_zero["precision_note"] == "no predicted positives (tp + fp = 0)"
    assert all_zero["recall_note"] == "no reference positives (tp + fn = 0)"
    assert "one class only (0)" in all_zero["kappa_note"]
    assert (mixed["precision"], mixed["f1"], mixed["kappa"], mixed["recall"]) == (0.0, 0.0, 0.0, None)
    assert mixed["accuracy"] == pytest.approx(4 / 6)
    gap = no_weighted.analysis["kappa_gap"]
    assert gap["mean_delta"] is None and gap["mean_delta_note"].startswith("no cell has a defined Δκ")
    assert gap["t_statistic"] is None and gap["df"] is None and gap["t_test_note"]


def test_degenerate_cells_are_null_with_their_reason(api_client, degenerate):
    rows, table = metric_rows(api_client, degenerate), csv_rows(api_client, degenerate)
    never_one = rows[("zs", "weighted")]
    assert never_one["precision"] is None and never_one["precision_note"] == "no predicted positives (tp + fp = 0)"
    assert table[("zs", "weighted")]["precision"] == "" and table[("zs", "weighted")]["precision_ci_note"]
    assert (never_one["recall"], never_one["f1"], never_one["kappa"]) == (0.0, 0.0, 0.0)
    assert never_one["accuracy"] == pytest.approx(4 / 6)
    unparsed = rows[("cot", "weighted")]
    assert (unparsed["n"], unparsed["n_items"], unparsed["n_unparseable"], unparsed["coverage"]) == (0, 6, 6, 0.0)
    for name in METRICS:
        assert unparsed[name] is None
        assert unparsed[f"{name}_note"] == "no item with a reference label got a parsed label (6 unparsed, excluded)"
        assert table[("cot", "weighted")][name] == ""
    assert unparsed["delta_kappa"] is None and "κ(majority) is undefined" in unparsed["delta_kappa_note"]
    gap = degenerate.analysis["kappa_gap"]
    assert gap["mean_delta"] == 0.0 and gap["t_statistic"] is None
    assert gap["t_test_note"] == "the paired t-test needs at least two cells with a defined Δκ (there is 1)"


def undefined_cells(html: str) -> dict[tuple[str, str, str], str]:
    """(condition, reference, metric) → the reason the dashboard's "Every metric" table shows beside its "—"."""
    from html.parser import HTMLParser

    class Cells(HTMLParser):
        def __init__(self):
            super().__init__()
            self.found, self.row = {}, None

        def handle_starttag(self, tag, attrs):
            attrs = dict(attrs)
            if tag == "tr" and "data-reference" in attrs:
                self.row = (attrs["data-condition"], attrs["data-reference"])
            elif tag == "td" and self.row and "data-undefined" in attrs:
                self.found[(*self.row, attrs["data-metric"])] = attrs["data-undefined"]

    parser = Cells()
    parser.feed(html)
    return parser.found


def test_the_dashboard_shows_a_dash_and_the_reason_for_every_undefined_metric(staff_client, no_weighted,
                                                                            degenerate):
    html = staff_client.get(reverse("audit-dashboard", args=[no_weighted.id])).content.decode()
    undefined = undefined_cells(html)
    for condition in ("zs", "cot"):
        for name in METRICS:
            assert undefined[(condition, "weighted", name)] == NO_REFERENCE
        assert "κ(weighted) is undefined" in undefined[(condition, "weighted", "delta_kappa")]
    assert {name for (c, r, name) in undefined if (c, r) == ("zs", "majority")} == {
        "kappa", "f1", "precision", "recall", "delta_kappa"}
    assert undefined[("zs", "majority", "precision")] == "no predicted positives (tp + fp = 0)"
    # Tables 1–2 (against the weighted ground truth): "—" and the reason, no 0.000 anywhere in them.
    assert f'undefined: {NO_REFERENCE}' in html and f'<span class="undefined-note">{NO_REFERENCE}</span>' in html
    heat = html[html.index('id="kappa-table"'):html.index('id="metrics-section"')]
    assert "0.000" not in heat
    assert "No Δκ test: no cell has a defined Δκ" in html
    html = staff_client.get(reverse("audit-dashboard", args=[degenerate.id])).content.decode()
    undefined = undefined_cells(html)
    assert undefined[("zs", "weighted", "precision")] == "no predicted positives (tp + fp = 0)"
    assert ("zs", "weighted", "f1") not in undefined and ("zs", "weighted", "accuracy") not in undefined
    for name in METRICS:
        assert undefined[("cot", "weighted", name)].startswith("no item with a reference label got a parsed label")
    assert "t-test undefined: the paired t-test needs at least two cells with a defined Δκ (there is 1)." in html
    # Table 1's row mean is over the one defined cell and says so; each defined cell shows its n.
    heat = html[html.index('id="kappa-table"'):html.index('id="f1-table"')]
    zs = AuditMetric.objects.get(audit=degenerate, condition="zs", reference="weighted").values
    assert zs["n"] > 0 and f'<span class="n">n = {zs["n"]}</span>' in heat
    assert '<span class="undefined-note">mean of 1 of 2 cells</span>' in heat
    # The mean is over the one cell with a Δκ, and says so (the cell with every reply unparseable has none).
    assert "Mean Δκ over the 1 model × condition cells with a defined Δκ (of 2):" in " ".join(html.split())
    assert not math.isnan(degenerate.analysis["kappa_gap"]["mean_delta"])
