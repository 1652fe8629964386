"""llm_clients: payloads, reply parsing, the retry and failure policy, model listing.

The policy is tested against an aiohttp server in the test's own event loop on 127.0.0.1, answering with
scripted replies (written as ``httpx.Response`` objects, a convenient way to spell status, headers and
body); the last tests use a threaded HTTP/1.1 server of the standard library.
"""
from __future__ import annotations

import asyncio
import json
import random
import threading
import time
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import httpx
import pytest
from aiohttp import web
from aiohttp.test_utils import TestServer

from auditapp.llm_clients import (
    Completion,
    EndpointConfig,
    EndpointError,
    MalformedReply,
    ModelInfo,
    chat_params_problems,
    chat_payload,
    chat_session,
    list_models_sync,
    parse_chat_reply,
    retry_after_seconds,
    send_chat,
)
from auditapp.llm_limits import LocalLimiter
from tests.integration.support import free_port

MESSAGES = [{"role": "system", "content": "Label the sentence."}, {"role": "user", "content": "A sentence."}]


def openai_reply(text: str | None = "1", **extra) -> dict:
    return {"id": "chatcmpl-1", "object": "chat.completion", "model": "gpt-4o-2024-08-06",
            "system_fingerprint": "fp_abc", "choices": [
                {"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 21, "completion_tokens": 1, "total_tokens": 22}, **extra}


def ollama_reply(text: str = "0") -> dict:
    return {"model": "llama3.1:8b", "created_at": "2025-01-01T00:00:00Z", "done": True, "done_reason": "stop",
            "message": {"role": "assistant", "content": text}, "prompt_eval_count": 30, "eval_count": 2}


class FakeLimiter:
    """Records how send_chat uses a limiter: slots held, outcomes reported."""

    def __init__(self):
        self.held = self.slots = 0
        self.events: list[str] = []

    def slot(self):
        limiter = self

        class Slot:
            async def __aenter__(self):
                limiter.held += 1
                limiter.slots += 1

            async def __aexit__(self, *exc_info):
                limiter.held -= 1

        return Slot()

    async def throttled(self):
        self.events.append("throttled")

    async def succeeded(self):
        self.events.append("succeeded")

    async def current_limit(self):
        return 1

    async def aclose(self):
        return None


def config(protocol="openai", **overrides) -> EndpointConfig:
    values = {"base_url": "http://llm.test", "api_key": None, "backoff_base": 0.001, "backoff_cap": 0.01,
              "attempt_timeout": 5.0, "deadline": 20.0, "max_attempts": 5}
    return EndpointConfig(protocol=protocol, **{**values, **overrides})


DROP = "drop the connection"


@dataclass(frozen=True)
class SeenRequest:
    method: str
    path: str
    headers: dict
    content: bytes


def _as_web_response(response: httpx.Response) -> web.Response:
    headers = {name: value for name, value in response.headers.items()
               if name.lower() not in ("content-length", "transfer-encoding")}
    return web.Response(status=response.status_code, body=response.content, headers=headers)


async def serve(handler):
    """An aiohttp server on 127.0.0.1 in this event loop; ``handler(SeenRequest)`` returns an httpx.Response,
    DROP (the connection is closed without a reply) or, as a coroutine, never returns (a hang)."""
    seen: list[SeenRequest] = []

    async def answer(request: web.Request) -> web.StreamResponse:
        seen.append(SeenRequest(request.method, request.path, dict(request.headers), await request.read()))
        reply = handler(seen[-1])
        if asyncio.iscoroutine(reply):
            reply = await reply
        if reply is DROP:
            request.transport.close()
            raise ConnectionResetError
        return _as_web_response(reply)

    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", answer)
    server = TestServer(app, host="127.0.0.1", handler_cancellation=True)
    await server.start_server()
    return server, seen


def on_server(endpoint: EndpointConfig, server: TestServer) -> EndpointConfig:
    """The endpoint with its scheme and host replaced by the test server's (its path kept)."""
    path = httpx.URL(endpoint.base_url).raw_path.decode().rstrip("/")
    return replace(endpoint, base_url=str(server.make_url("")).rstrip("/") + path)


def send(handler, endpoint: EndpointConfig, *, limiter=None, params=None, seed=0, on_retry=None):
    """send_chat to a server answering with ``handler``; returns the result and the requests the server saw."""
    async def main():
        server, seen = await serve(handler)
        try:
            async with chat_session(4) as session:
                result = await send_chat(session, on_server(endpoint, server), limiter or FakeLimiter(),
                                         "some-model", MESSAGES, params or {}, rng=random.Random(seed),
                                         on_retry=on_retry)
        finally:
            await server.close()
        return result, seen

    return asyncio.run(main())


def replies(*responses):
    """A handler answering with the given responses in turn (the last one repeats)."""
    queue = list(responses)

    def handler(request):
        return queue.pop(0) if len(queue) > 1 else queue[0]

    return handler


# --- payloads and URLs ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(("params", "problems"), [
    ({}, []),
    ({"temperature": 0, "top_p": 0.9, "max_tokens": 64, "seed": -3, "stop": ["\n"], "logit_bias": {"50256": -100}},
     []),
    ({"stop": "END", "top_k": 40, "num_ctx": 4096, "repeat_penalty": 1.1}, []),
    ({"max_tokens": {"a": 1}}, ['max_tokens must be a whole number of at least 1, not {"a": 1}']),
    ({"max_tokens": 0}, ["max_tokens must be a whole number of at least 1, not 0"]),
    ({"max_tokens": 64.0}, ["max_tokens must be a whole number of at least 1, not 64.0"]),
    ({"temperature": "hot", "seed": True}, ['temperature must be a number, not "hot"',
                                            "seed must be a whole number, not true"]),
    ({"temperature": float("nan")}, ["temperature must be a number, not NaN"]),
    ({"top_p": 1.5}, ["top_p must be a number between 0 and 1, not 1.5"]),
    ({"stop": ["a", 1]}, ['stop must be a string or a list of strings, not ["a", 1]']),
    ([], ["generation parameters are a JSON object, not list"]),
])
def test_chat_params_problems_name_each_parameter_of_the_wrong_type(params, problems):
    assert chat_params_problems(params) == problems


def test_openai_payload_without_params_sends_only_model_and_messages():
    assert chat_payload("openai", "m", MESSAGES, {}) == ("/v1/chat/completions", {"model": "m", "messages": MESSAGES})


def test_openai_payload_puts_params_at_the_top_level():
    params = {"temperature": 0, "top_p": 1, "max_tokens": 64, "seed": 7}
    _, body = chat_payload("openai", "m", MESSAGES, params)
    assert body == {"model": "m", "messages": MESSAGES, "temperature": 0, "top_p": 1, "max_tokens": 64, "seed": 7}


def test_ollama_payload_never_streams_and_puts_params_under_options_with_ollama_names():
    path, body = chat_payload("ollama", "llama3.1:8b", MESSAGES,
                              {"temperature": 0.2, "top_p": 0.9, "seed": 7, "max_tokens": 64})
    assert path == "/api/chat"
    assert body == {"model": "llama3.1:8b", "messages": MESSAGES, "stream": False,
                    "options": {"temperature": 0.2, "top_p": 0.9, "seed": 7, "num_predict": 64}}


def test_ollama_payload_without_params_has_no_options():
    assert chat_payload("ollama", "m", MESSAGES, {})[1] == {"model": "m", "messages": MESSAGES, "stream": False}


@pytest.mark.parametrize(("protocol", "params", "message"), [
    ("openai", {"model": "other"}, r"may not set \['model'\]"),
    ("openai", {"stream": True}, r"may not set \['stream'\]"),
    ("ollama", {"max_tokens": 5, "num_predict": 6},
     r"name the same Ollama option twice: \['max_tokens', 'num_predict'\]"),
])
def test_payload_refuses_params_that_clash(protocol, params, message):
    with pytest.raises(ValueError, match=message):
        chat_payload(protocol, "m", MESSAGES, params)


@pytest.mark.parametrize(("protocol", "base_url", "url"), [
    ("openai", "http://127.0.0.1:8000", "http://127.0.0.1:8000/v1/chat/completions"),
    ("openai", "http://127.0.0.1:8000/", "http://127.0.0.1:8000/v1/chat/completions"),
    ("openai", "https://api.openai.com/v1", "https://api.openai.com/v1/chat/completions"),
    ("openai", "https://api.openai.com/v1/", "https://api.openai.com/v1/chat/completions"),
    ("openai", "https://openrouter.ai/api", "https://openrouter.ai/api/v1/chat/completions"),
    ("ollama", "http://127.0.0.1:11434", "http://127.0.0.1:11434/api/chat"),
])
def test_chat_url_appends_v1_unless_the_base_ends_with_it(protocol, base_url, url):
    endpoint = EndpointConfig(protocol=protocol, base_url=base_url, api_key=None)
    assert endpoint.url(chat_payload(protocol, "m", MESSAGES, {})[0]) == url


def test_endpoint_config_keeps_the_api_key_out_of_its_repr_and_checks_itself():
    assert "sk-secret" not in repr(EndpointConfig("openai", "http://llm.test", "sk-secret"))
    with pytest.raises(ValueError, match="unknown protocol"):
        EndpointConfig("anthropic", "http://llm.test", None)
    with pytest.raises(ValueError, match="max_attempts must be at least 1"):
        EndpointConfig("openai", "http://llm.test", None, max_attempts=0)


# --- parsing replies --------------------------------------------------------------------------------------------


def test_parse_openai_reply():
    completion = parse_chat_reply("openai", json.dumps(openai_reply("  1 – ableist\n")).encode())
    assert completion == Completion(text="  1 – ableist\n", finish_reason="stop", prompt_tokens=21,
                                    completion_tokens=1, model_reported="gpt-4o-2024-08-06", fingerprint="fp_abc")


def test_parse_openai_reply_without_usage_or_fingerprint():
    body = {"model": "local", "choices": [{"message": {"content": "0"}, "finish_reason": "length"}]}
    assert parse_chat_reply("openai", json.dumps(body).encode()) == Completion(
        text="0", finish_reason="length", prompt_tokens=None, completion_tokens=None, model_reported="local",
        fingerprint=None)


def test_parse_ollama_reply():
    assert parse_chat_reply("ollama", json.dumps(ollama_reply("0\n")).encode()) == Completion(
        text="0\n", finish_reason="stop", prompt_tokens=30, completion_tokens=2, model_reported="llama3.1:8b",
        fingerprint=None)


@pytest.mark.parametrize("protocol", ["openai", "ollama"])
def test_empty_content_is_an_empty_reply_not_a_malformed_one(protocol):
    body = openai_reply("") if protocol == "openai" else ollama_reply("")
    assert parse_chat_reply(protocol, json.dumps(body).encode()).text == ""


@pytest.mark.parametrize(("protocol", "body", "reason"), [
    ("openai", b"<html>Bad gateway</html>", "not JSON"),
    ("openai", b"", "not JSON"),
    ("openai", b"[1, 2]", "not a JSON object"),
    ("openai", b"{}", "no choices"),
    ("openai", json.dumps({"choices": []}).encode(), "no choices"),
    ("openai", json.dumps({"error": {"message": "upstream overloaded"}}).encode(), "upstream overloaded"),
    ("openai", json.dumps({"choices": [{"finish_reason": "stop"}]}).encode(), "no message"),
    ("openai", json.dumps(openai_reply(None)).encode(), "no text content"),
    ("openai", json.dumps({"choices": [{"message": {"content": None, "tool_calls": [{"id": "t"}]}}]}).encode(),
     "no text content (tool calls)"),
    ("openai", json.dumps({"choices": [{"message": {"content": [{"type": "text"}]}}]}).encode(), "content is list"),
    ("ollama", b"not json", "not JSON"),
    ("ollama", json.dumps({"error": "model 'x' not found"}).encode(), "model 'x' not found"),
    ("ollama", json.dumps({"done": True}).encode(), "no message"),
    ("ollama", json.dumps({"message": {"role": "assistant"}}).encode(), "no text content"),
    ("ollama", json.dumps({"message": {"content": 1}}).encode(), "content is int"),
])
def test_malformed_replies(protocol, body, reason):
    with pytest.raises(MalformedReply) as raised:
        parse_chat_reply(protocol, body)
    assert reason in raised.value.reason


# --- Retry-After --------------------------------------------------------------------------------------------------


def test_retry_after_in_seconds_and_as_an_http_date():
    now = datetime(2025, 3, 1, 12, 0, 0, tzinfo=UTC)
    assert retry_after_seconds("3") == 3
    assert retry_after_seconds(" 1.5 ") == 1.5
    assert retry_after_seconds(format_datetime(now + timedelta(seconds=30), usegmt=True), now=now) == 30
    assert retry_after_seconds("Sat, 01 Mar 2025 12:00:20 -0000", now=now) == 20
    assert retry_after_seconds(format_datetime(now - timedelta(hours=1), usegmt=True), now=now) == 0
    assert retry_after_seconds("-5") == 0
    assert retry_after_seconds("soon") is None
    assert retry_after_seconds(None) is None


def test_retry_after_past_the_deadline_fails_at_once():
    started = time.perf_counter()
    result, seen = send(replies(httpx.Response(429, headers={"Retry-After": "1000"}, json={"error": "slow down"})),
                        config(deadline=60))
    # At once, not after the 60 s deadline: the bound leaves room for a loaded machine's start of a server.
    assert time.perf_counter() - started < 10
    assert len(seen) == 1
    assert result.error == "deadline exceeded after 1 attempts: HTTP 429: slow down"
    assert result.status_code == 429 and result.retries == ()


def test_retry_after_as_an_http_date_on_503_is_honoured():
    later = format_datetime(datetime.now(UTC) + timedelta(hours=1), usegmt=True)
    result, _ = send(replies(httpx.Response(503, headers={"Retry-After": later}, text="maintenance")),
                     config(deadline=60))
    assert result.error == "deadline exceeded after 1 attempts: HTTP 503: maintenance"


def test_retry_after_shorter_than_the_backoff_and_on_other_statuses_is_ignored():
    delays = []
    result, _ = send(replies(httpx.Response(429, headers={"Retry-After": "0"}),
                             httpx.Response(500, headers={"Retry-After": "1000"}),
                             httpx.Response(200, json=openai_reply())),
                     config(backoff_base=0.01, backoff_cap=1), seed=3, on_retry=lambda reason, delay: delays.append(delay))
    rng = random.Random(3)
    assert delays == [rng.uniform(0, 0.01), rng.uniform(0, 0.02)]
    assert result.error == "" and result.attempts == 3


def test_retry_after_longer_than_the_backoff_is_waited():
    calls = []
    result, _ = send(replies(httpx.Response(429, headers={"Retry-After": "0.3"}), httpx.Response(200, json=openai_reply())),
                     config(), on_retry=lambda reason, delay: calls.append((reason, delay)))
    assert calls == [("HTTP 429", 0.3)]
    assert result.retries == ("HTTP 429",) and result.attempts == 2


# --- the retry and failure policy ----------------------------------------------------------------------------------


def test_success_sends_the_request_and_reports_it():
    limiter = FakeLimiter()
    result, seen = send(replies(httpx.Response(200, json=openai_reply("1"))),
                        config(api_key="sk-test", base_url="https://api.example/v1"), limiter=limiter,
                        params={"temperature": 0})
    assert result.error == "" and result.attempts == 1 and result.retries == () and result.status_code == 200
    assert result.completion.text == "1" and result.completion.fingerprint == "fp_abc"
    assert result.latency_ms > 0
    (request,) = seen
    assert request.method == "POST" and request.path == "/v1/chat/completions"  # "/v1" not doubled
    assert request.headers["Content-Type"] == "application/json"
    assert request.headers["Authorization"] == "Bearer sk-test"
    assert json.loads(request.content) == {"model": "some-model", "messages": MESSAGES, "temperature": 0}
    assert limiter.events == ["succeeded"] and limiter.slots == 1


def test_no_api_key_sends_no_authorization():
    _, seen = send(replies(httpx.Response(200, json=ollama_reply())), config("ollama"))
    assert "Authorization" not in seen[0].headers
    assert seen[0].path == "/api/chat"


def test_a_4xx_fails_at_once_with_the_servers_message():
    limiter = FakeLimiter()
    result, seen = send(replies(httpx.Response(400, json={"error": {"message": "max_tokens is too large",
                                                                    "type": "invalid_request_error"}})),
                        config(), limiter=limiter)
    assert len(seen) == 1
    assert result.error == "HTTP 400: max_tokens is too large"
    assert result.completion is None and result.attempts == 1 and result.status_code == 400 and result.retries == ()
    assert limiter.events == []


def test_a_4xx_message_is_truncated_to_300_characters():
    result, _ = send(replies(httpx.Response(404, text="x" * 1000)), config())
    assert result.error == "HTTP 404: " + "x" * 300


def test_5xx_and_malformed_replies_are_retried_and_counted():
    retried = []
    result, seen = send(replies(httpx.Response(502, text="Bad gateway"), httpx.Response(200, text="<html>"),
                                httpx.Response(200, json=openai_reply("0"))),
                        config(), on_retry=lambda reason, delay: retried.append(reason))
    assert len(seen) == 3 and result.attempts == 3
    assert result.retries == ("HTTP 502: Bad gateway", "malformed reply: not JSON ('<html>')")
    assert retried == list(result.retries)
    assert result.completion.text == "0" and result.error == ""


def test_a_redirect_is_not_followed_and_fails_at_once():
    result, seen = send(replies(httpx.Response(307, headers={"Location": "/elsewhere"}, text="moved")), config())
    assert [request.path for request in seen] == ["/v1/chat/completions"]
    assert result.error == "HTTP 307: moved" and result.attempts == 1


def test_the_proxy_comes_from_the_environment_unless_no_proxy_names_the_host(monkeypatch):
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY", "http_proxy", "https_proxy", "all_proxy",
                 "no_proxy"):
        monkeypatch.delenv(name, raising=False)
    assert EndpointConfig("openai", "https://api.openai.com/v1").proxy is None
    monkeypatch.setenv("HTTPS_PROXY", "http://proxy.test:3128")
    monkeypatch.setenv("NO_PROXY", "localhost,127.0.0.1,.internal.test")
    assert EndpointConfig("openai", "https://api.openai.com/v1").proxy == "http://proxy.test:3128"
    assert EndpointConfig("openai", "http://api.openai.com/v1").proxy is None  # no HTTP_PROXY
    assert EndpointConfig("ollama", "https://gpu.internal.test:11434").proxy is None
    assert EndpointConfig("openai", "https://127.0.0.1:8000").proxy is None
    monkeypatch.setenv("ALL_PROXY", "http://all.test:8080")
    assert EndpointConfig("openai", "http://api.openai.com/v1").proxy == "http://all.test:8080"


def test_attempts_run_out():
    result, seen = send(replies(httpx.Response(500, json={"detail": "boom"})), config(max_attempts=3))
    assert len(seen) == 3
    assert result.error == "failed after 3 attempts: HTTP 500: boom"
    assert result.retries == ("HTTP 500: boom",) * 2 and result.status_code == 500


def test_transport_errors_are_retried():
    result, seen = send(replies(DROP), config(max_attempts=2))
    assert len(seen) == 2
    assert result.error == "failed after 2 attempts: ServerDisconnectedError: Server disconnected"
    assert result.status_code is None and result.retries == ("ServerDisconnectedError: Server disconnected",)


def test_an_invalid_url_fails_at_once():
    async def main():
        async with chat_session(1) as session:
            return await send_chat(session, config(base_url="ftp://llm.test"), FakeLimiter(), "m", MESSAGES, {},
                                   rng=random.Random(0))

    result = asyncio.run(main())
    assert result.attempts == 1 and result.error.startswith("NonHttpUrlClientError: ftp://llm.test")


def test_429_is_reported_and_no_slot_is_held_during_the_backoff():
    limiter = FakeLimiter()
    held_while_waiting = []
    result, _ = send(replies(httpx.Response(429), httpx.Response(429), httpx.Response(200, json=openai_reply())),
                     config(), limiter=limiter, on_retry=lambda reason, delay: held_while_waiting.append(limiter.held))
    assert limiter.events == ["throttled", "throttled", "succeeded"]
    assert held_while_waiting == [0, 0] and limiter.slots == 3
    assert result.retries == ("HTTP 429", "HTTP 429")


def test_backoff_is_full_jitter_exponential_and_reproducible_with_a_seed():
    def delays(seed):
        seen = []
        send(replies(httpx.Response(500)), config(max_attempts=7, backoff_base=0.001, backoff_cap=0.01),
             seed=seed, on_retry=lambda reason, delay: seen.append(delay))
        return seen

    bounds = [min(0.01, 0.001 * 2 ** k) for k in range(6)]
    rng = random.Random(11)
    assert delays(11) == [rng.uniform(0, bound) for bound in bounds]
    assert delays(11) != delays(12)
    assert all(0 <= delay <= bound for delay, bound in zip(delays(13), bounds, strict=True))


def test_the_deadline_bounds_hanging_attempts():
    async def hang(request):
        await asyncio.sleep(30)

    started = time.perf_counter()
    result, seen = send(hang, config(attempt_timeout=0.2, deadline=0.5, max_attempts=10))
    elapsed = time.perf_counter() - started
    assert 0.5 <= elapsed < 0.9
    assert result.error.startswith("deadline exceeded after") and result.error.endswith(": timeout")
    assert result.attempts == len(seen) >= 2
    assert set(result.retries) == {"timeout"}


def test_the_deadline_bounds_waiting_for_a_limiter_slot():
    async def main():
        limiter = LocalLimiter(1)
        async with limiter.slot(), chat_session(1) as session:
            return await send_chat(session, config(deadline=0.2), limiter, "m", MESSAGES, {}, rng=random.Random(0))

    started = time.perf_counter()
    result = asyncio.run(main())
    assert 0.2 <= time.perf_counter() - started < 0.5
    assert result.error == "deadline exceeded after 0 attempts: waiting for a limiter slot"
    assert result.attempts == 0


def test_cancellation_propagates_and_frees_the_slot():
    async def hang(request):
        await asyncio.sleep(30)

    async def main():
        limiter = LocalLimiter(1)
        server, seen = await serve(hang)
        try:
            async with chat_session(1) as session:
                task = asyncio.create_task(send_chat(session, on_server(config(), server), limiter, "m", MESSAGES,
                                                     {}, rng=random.Random(0)))
                await asyncio.sleep(0.05)
                assert len(seen) == 1  # the request is at the server, hanging
                task.cancel()
                with pytest.raises(asyncio.CancelledError):
                    await task
        finally:
            await server.close()
        async with asyncio.timeout(1), limiter.slot():
            return True

    assert asyncio.run(main())


# --- model listing -----------------------------------------------------------------------------------------------

OPENAI_MODELS = {"object": "list", "data": [{"id": "meta-llama/Llama-3.1-8B-Instruct", "object": "model",
                                             "owned_by": "vllm"}, {"id": "gpt-4o", "object": "model"}]}
OLLAMA_TAGS = {"models": [{"name": "llama3.1:8b", "model": "llama3.1:8b", "size": 4920753328,
                           "modified_at": "2025-01-01T00:00:00Z", "digest": "46e0c10c039e",
                           "details": {"family": "llama", "parameter_size": "8.0B", "quantization_level": "Q4_K_M"}}]}


def expected_models(protocol):
    if protocol == "openai":
        return [ModelInfo("meta-llama/Llama-3.1-8B-Instruct", None, {"object": "model", "owned_by": "vllm"}),
                ModelInfo("gpt-4o", None, {"object": "model"})]
    return [ModelInfo("llama3.1:8b", "46e0c10c039e", {"family": "llama", "parameter_size": "8.0B",
                                                      "quantization_level": "Q4_K_M", "size": 4920753328,
                                                      "modified_at": "2025-01-01T00:00:00Z"})]


@pytest.mark.parametrize(("reply", "reason"), [
    ({"status": 401, "body": {"error": {"message": "Incorrect API key provided"}}},
     "HTTP 401: Incorrect API key provided"),
    ({"raw": b"<html>"}, "malformed model list: not JSON ('<html>')"),
    ({"body": {"data": "none"}}, "malformed model list: no list of models"),
    ({"body": {"data": [{"object": "model"}]}}, 'malformed model list: an entry without a name: {"object": "model"}'),
])
def test_list_models_errors(server, reply, reason):
    server.script["/v1/models"] = [Reply(**reply)]
    with pytest.raises(EndpointError) as raised:
        list_models_sync(config(base_url=server.base_url), timeout=5)
    assert raised.value.reason == reason


# --- against a real HTTP server on 127.0.0.1 ---------------------------------------------------------------------


@dataclass
class Reply:
    status: int = 200
    body: object = field(default_factory=openai_reply)
    headers: dict = field(default_factory=dict)
    hang: float = 0.0
    raw: bytes | None = None  # sent instead of the JSON of ``body``


@dataclass
class Seen:
    at: float
    method: str
    path: str
    headers: dict
    body: bytes


class ScriptedServer:
    """A threaded HTTP/1.1 server answering each path with its scripted replies in turn (the last repeats)."""

    def __init__(self):
        self.script: dict[str, list[Reply]] = {}
        self.seen: list[Seen] = []
        self.released = threading.Event()
        self._lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_GET(self):
                server.answer(self)

            def do_POST(self):
                server.answer(self)

            def log_message(self, *args):
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.base_url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()

    def answer(self, handler: BaseHTTPRequestHandler) -> None:
        body = handler.rfile.read(int(handler.headers.get("Content-Length") or 0))
        with self._lock:
            self.seen.append(Seen(time.perf_counter(), handler.command, handler.path, dict(handler.headers), body))
            queue = self.script.get(handler.path, [Reply(404, {"error": "not found"})])
            reply = queue.pop(0) if len(queue) > 1 else queue[0]
        if reply.hang:
            self.released.wait(reply.hang)
        data = reply.raw if reply.raw is not None else json.dumps(reply.body).encode()
        try:
            handler.send_response(reply.status)
            for name, value in {"Content-Type": "application/json", **reply.headers}.items():
                handler.send_header(name, value)
            handler.send_header("Content-Length", str(len(data)))
            handler.end_headers()
            handler.wfile.write(data)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client gave up on a hanging reply

    def close(self) -> None:
        self.released.set()
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def server():
    scripted = ScriptedServer()
    yield scripted
    scripted.close()


def send_real(endpoint: EndpointConfig, *, params=None):
    async def main():
        async with chat_session(4) as session:
            return await send_chat(session, endpoint, LocalLimiter(4), "some-model", MESSAGES, params or {},
                                   rng=random.Random(0))

    started = time.perf_counter()
    result = asyncio.run(main())
    return result, time.perf_counter() - started


def test_real_429_with_retry_after_is_waited_then_succeeds(server):
    server.script["/v1/chat/completions"] = [
        Reply(429, {"error": {"message": "Rate limit reached"}}, {"Retry-After": "1"}), Reply()]
    result, elapsed = send_real(config(base_url=server.base_url + "/v1", api_key="sk-real"))
    assert result.error == "" and result.completion.text == "1"
    assert result.attempts == 2 and result.retries == ("HTTP 429: Rate limit reached",)
    assert elapsed >= 1.0
    first, second = server.seen
    assert second.at - first.at >= 1.0
    assert first.headers["Authorization"] == "Bearer sk-real"


def test_real_hang_trips_the_attempt_timeout_then_succeeds(server):
    server.script["/api/chat"] = [Reply(body=ollama_reply(), hang=10), Reply(body=ollama_reply("1"))]
    result, elapsed = send_real(config("ollama", base_url=server.base_url, attempt_timeout=0.3),
                                params={"temperature": 0, "max_tokens": 8})
    assert result.error == "" and result.completion.text == "1" and result.completion.model_reported == "llama3.1:8b"
    assert result.attempts == 2 and result.retries == ("timeout",)
    assert 0.3 <= elapsed < 2
    assert json.loads(server.seen[0].body) == {"model": "some-model", "messages": MESSAGES, "stream": False,
                                               "options": {"temperature": 0, "num_predict": 8}}


def test_connection_refused_fails_after_max_attempts():
    result, elapsed = send_real(config(base_url=f"http://127.0.0.1:{free_port()}", max_attempts=3))
    assert result.completion is None and result.attempts == 3 and result.status_code is None
    assert result.error.startswith("failed after 3 attempts: ClientConnectorError: Cannot connect to host 127.0.0.1:")
    assert len(result.retries) == 2 and all(reason.startswith("ClientConnectorError") for reason in result.retries)
    assert elapsed < 2


@pytest.mark.parametrize(("protocol", "path", "body"), [("openai", "/v1/models", OPENAI_MODELS),
                                                         ("ollama", "/api/tags", OLLAMA_TAGS)])
def test_real_model_listing(server, protocol, path, body):
    server.script[path] = [Reply(body=body)]
    endpoint = config(protocol, base_url=server.base_url, api_key="k")
    assert list_models_sync(endpoint, timeout=5) == expected_models(protocol)
    (request,) = server.seen
    assert (request.method, request.path, request.headers["Authorization"]) == ("GET", path, "Bearer k")


def test_real_model_listing_errors(server):
    server.script["/api/tags"] = [Reply(500, {"error": "ollama is loading"})]
    with pytest.raises(EndpointError, match=r"^HTTP 500: ollama is loading$"):
        list_models_sync(config("ollama", base_url=server.base_url))
    with pytest.raises(EndpointError, match=r"^ConnectError: "):
        list_models_sync(config("ollama", base_url=f"http://127.0.0.1:{free_port()}"), timeout=2)


@pytest.mark.parametrize(("content", "reason"), [("a\\u0000b", "NUL character"),
                                                 ("a\\ud800b", "unpaired surrogate")])
def test_a_reply_the_database_could_not_store_is_malformed_with_the_reason(content, reason):
    """PostgreSQL refuses NUL and unpaired surrogates in text: such a reply fails its request with the reason
    instead of every write of it failing."""
    body = ('{"choices": [{"message": {"content": "' + content + '"}, "finish_reason": "stop"}]}').encode()
    with pytest.raises(MalformedReply, match=reason):
        parse_chat_reply("openai", body)
    ollama = ('{"message": {"content": "' + content + '"}, "model": "m", "done_reason": "stop"}').encode()
    with pytest.raises(MalformedReply, match=reason):
        parse_chat_reply("ollama", ollama)
