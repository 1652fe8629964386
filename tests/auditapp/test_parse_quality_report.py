"""The parse-quality report (what unparseable replies look like): the selector over planted requests, its API (JSON and
CSV), the dashboard section of every paradigm, and one audit run by the engine against the test LLM server."""
from __future__ import annotations

import csv
import datetime
import hashlib
import io
import json

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone

from annotation.models import Item
from auditapp.engine import selectors as audit_selectors
from auditapp.engine.selectors import audit_parse_quality
from auditapp.models import Audit, AuditCondition, AuditItem, AuditModel, AuditRequest, LLMEndpoint, LLMReply
from auditapp.paradigms.classification import services as classification_services
from tests.factories import make_study

PROSE = "The given sentences are not ableist and they highlight the speaker's own experience of"
# zs: 30 requests. 12 labels (2 of them cut off), 10 prose replies cut off at the token limit and 4 empty ones
# (unparseable), 2 refusals, 1 failed request, 1 waiting: answered 28, of which 16 unparseable or cut off.
ZS = (["label"] * 10 + ["label-cut"] * 2 + ["prose-cut"] * 10 + ["empty"] * 4 + ["refusal"] * 2 + ["error"]
      + ["pending"])
COT = ["label"] * 30


def planted(plans: dict[str, list[str]]) -> Audit:
    classification_services.templates_sync_defaults()
    study = make_study()
    n = max(len(plan) for plan in plans.values())
    items = [Item.objects.create(study=study, external_id=f"p{i}", target=f"Sentence {i}.", position=i)
             for i in range(n)]
    endpoint = LLMEndpoint.objects.create(name=f"pq-{study.id}", base_url="http://127.0.0.1:9")
    audit = Audit.objects.create(name="Parse quality", study=study, status=Audit.Status.RUNNING,
                                 started_at=timezone.now())
    model = AuditModel.objects.create(audit=audit, endpoint=endpoint, model="model-a", position=0, label="Model A")
    for position, condition in enumerate(plans):
        AuditCondition.objects.create(audit=audit, condition=condition, position=position,
                                      template=classification_services.template_current(condition))
    AuditItem.objects.bulk_create([AuditItem(audit=audit, item=item, weighted_label=1, majority_label=1)
                                   for item in items])
    start = timezone.now()
    rows = []
    for condition, plan in plans.items():
        for index, kind in enumerate(plan):
            key = hashlib.sha256(f"{audit.id}:{condition}:{index}".encode()).hexdigest()
            row = AuditRequest(audit=audit, audit_model=model, condition=condition, item=items[index], order=index,
                               key=key)
            if kind != "pending":
                row.finished_at = start + datetime.timedelta(seconds=index)
            if kind == "error":
                row.state, row.outcome, row.error = AuditRequest.State.FAILED, AuditRequest.Outcome.ERROR, "HTTP 500"
            elif kind != "pending":
                text, finish = {"label": ('{"label": 1}', "stop"), "label-cut": ('{"label": 1, "expl', "length"),
                                "prose-cut": (f"{PROSE} {index}", "length"), "empty": ("", "stop"),
                                "refusal": ("I cannot help with that.", "stop")}[kind]
                row.state = AuditRequest.State.ANSWERED
                row.outcome = {"label": "label", "label-cut": "label", "refusal": "refusal"}.get(kind, "unparseable")
                row.label = 1 if row.outcome == "label" else None
                row.reply = LLMReply.objects.create(key=key, text=text, finish_reason=finish, latency_ms=1, attempts=1)
            rows.append(row)
    AuditRequest.objects.bulk_create(rows)
    Audit.objects.filter(pk=audit.pk).update(n_requests=len(rows))
    return audit


def report(audit: Audit) -> dict[str, dict]:
    export = audit_parse_quality(audit)
    return {row[export.columns.index("condition")]: dict(zip(export.columns, row, strict=True))
            for row in export.rows}


@pytest.mark.django_db
def test_the_report_counts_outcomes_finish_reasons_and_shapes_in_a_fixed_number_of_queries(
        django_assert_max_num_queries):
    audit = planted({"zs": ZS, "cot": COT})
    with django_assert_max_num_queries(6):
        cells = report(audit)
    # While the audit runs, a poll within 30 s shares the judgments' reading (millions of rows for a names audit).
    with CaptureQueriesContext(connection) as again:
        assert report(audit) == cells
    assert not any("auditapp_auditjudgment" in query["sql"] for query in again.captured_queries)
    zs, cot = cells["zs"], cells["cot"]
    assert (zs["n_requests"], zs["answered"], zs["failed"], zs["pending"]) == (30, 28, 1, 1)
    assert (zs["n_label"], zs["n_unparseable"], zs["n_refusal"], zs["n_error"], zs["n_pending"], zs["n_score"]) == (
        12, 14, 2, 1, 1, 0)
    assert zs["share_label"] == pytest.approx(12 / 30) and zs["share_pending"] == pytest.approx(1 / 30)
    assert sum(zs[f"share_{o}"] for o in [*AuditRequest.Outcome.values, "pending"]) == pytest.approx(1)
    assert zs["truncated"] == 12 and zs["truncated_note"] == "12 cut off at the token limit: raise max_tokens"
    assert zs["finish_reasons"] == [{"finish_reason": "stop", "n": 16, "truncated": False},
                                    {"finish_reason": "length", "n": 12, "truncated": True}]
    assert zs["unparseable_shapes"] == [
        {"shape": 'prose "the given sentences" · 20–99 chars · cut off', "n": 10, "example": f"{PROSE} 21"},
        {"shape": "empty", "n": 4, "example": ""}]
    assert (zs["shapes_sampled"], zs["shapes_note"]) == (14, "")
    assert zs["warning"].startswith("16 of 28 answered replies are unparseable or cut off (14 unparseable; 12 cut "
                                    "off at the token limit: raise max_tokens)")
    assert zs["warning"].endswith("before waiting for the rest")  # one request of the cell is still pending
    assert zs["unparseable_replies_url"] == (f"/api/audits/{audit.id}/responses/?model={zs['model_id']}"
                                             f"&condition=zs&outcome=unparseable")
    assert (cot["n_label"], cot["truncated"], cot["warning"], cot["unparseable_shapes"]) == (30, 0, "", [])


@pytest.mark.django_db
def test_shapes_are_read_from_at_most_200_replies_per_cell_and_the_note_says_so():
    zs = report(planted({"zs": ["empty"] * 203}))["zs"]
    assert (zs["n_unparseable"], zs["shapes_sampled"]) == (203, 200)
    assert zs["shapes_note"] == "shapes of the 200 most recent of 203 unparseable replies"
    assert [(s["shape"], s["n"]) for s in zs["unparseable_shapes"]] == [("empty", 200)]


@pytest.mark.django_db
def test_shapes_are_read_from_the_most_recent_unparseable_replies_only(monkeypatch):
    monkeypatch.setattr(audit_selectors, "SHAPE_SAMPLE", 5)
    zs = report(planted({"zs": ZS}))["zs"]
    # The newest five unparseable replies are the four empty ones (indices 22–25) and the last prose one (21).
    assert zs["shapes_sampled"] == 5
    assert zs["shapes_note"] == "shapes of the 5 most recent of 14 unparseable replies"
    assert [(s["shape"], s["n"]) for s in zs["unparseable_shapes"]] == [
        ("empty", 4), ('prose "the given sentences" · 20–99 chars · cut off', 1)]


def test_the_api_serves_the_report_as_json_and_csv(api_client):
    audit = planted({"zs": ZS, "cot": COT})
    body = api_client.get(f"/api/audits/{audit.id}/parse-quality/").json()
    assert body["count"] == 2
    zs = next(row for row in body["results"] if row["condition"] == "zs")
    assert zs["n_unparseable"] == 14 and zs["truncated"] == 12 and zs["warning"]
    assert zs["unparseable_shapes"][0]["n"] == 10 and zs["finish_reasons"][1]["truncated"] is True
    assert api_client.get(zs["unparseable_replies_url"]).json()["count"] == 14
    response = api_client.get(f"/api/audits/{audit.id}/parse-quality/?format=csv")
    assert response.status_code == 200 and "parse-quality.csv" in response["Content-Disposition"]
    rows = list(csv.DictReader(io.StringIO(b"".join(response.streaming_content).decode())))
    line = next(row for row in rows if row["condition"] == "zs")
    assert line["n_unparseable"] == "14" and line["truncated_note"].startswith("12 cut off")
    assert json.loads(line["unparseable_shapes"])[1] == {"example": "", "n": 4, "shape": "empty"}
    assert next(row for row in rows if row["condition"] == "cot")["warning"] == ""
    assert api_client.get("/api/audits/999999/parse-quality/").status_code == 404


def test_anonymous_gets_no_report(client, db):
    audit = planted({"zs": ZS})
    assert client.get(f"/api/audits/{audit.id}/parse-quality/").status_code in (401, 403)


def test_the_dashboard_has_the_parse_quality_section_polling_the_report(staff_client):
    audit = planted({"zs": ZS})
    html = staff_client.get(reverse("audit-dashboard", args=[audit.id])).content.decode()
    assert 'id="parse-quality-section"' in html and "<h3>Parse quality</h3>" in html
    assert f'data-parse-quality-url="/api/audits/{audit.id}/parse-quality/"' in html
    assert f'href="/api/audits/{audit.id}/parse-quality/?format=csv"' in html


@pytest.mark.integration
@pytest.mark.django_db(transaction=True)
def test_an_audit_run_by_the_engine_against_the_test_server_reports_its_empty_replies(monkeypatch, api_client):
    """The test LLM server answers about a third of the requests with an empty reply (its "empty" fault) and the
    rest by its rule: the report counts exactly the stored outcomes, and the empty replies' shape leads."""
    from auditapp.engine import launch, preparation
    from auditapp.engine import runner as audit_runner
    from tests.factories import AUDIT_POSITIVE_WORDS, make_audit_study
    from tests.llm_server import LLMServer

    for name in ("audit_prepare_task", "audit_work_task", "audit_analyse_task"):
        monkeypatch.setattr(f"tasks.audits.{name}.delay", lambda audit_id: None)
    with LLMServer(latency=0.001, fault_rate=0.35, fault_kinds=("empty",), positive_words=AUDIT_POSITIVE_WORDS) as server:
        endpoint = LLMEndpoint.objects.create(name="pq server", base_url=server.base_url, max_concurrency=8,
                                              attempt_timeout_s=2.0, deadline_s=30, max_attempts=2)
        audit = classification_services.audit_create(
            study=make_audit_study(30), name="parse quality", conditions=["zs", "cot"], n_resamples=100,
            models=[launch.ModelChoice(endpoint=endpoint, model="model-a")])
        preparation.audit_prepare(audit_id=audit.id)
        assert audit_runner.audit_work(audit.id) == "finished"
    rows = api_client.get(f"/api/audits/{audit.id}/parse-quality/").json()["results"]
    assert [row["condition"] for row in rows] == ["zs", "cot"]
    for row in rows:
        requests = AuditRequest.objects.filter(audit=audit, condition=row["condition"])
        for outcome in AuditRequest.Outcome.values:
            assert row[f"n_{outcome}"] == requests.filter(outcome=outcome).count(), outcome
        empty = requests.filter(outcome="unparseable", reply__text="").count()
        assert empty > 0 and row["unparseable_shapes"][0] == {"shape": "empty", "n": empty, "example": ""}
        assert row["finish_reasons"] == [{"finish_reason": "stop", "n": requests.exclude(reply=None).count(),
                                          "truncated": False}]
        assert row["truncated"] == 0 and row["n_pending"] == 0
        assert bool(row["warning"]) == (row["n_unparseable"] * 2 > row["answered"] >= 20)
