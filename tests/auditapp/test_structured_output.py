"""Structured output (constrained replies for small local models): the body each server form takes, the request key, the
paradigms' parsers on constrained replies, and audits against the test LLM server that honours or refuses each form.

- pure: the exact body per form; a form the protocol does not take, or a parameter that sets the form's field, is
  refused; the key differs between a constrained and a free request (and is unchanged without a constraint);
  each paradigm's parser reads a reply valid against its schema, and the test server's answers are valid;
- engine (in one process, the real test server): a classification audit of a model answering in prose is almost all
  unparseable unconstrained, and every reply is parsed constrained, in each form; an endpoint refusing the form
  fails the preparation with its reason after one probe per model and nothing more; a counterfactual names audit
  constrained against an annotator parses every text; the launch API and the admin form take the option, refuse an
  endpoint without a form, and the manifest and the dashboard say that output was constrained;
- per-request schemas: a batch's schema takes exactly the texts it sends and a WABT's exactly its words, each with
  its instance's identifiers; the least a server honouring them may give (the ``minimal-`` model) answers every text
  (names, dialect) and every word (WABT); an audit recorded with the list form keeps it; a server that ignores the
  schema while its model leaves texts out is refused at the probe, naming the texts.
"""
from __future__ import annotations

import json

import jsonschema
import pytest

from auditapp import llm_clients
from auditapp.engine import analysis, control, planning, registry
from auditapp.engine import preparation as engine_preparation
from auditapp.engine import runner as audit_runner
from auditapp.engine.protocol import request_answer_schema
from auditapp.engine.request_keys import request_key
from auditapp.models import Audit, AuditJudgment, AuditRequest, LLMEndpoint
from auditapp.paradigms.bits.llm_scoring import DEFAULT_PROMPTS, parse_score
from auditapp.paradigms.classification.replies import ANSWER_SCHEMA as CLASSIFICATION_SCHEMA
from auditapp.paradigms.classification.replies import DEFAULT_ANSWER_ORDER
from auditapp.paradigms.classification.replies import answer_schema as classification_answer_schema
from auditapp.paradigms.classification.replies import parse_reply as parse_classification
from auditapp.paradigms.counterfactual.prompt import (
    DEFAULT_KEYED_TEMPLATE,
    DEFAULT_TEMPLATE,
    OUR_KEYED_ANSWER_INSTRUCTION,
    template_for,
)
from auditapp.paradigms.counterfactual.replies import ANSWER_SCHEMA as BATCH_SCHEMA
from auditapp.paradigms.counterfactual.replies import KEYED_ANSWER_SCHEMA as KEYED_BATCH_SCHEMA
from auditapp.paradigms.counterfactual.replies import batch_answer_schema, parse_batch
from auditapp.paradigms.implicit_bias.generation import generate_wabt
from auditapp.paradigms.implicit_bias.wabt_replies import (
    PAPER_PAIRS_LINE,
    keyed_prompt,
    keyed_schema,
    parse_wabt_reply,
)
from auditapp.paradigms.self_report.design import answer_schema as likert_schema
from auditapp.paradigms.self_report.design import structured_reply_text
from tests.factories import AUDIT_POSITIVE_WORDS, make_audit_study
from tests.implicit_bias_personas import expected_wabt_assignment, read_wabt_prompt
from tests.llm_server import (
    EXPLANATIONS,
    STRUCTURED_OUTPUT_FORMS,
    LLMServer,
    expected_label,
    prose_reply,
    shortest_instance,
    structured_answer,
)

MESSAGES = [{"role": "user", "content": "Target sentence: hello"}]
SCHEMA = {"type": "object", "properties": {"label": {"type": "integer"}}, "required": ["label"]}


# ------------------------------------------------------------------------------------------------------ pure

@pytest.mark.parametrize(("protocol", "form", "body"), [
    ("openai", "openai_json_schema", {"model": "m", "messages": MESSAGES, "temperature": 0, "response_format": {
        "type": "json_schema", "json_schema": {"name": "answer", "schema": SCHEMA, "strict": True}}}),
    ("openai", "llamacpp_json_object", {"model": "m", "messages": MESSAGES, "temperature": 0,
                                        "response_format": {"type": "json_object", "schema": SCHEMA}}),
    ("openai", "vllm_guided_json", {"model": "m", "messages": MESSAGES, "temperature": 0, "guided_json": SCHEMA}),
    ("ollama", "ollama_format", {"model": "m", "messages": MESSAGES, "stream": False, "format": SCHEMA,
                                 "options": {"temperature": 0}}),
])
def test_each_form_puts_the_schema_where_its_server_reads_it(protocol, form, body):
    path, payload = llm_clients.chat_payload(protocol, "m", MESSAGES, {"temperature": 0}, schema=SCHEMA,
                                             structured_output=form)
    assert path == llm_clients.CHAT_PATHS[protocol]
    assert payload == body
    # Without a schema the body is the free request, whatever the endpoint's form.
    assert "format" not in llm_clients.chat_payload(protocol, "m", MESSAGES, {}, structured_output=form)[1]


def test_a_form_its_protocol_does_not_take_or_a_parameter_setting_its_field_is_refused():
    with pytest.raises(ValueError, match="ollama_format is sent to ollama endpoints"):
        llm_clients.chat_payload("openai", "m", MESSAGES, {}, schema=SCHEMA, structured_output="ollama_format")
    with pytest.raises(ValueError, match="no structured-output form"):
        llm_clients.chat_payload("ollama", "m", MESSAGES, {}, schema=SCHEMA, structured_output="")
    with pytest.raises(ValueError, match="response_format"):
        llm_clients.chat_payload("openai", "m", MESSAGES, {"response_format": {"type": "text"}}, schema=SCHEMA,
                                 structured_output="openai_json_schema")


def test_the_key_of_a_constrained_request_differs_by_form_and_schema_and_a_free_key_is_unchanged():
    base = {"protocol": "openai", "base_url": "http://h:8000", "model": "m", "digest": "", "params": {},
            "messages": MESSAGES, "replicate": 0}
    free = request_key(**base)
    assert request_key(**base, answer_format=None) == free
    constrained = request_key(**base, answer_format={"form": "openai_json_schema", "schema": SCHEMA})
    assert constrained != free
    assert request_key(**base, answer_format={"form": "vllm_guided_json", "schema": SCHEMA}) != constrained
    assert request_key(**base, answer_format={"form": "openai_json_schema", "schema": BATCH_SCHEMA}) != constrained


def test_every_paradigm_declares_a_schema_and_its_parser_reads_a_reply_valid_against_it():
    assert all(paradigm.answer_schema is not registry.Paradigm.answer_schema for paradigm in registry.every())
    for label in (0, 1):
        reply = json.dumps({"label": label, "explanation": EXPLANATIONS[label]})
        jsonschema.validate(json.loads(reply), CLASSIFICATION_SCHEMA)
        parsed = parse_classification(reply)
        assert (parsed.outcome, parsed.label, parsed.explanation) == ("label", label, EXPLANATIONS[label])

    reply = json.dumps({"answers": [{"i": 1, "y": 1}, {"i": 2, "y": 0}, {"i": 3, "y": 1}]})
    jsonschema.validate(json.loads(reply), BATCH_SCHEMA)
    reading = parse_batch(reply, [1, 2, 3])
    assert [(text.index, text.label) for text in reading.texts] == [(1, 1), (2, 0), (3, 1)]

    prompt = DEFAULT_PROMPTS["sentiment"]
    assert parse_score(json.dumps({"score": -0.25}), prompt).score == -0.25

    assert structured_reply_text('{"answer": "Slightly agree"}', batch=False) == "Slightly agree"
    assert structured_reply_text('{"answers": [{"n": 1, "answer": "Agree"}, {"n": 2, "answer": "3"}]}',
                                 batch=True) == "1: Agree\n2: 3"
    assert structured_reply_text("Agree", batch=False) is None
    assert structured_reply_text('{"answers": [{"n": "1", "answer": "Agree"}]}', batch=True) is None
    for mode in ("item", "batch"):
        jsonschema.Draft202012Validator.check_schema(likert_schema(mode))


def test_the_test_servers_constrained_answers_are_valid_and_its_prose_has_no_label():
    options = {"positive_words": AUDIT_POSITIVE_WORDS, "first_model": "prose-a", "annotators": {}}
    answer = structured_answer("prose-a", "Target sentence: a cure for autism", CLASSIFICATION_SCHEMA, **options)
    jsonschema.validate(answer, CLASSIFICATION_SCHEMA)
    assert answer["label"] == expected_label("prose-a", "Target sentence: a cure for autism",
                                             positive_words=AUDIT_POSITIVE_WORDS, models=("prose-a",))
    batch = structured_answer("annotator-a", "Is it true?\n\nText 1: I'm Ann.\nText 2: I'm Bo.", BATCH_SCHEMA,
                              **options)
    jsonschema.validate(batch, BATCH_SCHEMA)
    assert [entry["i"] for entry in batch["answers"]] == [1, 2]
    for label in (0, 1):
        assert parse_classification(prose_reply(label)).outcome == "unparseable"


# ---------------------------------------------------------------------------------------------------- engine

@pytest.fixture
def tasks_off(monkeypatch):
    """Tasks are run by the test itself, in order, instead of by a worker."""
    for name in ("audit_prepare_task", "audit_work_task", "audit_analyse_task"):
        monkeypatch.setattr(f"tasks.audits.{name}.delay", lambda audit_id: None)


@pytest.fixture(scope="module")
def server():
    with LLMServer(models=("prose-a", "annotator-a"), positive_words=AUDIT_POSITIVE_WORDS,
                   annotators={"annotator-a": {"base": 0.5, "drop_every": 7, "hedge_every": 5}}) as running:
        yield running


@pytest.fixture(scope="module")
def refusing_server():
    with LLMServer(models=("prose-a",), positive_words=AUDIT_POSITIVE_WORDS,
                   structured_forms=("llamacpp_json_object",)) as running:
        yield running


def make_endpoint(server, name: str, **fields) -> LLMEndpoint:
    return LLMEndpoint.objects.create(**{"name": name, "protocol": "openai", "base_url": server.base_url,
                                         "max_concurrency": 8, "attempt_timeout_s": 5, "deadline_s": 60,
                                         "max_attempts": 2, **fields})


def launch(api_client, body: dict) -> int:
    response = api_client.post("/api/audits/", body, format="json")
    assert response.status_code == 201, response.content
    return response.json()["id"]


def prepare_and_run(audit_id: int) -> Audit:
    engine_preparation.audit_prepare(audit_id=audit_id)
    audit = Audit.objects.get(pk=audit_id)
    assert audit.status == Audit.Status.RUNNING, audit.status_reason
    assert audit_runner.audit_work(audit_id) == "finished"
    analysis.audit_analyse(audit_id=audit_id)
    return Audit.objects.get(pk=audit_id)



@pytest.mark.django_db(transaction=True)
@pytest.mark.integration
def test_prose_is_unparseable_free_and_every_reply_parses_constrained_in_each_form(api_client, server, tasks_off):
    study = make_audit_study(12, n_examples=2)
    endpoints = {form: make_endpoint(server, form, structured_output=form,
                                     protocol="ollama" if form == "ollama_format" else "openai")
                 for form in STRUCTURED_OUTPUT_FORMS}

    def body(endpoint: LLMEndpoint, structured: bool) -> dict:
        return {"name": f"{endpoint.name} {structured}", "study": study.id, "conditions": ["zs"],
                "models": [{"endpoint": endpoint.id, "model": "prose-a"}], "n_resamples": 100,
                "structured_output": structured}

    free = prepare_and_run(launch(api_client, body(endpoints["openai_json_schema"], False)))
    outcomes = list(AuditRequest.objects.filter(audit=free).values_list("outcome", flat=True))
    assert len(outcomes) == 12 and outcomes.count("unparseable") == 12
    assert free.manifest["structured_output"] is False

    free_keys = set(AuditRequest.objects.filter(audit=free).values_list("key", flat=True))
    for form, endpoint in endpoints.items():
        audit = prepare_and_run(launch(api_client, body(endpoint, True)))
        assert audit.status == Audit.Status.COMPLETED, audit.status_reason
        requests = AuditRequest.objects.filter(audit=audit).select_related("audit_model")
        assert requests.count() == 12 and {row.outcome for row in requests} == {"label"}, form
        builder = planning.request_builder(audit)
        for row in requests:
            content = builder.payload(row)[-1]["content"]
            assert row.label == expected_label("prose-a", content, positive_words=AUDIT_POSITIVE_WORDS,
                                               models=("prose-a", "annotator-a"))
        # Constrained replies never came from, nor went to, the free audit's cache.
        assert not ({row.key for row in requests} & free_keys) and not requests.filter(from_cache=True).exists()
        assert audit.manifest["structured_output"]["forms"] == {endpoint.name: form}
        assert audit.manifest["structured_output"]["schema"] == classification_answer_schema(DEFAULT_ANSWER_ORDER)


@pytest.mark.django_db(transaction=True)
@pytest.mark.integration
def test_an_endpoint_refusing_the_form_fails_preparation_with_the_reason_after_one_probe(
        api_client, refusing_server, tasks_off):
    study = make_audit_study(10, n_examples=2)
    endpoint = make_endpoint(refusing_server, "vllm-style", structured_output="vllm_guided_json")
    refusing_server.reset_stats()
    audit_id = launch(api_client, {"name": "refused", "study": study.id, "conditions": ["zs", "cot"],
                                   "models": [{"endpoint": endpoint.id, "model": "prose-a"}],
                                   "structured_output": True})
    engine_preparation.audit_prepare(audit_id=audit_id)
    audit = Audit.objects.get(pk=audit_id)
    assert audit.status == Audit.Status.FAILED
    assert audit.status_reason.startswith("endpoint vllm-style refused structured output (vllm_guided_json) for "
                                          "model 'prose-a': HTTP 400: unsupported field 'guided_json'")
    assert not AuditRequest.objects.filter(audit=audit).exists()
    assert refusing_server.stats()["by_path"].get("/v1/chat/completions") == 1

    # The form the server takes: the same audit runs.
    endpoint.structured_output = "llamacpp_json_object"
    endpoint.save()
    control.audit_resume(audit=audit)
    audit = prepare_and_run(audit_id)
    assert set(AuditRequest.objects.filter(audit=audit).values_list("outcome", flat=True)) == {"label"}


@pytest.mark.django_db(transaction=True)
@pytest.mark.integration
def test_a_constrained_names_audit_parses_every_text_of_an_annotator(api_client, server, tasks_off):
    endpoint = make_endpoint(server, "annotators", structured_output="openai_json_schema")
    audit = prepare_and_run(launch(api_client, {
        "paradigm": "names", "name": "names", "models": [{"endpoint": endpoint.id, "model": "annotator-a"}],
        "material": {"tasks": ["warm"]}, "iterations": 2, "seed": 1, "structured_output": True}))
    assert audit.status == Audit.Status.COMPLETED, audit.status_reason
    judgments = AuditJudgment.objects.filter(audit=audit)
    # Unconstrained, this annotator drops every 7th text and hedges every 5th; constrained, it answers each.
    assert judgments.count() == audit.n_requests * 60
    assert set(judgments.values_list("outcome", flat=True)) == {"label"}
    assert audit.manifest["structured_output"]["schema"] == KEYED_BATCH_SCHEMA


@pytest.mark.django_db
def test_the_launch_refuses_a_chat_endpoint_without_a_form_and_stores_nothing(api_client, server):
    study = make_audit_study(5, n_examples=2)
    endpoint = make_endpoint(server, "no form")
    response = api_client.post("/api/audits/", {
        "name": "x", "study": study.id, "models": [{"endpoint": endpoint.id, "model": "prose-a"}],
        "structured_output": True}, format="json")
    assert response.status_code == 400
    assert "endpoint no form cannot constrain output: it has no structured-output form" in response.json()["detail"]
    assert not Audit.objects.exists()


@pytest.mark.django_db
def test_the_admin_form_refuses_an_endpoint_without_a_form_and_the_dashboard_says_output_was_constrained(
        staff_client, server, tasks_off):
    study = make_audit_study(5, n_examples=2)
    bare = make_endpoint(server, "bare", listed_models=[{"name": "prose-a", "digest": None, "details": {}}])
    formed = make_endpoint(server, "formed", structured_output="openai_json_schema",
                           listed_models=[{"name": "prose-a", "digest": None, "details": {}}])
    client = staff_client
    fields = {"name": "admin launch", "study": study.id, "params": "{}", "conditions": ["zs"], "replicates": 1,
              "seed": 0, "use_cache": "on", "error_budget": 0.2, "unparsed": "exclude", "n_resamples": 100,
              "parallel_tasks": 1, "structured_output": "on"}
    response = client.post("/admin/auditapp/audit/add/", {**fields, "models": [f"{bare.id}:prose-a"]})
    assert response.status_code == 200
    assert "endpoint bare cannot constrain output" in response.content.decode()
    assert not Audit.objects.exists()

    response = client.post("/admin/auditapp/audit/add/", {**fields, "models": [f"{formed.id}:prose-a"]})
    assert response.status_code == 302, response.content.decode()[:2000]
    audit = Audit.objects.get()
    assert audit.structured_output
    page = client.get(f"/audits/{audit.id}/dashboard/").content.decode()
    assert 'id="structured-output"' in page and "Output constrained" in page


@pytest.mark.django_db
def test_an_endpoint_is_registered_only_with_a_form_its_protocol_takes(api_client):
    body = {"name": "ollama", "protocol": "ollama", "base_url": "http://127.0.0.1:11434"}
    response = api_client.post("/api/endpoints/", {**body, "structured_output": "vllm_guided_json"}, format="json")
    assert response.status_code == 400
    assert response.json()["structured_output"] == [
        "the form vllm_guided_json is sent to openai endpoints, not ollama ones"]
    response = api_client.post("/api/endpoints/", {"name": "vader", "protocol": "local",
                                                   "structured_output": "openai_json_schema"}, format="json")
    assert response.status_code == 400 and "not a chat model" in response.json()["structured_output"][0]
    assert not LLMEndpoint.objects.exists()
    response = api_client.post("/api/endpoints/", {**body, "structured_output": "ollama_format"}, format="json")
    assert response.status_code == 201 and response.json()["structured_output"] == "ollama_format"


# ------------------------------------------------------------------------------------------ per-request schemas

def test_a_batch_schema_takes_exactly_the_texts_sent_and_names_the_ones_a_reply_leaves_out():
    schema = batch_answer_schema([1, 2, 3])
    jsonschema.Draft202012Validator.check_schema(schema)
    jsonschema.validate({"answers": {"1": 0, "2": 1, "3": 1}}, schema)
    for wrong, problem in (({"answers": {"1": 0, "3": 1}}, "lacks '2'"),
                           ({"answers": {"1": 0, "2": 1, "3": 1, "4": 0}}, "keys the schema does not allow: '4'"),
                           ({"answers": {"1": 0, "2": "maybe", "3": 1}}, "not of type integer"),
                           ({"answers": []}, "not of type object")):
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate(wrong, schema)
        assert problem in llm_clients.answer_schema_problem(json.dumps(wrong), schema)
    # The least a server honouring the schema may give still answers every text; the list form let it answer none.
    shortest = shortest_instance(schema)
    assert shortest == {"answers": {"1": 0, "2": 0, "3": 0}}
    assert [(text.index, text.label) for text in parse_batch(json.dumps(shortest), [1, 2, 3]).texts] == [
        (1, 0), (2, 0), (3, 0)]
    assert shortest_instance(BATCH_SCHEMA) == {"answers": []}
    assert parse_batch(json.dumps({"answers": []}), [1, 2, 3]).labelled == 0


def test_keyed_answers_are_read_with_or_without_their_wrapper_and_the_prompt_asks_for_them():
    reading = parse_batch('Here: {"answers": {"1": 1, "2": "no", "3": "maybe", "9": 1}}', [1, 2, 3, 4])
    assert [(text.label, text.reason) for text in reading.texts] == [
        (1, ""), (0, ""), (None, "hedged"), (None, "index absent")]
    assert reading.ignored == 1
    assert [text.label for text in parse_batch('{"1": 0, "2": 1}', [1, 2]).texts] == [0, 1]
    assert template_for(DEFAULT_TEMPLATE, keyed=True) == DEFAULT_KEYED_TEMPLATE
    assert template_for(DEFAULT_TEMPLATE, keyed=False) == DEFAULT_TEMPLATE
    own = "Is it so? {description}\n{texts}"
    assert template_for(own, keyed=True) == own
    assert OUR_KEYED_ANSWER_INSTRUCTION in DEFAULT_KEYED_TEMPLATE and "JSON Lines" not in DEFAULT_KEYED_TEMPLATE


def test_a_wabt_schema_takes_each_word_once_with_one_of_its_two_identifiers():
    instance = generate_wabt(samples_per_combination=1)[0]
    schema = keyed_schema(instance.words, instance.identifiers)
    jsonschema.Draft202012Validator.check_schema(schema)
    assignment = expected_wabt_assignment("wabt-consistent", instance.texts[0])
    jsonschema.validate({"pairs": assignment}, schema)
    first, *rest = instance.words
    for wrong in ({"pairs": {**assignment, first: "Honorable"}},
                  {"pairs": {word: assignment[word] for word in rest}},
                  {"pairs": {**assignment, "Soufle": instance.identifiers[0]}},
                  {"pairs": [{"word": first, "identifier": instance.identifiers[0]}]}):
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate(wrong, schema)
    read = parse_wabt_reply(json.dumps({"pairs": assignment}), words=instance.words,
                            identifiers=instance.identifiers)
    assert read.valid and dict(read.assignments) == assignment
    # The constrained prompt asks for the object instead of lines, and is otherwise the paper's.
    prompt = keyed_prompt(instance.texts[0], instance.identifiers)
    assert PAPER_PAIRS_LINE in instance.texts[0] and PAPER_PAIRS_LINE not in prompt
    assert f'{{"pairs": {{"<word>": "{instance.identifiers[0]}" or "{instance.identifiers[1]}", ...}}}}' in prompt
    assert read_wabt_prompt(prompt) == read_wabt_prompt(instance.texts[0])


def test_a_builder_narrows_the_audits_schema_only_when_it_says_how():
    class Narrowing:
        def answer_schema(self, request, schema):
            return {**schema, "request": request}

    assert request_answer_schema(Narrowing(), 7, {"type": "object"}) == {"type": "object", "request": 7}
    assert request_answer_schema(object(), 7, {"type": "object"}) == {"type": "object"}
    assert request_answer_schema(Narrowing(), 7, None) is None


@pytest.fixture(scope="module")
def schema_server():
    with LLMServer(models=("minimal-a", "annotator-a", "wabt-consistent"), positive_words=AUDIT_POSITIVE_WORDS,
                   annotators={"annotator-a": {"base": 0.5, "drop_every": 7, "hedge_every": 5}}) as running:
        yield running


@pytest.fixture(scope="module")
def ignoring_server():
    with LLMServer(models=("annotator-a",), ignored_forms=("openai_json_schema",),
                   annotators={"annotator-a": {"base": 0.5, "drop_every": 7, "hedge_every": 5}}) as running:
        yield running


@pytest.mark.django_db(transaction=True)
@pytest.mark.integration
@pytest.mark.parametrize(("paradigm", "body"), [("names", {"material": {"tasks": ["warm"]}, "iterations": 2}),
                                                ("dialect", {"iterations": 2})])
def test_the_shortest_answer_a_batch_schema_allows_labels_every_text(api_client, schema_server, tasks_off,
                                                                      paradigm, body):
    endpoint = make_endpoint(schema_server, paradigm, structured_output="llamacpp_json_object")
    audit = prepare_and_run(launch(api_client, {"paradigm": paradigm, "name": paradigm, "seed": 1,
                                                "models": [{"endpoint": endpoint.id, "model": "minimal-a"}],
                                                "structured_output": True, **body}))
    assert audit.status == Audit.Status.COMPLETED, audit.status_reason
    builder = planning.request_builder(audit)
    requests = list(AuditRequest.objects.filter(audit=audit))
    texts = {row.id: len(builder.answer_schema(row, KEYED_BATCH_SCHEMA)["properties"]["answers"]["required"])
             for row in requests}
    judgments = AuditJudgment.objects.filter(audit=audit)
    assert judgments.count() == sum(texts.values()) > len(requests)
    assert set(judgments.values_list("outcome", flat=True)) == {"label"}
    completion = api_client.get(f"/api/audits/{audit.id}/tables/completion/").json()["results"]
    assert [(row["model"], row["n_labelled"]) for row in completion] == [("minimal-a", sum(texts.values()))]
    assert all(OUR_KEYED_ANSWER_INSTRUCTION in builder.payload(row)[0]["content"] for row in requests)
    manifest = audit.manifest
    assert manifest["prompt"]["template"] == DEFAULT_KEYED_TEMPLATE
    assert manifest["prompt"]["answer_instruction"] == OUR_KEYED_ANSWER_INSTRUCTION
    assert manifest["structured_output"]["schema"] == KEYED_BATCH_SCHEMA
    assert manifest["structured_output"]["example"]["properties"]["answers"]["required"] == [
        str(index) for index in range(1, len(manifest["structured_output"]["example"]["properties"]["answers"][
            "required"]) + 1)]


@pytest.mark.django_db(transaction=True)
@pytest.mark.integration
def test_an_audit_recorded_with_the_list_form_keeps_it_and_its_keys(api_client, schema_server, tasks_off):
    endpoint = make_endpoint(schema_server, "list form", structured_output="openai_json_schema")
    audit_id = launch(api_client, {"paradigm": "names", "name": "recorded before", "seed": 1, "iterations": 1,
                                   "models": [{"endpoint": endpoint.id, "model": "minimal-a"}],
                                   "material": {"tasks": ["warm"]}, "structured_output": True})
    audit = Audit.objects.get(pk=audit_id)
    Audit.objects.filter(pk=audit_id).update(design={key: value for key, value in audit.design.items()
                                                     if key != "answer_form"})
    audit = prepare_and_run(audit_id)
    assert audit.status == Audit.Status.COMPLETED, audit.status_reason
    assert audit.manifest["structured_output"]["schema"] == BATCH_SCHEMA
    assert "example" not in audit.manifest["structured_output"]
    assert audit.manifest["prompt"]["template"] == DEFAULT_TEMPLATE
    # Every reply was the empty list the form allows: valid, and no text labelled (nothing failed on its key).
    requests = AuditRequest.objects.filter(audit=audit)
    assert set(requests.values_list("outcome", flat=True)) == {"unparseable"}
    assert not requests.exclude(error="").exists()
    assert not AuditJudgment.objects.filter(audit=audit, outcome="label").exists()


@pytest.mark.django_db(transaction=True)
@pytest.mark.integration
def test_a_constrained_wabt_gives_every_word_one_of_its_identifiers(api_client, schema_server, tasks_off):
    endpoint = make_endpoint(schema_server, "wabt", structured_output="openai_json_schema")
    audit = prepare_and_run(launch(api_client, {
        "paradigm": "word_association", "name": "wabt", "samples_per_combination": 1, "seed": 3,
        "models": [{"endpoint": endpoint.id, "model": model} for model in ("wabt-consistent", "minimal-a")],
        "structured_output": True}))
    assert audit.status == Audit.Status.COMPLETED, audit.status_reason
    judgments = AuditJudgment.objects.filter(audit=audit).select_related("request__audit_model")
    assert judgments.count() == audit.n_requests == 180
    # The planted association is read whole; the shortest valid answer (every word to the first identifier) is
    # valid too, its score undefined with the reason, never 0.
    planted = [j for j in judgments if j.request.audit_model.model == "wabt-consistent"]
    assert {(j.outcome, j.value) for j in planted} == {("score", 1.0)}
    shortest = [j for j in judgments if j.request.audit_model.model == "minimal-a"]
    assert {(j.outcome, j.value) for j in shortest} == {("score", None)} and all(j.reason for j in shortest)
    assert audit.manifest["answer_instruction"]["replaces"] == PAPER_PAIRS_LINE
    assert audit.manifest["structured_output"]["example"]["properties"]["pairs"]["required"]


@pytest.mark.django_db(transaction=True)
@pytest.mark.integration
def test_a_server_ignoring_the_schema_is_refused_naming_the_texts_its_reply_leaves_out(
        api_client, ignoring_server, tasks_off):
    endpoint = make_endpoint(ignoring_server, "ignores", structured_output="openai_json_schema")
    audit_id = launch(api_client, {"paradigm": "names", "name": "ignored", "seed": 1, "iterations": 1,
                                   "models": [{"endpoint": endpoint.id, "model": "annotator-a"}],
                                   "material": {"tasks": ["warm"]}, "structured_output": True})
    engine_preparation.audit_prepare(audit_id=audit_id)
    audit = Audit.objects.get(pk=audit_id)
    assert audit.status == Audit.Status.FAILED
    assert "its answer is not valid against the schema: the answer['answers'] lacks '7'" in audit.status_reason
    assert not AuditRequest.objects.filter(audit=audit).exists()


@pytest.mark.django_db(transaction=True)
@pytest.mark.integration
def test_parse_quality_counts_the_units_a_batch_answered_beside_its_requests(api_client, schema_server, tasks_off):
    """Free, the annotator leaves out every 7th text and hedges every 5th: every batch request is unparseable,
    though most of its texts are labelled; the report says both, in the completion's units."""
    endpoint = make_endpoint(schema_server, "free")
    audit = prepare_and_run(launch(api_client, {"paradigm": "names", "name": "free", "seed": 1, "iterations": 2,
                                                "models": [{"endpoint": endpoint.id, "model": "annotator-a"}],
                                                "material": {"tasks": ["warm"]}}))
    assert audit.status == Audit.Status.COMPLETED, audit.status_reason
    [cell] = api_client.get(f"/api/audits/{audit.id}/parse-quality/").json()["results"]
    [completion] = api_client.get(f"/api/audits/{audit.id}/tables/completion/").json()["results"]
    # 1 to 60 per batch: 8 multiples of 7 left out, and 12 multiples of 5 hedged of which 35 is also left out.
    assert (cell["n_requests"], cell["n_unparseable"]) == (2, 2)
    assert (cell["n_units"], cell["n_units_answered"]) == (120, 2 * (60 - 8 - 11)) == (
        completion["n_asked"], completion["n_labelled"])
    assert cell["share_units_answered"] == pytest.approx(82 / 120)
    # A model launched without a label shows its name in the responses' model_label.
    responses = api_client.get(f"/api/audits/{audit.id}/responses/").json()["results"]
    assert {row["model_label"] for row in responses} == {"annotator-a"}


@pytest.mark.django_db(transaction=True)
@pytest.mark.integration
def test_the_classification_answer_order_is_a_recorded_setting_the_schema_follows(api_client, server, tasks_off):
    study = make_audit_study(6, n_examples=2)
    endpoint = make_endpoint(server, "order", structured_output="openai_json_schema")

    def body(**extra) -> dict:
        return {"name": "order", "study": study.id, "conditions": ["zs"], "n_resamples": 100,
                "models": [{"endpoint": endpoint.id, "model": "prose-a"}], "structured_output": True, **extra}

    keys = {}
    for order, first in (("label_first", "label"), ("explanation_first", "explanation")):
        audit = prepare_and_run(launch(api_client, body(answer_order=order)))
        assert audit.status == Audit.Status.COMPLETED, audit.status_reason
        assert audit.design["answer_order"] == audit.manifest["answer_order"] == order
        # "required" keeps its order in any database (PostgreSQL's jsonb sorts an object's keys).
        assert audit.manifest["structured_output"]["schema"]["required"][0] == first
        assert next(iter(registry.get("classification").answer_schema(audit)["properties"])) == first
        requests = AuditRequest.objects.filter(audit=audit)
        assert {row.outcome for row in requests} == {"label"}
        keys[order] = set(requests.values_list("key", flat=True))
    assert not keys["label_first"] & keys["explanation_first"]  # never each other's cached replies

    default = Audit.objects.get(pk=launch(api_client, body()))
    assert default.design["answer_order"] == DEFAULT_ANSWER_ORDER
    refused = api_client.post("/api/audits/", body(answer_order="label_last"), format="json")
    assert refused.status_code == 400 and "answer_order" in refused.json()
    # An audit recorded before the setting keeps the label first, so its requests still match their keys.
    legacy = Audit(paradigm="classification", design={"evaluation_set": {}})
    assert registry.get("classification").answer_schema(legacy) == CLASSIFICATION_SCHEMA


@pytest.mark.django_db(transaction=True)
@pytest.mark.integration
def test_the_shortest_answer_a_classification_schema_allows_is_a_label(api_client, schema_server, tasks_off):
    study = make_audit_study(8, n_examples=2)
    endpoint = make_endpoint(schema_server, "shortest", structured_output="openai_json_schema")
    audit = prepare_and_run(launch(api_client, {
        "name": "shortest", "study": study.id, "conditions": ["zs", "cot"], "n_resamples": 100,
        "models": [{"endpoint": endpoint.id, "model": "minimal-a"}], "structured_output": True}))
    assert audit.status == Audit.Status.COMPLETED, audit.status_reason
    requests = AuditRequest.objects.filter(audit=audit)
    assert requests.count() == 16 and {(row.outcome, row.label) for row in requests} == {("label", 0)}
