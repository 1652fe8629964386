"""The structured-output probe at an audit's preparation (servers that ignore the form): what each answer to it means.

- pure: the hand-written schema check agrees with ``jsonschema`` on every paradigm's answer schema; which probe
  statuses refuse the request (a 408 or 429 does not);
- engine (the real test LLM server): a server that ignores the form silently (answers unconstrained prose with
  200, as vLLM since 0.12 does with ``guided_json``) fails the preparation with that reason after one probe; a
  server answering the probe with 429 does not fail it; 401/403/404 (from a probe stubbed in this unit test: the
  model listing, asked first, meets them on a real server) are worded as what they are, and a 408 goes on;
- the form is recorded per model at preparation and the audit's requests are sent in it even when the endpoint's
  form is then cleared; an audit with no recorded form (prepared before forms were recorded) whose endpoint lost
  its form fails with the reason instead of crashing every slice.
"""
from __future__ import annotations

import jsonschema
import pytest

from auditapp import llm_clients
from auditapp.engine import control
from auditapp.engine import preparation as engine_preparation
from auditapp.engine import runner as audit_runner
from auditapp.models import Audit, AuditModel, AuditRequest, LLMEndpoint
from auditapp.paradigms.bits.llm_scoring import ANSWER_SCHEMA as SCORE_SCHEMA
from auditapp.paradigms.classification.replies import ANSWER_SCHEMA as CLASSIFICATION_SCHEMA
from auditapp.paradigms.counterfactual.replies import ANSWER_SCHEMA as BATCH_SCHEMA
from auditapp.paradigms.self_report.design import BATCH_ANSWER_SCHEMA, ITEM_ANSWER_SCHEMA
from tests.auditapp import test_structured_output as structured
from tests.auditapp.test_structured_output import launch, make_endpoint
from tests.factories import AUDIT_POSITIVE_WORDS, make_audit_study
from tests.llm_server import LLMServer

# The structured-output tests' fixtures: the test server (prose-a, annotator-a) and tasks run by the test itself.
server, tasks_off = structured.server, structured.tasks_off

ANSWERS = [
    None, True, 0, 1, 1.0, 1.5, "1", [], {},
    {"label": 0, "explanation": "fine"}, {"label": 1.0, "explanation": ""}, {"label": True, "explanation": "x"},
    {"label": 2, "explanation": "x"}, {"label": "1", "explanation": "x"}, {"label": 1}, {"explanation": "x"},
    {"label": 1, "explanation": "x", "confidence": 0.9}, {"label": 0, "explanation": 3},
    {"score": 0.4}, {"score": 1}, {"score": "0.4"}, {"score": False}, {"score": 0.4, "why": "x"},
    {"answer": "Agree"}, {"answer": 3}, {"answers": []}, {"answers": [{"n": 1, "answer": "2"}]},
    {"answers": [{"n": "1", "answer": "2"}]}, {"answers": [{"i": 1, "y": 0}, {"i": 2, "y": 1}]},
    {"answers": [{"i": 1, "y": 2}]}, {"answers": [{"i": 1}]}, {"answers": {"i": 1, "y": 0}},
    {"answers": [{"i": 1, "y": 0, "z": 1}]}, {"answers": ["1: yes"]},
]


@pytest.mark.parametrize("schema", [CLASSIFICATION_SCHEMA, SCORE_SCHEMA, ITEM_ANSWER_SCHEMA, BATCH_ANSWER_SCHEMA,
                                    BATCH_SCHEMA], ids=["classification", "score", "likert", "likert batch", "batch"])
def test_the_schema_check_agrees_with_jsonschema_on_every_answer_schema(schema):
    validator = jsonschema.Draft202012Validator(schema)
    for answer in ANSWERS:
        problems = llm_clients.schema_problems(answer, schema)
        assert (not problems) == validator.is_valid(answer), (answer, problems)


def test_a_reply_that_is_not_json_or_not_valid_says_why():
    assert llm_clients.answer_schema_problem('{"label": 1, "explanation": "x"}', CLASSIFICATION_SCHEMA) == ""
    assert llm_clients.answer_schema_problem("The sentence is not ableist.", CLASSIFICATION_SCHEMA) == (
        "it is not JSON: 'The sentence is not ableist.'")
    assert llm_clients.answer_schema_problem(None, CLASSIFICATION_SCHEMA) == "it is not JSON: '(empty)'"
    assert llm_clients.answer_schema_problem('{"label": 2}', CLASSIFICATION_SCHEMA) == (
        "the answer lacks 'explanation'; the answer['label'] is 2, not one of [0, 1]")


@pytest.mark.parametrize(("status", "refused"), [(None, False), (400, True), (401, True), (403, True),
                                                 (404, True), (408, False), (422, True), (429, False),
                                                 (500, False), (503, False)])
def test_a_time_out_or_a_rate_limit_does_not_refuse_the_probe(status, refused):
    assert llm_clients.ProbeResult(status, f"HTTP {status}").refused is refused


@pytest.fixture(scope="module")
def ignoring_server():
    with LLMServer(models=("prose-a", "model-a"), positive_words=AUDIT_POSITIVE_WORDS,
                   ignored_forms=("vllm_guided_json",)) as running:
        yield running


def launch_constrained(api_client, endpoint, model: str = "prose-a") -> Audit:
    study = make_audit_study(6, n_examples=2)
    audit_id = launch(api_client, {"name": f"probe {endpoint.name}", "study": study.id, "conditions": ["zs", "cot"],
                                   "models": [{"endpoint": endpoint.id, "model": model}], "structured_output": True})
    engine_preparation.audit_prepare(audit_id=audit_id)
    return Audit.objects.get(pk=audit_id)


@pytest.mark.django_db(transaction=True)
@pytest.mark.integration
@pytest.mark.parametrize("model", ["prose-a", "model-a"])
def test_a_server_ignoring_the_form_fails_preparation_after_one_probe(api_client, ignoring_server, tasks_off,
                                                                      model):
    endpoint = make_endpoint(ignoring_server, f"new-vllm-{model}", structured_output="vllm_guided_json")
    ignoring_server.reset_stats()
    audit = launch_constrained(api_client, endpoint, model)
    assert audit.status == Audit.Status.FAILED
    assert audit.status_reason.startswith(
        f"endpoint new-vllm-{model} accepted the structured-output field (vllm_guided_json) for model '{model}' but "
        "its answer is not valid against the schema: it is not JSON: ")
    assert "the server may ignore the form; choose another" in audit.status_reason
    assert not AuditRequest.objects.filter(audit=audit).exists()
    assert ignoring_server.stats()["by_path"].get("/v1/chat/completions") == 1

    # A form the same server honours: the audit prepares.
    endpoint.structured_output = "openai_json_schema"
    endpoint.save()
    control.audit_resume(audit=audit)
    engine_preparation.audit_prepare(audit_id=audit.id)
    assert Audit.objects.get(pk=audit.id).status == Audit.Status.RUNNING


@pytest.mark.django_db(transaction=True)
@pytest.mark.integration
def test_a_rate_limited_probe_does_not_fail_preparation(api_client, tasks_off):
    with LLMServer(models=("prose-a",), fault_rate=1.0, fault_kinds=("rate_limit",), retry_after=30) as limited:
        endpoint = make_endpoint(limited, "limited", structured_output="openai_json_schema")
        audit = launch_constrained(api_client, endpoint)
        assert limited.stats()["by_status"].get("429") == 1
    assert audit.status == Audit.Status.RUNNING, audit.status_reason
    assert AuditRequest.objects.filter(audit=audit).count() == 12


@pytest.mark.django_db
@pytest.mark.parametrize(("status", "reason"), [
    (401, "endpoint stubbed refused authentication for model 'prose-a': HTTP 401: invalid key; check the endpoint's "
          "API key"),
    (403, "endpoint stubbed refused authentication for model 'prose-a': HTTP 403: invalid key; check the endpoint's "
          "API key"),
    (404, "endpoint stubbed found no model 'prose-a' (or no chat path under {base_url}): HTTP 404: invalid key; "
          "check the model's name and the endpoint's base URL"),
    (400, "endpoint stubbed refused structured output (openai_json_schema) for model 'prose-a': HTTP 400: invalid "
          "key; choose the form its server takes, or launch without structured output"),
    (408, ""),
])
def test_each_refusal_of_the_probe_is_worded_as_what_it_is(api_client, server, tasks_off, monkeypatch, status,
                                                          reason):
    monkeypatch.setattr(llm_clients, "probe_chat_sync",
                        lambda *args, **kwargs: llm_clients.ProbeResult(status, f"HTTP {status}: invalid key"))
    endpoint = make_endpoint(server, "stubbed", structured_output="openai_json_schema")
    audit = launch_constrained(api_client, endpoint)
    if reason:
        assert audit.status == Audit.Status.FAILED
        assert audit.status_reason == reason.format(base_url=server.base_url)
    else:
        assert audit.status == Audit.Status.RUNNING, audit.status_reason


@pytest.mark.django_db(transaction=True)
@pytest.mark.integration
def test_the_form_recorded_at_preparation_is_the_one_sent_when_the_endpoint_is_edited(api_client, server,
                                                                                      tasks_off):
    endpoint = make_endpoint(server, "edited", structured_output="openai_json_schema")
    audit = launch_constrained(api_client, endpoint)
    assert audit.status == Audit.Status.RUNNING, audit.status_reason
    assert list(AuditModel.objects.filter(audit=audit).values_list("structured_output", flat=True)) == [
        "openai_json_schema"]
    LLMEndpoint.objects.filter(pk=endpoint.pk).update(structured_output="")
    assert audit_runner.audit_work(audit.id) == "finished"
    assert set(AuditRequest.objects.filter(audit=audit).values_list("outcome", flat=True)) == {"label"}
    audit.refresh_from_db()
    assert audit.manifest["structured_output"]["forms"] == {"edited": "openai_json_schema"}


@pytest.mark.django_db(transaction=True)
@pytest.mark.integration
def test_an_audit_without_a_recorded_form_whose_endpoint_lost_it_fails_with_the_reason(api_client, server,
                                                                                       tasks_off):
    endpoint = make_endpoint(server, "cleared", structured_output="openai_json_schema")
    audit = launch_constrained(api_client, endpoint)
    assert audit.status == Audit.Status.RUNNING, audit.status_reason
    AuditModel.objects.filter(audit=audit).update(structured_output="")  # as prepared before forms were recorded
    LLMEndpoint.objects.filter(pk=endpoint.pk).update(structured_output="")
    assert audit_runner.audit_work(audit.id) == "stopped"
    audit.refresh_from_db()
    assert audit.status == Audit.Status.FAILED
    assert audit.status_reason == ("endpoint cleared cannot constrain output any more: it has no structured-output "
                                   "form: choose the one its server takes; set the form this audit was prepared "
                                   "with, then resume")
    assert not AuditRequest.objects.filter(audit=audit).exclude(state=AuditRequest.State.PENDING).exists()
