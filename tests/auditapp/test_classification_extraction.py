"""The second-pass extraction of classification audits (unparseable replies read again): both modes stored beside the
strict outcomes, the metrics under each outcome source equal to scikit-learn on the exported replies and extractions,
the strict metrics unchanged by an extraction, idempotence, and bad input refused with nothing stored.

The audited model's replies are written as a worker would store them (a reply per key, then the strict parser's
re-parse), so every reply shape is known; the extractor model is asked over HTTP, of the real test LLM server
(``extractor-`` models, tests/llm_server.py)."""
from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
import redis
from celery.exceptions import SoftTimeLimitExceeded
from django.utils import timezone
from sklearn.metrics import accuracy_score, cohen_kappa_score, f1_score, precision_score, recall_score

from auditapp.engine import analysis as engine_analysis
from auditapp.engine import launch, preparation
from auditapp.models import (
    Audit,
    AuditExtraction,
    AuditExtractionLabel,
    AuditMetric,
    AuditRequest,
    LLMEndpoint,
    LLMReply,
)
from auditapp.paradigms.classification import services as classification_services
from auditapp.paradigms.classification.extraction import (
    EXTRACTION_TEMPLATE,
    labels_with_extraction,
    parse_extractor_answer,
)
from auditapp.paradigms.classification.extraction_services import extraction_run
from auditapp.paradigms.classification.verbal_rules import RULES_VERSION, read_verbal
from tests.factories import AUDIT_POSITIVE_WORDS, make_audit_study
from tests.llm_server import LLMServer, extractor_answer

pytestmark = pytest.mark.django_db(transaction=True)

# Reply shapes the audited model gives, by item: a strict label, prose the rules read, prose they must not.
SHAPES = (
    lambda truth: f"Label: {truth}",
    lambda truth: "The given sentences are not ableist and they highlight the speaker's experience.",
    lambda truth: "The target sentence is ableist because it calls autism a disease.",
    lambda truth: f"This label of {truth} indicates that the speaker describes their own life.",
    lambda truth: "The sentence may be ableist, depending on the speaker.",
    lambda truth: "The Idiot is a classic example of ableism in literature.",
    lambda truth: "I'm sorry, but I can't help with classifying this content.",
    lambda truth: "The sentence contains ableist language, but the speaker is not ableist.",
)


@pytest.fixture(scope="module")
def server():
    with LLMServer(models=("model-a", "extractor-a", "extractor-chatty"),
                   positive_words=AUDIT_POSITIVE_WORDS) as running:
        yield running


@pytest.fixture
def sent(monkeypatch) -> list[int]:
    """The extraction ids handed to the task, which the test runs itself."""
    ids: list[int] = []
    monkeypatch.setattr("tasks.extractions.audit_extraction_run_task.delay", ids.append)
    return ids


@pytest.fixture
def audit_tasks(monkeypatch):
    for name in ("audit_prepare_task", "audit_work_task", "audit_analyse_task"):
        monkeypatch.setattr(f"tasks.audits.{name}.delay", lambda audit_id: None)


def answered_audit(server, *, unparsed: str = "exclude", n_items: int = 48) -> Audit:
    """An audit of model-a under two conditions, prepared against the server, whose replies follow SHAPES by item
    (one request in ten failed), parsed strictly and analysed."""
    study = make_audit_study(n_items, n_examples=2)
    endpoint = LLMEndpoint.objects.create(name=f"server {Audit.objects.count()}", base_url=server.base_url)
    audit = classification_services.audit_create(
        study=study, name="prose", conditions=["zs", "cot"], unparsed=unparsed, n_resamples=100,
        models=[launch.ModelChoice(endpoint=endpoint, model="model-a")])
    preparation.audit_prepare(audit_id=audit.id)
    truths = dict(audit.items.values_list("item_id", "weighted_label"))
    requests = list(AuditRequest.objects.filter(audit=audit).order_by("id"))
    replies = LLMReply.objects.bulk_create([LLMReply(key=r.key, text=SHAPES[(r.item_id + len(r.condition)) % len(SHAPES)](
        truths[r.item_id]), finish_reason="stop", latency_ms=1.0, attempts=1) for r in requests])
    now = timezone.now()
    for n, (request, reply) in enumerate(zip(requests, replies, strict=True)):
        if n % 10 == 9:
            request.state, request.outcome, request.error = "failed", "error", "failed after 1 attempts: HTTP 500"
        else:
            request.state, request.reply = "answered", reply
        request.finished_at = now
    AuditRequest.objects.bulk_update(requests, ["state", "outcome", "error", "reply", "finished_at"])
    engine_analysis.audit_reparse(audit_id=audit.id)
    Audit.objects.filter(pk=audit.id).update(status=Audit.Status.ANALYSING)
    engine_analysis.audit_analyse(audit_id=audit.id)
    audit.refresh_from_db()
    assert audit.status == Audit.Status.COMPLETED, audit.status_reason
    assert AuditRequest.objects.filter(audit=audit, outcome="unparseable").count() > 20
    return audit


def strict_snapshot(audit: Audit) -> tuple[list, list]:
    requests = list(AuditRequest.objects.filter(audit=audit).order_by("id").values_list(
        "id", "outcome", "label", "parse_reason", "explanation"))
    metrics = sorted((m.audit_model_id, m.condition, m.reference, sorted(m.values.items()))
                     for m in AuditMetric.objects.filter(audit=audit))
    return requests, metrics


def run_sent(sent: list[int]) -> None:
    for extraction_id in sent:
        extraction_run(extraction_id=extraction_id)


def rows(api_client, url: str, **params) -> list[dict]:
    response = api_client.get(url, {"page_size": 10000, **params})
    assert response.status_code == 200, response.content
    return response.json()["results"]


def sklearn_rows(audit: Audit, responses: list[dict], extracted: dict[int, int | None]) -> dict:
    """Every metric per (condition, reference) recomputed with scikit-learn from the exported responses and an
    extraction's exported labels (strict label kept; otherwise the extracted one; the rest by the unparsed rule)."""
    references = {item: {"weighted": w, "majority": m} for item, w, m in
                  audit.items.values_list("item__external_id", "weighted_label", "majority_label")}
    out = {}
    for condition in ("zs", "cot"):
        cell = [r for r in responses if r["condition"] == condition]
        for reference in ("weighted", "majority"):
            pred, ref = [], []
            for row in cell:
                truth = references[row["item"]][reference]
                if truth is None:
                    continue
                # The extraction's label counts only where the reply is unparseable now (not after a re-parse).
                label = row["label"] if row["outcome"] == "label" else (
                    extracted.get(row["request_id"]) if row["outcome"] == "unparseable" else None)
                if label is None:
                    if audit.unparsed == "exclude":
                        continue
                    label = 1 - truth
                pred.append(label)
                ref.append(truth)
            out[(condition, reference)] = {
                "n": len(pred), "kappa": cohen_kappa_score(ref, pred), "f1": f1_score(ref, pred, zero_division=0),
                "precision": precision_score(ref, pred, zero_division=0),
                "recall": recall_score(ref, pred, zero_division=0), "accuracy": accuracy_score(ref, pred)}
    return out


def assert_metrics_equal(metric_rows: list[dict], expected: dict, source: str) -> None:
    assert len(metric_rows) == 4
    for row in metric_rows:
        assert row["outcomes"] == source
        want = expected[(row["condition"], row["reference"])]
        assert row["n"] == want["n"]
        for name in ("kappa", "f1", "precision", "recall", "accuracy"):
            assert row[name] == pytest.approx(want[name]), (source, row["condition"], row["reference"], name)


# ------------------------------------------------------------------------------------------------ pure parts

@pytest.mark.parametrize(("answer", "outcome", "label"), [
    ("0", "label", 0), ("1", "label", 1), (" 1.\n", "label", 1), ("**0**", "label", 0), ('"1"', "label", 1),
    ("none", "none", None), ("None.", "none", None), ("NONE", "none", None),
    ("The reply gives 0.", "unparseable", None), ("0 or 1", "unparseable", None), ("10", "unparseable", None),
    ("", "unparseable", None), (None, "unparseable", None), ("label: 1", "unparseable", None),
])
@pytest.mark.django_db(transaction=False)
def test_the_extractor_answer_is_read_strictly(answer, outcome, label):
    parsed = parse_extractor_answer(answer)
    assert (parsed.outcome, parsed.label) == (outcome, label)


@pytest.mark.django_db(transaction=False)
def test_labels_with_an_extraction_keep_strict_labels_and_fill_only_where_it_gives_one():
    requests = pd.DataFrame({"id": [1, 2, 3, 4, 5, 6],
                             "outcome": ["label", "unparseable", "unparseable", "label", "unparseable", "refusal"],
                             "label": [1.0, np.nan, np.nan, 0.0, np.nan, np.nan]})
    # 1 has a strict label: ignored; 6 was unparseable when extracted, a re-parse has read it as a refusal since.
    extracted = pd.DataFrame({"request": [1, 2, 3, 6], "label": [0.0, 1.0, np.nan, 1.0]})
    labels = labels_with_extraction(requests, extracted)
    assert [labels[0], labels[1], labels[3]] == [1.0, 1.0, 0.0]
    assert math.isnan(labels[2]) and math.isnan(labels[4]) and math.isnan(labels[5])


@pytest.mark.django_db(transaction=False)
def test_the_template_quotes_the_reply_and_the_test_extractor_follows_its_rule():
    from auditapp.paradigms.classification.extraction import extraction_messages

    reply = 'The sentence {target} "x" is not ableist.'
    content = extraction_messages(reply)[0]["content"]
    assert content == EXTRACTION_TEMPLATE.replace("{reply}", reply) and "<<<\n" + reply + "\n>>>" in content
    assert extractor_answer("extractor-a", content) == "0"
    assert extractor_answer("extractor-a", extraction_messages("It is ableist.")[0]["content"]) == "1"
    assert extractor_answer("extractor-a", extraction_messages("A classic.")[0]["content"]) == "none"
    assert extractor_answer("extractor-chatty", content) == "The reply gives 0."
    assert extractor_answer("extractor-a", "Target sentence: hello") is None


# -------------------------------------------------------------------------------------------------- rules mode

def test_rules_extraction_is_stored_beside_the_strict_outcomes_and_metrics_equal_scikit_learn(
        server, api_client, sent, audit_tasks, django_capture_on_commit_callbacks):
    audit = answered_audit(server)
    before = strict_snapshot(audit)
    strict_metrics = rows(api_client, f"/api/audits/{audit.id}/metrics/")

    with django_capture_on_commit_callbacks(execute=True):
        response = api_client.post(f"/api/audits/{audit.id}/extractions/", {"mode": "rules"}, format="json")
    assert response.status_code == 202, response.content
    extraction_id = response.json()["id"]
    assert sent == [extraction_id] and response.json()["status"] == "queued"
    run_sent(sent)

    unparseable = AuditRequest.objects.filter(audit=audit, outcome="unparseable").select_related("reply")
    labels = {row.request_id: row for row in AuditExtractionLabel.objects.filter(extraction_id=extraction_id)}
    assert set(labels) == {r.id for r in unparseable}
    for request in unparseable:
        reading = read_verbal(request.reply.text)
        assert (labels[request.id].label, labels[request.id].reason) == (reading.label, reading.reason)
    assert {row.outcome for row in labels.values()} == {"label", "none"}
    assert strict_snapshot(audit) == before, "the strict outcomes and metrics are unchanged by an extraction"
    assert rows(api_client, f"/api/audits/{audit.id}/metrics/") == strict_metrics

    listed = api_client.get(f"/api/audits/{audit.id}/extractions/").json()
    assert len(listed) == 1 and listed[0]["status"] == "completed" and listed[0]["mode"] == "rules"
    counts = listed[0]["counts"]
    assert counts["n"] == len(labels) == listed[0]["n_to_extract"]
    assert counts["label_0"] == sum(r.label == 0 for r in labels.values())
    assert counts["label_1"] == sum(r.label == 1 for r in labels.values())
    assert counts["none"] == sum(r.label is None for r in labels.values())

    # Metrics under each source equal scikit-learn recomputed from the exports.
    responses = rows(api_client, f"/api/audits/{audit.id}/responses/")
    exported = rows(api_client, f"/api/audits/{audit.id}/extractions/{extraction_id}/labels/")
    assert {row["request_id"] for row in exported} == set(labels)
    assert all(row["strict_outcome"] == "unparseable" and row["mode"] == "rules" for row in exported)
    extracted = {row["request_id"]: row["label"] for row in exported}
    assert_metrics_equal(strict_metrics, sklearn_rows(audit, responses, {}), "strict")
    with_extraction = rows(api_client, f"/api/audits/{audit.id}/metrics/", outcomes=f"extraction:{extraction_id}")
    assert_metrics_equal(with_extraction, sklearn_rows(audit, responses, extracted), f"extraction:{extraction_id}")
    assert sum(row["n_extracted"] for row in with_extraction) == 2 * counts["n"] - 2 * counts["none"]
    assert [row["n"] for row in with_extraction] != [row["n"] for row in strict_metrics]

    csv = b"".join(api_client.get(f"/api/audits/{audit.id}/extractions/{extraction_id}/labels/",
                                  {"format": "csv"}).streaming_content).decode()
    assert csv.splitlines()[0].split(",")[:9] == ["request_id", "model", "model_label", "condition", "item",
                                                   "replicate", "strict_outcome", "strict_reason", "reply"]
    assert len(csv.splitlines()) == len(labels) + 1

    # Asked again, the same extraction is not redone; run again, it stores nothing twice.
    again = api_client.post(f"/api/audits/{audit.id}/extractions/", {"mode": "rules"}, format="json")
    assert again.status_code == 200 and again.json()["id"] == extraction_id
    AuditExtraction.objects.filter(pk=extraction_id).update(status="running")  # a task delivered twice
    extraction_run(extraction_id=extraction_id)
    assert AuditExtractionLabel.objects.filter(extraction_id=extraction_id).count() == len(labels)
    assert AuditExtraction.objects.filter(audit=audit).count() == 1


def test_unparsed_wrong_counts_what_the_extraction_leaves_without_a_label_as_wrong(
        server, api_client, sent, audit_tasks, django_capture_on_commit_callbacks):
    audit = answered_audit(server, unparsed="wrong", n_items=30)
    with django_capture_on_commit_callbacks(execute=True):
        extraction_id = api_client.post(f"/api/audits/{audit.id}/extractions/", {"mode": "rules"},
                                        format="json").json()["id"]
    run_sent(sent)
    responses = rows(api_client, f"/api/audits/{audit.id}/responses/")
    extracted = {row["request_id"]: row["label"]
                 for row in rows(api_client, f"/api/audits/{audit.id}/extractions/{extraction_id}/labels/")}
    assert_metrics_equal(rows(api_client, f"/api/audits/{audit.id}/metrics/", outcomes=f"extraction:{extraction_id}"),
                         sklearn_rows(audit, responses, extracted), f"extraction:{extraction_id}")
    assert_metrics_equal(rows(api_client, f"/api/audits/{audit.id}/metrics/"), sklearn_rows(audit, responses, {}),
                         "strict")


# -------------------------------------------------------------------------------------------------- model mode

def test_model_extraction_asks_the_extractor_once_per_reply_and_stores_its_answers(
        server, api_client, sent, audit_tasks, django_capture_on_commit_callbacks):
    audit = answered_audit(server, n_items=30)
    before = strict_snapshot(audit)
    endpoint = audit.models.get().endpoint
    server.reset_stats()
    body = {"mode": "model", "endpoint": endpoint.id, "model": "extractor-a"}
    with django_capture_on_commit_callbacks(execute=True):
        response = api_client.post(f"/api/audits/{audit.id}/extractions/", body, format="json")
    assert response.status_code == 202, response.content
    extraction_id = response.json()["id"]
    run_sent(sent)

    extraction = AuditExtraction.objects.get(pk=extraction_id)
    assert extraction.status == "completed", extraction.status_reason
    unparseable = {r.id: r for r in AuditRequest.objects.filter(audit=audit, outcome="unparseable")
                   .select_related("reply")}
    labels = list(AuditExtractionLabel.objects.filter(extraction=extraction).select_related("reply"))
    assert {row.request_id for row in labels} == set(unparseable)
    for row in labels:
        expected = extractor_answer("extractor-a", EXTRACTION_TEMPLATE.replace(
            "{reply}", unparseable[row.request_id].reply.text))
        assert row.reply.text == expected and row.reply.key == row.key
        assert (row.outcome, row.label) == (("none", None) if expected == "none" else ("label", int(expected)))
    keys = {row.key for row in labels}
    distinct_replies = {unparseable[row.request_id].reply.text for row in labels}
    assert len(keys) == len(distinct_replies) == server.stats()["bodies"], "one request per distinct reply"
    assert strict_snapshot(audit) == before

    responses = rows(api_client, f"/api/audits/{audit.id}/responses/")
    exported = rows(api_client, f"/api/audits/{audit.id}/extractions/{extraction_id}/labels/")
    assert all(row["key"] and row["extractor_reply"] in ("0", "1", "none") for row in exported)
    assert_metrics_equal(rows(api_client, f"/api/audits/{audit.id}/metrics/", outcomes=f"extraction:{extraction_id}"),
                         sklearn_rows(audit, responses, {r["request_id"]: r["label"] for r in exported}),
                         f"extraction:{extraction_id}")

    # Running twice stores once and asks nothing again.
    server.reset_stats()
    AuditExtraction.objects.filter(pk=extraction_id).update(status="running")
    extraction_run(extraction_id=extraction_id)
    assert server.stats()["requests"] == 0
    assert AuditExtractionLabel.objects.filter(extraction=extraction).count() == len(labels)
    assert api_client.post(f"/api/audits/{audit.id}/extractions/", body, format="json").status_code == 200

    # A chatty extractor's answers are not 0, 1 or none: unparseable, nothing guessed.
    with django_capture_on_commit_callbacks(execute=True):
        chatty = api_client.post(f"/api/audits/{audit.id}/extractions/", {**body, "model": "extractor-chatty"},
                                 format="json").json()["id"]
    run_sent(sent[1:])
    assert set(AuditExtractionLabel.objects.filter(extraction_id=chatty).values_list("outcome", "label")) == {
        ("unparseable", None)}
    listed = {row["id"]: row for row in api_client.get(f"/api/audits/{audit.id}/extractions/").json()}
    assert listed[chatty]["counts"]["unparseable"] == len(labels)


def test_an_extractor_model_the_endpoint_does_not_offer_fails_the_extraction_with_the_reason(
        server, api_client, sent, audit_tasks, django_capture_on_commit_callbacks):
    audit = answered_audit(server, n_items=30)
    endpoint = audit.models.get().endpoint
    with django_capture_on_commit_callbacks(execute=True):
        response = api_client.post(f"/api/audits/{audit.id}/extractions/",
                                   {"mode": "model", "endpoint": endpoint.id, "model": "extractor-missing"},
                                   format="json")
    run_sent(sent)
    extraction = AuditExtraction.objects.get(pk=response.json()["id"])
    assert extraction.status == "failed" and "does not offer model 'extractor-missing'" in extraction.status_reason
    assert not AuditExtractionLabel.objects.filter(extraction=extraction).exists()
    bad = api_client.get(f"/api/audits/{audit.id}/metrics/", {"outcomes": f"extraction:{extraction.id}"})
    assert bad.status_code == 409 and "failed, not completed" in str(bad.json())


# ------------------------------------------------------------------------------------------------- bad input

def test_bad_requests_are_refused_naming_the_problem_and_store_nothing(server, api_client, sent, audit_tasks):
    audit = answered_audit(server, n_items=30)
    local = LLMEndpoint.objects.create(name="local", protocol="local", base_url="")
    url = f"/api/audits/{audit.id}/extractions/"
    for body, words in (({"mode": "guess"}, "mode"),
                        ({"mode": "model"}, "needs an endpoint and a model"),
                        ({"mode": "model", "endpoint": local.id, "model": "vader"}, "not a chat model"),
                        ({"mode": "model", "endpoint": 99999, "model": "x"}, "endpoint"),
                        ({"mode": "rules", "model": "x"}, "takes no endpoint"),
                        ({"mode": "model", "endpoint": audit.models.get().endpoint_id, "model": "extractor-a",
                          "params": {"messages": []}}, "params"),
                        ({"mode": "model", "endpoint": audit.models.get().endpoint_id, "model": "extractor-a",
                          "params": {"max_tokens": {"a": 1}}}, "max_tokens must be a whole number of at least 1"),
                        ({"mode": "model", "endpoint": audit.models.get().endpoint_id, "model": "extractor-a",
                          "params": {"temperature": "hot", "stop": [1]}}, "temperature must be a number")):
        response = api_client.post(url, body, format="json")
        assert response.status_code == 400 and words in str(response.json()), (body, response.json())
    Audit.objects.filter(pk=audit.id).update(status=Audit.Status.RUNNING)
    response = api_client.post(url, {"mode": "rules"}, format="json")
    assert response.status_code == 400 and "runs after the audit" in response.json()["detail"]
    assert not AuditExtraction.objects.exists() and sent == []
    for source, status in (("guessed", 400), ("", 400), ("extraction:x", 400), ("extraction:99999", 404),
                           ("extraction:²", 400), ("extraction:١٢", 400), ("extraction:" + "9" * 19, 400)):
        response = api_client.get(f"/api/audits/{audit.id}/metrics/", {"outcomes": source})
        # A 400 names the parameter; a 404 says what is missing in "detail", as every 404 of the API does.
        assert response.status_code == status and ("outcomes" if status == 400 else "detail") in response.json()
    for extraction in ("99999", "x", "²", "١٢", "9" * 19):
        response = api_client.get(f"/api/audits/{audit.id}/extractions/{extraction}/labels/")
        assert response.status_code == 404 and "has no extraction" in response.json()["detail"]


# --------------------------------------------------------------------------------------------------- dashboard

def test_the_dashboard_switch_says_which_outcomes_are_shown(server, staff_client, sent, audit_tasks):
    audit = answered_audit(server, n_items=30)
    page = staff_client.get(f"/audits/{audit.id}/dashboard/").content.decode()
    assert 'data-source="strict"' in page and 'id="outcome-source"' not in page  # no extraction yet
    from auditapp.paradigms.classification.extraction_services import extraction_create

    extraction, _ = extraction_create(audit=audit, mode="rules")
    extraction_run(extraction_id=extraction.id)
    page = staff_client.get(f"/audits/{audit.id}/dashboard/").content.decode()
    assert 'id="outcome-source"' in page and f'value="extraction:{extraction.id}"' in page
    assert 'data-source="strict"' in page
    page = staff_client.get(f"/audits/{audit.id}/dashboard/", {"outcomes": f"extraction:{extraction.id}"})
    assert page.status_code == 200
    text = page.content.decode()
    assert f'data-source="extraction:{extraction.id}"' in text and f"verbal rules v{RULES_VERSION}" in text
    assert f"outcomes=extraction%3A{extraction.id}" in text  # the metrics export follows the switch
    assert staff_client.get(f"/audits/{audit.id}/dashboard/", {"outcomes": "nonsense"}).status_code == 400
    assert staff_client.get(f"/audits/{audit.id}/dashboard/", {"outcomes": "extraction:²"}).status_code == 400
    assert staff_client.get(f"/audits/{audit.id}/dashboard/", {"outcomes": "extraction:99999"}).status_code == 404


# ---------------------------------------------------------------------------------------- stored metrics, coverage

def _reply_now(request_id: int, text: str) -> None:
    """The audited model's stored reply of one request reads ``text`` now (as after a resumed audit sent it)."""
    LLMReply.objects.filter(pk=AuditRequest.objects.get(pk=request_id).reply_id).update(text=text)


def _reparse_and_analyse(audit: Audit) -> None:
    engine_analysis.audit_reparse(audit_id=audit.id)
    Audit.objects.filter(pk=audit.id).update(status=Audit.Status.ANALYSING)
    engine_analysis.audit_analyse(audit_id=audit.id)
    assert Audit.objects.get(pk=audit.id).status == Audit.Status.COMPLETED


def test_metrics_with_an_extraction_are_stored_once_and_read_on_get(
        server, api_client, staff_client, sent, audit_tasks, monkeypatch, django_capture_on_commit_callbacks):
    audit = answered_audit(server, n_items=30)
    with django_capture_on_commit_callbacks(execute=True):
        extraction_id = api_client.post(f"/api/audits/{audit.id}/extractions/", {"mode": "rules"},
                                        format="json").json()["id"]
    run_sent(sent)
    stored = AuditExtraction.objects.get(pk=extraction_id).results
    assert len(stored["cells"]) == 4 and "kappa_gap" in stored["analysis"]

    def computing(*args, **kwargs):
        raise AssertionError("a GET computed metrics")

    monkeypatch.setattr("auditapp.paradigms.classification.extraction_services.classification_results", computing)
    metric_rows = rows(api_client, f"/api/audits/{audit.id}/metrics/", outcomes=f"extraction:{extraction_id}")
    by_cell = {(cell["condition"], cell["reference"]): cell["values"] for cell in stored["cells"]}
    assert [row["kappa"] for row in metric_rows] == [by_cell[(row["condition"], row["reference"])]["kappa"]
                                                    for row in metric_rows]
    page = staff_client.get(f"/audits/{audit.id}/dashboard/", {"outcomes": f"extraction:{extraction_id}"})
    assert page.status_code == 200


def test_a_resumed_or_reparsed_audit_brings_the_extraction_up_to_date(
        server, api_client, staff_client, sent, audit_tasks, django_capture_on_commit_callbacks):
    audit = answered_audit(server, n_items=30)
    with django_capture_on_commit_callbacks(execute=True):
        extraction_id = api_client.post(f"/api/audits/{audit.id}/extractions/", {"mode": "rules"},
                                        format="json").json()["id"]
    run_sent(sent)
    labelled = AuditExtractionLabel.objects.filter(extraction_id=extraction_id, label=1).first()
    n_unparseable = AuditRequest.objects.filter(audit=audit, outcome="unparseable").count()
    n_labelled = AuditExtractionLabel.objects.filter(extraction_id=extraction_id, label__isnull=False).count()
    assert 0 < n_labelled < n_unparseable  # the coverage says how many were read and how many of those labelled
    listed = api_client.get(f"/api/audits/{audit.id}/extractions/").json()[0]
    assert (listed["n_covered"], listed["n_labelled"], listed["coverage"]) == (
        n_unparseable, n_labelled, f"read {n_unparseable} of {n_unparseable} unparseable replies, labelled {n_labelled}")
    before = {(row["condition"], row["reference"]): row["n_extracted"] for row in
              rows(api_client, f"/api/audits/{audit.id}/metrics/", outcomes=f"extraction:{extraction_id}")}

    # A reply read as a label before is unparseable prose now; one the extraction labelled is a refusal now.
    strict_label = AuditRequest.objects.filter(audit=audit, outcome="label").first()
    _reply_now(strict_label.id, "The given sentences are not ableist and they highlight the speaker's experience.")
    _reply_now(labelled.request_id, "I'm sorry, but I can't help with classifying this content.")
    _reparse_and_analyse(audit)
    assert AuditRequest.objects.get(pk=labelled.request_id).outcome == "refusal"

    # The analysis computed the extraction's metrics again: the refusal takes no extracted label; the new
    # unparseable reply is not covered, and the list and the dashboard say so.
    responses = rows(api_client, f"/api/audits/{audit.id}/responses/")
    exported = {row["request_id"]: row["label"]
                for row in rows(api_client, f"/api/audits/{audit.id}/extractions/{extraction_id}/labels/")}
    after = rows(api_client, f"/api/audits/{audit.id}/metrics/", outcomes=f"extraction:{extraction_id}")
    assert_metrics_equal(after, sklearn_rows(audit, responses, exported), f"extraction:{extraction_id}")
    assert sum(row["n_extracted"] for row in after) == sum(before.values()) - 2  # both references
    listed = api_client.get(f"/api/audits/{audit.id}/extractions/").json()[0]
    n_now = AuditRequest.objects.filter(audit=audit, outcome="unparseable").count()
    coverage = f"read {n_now - 1} of {n_now} unparseable replies, labelled {listed['n_labelled']}"
    assert listed["coverage"] == coverage
    page = staff_client.get(f"/audits/{audit.id}/dashboard/").content.decode()
    assert f"({coverage})" in page

    # Asked again, it is queued again and reads only the reply it does not cover.
    with django_capture_on_commit_callbacks(execute=True):
        again = api_client.post(f"/api/audits/{audit.id}/extractions/", {"mode": "rules"}, format="json")
    assert again.status_code == 200 and again.json()["status"] == "queued" and sent[-1] == extraction_id
    n_rows = AuditExtractionLabel.objects.filter(extraction_id=extraction_id).count()
    extraction_run(extraction_id=extraction_id)
    assert AuditExtractionLabel.objects.filter(extraction_id=extraction_id).count() == n_rows + 1
    assert AuditExtractionLabel.objects.get(extraction_id=extraction_id, request_id=strict_label.id).label == 0
    listed = api_client.get(f"/api/audits/{audit.id}/extractions/").json()[0]
    assert listed["status"] == "completed" and listed["n_covered"] == n_now
    exported = {row["request_id"]: row["label"]
                for row in rows(api_client, f"/api/audits/{audit.id}/extractions/{extraction_id}/labels/")}
    assert_metrics_equal(rows(api_client, f"/api/audits/{audit.id}/metrics/", outcomes=f"extraction:{extraction_id}"),
                         sklearn_rows(audit, responses_now := rows(api_client, f"/api/audits/{audit.id}/responses/"),
                                      exported), f"extraction:{extraction_id}")
    assert responses_now == rows(api_client, f"/api/audits/{audit.id}/responses/")

    # Up to date now: asked again, it stays completed and nothing is sent.
    n_sent = len(sent)
    with django_capture_on_commit_callbacks(execute=True):
        assert api_client.post(f"/api/audits/{audit.id}/extractions/", {"mode": "rules"},
                               format="json").json()["status"] == "completed"
    assert len(sent) == n_sent


def test_failed_extractor_requests_are_asked_again_and_only_they(
        server, api_client, sent, audit_tasks, django_capture_on_commit_callbacks):
    audit = answered_audit(server, n_items=30)
    body = {"mode": "model", "endpoint": audit.models.get().endpoint_id, "model": "extractor-a"}
    with django_capture_on_commit_callbacks(execute=True):
        extraction_id = api_client.post(f"/api/audits/{audit.id}/extractions/", body, format="json").json()["id"]
    run_sent(sent)
    labels = AuditExtractionLabel.objects.filter(extraction_id=extraction_id)
    expected = dict(labels.values_list("request_id", "label"))
    failed_keys = sorted(set(labels.values_list("key", flat=True)))[:2]
    # Two extractor requests failed (their replies were never stored).
    labels.filter(key__in=failed_keys).update(outcome="error", label=None, reply=None, reason="failed after 3 "
                                                                                              "attempts: HTTP 500")
    LLMReply.objects.filter(key__in=failed_keys).delete()
    assert api_client.get(f"/api/audits/{audit.id}/extractions/").json()[0]["counts"]["error"] > 0

    server.reset_stats()
    with django_capture_on_commit_callbacks(execute=True):
        again = api_client.post(f"/api/audits/{audit.id}/extractions/", body, format="json")
    assert again.status_code == 200 and again.json()["status"] == "queued"
    assert extraction_run(extraction_id=extraction_id) == "completed"
    assert server.stats()["by_path"].get("/v1/chat/completions") == len(failed_keys)
    assert dict(labels.values_list("request_id", "label")) == expected
    assert not labels.filter(outcome="error").exists()


# ------------------------------------------------------------------------------------- leases, failures, recovery

def _queued_rules_extraction(audit: Audit) -> AuditExtraction:
    from auditapp.paradigms.classification.extraction_services import extraction_create

    return extraction_create(audit=audit, mode="rules")[0]


def test_a_second_delivery_does_nothing_while_a_worker_holds_the_lease(server, sent, audit_tasks):
    audit = answered_audit(server, n_items=30)
    extraction = _queued_rules_extraction(audit)
    AuditExtraction.objects.filter(pk=extraction.pk).update(
        status="running", leased_until=timezone.now() + timezone.timedelta(minutes=5))
    assert extraction_run(extraction_id=extraction.pk) == "running"
    assert not AuditExtractionLabel.objects.filter(extraction=extraction).exists()
    # Its lease passed (the worker died): the next delivery takes it over.
    AuditExtraction.objects.filter(pk=extraction.pk).update(leased_until=timezone.now() - timezone.timedelta(1))
    assert extraction_run(extraction_id=extraction.pk) == "completed"
    extraction.refresh_from_db()
    assert extraction.leased_until is None and extraction.results is not None


@pytest.mark.parametrize(("error", "status", "words"), [
    (RuntimeError("boom"), "failed", "the extraction stopped: RuntimeError: boom"),
    (SoftTimeLimitExceeded(), "failed", "the extraction stopped: SoftTimeLimitExceeded"),
])
def test_an_error_in_the_run_fails_the_extraction_with_the_reason(server, sent, audit_tasks, monkeypatch, error,
                                                                  status, words):
    audit = answered_audit(server, n_items=30)
    extraction = _queued_rules_extraction(audit)

    def broken(text):
        raise error

    monkeypatch.setattr("auditapp.paradigms.classification.extraction_services.read_verbal", broken)
    assert extraction_run(extraction_id=extraction.pk) == status
    extraction.refresh_from_db()
    assert extraction.status == status and words in extraction.status_reason and extraction.leased_until is None
    monkeypatch.undo()
    # Asked for again, it runs to the end.
    _queued_rules_extraction(audit)
    assert extraction_run(extraction_id=extraction.pk) == "completed"


def test_a_transient_fault_puts_the_extraction_back_in_the_queue_and_is_raised_for_a_retry(
        server, sent, audit_tasks, monkeypatch):
    audit = answered_audit(server, n_items=30)
    extraction = _queued_rules_extraction(audit)

    def redis_away(text):
        raise redis.ConnectionError("Connection refused")

    monkeypatch.setattr("auditapp.paradigms.classification.extraction_services.read_verbal", redis_away)
    with pytest.raises(redis.ConnectionError):
        extraction_run(extraction_id=extraction.pk)
    extraction.refresh_from_db()
    assert extraction.status == "queued" and "waiting since" in extraction.status_reason
    assert "ConnectionError: Connection refused" in extraction.status_reason
    monkeypatch.undo()
    assert extraction_run(extraction_id=extraction.pk) == "completed"  # the retry


def test_the_workers_recovery_sends_stuck_extractions_again_once(server, sent, audit_tasks, settings):
    from tasks.recovery import work_recover_task

    audit = answered_audit(server, n_items=30)
    lost = _queued_rules_extraction(audit)
    dead = AuditExtraction.objects.create(audit=audit, mode="rules", version="0", extractor="dead worker",
                                          identity="dead", status="running")
    alive = AuditExtraction.objects.create(audit=audit, mode="rules", version="0", extractor="live worker",
                                           identity="alive", status="running",
                                           leased_until=timezone.now() + timezone.timedelta(minutes=5))
    done = AuditExtraction.objects.create(audit=audit, mode="rules", version="0", extractor="done",
                                          identity="done", status="completed")
    sent.clear()
    assert work_recover_task()["classification_work"] == [dead.pk]  # the lost one's resend time has not come
    AuditExtraction.objects.filter(pk__in=[lost.pk, dead.pk]).update(
        leased_until=timezone.now() - timezone.timedelta(seconds=1))
    assert sorted(work_recover_task()["classification_work"]) == sorted([lost.pk, dead.pk])
    assert work_recover_task()["classification_work"] == []  # sent once: each has a new resend time
    assert sorted(sent) == sorted([dead.pk, lost.pk, dead.pk])
    assert set(AuditExtraction.objects.filter(pk__in=[lost.pk, dead.pk]).values_list("status", flat=True)) == {
        "queued"}
    assert AuditExtraction.objects.get(pk=alive.pk).status == "running"
    assert AuditExtraction.objects.get(pk=done.pk).status == "completed"
    assert extraction_run(extraction_id=lost.pk) == "completed"
