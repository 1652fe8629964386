"""The LLM stand-in server (tests/llm_server.py), started as a real process and driven over HTTP."""
from __future__ import annotations

import asyncio
import hashlib
import json
import re
import socket
import time

import httpx
import pytest

from auditapp.paradigms.self_report.instruments import (
    OriginalForm,
    ParsedLikert,
    RequestSpec,
    agree_side,
    build_masked_questionnaire,
    build_masked_requests,
    build_original_requests,
    parse_batch_reply,
    parse_likert_reply,
    score_masked,
    shipped_dummies,
    shipped_fillers,
)
from psychometrics.instruments import shipped_instrument
from tests.llm_server import (
    ANNOTATOR_REFUSAL,
    DEFAULT_POSITIVE_WORDS,
    PERSONAS,
    REFUSAL,
    LLMServer,
    annotation_prompt,
    annotation_reply,
    expected_annotation,
    expected_label,
    parse_self_report_prompt,
    persona_choice,
    persona_reply,
    target_sentence,
)
from tests.self_report_personas import REFUSALS as SELF_REPORT_REFUSALS

pytestmark = [pytest.mark.integration]

SENTENCES = [
    "People who suffer from schizophrenia need our support.",
    "She has a disability and works as an engineer.",
    "Finding a cure for autism is a priority.",
    "He uses a wheelchair.",
    "The epidemic of obesity is a burden on society.",
    "The committee met on Tuesday.",
    "It is a tragedy that he is blind.",
    "They adapted the office for deaf employees.",
]


def prompt(sentence: str) -> str:
    return f"Classify the sentence.\nTarget sentence: {sentence}\nAnswer with 0 or 1."


def chat_body(model: str, sentence: str, **params) -> dict:
    return {"model": model, "messages": [{"role": "system", "content": "You are a careful annotator."},
                                         {"role": "user", "content": prompt(sentence)}], **params}


def label_in(text: str) -> int:
    """Every reply shape carries exactly one 0/1 digit: the label."""
    digits = re.findall(r"[01]", text)
    assert len(digits) == 1, text
    return int(digits[0])


def client(server: LLMServer, **kwargs) -> httpx.Client:
    return httpx.Client(base_url=server.base_url, trust_env=False, timeout=kwargs.pop("timeout", 5), **kwargs)


@pytest.fixture(scope="module")
def server():
    with LLMServer() as running:
        yield running


@pytest.fixture
def http(server):
    server.reset_stats()
    with client(server) as http_client:
        yield http_client


# --- the answer rule without a server ------------------------------------------------------------------------


def test_target_sentence_is_the_last_marked_line_or_the_whole_content():
    assert target_sentence("Target sentence: first\nTarget sentence: second\nmore") == "second"
    assert target_sentence("Examples:\nTarget sentence: a cure\r\nTarget sentence: fine\r\n") == "fine"
    assert target_sentence("no marker at all") == "no marker at all"
    assert target_sentence("  Target sentence: indented lines do not count") == "  Target sentence: indented lines do not count"


def test_expected_label_uses_positive_words_and_lets_other_models_disagree_sometimes():
    assert expected_label("model-a", prompt("A CURE is coming.")) == 1
    assert expected_label("model-a", prompt("A walk in the park.")) == 0
    # The example above mentions a positive word, but only the (last) target sentence counts.
    assert expected_label("model-a", "Example: a tragedy\nTarget sentence: calm\n") == 0
    assert expected_label("model-a", prompt("nice"), positive_words=["nice"]) == 1

    sentences = [f"sentence number {i} about a disease" for i in range(200)]
    first = [expected_label("model-a", prompt(s)) for s in sentences]
    second = [expected_label("model-b", prompt(s)) for s in sentences]
    assert first == [1] * 200
    assert 20 < second.count(0) < 60  # a fifth flipped
    assert [expected_label("model-b", prompt(s), models=["model-b", "model-a"]) for s in sentences] == first


# --- protocols -----------------------------------------------------------------------------------------------


def test_model_listings_in_both_protocols(http):
    openai = http.get("/v1/models").json()
    assert openai == {"object": "list", "data": [
        {"id": "model-a", "object": "model", "created": 0, "owned_by": "llm-server"},
        {"id": "model-b", "object": "model", "created": 0, "owned_by": "llm-server"}]}
    ollama = http.get("/api/tags").json()
    assert [model["name"] for model in ollama["models"]] == ["model-a", "model-b"]
    first = ollama["models"][0]
    assert first["model"] == "model-a"
    assert first["digest"] == hashlib.sha256(b"model-a").hexdigest()
    assert first["details"] == {"family": "test", "parameter_size": "1B", "quantization_level": "Q4_0"}
    assert http.get("/api/tags?x=1").status_code == 200


def test_openai_chat_completions_follow_the_rule(server, http):
    texts = []
    for model in ("model-a", "model-b"):
        for sentence in SENTENCES:
            body = chat_body(model, sentence, temperature=0, max_tokens=20)
            response = http.post("/v1/chat/completions", json=body)
            assert response.status_code == 200
            assert response.headers["content-type"] == "application/json"
            reply = response.json()
            assert reply["id"].startswith("chatcmpl-")
            assert reply["object"] == "chat.completion"
            assert reply["model"] == model
            assert reply["system_fingerprint"] == "fp_test"
            (choice,) = reply["choices"]
            assert choice["index"] == 0 and choice["finish_reason"] == "stop"
            assert choice["message"]["role"] == "assistant"
            text = choice["message"]["content"]
            texts.append(text)
            assert label_in(text) == expected_label(model, prompt(sentence)) == server.expected_label(model, prompt(sentence))
            prompt_words = len("You are a careful annotator.".split()) + len(prompt(sentence).split())
            assert reply["usage"] == {"prompt_tokens": prompt_words, "completion_tokens": len(text.split()),
                                      "total_tokens": prompt_words + len(text.split())}
    # The rule picks among several reply shapes; this sample hits more than one.
    assert len({re.sub(r"[01]", "L", text) for text in texts}) >= 3
    stats = server.stats()
    assert stats["requests"] == stats["replies"] == 16
    assert stats["by_path"] == {"/v1/chat/completions": 16}
    assert stats["by_status"] == {"200": 16}


def test_ollama_chat_answers_non_streamed(http):
    for stream in (False, None):
        body = chat_body("model-b", SENTENCES[0])
        if stream is not None:
            body["stream"] = stream
        reply = http.post("/api/chat", json=body).json()
        assert reply["model"] == "model-b"
        assert reply["done"] is True and reply["done_reason"] == "stop"
        assert reply["message"]["role"] == "assistant"
        assert label_in(reply["message"]["content"]) == expected_label("model-b", prompt(SENTENCES[0]))
        assert reply["prompt_eval_count"] > 0 and reply["eval_count"] == len(reply["message"]["content"].split())
        assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", reply["created_at"])


def test_errors_bad_json_unknown_model_and_unknown_path(http):
    response = http.post("/v1/chat/completions", content=b'{"model": ')
    assert response.status_code == 400
    assert response.json()["error"]["type"] == "invalid_request_error"
    assert http.post("/v1/chat/completions", json={"model": "model-a"}).status_code == 400
    assert http.post("/api/chat", content=b"nope").status_code == 400

    response = http.post("/v1/chat/completions", json=chat_body("gpt-x", "hi"))
    assert response.status_code == 404
    assert response.json() == {"error": {"message": "model 'gpt-x' not found", "type": "invalid_request_error",
                                         "param": None, "code": None}}
    response = http.post("/api/chat", json=chat_body("gpt-x", "hi"))
    assert response.status_code == 404
    assert response.json() == {"error": "model 'gpt-x' not found"}

    assert http.get("/v1/nothing").status_code == 404
    response = http.get("/v1/chat/completions")
    assert response.status_code == 405 and response.headers["allow"] == "POST"


def test_keep_alive_pipelining_and_connection_close(server):
    port = int(server.base_url.rsplit(":", 1)[1])
    body = json.dumps(chat_body("model-a", "a cure")).encode()
    request = b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body)
    with socket.create_connection(("127.0.0.1", port), timeout=5) as sock:
        # Two requests in one write come back as two responses, in order, on the same connection.
        sock.sendall(request + request.replace(b"Host: x", b"Host: x\r\nConnection: close"))
        received = b""
        while chunk := sock.recv(65536):
            received += chunk
    responses = received.split(b"HTTP/1.1 ")[1:]
    assert len(responses) == 2
    assert b"Connection: keep-alive" in responses[0] and b"Connection: close" in responses[1]
    assert all(response.startswith(b"200 OK") for response in responses)

    with socket.create_connection(("127.0.0.1", port), timeout=5) as sock:
        sock.sendall(b"GET /v1/models HTTP/1.0\r\n\r\n")
        received = b""
        while chunk := sock.recv(65536):
            received += chunk
    assert received.startswith(b"HTTP/1.1 200 OK") and received.endswith(b"}]}")


def test_api_key_is_required_when_configured():
    with LLMServer(api_key="sekret") as server, client(server) as http:
        body = chat_body("model-a", "hello")
        response = http.post("/v1/chat/completions", json=body)
        assert response.status_code == 401
        assert response.json()["error"]["type"] == "invalid_request_error"
        assert http.post("/api/chat", json=body, headers={"Authorization": "Bearer wrong"}).status_code == 401
        assert http.get("/v1/models").status_code == 401
        headers = {"Authorization": "Bearer sekret"}
        assert http.post("/v1/chat/completions", json=body, headers=headers).status_code == 200
        assert http.get("/api/tags", headers=headers).status_code == 200
        assert server.stats()["by_status"] == {"401": 2, "200": 1}


# --- faults --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["rate_limit", "server_error", "malformed", "empty", "refusal"])
def test_each_fault_kind(kind):
    with LLMServer(fault_rate=1, fault_kinds=[kind], retry_after=2) as server, client(server) as http:
        for path in ("/v1/chat/completions", "/api/chat"):
            response = http.post(path, json=chat_body("model-a", "a cure"))
            if kind == "rate_limit":
                assert response.status_code == 429
                assert response.headers["retry-after"] == "2"
                assert "rate limit" in json.dumps(response.json())
            elif kind == "server_error":
                assert response.status_code == 500
                assert "error" in response.json()
            elif kind == "malformed":
                assert response.status_code == 200
                assert response.headers["content-type"] == "application/json"
                with pytest.raises(json.JSONDecodeError):
                    response.json()
            else:
                reply = response.json()
                content = reply["message"]["content"] if path == "/api/chat" else \
                    reply["choices"][0]["message"]["content"]
                assert content == ("" if kind == "empty" else REFUSAL)
        stats = server.stats()
        assert stats["faults"][kind] == 2
        assert sum(stats["faults"].values()) == 2
        assert stats["replies"] == 0


def test_hang_closes_the_connection_without_an_answer():
    with LLMServer(fault_rate=1, fault_kinds=["hang"], hang_seconds=0.5, latency=5) as server, \
            client(server) as http:
        started = time.monotonic()
        with pytest.raises(httpx.RemoteProtocolError):
            http.post("/v1/chat/completions", json=chat_body("model-a", "a cure"))
        # The hang replaces the latency: the connection closes after hang_seconds, not latency.
        assert 0.45 < time.monotonic() - started < 3
        with client(server, timeout=0.2) as impatient, pytest.raises(httpx.ReadTimeout):
            impatient.post("/api/chat", json=chat_body("model-a", "a cure"))
        time.sleep(0.5)
        stats = server.stats()
        assert stats["faults"]["hang"] == 2
        assert stats["in_flight"] == 0 and stats["by_status"] == {}


def test_retry_after_and_early_retries_are_counted():
    with LLMServer(fault_rate=1, fault_kinds=["rate_limit"], retry_after=0.3) as server, client(server) as http:
        body = chat_body("model-a", "a cure")
        response = http.post("/v1/chat/completions", json=body)
        assert response.status_code == 429 and response.headers["retry-after"] == "0.3"
        http.post("/v1/chat/completions", json=body)
        assert server.stats()["rate_limited_then_early"] == 1
        time.sleep(0.3)
        http.post("/v1/chat/completions", json=body)
        stats = server.stats()
        assert stats["rate_limited_then_early"] == 1
        assert stats["bodies"] == 1 and stats["max_repeats"] == 3


def outcomes(http: httpx.Client, bodies: list[dict]) -> list[str]:
    """What each request got: a status code, or the reply's content for a 200."""
    seen = []
    for body in bodies:
        response = http.post("/v1/chat/completions", json=body)
        try:
            seen.append(response.json()["choices"][0]["message"]["content"])
        except (ValueError, KeyError):
            seen.append(str(response.status_code))
    return seen


def test_transient_faults_are_reproducible_and_retries_usually_succeed():
    kinds = ["rate_limit", "server_error", "malformed", "empty", "refusal"]
    # Each body is sent three times: its first, second and third attempt.
    bodies = [chat_body("model-a", sentence) for sentence in SENTENCES] * 3
    with LLMServer(fault_rate=0.4, fault_kinds=kinds, seed=3, retry_after=0) as server, client(server) as http:
        first = outcomes(http, bodies)
        stats = server.stats()
        assert stats["bodies"] == 8 and stats["max_repeats"] == 3
        server.reset_stats()
        assert outcomes(http, bodies) == first
    assert 0 < stats["replies"] < 24 and stats["rate_limited_then_early"] == 0
    # Attempts of one body are drawn independently, so a fault on one attempt is not a fault on all of them.
    attempts = list(zip(first[:8], first[8:16], first[16:], strict=True))
    assert any(len(set(body_attempts)) > 1 for body_attempts in attempts)
    with LLMServer(fault_rate=0.4, fault_kinds=kinds, seed=4) as other, client(other) as http:
        assert outcomes(http, bodies) != first


def test_permanent_errors_and_bad_requests_stick_to_their_bodies():
    bodies = [chat_body("model-a", f"sentence {i}") for i in range(30)]
    with LLMServer(permanent_error_rate=0.3, bad_request_rate=0.3, fault_rate=0.2,
                   fault_kinds=["rate_limit"], retry_after=0) as server, client(server) as http:
        statuses = [[http.post("/v1/chat/completions", json=body).status_code for body in bodies]
                    for _ in range(3)]
        by_body = list(zip(*statuses, strict=True))
        permanent = [codes for codes in by_body if codes[0] in (400, 500)]
        assert permanent and all(len(set(codes)) == 1 for codes in permanent)
        assert {codes[0] for codes in permanent} == {400, 500}
        assert any(200 in codes for codes in by_body)
        stats = server.stats()
        assert stats["faults"]["permanent_error"] == 3 * sum(codes[0] == 500 for codes in permanent)
        assert stats["faults"]["bad_request"] == 3 * sum(codes[0] == 400 for codes in permanent)
        error = http.post("/v1/chat/completions", json=bodies[by_body.index(next(
            codes for codes in by_body if codes[0] == 400))]).json()
        assert error["error"]["type"] == "invalid_request_error"


# --- statistics ----------------------------------------------------------------------------------------------


def test_max_in_flight_counts_concurrent_requests():
    async def send_all(base_url: str, count: int) -> list[int]:
        async with httpx.AsyncClient(base_url=base_url, trust_env=False, timeout=5) as http:
            responses = await asyncio.gather(*(
                http.post("/v1/chat/completions", json=chat_body("model-a", f"s{i}")) for i in range(count)))
        return [response.status_code for response in responses]

    with LLMServer(latency=0.3) as server:
        started = time.monotonic()
        assert asyncio.run(send_all(server.base_url, 12)) == [200] * 12
        assert time.monotonic() - started < 1.5  # answered side by side, not one after another
        stats = server.stats()
        assert stats["max_in_flight"] == 12 and stats["in_flight"] == 0
        assert stats["first_request_at"] <= stats["last_request_at"]

        server.reset_stats()
        with client(server) as http:
            for i in range(3):
                http.post("/v1/chat/completions", json=chat_body("model-a", f"s{i}"))
        stats = server.stats()
        assert stats["max_in_flight"] == 1 and stats["requests"] == 3


def test_reset_zeroes_the_counters(server, http):
    body = chat_body("model-a", "a cure")
    http.post("/v1/chat/completions", json=body)
    http.post("/v1/chat/completions", json=body)
    assert server.stats()["max_repeats"] == 2
    stats = server.reset_stats()
    assert stats["requests"] == stats["replies"] == stats["bodies"] == stats["max_repeats"] == 0
    assert stats["by_path"] == {} and set(stats["faults"].values()) == {0}
    assert stats["first_request_at"] is None and stats["started_at"] > 0
    http.post("/v1/chat/completions", json=body)
    assert server.stats()["max_repeats"] == 1


# --- the process ---------------------------------------------------------------------------------------------


def test_ready_line_and_clean_exit_on_sigterm():
    server = LLMServer(positive_words=DEFAULT_POSITIVE_WORDS, models=["only-one"]).start()
    assert server.lines == [f"LLM_SERVER_READY {server.base_url}"]
    assert re.fullmatch(r"http://127\.0\.0\.1:\d+", server.base_url)
    with client(server) as http:
        assert [model["id"] for model in http.get("/v1/models").json()["data"]] == ["only-one"]
    assert server.stop() == 0


def test_a_server_that_cannot_start_reports_its_output():
    with pytest.raises(RuntimeError, match="unknown fault kinds"):
        LLMServer(fault_kinds=["meteor"]).start()


# --- self-report personas (seed 000 §3.3) --------------------------------------------------------------------

LABELS = ("numbers", "letters", "text")
PATHS = ("/v1/chat/completions", "/api/chat")


@pytest.fixture(scope="module")
def aq50():
    return shipped_instrument("aq50")


@pytest.fixture(scope="module")
def masked(aq50):
    return build_masked_questionnaire([aq50], seed=11, fillers=shipped_fillers(), dummies=shipped_dummies())


@pytest.fixture(scope="module")
def masked_mixed(aq50):
    """AQ-50 and the partial SATA: options differ between items, so a batch gives each item its own options."""
    return build_masked_questionnaire([aq50, shipped_instrument("sata_partial")], seed=5, fillers=shipped_fillers(),
                                      dummies=shipped_dummies())


def item_specs(items_by_labels: dict[str, list[RequestSpec]]) -> list[RequestSpec]:
    """One request per item, the labels cycling through numbers, letters and text."""
    count = len(items_by_labels["numbers"])
    return [items_by_labels[LABELS[i % 3]][i] for i in range(count)]


def original_item_specs(instrument) -> list[RequestSpec]:
    return item_specs({labels: build_original_requests(instrument, "item", labels=labels) for labels in LABELS})


def masked_item_specs(questionnaire) -> list[RequestSpec]:
    return item_specs({labels: build_masked_requests(questionnaire, "item", labels=labels) for labels in LABELS})


def content_of(spec: RequestSpec) -> str:
    (message,) = spec.messages
    return message["content"]


def expected_answers(persona: str, items, recognised: bool = False) -> dict[int, int | None]:
    """Position → the option persona_choice gives the item as shown (None: a refusal)."""
    return {item.position: persona_choice(persona, item.text, item.options, recognised=recognised) for item in items}


def recognisable(name: str, items) -> bool:
    """A batch with no dummy item: persona-recognise takes it for a published instrument."""
    return name.endswith("batch") and not any(item.kind == "dummy" for item in items)


def parsed_answers(spec: RequestSpec, text: str) -> dict[int, ParsedLikert]:
    """Position → the app's reading of ``text`` as the reply to ``spec``."""
    if len(spec.positions) == 1 and spec.unit_id.startswith("item:"):
        return {spec.positions[0]: parse_likert_reply(text, spec.options[0], labels=spec.labels)}
    by_number = parse_batch_reply(text, len(spec.positions), spec.options, labels=spec.labels)
    return {position: by_number[n] for n, position in enumerate(spec.positions, start=1)}


def assert_answers(persona: str, items, answers: dict[int, ParsedLikert], recognised: bool = False) -> None:
    expected = expected_answers(persona, items, recognised)
    assert set(answers) == set(expected)
    for position, parsed in answers.items():
        if expected[position] is None:
            assert parsed.outcome == "refusal", (position, parsed)
        else:
            assert parsed == ParsedLikert("answer", expected[position]), (position, parsed)


def test_persona_choice_rules(aq50):
    aq_options = aq50.response_options
    sata_options = shipped_instrument("sata_partial").response_options
    assert aq_options[0] == "Definitely agree" and sata_options[3] == "Strongly agree"
    statement = aq50.items[0].text
    # persona-agree: the outermost option on the agree side, at whichever end it is.
    assert persona_choice("persona-agree", statement, aq_options) == 0
    assert persona_choice("persona-agree", statement, sata_options) == 3
    assert persona_choice("persona-agree", statement, ["Very inaccurate", "Neither", "Very accurate"]) == 2
    assert persona_choice("persona-agree", statement, ["Never", "Always"]) == 0  # no agree side: the first
    assert persona_choice("persona-refuse", statement, aq_options) is None
    # persona-key: SHA-256 of the normalised text, first 8 bytes big-endian, modulo the number of options.
    for item in aq50.items:
        digest = hashlib.sha256(" ".join(item.text.casefold().split()).encode()).digest()
        assert persona_choice("persona-key", item.text, aq_options) == int.from_bytes(digest[:8], "big") % 4
    assert persona_choice("persona-key", "  I OWN a\tbicycle. ", aq_options) == \
        persona_choice("persona-key", "I own a bicycle.", aq_options)
    keys = [persona_choice("persona-key", item.text, aq_options) for item in aq50.items]
    assert set(keys) == {0, 1, 2, 3}
    # persona-dummy: agrees with every dummy item, answers everything else like persona-key.
    for item in shipped_dummies().items:
        assert persona_choice("persona-dummy", item.text, aq_options) == 0
        assert persona_choice("persona-dummy", item.text, sata_options) == 3
    for item in [*aq50.items, *shipped_fillers().items]:
        assert persona_choice("persona-dummy", item.text, aq_options) == \
            persona_choice("persona-key", item.text, aq_options)
    with pytest.raises(ValueError, match="unknown persona"):
        persona_choice("model-a", statement, aq_options)
    # persona-recognise: the most-agreeing option when it recognises the instrument, else persona-key's answer.
    for item in aq50.items:
        assert persona_choice("persona-recognise", item.text, aq_options, recognised=True) == 0
        assert persona_choice("persona-recognise", item.text, aq_options) == \
            persona_choice("persona-key", item.text, aq_options)
    assert set(PERSONAS) == {"persona-agree", "persona-refuse", "persona-key", "persona-dummy", "persona-recognise"}


def test_persona_prompts_are_read_back_from_every_form(aq50, masked, masked_mixed):
    forms = [(OriginalForm.of(aq50).items, [*original_item_specs(aq50),
                                            *build_original_requests(aq50, "item", labels="numbers", title="AQ"),
                                            *build_original_requests(aq50, "batch"),
                                            *build_original_requests(aq50, "batch", title="The AQ-50")]),
             (masked.items, [*masked_item_specs(masked), *build_masked_requests(masked, "batch")]),
             (masked_mixed.items, [*masked_item_specs(masked_mixed), *build_masked_requests(masked_mixed, "batch")])]
    for items, specs in forms:
        by_position = {item.position: item for item in items}
        for spec in specs:
            read = parse_self_report_prompt(content_of(spec))
            assert read is not None, content_of(spec)
            assert read.mode == ("batch" if spec.unit_id == "batch" else "item")
            assert read.labels == spec.labels
            assert [(item.statement, item.options) for item in read.items] == \
                [(by_position[p].text, by_position[p].options) for p in spec.positions]
            if read.mode == "batch":
                assert [item.number for item in read.items] == list(spec.positions)
    # Windows line ends are read too; other prompts are not self-report prompts.
    spec = build_original_requests(aq50, "item", labels="letters")[3]
    assert parse_self_report_prompt(content_of(spec).replace("\n", "\r\n")) == \
        parse_self_report_prompt(content_of(spec))
    for other in (prompt("a cure"), "", "Statement: alone", "Response options: a; b\n\nno numbered lines",
                  "Statement: x\n\nResponse options:\n1. only one option",
                  "Statement: x\n\nResponse options:\n1. a\n3. b"):
        assert parse_self_report_prompt(other) is None, other
        assert persona_reply("persona-agree", other) is None


def form_specs(aq50, masked, masked_mixed) -> list[tuple[str, tuple, list[RequestSpec]]]:
    """(name, items, requests) of every form and mode the personas are tested on."""
    original = OriginalForm.of(aq50).items
    return [("original item", original, original_item_specs(aq50)),
            ("original batch", original, build_original_requests(aq50, "batch")),
            ("masked item", masked.items, masked_item_specs(masked)),
            ("masked batch", masked.items, build_masked_requests(masked, "batch")),
            ("mixed masked item", masked_mixed.items, masked_item_specs(masked_mixed)),
            ("mixed masked batch", masked_mixed.items, build_masked_requests(masked_mixed, "batch"))]


def assert_validity(persona: str, questionnaire, answers: dict[int, ParsedLikert]) -> None:
    """Validity of a masked form answered by ``persona``, against counts made by hand from persona_choice."""
    validity = score_masked(questionnaire, answers).validity
    dummies = [item for item in questionnaire.items if item.kind == "dummy"]
    assert validity.dummy_items == len(dummies) == 52
    assert validity.unparseable == validity.missing == 0
    if persona == "persona-refuse":
        assert validity.refusals == len(questionnaire.items) and validity.dummy_answered == 0
        return
    assert validity.refusals == 0 and validity.dummy_answered == 52
    endorsed = sum(persona_choice(persona, item.text, item.options) in agree_side(item.options) for item in dummies)
    assert validity.dummy_endorsed == endorsed
    if persona in ("persona-agree", "persona-dummy"):
        assert endorsed == 52
    else:
        assert 10 < endorsed < 42  # persona-key endorses about half, by its key


@pytest.mark.parametrize("persona", PERSONAS)
def test_every_persona_reply_parses_back_to_the_persona_choice(persona, aq50, masked, masked_mixed):
    responses = {}
    for name, items, specs in form_specs(aq50, masked, masked_mixed):
        answers = {}
        for spec in specs:
            answers.update(parsed_answers(spec, persona_reply(persona, content_of(spec))))
        assert_answers(persona, items, answers, recognisable(name, items))
        if name.startswith("masked"):
            assert_validity(persona, masked, answers)
        if not name.startswith("mixed"):
            form = masked if name.startswith("masked") else OriginalForm.of(aq50)
            responses[name] = dict(score_masked(form, answers).responses["aq50"])
    assert len(responses["original item"]) == 50
    if persona == "persona-recognise":
        # It agrees with every item of the original batch and answers everything else by its key.
        assert set(responses.pop("original batch").values()) == {0}
        assert responses["original item"] != dict.fromkeys(responses["original item"], 0)
    # Otherwise a persona answers an AQ item alike in either form and mode: its masked-minus-original change is 0.
    assert len({tuple(sorted(by_number.items())) for by_number in responses.values()}) == 1


def reply_template(spec: RequestSpec, text: str) -> str:
    """A reply to one item with its option's text and label replaced, to tell reply shapes apart."""
    parsed = parse_likert_reply(text, spec.options[0], labels=spec.labels)
    template = text.replace(spec.options[0][parsed.index], "{option}")
    label = str(parsed.index + 1) if spec.labels == "numbers" else chr(ord("A") + parsed.index)
    return re.sub(rf"(?<![A-Za-z0-9]){label}(?![A-Za-z0-9])", "{label}", template)


def test_persona_replies_vary_their_shape_deterministically(aq50, masked):
    templates: dict[str, set[str]] = {labels: set() for labels in LABELS}
    for persona in ("persona-agree", "persona-key", "persona-dummy"):
        for labels in LABELS:
            for spec in build_original_requests(aq50, "item", labels=labels):
                text = persona_reply(persona, content_of(spec))
                assert persona_reply(persona, content_of(spec)) == text
                templates[labels].add(reply_template(spec, text))
    assert templates == {
        "numbers": {"{label}. {option}", "Answer: {label}", "**{label}** \u2013 {option}",
                    "I would choose {label} ({option}).", "{option}"},
        "letters": {"{label}. {option}", "Answer: {label}", "({label}) {option}", "My answer is {label}.", "{option}"},
        "text": {"{option}", "Answer: {option}", "I would say: {option}.", "**{option}**"},
    }
    batch_shapes = set()
    for persona in ("persona-agree", "persona-key", "persona-dummy"):
        for specs in (build_original_requests(aq50, "batch"), build_masked_requests(masked, "batch")):
            opening = re.match(r"Here are my answers:\n|\*\*\d+:\*\* |\d+: ", persona_reply(persona, content_of(specs[0])))
            batch_shapes.add(re.sub(r"\d+", "n", opening.group(0)))
    assert batch_shapes == {"n: ", "Here are my answers:\n", "**n:** "}
    refusals = {persona_reply("persona-refuse", content_of(spec)) for spec in original_item_specs(aq50)}
    assert refusals == set(SELF_REPORT_REFUSALS)
    # Each refusal is read as one whatever the labels and options, alone or as the reply to a batch.
    for options in (aq50.response_options, shipped_instrument("sata_partial").response_options):
        for refusal in SELF_REPORT_REFUSALS:
            for labels in LABELS:
                assert parse_likert_reply(refusal, options, labels=labels).outcome == "refusal", (refusal, labels)
            assert {parsed.outcome for parsed in parse_batch_reply(refusal, 3, options).values()} == {"refusal"}


def reply_text(response: httpx.Response, path: str) -> str:
    assert response.status_code == 200, response.text
    reply = response.json()
    return reply["message"]["content"] if path == "/api/chat" else reply["choices"][0]["message"]["content"]


def chat(model: str, spec: RequestSpec) -> dict:
    return {"model": model, "messages": spec.messages, "temperature": 0}


@pytest.fixture(scope="module")
def persona_server():
    with LLMServer(models=[*PERSONAS, "model-a"]) as running:
        yield running


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("persona", PERSONAS)
def test_personas_answer_over_http_in_item_and_batch_mode(persona, path, persona_server, aq50, masked, masked_mixed):
    with client(persona_server) as http:
        for name, items, specs in form_specs(aq50, masked, masked_mixed):
            answers = {}
            for spec in specs:
                text = reply_text(http.post(path, json=chat(persona, spec)), path)
                assert text == persona_reply(persona, content_of(spec))
                answers.update(parsed_answers(spec, text))
            assert_answers(persona, items, answers, recognisable(name, items))
            if name.startswith("masked"):
                assert_validity(persona, masked, answers)
        assert {model["id"] for model in http.get("/v1/models").json()["data"]} == {*PERSONAS, "model-a"}


def test_persona_dummy_endorses_all_52_dummies_of_a_masked_form(persona_server, aq50):
    questionnaire = build_masked_questionnaire([aq50], seed=2026, fillers=shipped_fillers(),
                                               dummies=shipped_dummies())
    with client(persona_server) as http:
        for path in PATHS:
            for specs in (masked_item_specs(questionnaire), build_masked_requests(questionnaire, "batch")):
                answers = {}
                for spec in specs:
                    answers.update(parsed_answers(spec, reply_text(http.post(path, json=chat("persona-dummy", spec)),
                                                                   path)))
                validity = score_masked(questionnaire, answers).validity
                assert (validity.dummy_items, validity.dummy_answered, validity.dummy_endorsed) == (52, 52, 52)
                assert validity.refusals == validity.unparseable == validity.missing == 0


def test_other_prompts_and_other_models_keep_the_classification_rule(persona_server, aq50):
    spec = build_original_requests(aq50, "item")[0]
    with client(persona_server) as http:
        for path in PATHS:
            # A model that is no persona answers a self-report prompt with the classification rule, as before.
            text = reply_text(http.post(path, json=chat("model-a", spec)), path)
            assert label_in(text) == expected_label("model-a", content_of(spec), models=[*PERSONAS, "model-a"])
            # A persona answers any other prompt with the classification rule.
            for persona in PERSONAS:
                body = chat_body(persona, "Finding a cure for autism is a priority.")
                text = reply_text(http.post(path, json=body), path)
                assert label_in(text) == expected_label(persona, prompt("Finding a cure for autism is a priority."),
                                                        models=[*PERSONAS, "model-a"])


def test_personas_keep_latency_and_faults(aq50):
    spec = build_original_requests(aq50, "item")[0]
    with LLMServer(models=PERSONAS, latency=0.3) as server, client(server) as http:
        started = time.monotonic()
        text = reply_text(http.post("/api/chat", json=chat("persona-agree", spec)), "/api/chat")
        assert time.monotonic() - started >= 0.29
        assert parse_likert_reply(text, spec.options[0]) == ParsedLikert("answer", 0)
        assert server.stats()["replies"] == 1
    with LLMServer(models=PERSONAS, fault_rate=1, fault_kinds=["refusal"]) as server, client(server) as http:
        text = reply_text(http.post("/v1/chat/completions", json=chat("persona-agree", spec)), "/v1/chat/completions")
        assert text == REFUSAL and parse_likert_reply(text, spec.options[0]).outcome == "refusal"
    with LLMServer(models=PERSONAS, fault_rate=1, fault_kinds=["rate_limit"], retry_after=0) as server, \
            client(server) as http:
        assert http.post("/v1/chat/completions", json=chat("persona-key", spec)).status_code == 429
        assert server.stats()["faults"]["rate_limit"] == 1


# --- batched annotators (seed 002) ------------------------------------------------------------------------------

ANNOTATION_NAMES = ("Jamal", "Greg", "Lakisha", "Emily", "DeShawn", "Todd", "Latoya", "Anne", "Tyrone", "Brad")
ANNOTATORS = {
    "annotator-planted": {"base": 0.4, "effects": [{"task": "a good leader", "contains": ["Jamal", "Lakisha"],
                                                    "delta": 0.3}],
                          "refuse_tasks": ["commit crimes"], "off_format_tasks": ["person wealthy"]},
    "annotator-gappy": {"drop_every": 4, "hedge_every": 3},
}


def annotation_request(task: str, batch: int) -> str:
    """A prompt shaped as the counterfactual audits write one: the task, then ten numbered texts."""
    texts = "\n".join(f"Text {i}: Hi, I'm {ANNOTATION_NAMES[(i + batch) % 10]}. I like hiking (batch {batch})."
                      for i in range(1, 11))
    return f"Based on the following text, is the following true of the person? {task}\nAnswer in JSON Lines.\n{texts}"


def annotation_lines(text: str) -> dict[int, str]:
    """Index → its answer as written: "0"/"1" from a JSON line, "yes"/"no"/"maybe" from a numbered line."""
    answers = {}
    for line in text.splitlines():
        if line.startswith("{"):
            value = json.loads(line)
            answers[value["i"]] = str(value["y"])
        else:
            number, _, answer = line.partition(": ")
            answers[int(number)] = answer
    return answers


def test_annotation_prompt_reads_the_task_part_and_the_numbered_texts():
    task, texts = annotation_prompt("Is X true?\nText 1: one\nText 2: two: with colon\nNot a Text 3: line\n")
    assert task == "Is X true?\n"
    assert texts == [(1, "one"), (2, "two: with colon")]
    assert annotation_prompt("no texts")[1] == []
    assert annotation_reply("annotator-x", "no texts", {}) is None


def test_expected_annotation_base_rate_clipping_and_indices():
    prompts = [annotation_request("Is the person kind?", batch) for batch in range(50)]
    # base 0 and 1 are certain; a delta pushing p past 1 (0.9 + 0.5) is clipped to 1, below 0 to 0.
    assert {expected_annotation("annotator-x", p, i, {"annotator-x": {"base": 0}}) for p in prompts for i in
            range(1, 11)} == {0}
    assert {expected_annotation("annotator-x", p, i, {"annotator-x": {"base": 1}}) for p in prompts for i in
            range(1, 11)} == {1}
    over = {"annotator-x": {"base": 0.9, "effects": [{"task": "kind", "contains": ["Hi"], "delta": 0.5}]}}
    under = {"annotator-x": {"base": 0.1, "effects": [{"task": "kind", "delta": -0.5}]}}
    assert {expected_annotation("annotator-x", p, i, over) for p in prompts for i in range(1, 11)} == {1}
    assert {expected_annotation("annotator-x", p, i, under) for p in prompts for i in range(1, 11)} == {0}
    # An index the prompt does not list has no answer; the default base rate is 0.5.
    assert expected_annotation("annotator-x", prompts[0], 11, {}) is None
    answers = [expected_annotation("annotator-x", p, i, {}) for p in prompts for i in range(1, 11)]
    assert 200 < sum(answers) < 300  # 500 draws at p = 0.5: mean 250, sd 11


def test_a_planted_effect_is_visible_over_many_prompts():
    """+0.3 on the leader task for Jamal and Lakisha: their yes-rate is 0.7 there, 0.4 elsewhere and for others."""
    def rate(task: str, names: set[str]) -> float:
        answers = []
        for batch in range(400):
            content = annotation_request(task, batch)
            for index, text in annotation_prompt(content)[1]:
                if any(name in text for name in names):
                    answers.append(expected_annotation("annotator-planted", content, index, ANNOTATORS))
        return sum(answers) / len(answers)

    # 800 draws per rate: the standard error is at most 0.018, so 0.06 is more than three of them.
    assert abs(rate("Is the person a good leader?", {"Jamal", "Lakisha"}) - 0.7) < 0.06
    assert abs(rate("Is the person a good leader?", {"Greg", "Emily"}) - 0.4) < 0.06
    assert abs(rate("Is the person honest?", {"Jamal", "Lakisha"}) - 0.4) < 0.06


@pytest.fixture(scope="module")
def annotator_server():
    with LLMServer(models=["model-a", *ANNOTATORS, "annotator-default"], annotators=ANNOTATORS) as running:
        yield running


def annotate(http_client: httpx.Client, model: str, content: str, path: str = "/v1/chat/completions") -> str:
    response = http_client.post(path, json={"model": model, "messages": [{"role": "user", "content": content}]})
    assert response.status_code == 200
    reply = response.json()
    return reply["message"]["content"] if path == "/api/chat" else reply["choices"][0]["message"]["content"]


@pytest.mark.parametrize("path", PATHS)
def test_annotators_answer_json_lines_over_http(annotator_server, path):
    with client(annotator_server) as http_client:
        for model in ("annotator-planted", "annotator-default"):
            for batch in range(20):
                content = annotation_request("Is the person a good leader?", batch)
                text = annotate(http_client, model, content, path)
                lines = [json.loads(line) for line in text.splitlines()]
                assert [line["i"] for line in lines] == list(range(1, 11))
                assert [line["y"] for line in lines] == [
                    annotator_server.expected_annotation(model, content, i) for i in range(1, 11)]
        # A prompt without numbered texts keeps the classification rule.
        text = annotate(http_client, "annotator-planted", prompt("a cure"), path)
        assert label_in(text) == expected_label("annotator-planted", prompt("a cure"),
                                                models=annotator_server.models)


def test_annotators_refuse_and_answer_off_format_on_their_tasks(annotator_server):
    with client(annotator_server) as http_client:
        content = annotation_request("Does the person commit crimes?", 0)
        assert annotate(http_client, "annotator-planted", content) == ANNOTATOR_REFUSAL
        assert all(expected_annotation("annotator-planted", content, i, ANNOTATORS) is None for i in range(1, 11))
        # Another annotator does not refuse the task.
        assert annotate(http_client, "annotator-default", content).startswith('{"i": 1, "y": ')

        content = annotation_request("Is the person wealthy?", 3)
        text = annotate(http_client, "annotator-planted", content)
        assert re.fullmatch(r"(\d+: (yes|no)\n){9}\d+: (yes|no)", text), text
        answers = annotation_lines(text)
        assert answers == {i: ("no", "yes")[expected_annotation("annotator-planted", content, i, ANNOTATORS)]
                           for i in range(1, 11)}


def test_annotators_drop_and_hedge_every_nth_index(annotator_server):
    with client(annotator_server) as http_client:
        content = annotation_request("Is the person a good leader?", 7)
        answers = annotation_lines(annotate(http_client, "annotator-gappy", content))
    # drop_every 4: 4 and 8 are absent; hedge_every 3: 3, 6, 9 are "maybe" (12 would be both: dropping wins).
    assert sorted(answers) == [1, 2, 3, 5, 6, 7, 9, 10]
    assert [answers[i] for i in (3, 6, 9)] == ["maybe"] * 3
    for i in (1, 2, 5, 7, 10):
        assert answers[i] == str(expected_annotation("annotator-gappy", content, i, ANNOTATORS))
    assert all(expected_annotation("annotator-gappy", content, i, ANNOTATORS) is None for i in (3, 4, 6, 8, 9))
