"""Talking to LLM endpoints: chat requests with retries and limits, reply parsing, model listing.

Pure layer: no Django; the caller passes an :class:`EndpointConfig`, an ``aiohttp.ClientSession`` (made by
:func:`chat_session`) and a limiter from :mod:`auditapp.llm_limits` (where, as ARCHITECTURE puts it, "the
limits that must hold across workers live in Redis").

Chat requests go through aiohttp, model listing through httpx. ARCHITECTURE names httpx for both; measured
on the 2-core reference machine against the test server (50 ms latency, 64 concurrent requests), httpx spent
0.78 ms of CPU per request in the client alone (anyio, h11 and httpx's request and response models, in
pure Python) and one process reached 70% of the endpoint's capacity before any database or Redis work;
aiohttp, whose HTTP parser is in C, spent 0.2 ms and reached 94% (``benchmarks/audit_throughput.py`` for
the whole worker). Listing models is one request now and then, from synchronous admin and API views, where
httpx's synchronous client fits.

Protocols
---------
``"openai"``: OpenAI-compatible servers (OpenAI, vLLM, llama.cpp's server, routers), ``POST
/v1/chat/completions`` and ``GET /v1/models``. ``base_url`` is the server root (``http://127.0.0.1:8000``,
``https://openrouter.ai/api``) and ``/v1/...`` is appended; when it already ends with ``/v1``
(``https://api.openai.com/v1``) only the rest (``/chat/completions``, ``/models``) is.
``"ollama"``: Ollama's native API, ``POST /api/chat`` and ``GET /api/tags`` under ``base_url``.
``api_key`` is sent as ``Authorization: Bearer <key>`` to either.
The endpoint kinds that are not chat models (``"http_json"``, ``"local"``) are sent to by
:mod:`auditapp.scorer_kinds`; an HTTP JSON scorer's requests go through the same :func:`post_json` loop.

Generation parameters
---------------------
Empty ``params`` send nothing beyond model and messages, so the endpoint's own defaults apply (the
study used the defaults). openai: every parameter goes at the top level of the body, under its own name
(``temperature``, ``top_p``, ``max_tokens``, ``seed``, ...); ``model``, ``messages`` and ``stream`` are
refused (replies are never streamed). ollama: ``"stream": false`` always, and the parameters go under
``"options"``, under Ollama's names: ``max_tokens`` becomes ``num_predict``; every other name
(``temperature``, ``top_p``, ``top_k``, ``seed``, ``stop``, ``num_ctx``, ...) is passed as is.

Retry and failure policy of :func:`send_chat` and :func:`post_json`
-------------------------------------------------------------------
- Retried: HTTP 429 and 5xx; transport errors (``aiohttp.ClientError``: refused or reset connections,
  broken responses); an attempt that exceeds ``attempt_timeout``; a 2xx whose body is not a usable chat
  reply (garbage from a server is treated as transient). A 2xx that is well formed but unusable in a way
  asking again would only repeat (an HTTP JSON scorer's reply without a score in scale) fails at once.
- Failed at once: any other status (4xx, and 1xx/3xx, which a chat request never expects), with the
  reason ``"HTTP 400: <the server's error message, at most 300 characters>"``; an invalid URL.
- At most ``max_attempts`` attempts. Between them, exponential backoff with full jitter: a sleep drawn
  uniformly from ``[0, min(backoff_cap, backoff_base * 2 ** (attempt - 1))]`` with the caller's
  ``random.Random``, so a seeded run waits the same. On 429 and 503 a ``Retry-After`` header
  (delta-seconds or an HTTP-date) is used instead when it asks for longer.
- ``deadline`` seconds bound everything for one request: waiting for a limiter slot, the attempts and
  the sleeps. Each attempt gets ``min(attempt_timeout, remaining deadline)`` as a hard wall-clock limit on
  the whole attempt, connection and body included (a read timeout restarts with every chunk, so a server
  trickling bytes would otherwise hold a limiter slot past its TTL). A backoff that
  would end past the deadline is not slept: the request fails at once.
- Failure reasons: the 4xx reason above; ``"failed after N attempts: <last reason>"`` when attempts run
  out; ``"deadline exceeded after N attempts: <last reason>"`` (``timeout`` when an attempt was in flight,
  ``waiting for a limiter slot`` when none could start). Retried attempts' reasons are kept in
  order: ``"HTTP 429"`` (plus the server's message when it sent one), ``"timeout"``,
  ``"ClientConnectorError: <detail>"`` (or another aiohttp error's name), ``"malformed reply: <reason>"``.
- An attempt that cannot reach the endpoint (connection refused or reset, ``connect_timeout`` while
  connecting, the server closing the connection) is reported to the caller's circuit breaker
  (:mod:`auditapp.endpoint_breaker`); when the breaker is open after it, the attempt does not count against
  ``max_attempts`` (``attempts`` still counts it) and the request waits for the breaker instead of a backoff.
  Any HTTP answer tells the breaker the endpoint is there.
- The limiter slot is held around the HTTP attempt only, never during a backoff, so a request waiting to
  retry lets others go. A 429 is reported with ``limiter.throttled()``, a usable reply with
  ``limiter.succeeded()``; other failures say nothing about the endpoint's capacity.
"""
from __future__ import annotations

import asyncio
import email.utils
import errno
import ipaddress
import json
import random
import socket
import ssl
import time
import urllib.parse
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import cached_property, partial
from typing import TYPE_CHECKING, Any, Literal, TypeGuard

import aiohttp
import aiohttp.abc
import aiohttp.resolver
import httpx

from auditapp.endpoint_addresses import AddressPolicy
from common.participant_input import unstorable_reason

if TYPE_CHECKING:
    from auditapp.endpoint_breaker import EndpointBreaker
    from auditapp.llm_limits import Limiter

Protocol = Literal["openai", "ollama", "http_json", "local"]
KINDS = ("openai", "ollama", "http_json", "local")

CHAT_PATHS = {"openai": "/v1/chat/completions", "ollama": "/api/chat"}
MODEL_LIST_PATHS = {"openai": "/v1/models", "ollama": "/api/tags"}
OLLAMA_OPTION_NAMES = {"max_tokens": "num_predict"}
STRUCTURED_OUTPUT_FORMS = {"openai_json_schema": "openai", "llamacpp_json_object": "openai",
                           "vllm_guided_json": "openai", "ollama_format": "ollama"}
"""Each form of structured output (module docstring) and the protocol whose body carries it."""
STRUCTURED_OUTPUT_FIELDS = {"openai_json_schema": "response_format", "llamacpp_json_object": "response_format",
                            "vllm_guided_json": "guided_json", "ollama_format": "format"}
SCHEMA_NAME = "answer"
MESSAGE_CHARS = 300
RETRY_AFTER_STATUSES = {429, 503}
UNREACHABLE_ERRNOS = {errno.ECONNREFUSED, errno.ECONNRESET, errno.ECONNABORTED, errno.EPIPE, errno.EHOSTUNREACH,
                      errno.ENETUNREACH}


class MalformedReply(Exception):
    """A response body that is not a usable reply. ``retry``: garbage a server may not send again (retried,
    reported as ``"malformed reply: <reason>"``); without it, a well-formed reply that asking again would only
    repeat (fails at once with the reason as given)."""

    def __init__(self, reason: str, *, retry: bool = True):
        super().__init__(reason)
        self.reason = reason
        self.retry = retry


class EndpointError(Exception):
    """An endpoint that could not be asked or answered with an error (model listing). ``transient``: it could not
    be reached (refused, reset, timed out) or answered a time-out, a rate limit or a server error, so asking again
    later may succeed; not a bad address, certificate, key or answer."""

    def __init__(self, reason: str, *, transient: bool = False):
        super().__init__(reason)
        self.reason = reason
        self.transient = transient


@dataclass(frozen=True)
class EndpointConfig:
    """Where an endpoint is and how to treat it; see the module docstring for ``base_url`` and the policy.
    ``protocol`` is the endpoint's kind (:mod:`auditapp.scorer_kinds`); ``request_template``, ``score_path`` and
    ``scale`` describe an ``http_json`` scorer (:mod:`auditapp.scorers.http_json`), whose ``base_url`` is the
    whole URL it is POSTed to; ``structured_output`` is the form a chat endpoint takes a schema in ("" none)."""

    protocol: Protocol
    base_url: str
    api_key: str | None = field(default=None, repr=False)  # kept out of logs and tracebacks
    max_concurrency: int = 8
    requests_per_minute: int | None = None
    attempt_timeout: float = 120.0
    deadline: float = 600.0
    max_attempts: int = 5
    backoff_base: float = 0.5
    backoff_cap: float = 30.0
    connect_timeout: float = 10.0
    structured_output: str = ""
    request_template: Any = None
    score_path: str = ""
    scale: tuple[float, float] = (-1.0, 1.0)

    def __post_init__(self):
        if self.protocol not in KINDS:
            raise ValueError(f"unknown protocol {self.protocol!r}; expected one of {sorted(KINDS)}")
        if self.max_attempts < 1 or self.attempt_timeout <= 0 or self.deadline <= 0:
            raise ValueError("max_attempts must be at least 1, attempt_timeout and deadline positive")

    def url(self, path: str) -> str:
        """The URL of an API path such as ``/v1/chat/completions`` (``/v1`` not doubled)."""
        base = self.base_url.rstrip("/")
        if self.protocol == "openai" and base.endswith("/v1") and path.startswith("/v1/"):
            path = path[len("/v1"):]
        return base + path

    def headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.api_key}"} if self.api_key else {}

    def json_headers(self) -> dict[str, str]:
        return {**self.headers(), "Content-Type": "application/json"}

    @cached_property
    def proxy(self) -> str | None:
        """The proxy the environment names for this endpoint (``HTTPS_PROXY``/``HTTP_PROXY``/``ALL_PROXY``,
        unless ``NO_PROXY`` covers its host), as httpx and curl read them; read once per config, because
        aiohttp's ``trust_env`` reads the environment and ``~/.netrc`` again on every request."""
        parts = urllib.parse.urlsplit(self.base_url)
        # typeshed leaves out this public-but-undocumented function of urllib.request (there since Python 3.x)
        if urllib.request.proxy_bypass_environment(parts.hostname or ""):  # type: ignore[attr-defined]
            return None
        proxies = urllib.request.getproxies_environment()
        return proxies.get(parts.scheme) or proxies.get("all")


@dataclass(frozen=True)
class Completion:
    """A reply: its text (unstripped; may be empty) and what the server said about it. A scorer's reply has
    only its text (the reply body, or a local scorer's scores as JSON)."""

    text: str
    finish_reason: str | None
    prompt_tokens: int | None
    completion_tokens: int | None
    model_reported: str | None
    fingerprint: str | None = None


@dataclass(frozen=True)
class ModelInfo:
    """A model an endpoint serves; ``digest`` is Ollama's content hash (None for openai), a short hash of a local
    scorer's identity, or "" for an HTTP JSON scorer (its server says nothing about its version)."""

    name: str
    digest: str | None
    details: dict


@dataclass(frozen=True)
class SendResult:
    """How a request ended: a completion, or ``error`` (never both); see the module docstring."""

    completion: Completion | None
    error: str
    attempts: int
    latency_ms: float
    status_code: int | None
    retries: tuple[str, ...]


def _is_number(value: object) -> TypeGuard[int | float]:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _is_integer(value: object) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_stop(value: object) -> bool:
    return isinstance(value, str) or (isinstance(value, list) and all(isinstance(item, str) for item in value))


# The generation parameters whose type every server agrees on, with the test and what it asks for; any other
# name is passed on as given (servers add their own).
CHAT_PARAM_TYPES: dict[str, tuple[Callable[[object], bool], str]] = {
    **dict.fromkeys(("temperature", "presence_penalty", "frequency_penalty", "repeat_penalty",
                     "repetition_penalty"), (_is_number, "a number")),
    **dict.fromkeys(("top_p", "min_p", "typical_p"), (lambda value: _is_number(value) and 0 <= value <= 1,
                                                      "a number between 0 and 1")),
    **dict.fromkeys(("max_tokens", "max_completion_tokens", "num_predict", "num_ctx"),
                    (lambda value: _is_integer(value) and value >= 1, "a whole number of at least 1")),
    **dict.fromkeys(("top_k", "seed"), (_is_integer, "a whole number")),
    "stop": (_is_stop, "a string or a list of strings"),
}


def chat_params_problems(params: object) -> list[str]:
    """What is wrong with a chat model's generation parameters, one problem per parameter (empty when nothing
    is): they are a JSON object whose known parameters (:data:`CHAT_PARAM_TYPES`) have the type every server
    takes, so a request that would be refused is refused before any is sent."""
    if not isinstance(params, dict):
        return [f"generation parameters are a JSON object, not {type(params).__name__}"]
    problems = []
    for name, value in params.items():
        test, wanted = CHAT_PARAM_TYPES.get(name, (None, ""))
        if test is not None and not (test(value) and (not isinstance(value, float) or value == value)):
            problems.append(f"{name} must be {wanted}, not {json.dumps(value)[:60]}")
    return problems


def structured_output_problem(protocol: str, form: str) -> str:
    """Why an endpoint of that protocol cannot take a schema in that form ("" when it can)."""
    if not form:
        return "it has no structured-output form: choose the one its server takes"
    if form not in STRUCTURED_OUTPUT_FORMS:
        return f"unknown structured-output form {form!r}; choose one of {', '.join(STRUCTURED_OUTPUT_FORMS)}"
    if STRUCTURED_OUTPUT_FORMS[form] != protocol:
        return f"the form {form} is sent to {STRUCTURED_OUTPUT_FORMS[form]} endpoints, not {protocol} ones"
    return ""


def structured_output_fields(form: str, schema: dict) -> dict:
    """The body fields that ask for replies valid against ``schema`` in ``form`` (module docstring)."""
    if form == "openai_json_schema":
        return {"response_format": {"type": "json_schema",
                                    "json_schema": {"name": SCHEMA_NAME, "schema": schema, "strict": True}}}
    if form == "llamacpp_json_object":
        return {"response_format": {"type": "json_object", "schema": schema}}
    if form == "vllm_guided_json":
        return {"guided_json": schema}
    if form == "ollama_format":
        return {"format": schema}
    raise ValueError(f"unknown structured-output form {form!r}; choose one of {', '.join(STRUCTURED_OUTPUT_FORMS)}")


def chat_payload(protocol: Protocol, model: str, messages: list[dict], params: dict, *,
                 schema: dict | None = None, structured_output: str = "") -> tuple[str, dict]:
    """The API path and JSON body of a chat request (parameters placed as the module docstring says); with a
    ``schema``, the reply is constrained to it in the ``structured_output`` form."""
    constraint: dict = {}
    if schema is not None:
        problem = structured_output_problem(protocol, structured_output)
        if problem:
            raise ValueError(f"structured output cannot be asked: {problem}")
        constraint = structured_output_fields(structured_output, schema)
    if protocol == "openai":
        reserved = ({"model", "messages", "stream"} | constraint.keys()) & params.keys()
        if reserved:
            raise ValueError(f"generation parameters may not set {sorted(reserved)}")
        return CHAT_PATHS["openai"], {"model": model, "messages": messages, **params, **constraint}
    if protocol == "ollama":
        body: dict[str, Any] = {"model": model, "messages": messages, "stream": False, **constraint}
        if params:
            options = {OLLAMA_OPTION_NAMES.get(name, name): value for name, value in params.items()}
            if len(options) < len(params):
                raise ValueError(f"generation parameters name the same Ollama option twice: {sorted(params)}")
            body["options"] = options
        return CHAT_PATHS["ollama"], body
    raise ValueError(f"unknown protocol {protocol!r}")


def _json_object(body: bytes) -> dict:
    try:
        data = json.loads(body)
    except (ValueError, UnicodeDecodeError) as error:
        raise MalformedReply(f"not JSON ({_excerpt(body, 80)!r})") from error
    if not isinstance(data, dict):
        raise MalformedReply(f"not a JSON object but {type(data).__name__}")
    return data


def _storable(value: str, *, what: str) -> str:
    """``value``, or MalformedReply when the database could not store it (PostgreSQL refuses NUL characters and
    unpaired surrogates): the request fails with that reason instead of every write of its reply failing."""
    problem = unstorable_reason(value)
    if problem:
        raise MalformedReply(f"the {what} {problem.split(';')[0]}")
    return value


def _int_or_none(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _str_or_none(value: object) -> str | None:
    return _storable(value, what="reply's metadata") if isinstance(value, str) else None


def _text(message: object, *, where: str) -> str:
    if not isinstance(message, dict):
        raise MalformedReply(f"no {where}")
    content = message.get("content")
    if isinstance(content, str):
        return _storable(content, what="reply text")
    if content is None:
        raise MalformedReply("no text content" + (" (tool calls)" if message.get("tool_calls") else ""))
    raise MalformedReply(f"content is {type(content).__name__}, not text")


def parse_chat_reply(protocol: Protocol, body: bytes) -> Completion:
    """The :class:`Completion` in a chat response body; :class:`MalformedReply` if there is none."""
    data = _json_object(body)
    if protocol == "openai":
        choices = data.get("choices")
        if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
            raise MalformedReply("no choices" + (f" (error: {_server_message(data)})" if "error" in data else ""))
        choice = choices[0]
        usage = data.get("usage")
        if not isinstance(usage, dict):
            usage = {}
        return Completion(
            text=_text(choice.get("message"), where="message in choices[0]"),
            finish_reason=_str_or_none(choice.get("finish_reason")),
            prompt_tokens=_int_or_none(usage.get("prompt_tokens")),
            completion_tokens=_int_or_none(usage.get("completion_tokens")),
            model_reported=_str_or_none(data.get("model")),
            fingerprint=_str_or_none(data.get("system_fingerprint")),
        )
    if protocol == "ollama":
        if "message" not in data and "error" in data:
            raise MalformedReply(f"error: {_server_message(data)}")
        return Completion(
            text=_text(data.get("message"), where="message"),
            finish_reason=_str_or_none(data.get("done_reason")),
            prompt_tokens=_int_or_none(data.get("prompt_eval_count")),
            completion_tokens=_int_or_none(data.get("eval_count")),
            model_reported=_str_or_none(data.get("model")),
        )
    raise ValueError(f"unknown protocol {protocol!r}")


def _excerpt(body: bytes, limit: int) -> str:
    return body[:limit * 4].decode("utf-8", errors="replace")[:limit]


def _server_message(data: object) -> str:
    """The error message in a parsed error body, in the shapes OpenAI, vLLM, Ollama and proxies use."""
    if isinstance(data, dict):
        for key in ("error", "detail", "message"):
            if key in data:
                return _server_message(data[key])
        return json.dumps(data)
    return data if isinstance(data, str) else json.dumps(data)


def _http_reason(status: int, content: bytes) -> str:
    try:
        message = _server_message(json.loads(content))
    except (ValueError, UnicodeDecodeError):
        message = _excerpt(content, MESSAGE_CHARS)
    message = " ".join(message.split())[:MESSAGE_CHARS]
    return f"HTTP {status}: {message}" if message else f"HTTP {status}"


def _transport_reason(error: Exception) -> str:
    if isinstance(error, httpx.TimeoutException):
        return "timeout"
    detail = str(error)
    return f"{type(error).__name__}: {detail}" if detail else type(error).__name__


def retry_after_seconds(value: str | None, *, now: datetime | None = None) -> float | None:
    """Seconds a ``Retry-After`` header asks to wait (delta-seconds or an HTTP-date); None if absent or invalid."""
    if not value:
        return None
    value = value.strip()
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:  # "-0000" means UTC with no zone information
        when = when.replace(tzinfo=UTC)
    return max(0.0, (when - (now or datetime.now(UTC))).total_seconds())


@dataclass(frozen=True)
class _Attempt:
    """One attempt's outcome: ``completion`` on success, else ``reason`` and whether it may be retried."""

    reason: str
    completion: Completion | None = None
    retry: bool = False
    status_code: int | None = None
    latency_ms: float = 0.0
    retry_after: float | None = None
    unreachable: bool = False


class AddressRefusedError(OSError):
    """Raised by the session's resolver for a host name that resolves to an address the policy refuses."""


class _GuardedResolver(aiohttp.abc.AbstractResolver):
    """aiohttp's resolver, refusing host names whose addresses the policy refuses. It runs on every new
    connection, so a name re-pointed at a metadata address after the checks at launch (DNS rebinding) is
    refused at the address actually connected to. IP literals never reach a resolver: the caller checks them."""

    def __init__(self, policy: AddressPolicy):
        self._inner = aiohttp.resolver.DefaultResolver()
        self._policy = policy

    async def resolve(self, host: str, port: int = 0, family: socket.AddressFamily = socket.AF_INET
                      ) -> list[aiohttp.abc.ResolveResult]:
        results = await self._inner.resolve(host, port, family)
        problem = self._policy.host_problem(host, [ipaddress.ip_address(result["host"]) for result in results])
        if problem:
            raise AddressRefusedError(problem)
        return results

    async def close(self) -> None:
        await self._inner.close()


def chat_session(max_connections: int, *, tls: ssl.SSLContext | None = None,
                 address_policy: AddressPolicy | None = None) -> aiohttp.ClientSession:
    """The aiohttp session :func:`send_chat` sends through: keep-alive connections to any number of endpoints,
    at most ``max_connections`` open at once, no cookies kept, no redirects followed (a 3xx fails, see the
    policy) and no session-wide timeout (each attempt has its own). Proxies come from
    :attr:`EndpointConfig.proxy`. With ``address_policy``, host names resolving to refused addresses fail
    (not retried) with "address refused"."""
    connector = aiohttp.TCPConnector(limit=max_connections, limit_per_host=0,
                                     ssl=tls if tls is not None else ssl.create_default_context(),
                                     resolver=_GuardedResolver(address_policy) if address_policy else None)
    return aiohttp.ClientSession(connector=connector, trust_env=False, cookie_jar=aiohttp.DummyCookieJar(),
                                 timeout=aiohttp.ClientTimeout(total=None, sock_connect=None))


ReplyParser = Callable[[bytes], Completion]


async def _attempt(session: aiohttp.ClientSession, config: EndpointConfig, limiter: Limiter, url: str,
                   body: bytes, parse: ReplyParser, deadline_at: float, on_start: Callable[[], None]) -> _Attempt:
    """One HTTP attempt inside a limiter slot; ``on_start`` is called once the slot is held."""
    async with limiter.slot():
        budget = min(config.attempt_timeout, deadline_at - time.perf_counter())
        on_start()
        started = time.perf_counter()

        def elapsed_ms() -> float:
            return (time.perf_counter() - started) * 1000

        try:
            async with asyncio.timeout(budget):
                async with session.post(url, data=body, headers=config.json_headers(), proxy=config.proxy,
                                        allow_redirects=False,
                                        timeout=aiohttp.ClientTimeout(sock_connect=min(budget, config.connect_timeout))
                                        ) as response:
                    status = response.status
                    content = await response.read()
                    retry_after_header = response.headers.get("Retry-After")
        except aiohttp.ConnectionTimeoutError:
            # Before TimeoutError, which it also is: this one says the endpoint is not there.
            return _Attempt(reason="connect timeout", retry=True, unreachable=True, latency_ms=elapsed_ms())
        except (aiohttp.ServerDisconnectedError, aiohttp.ClientConnectionResetError) as error:
            return _Attempt(reason=_transport_reason(error), retry=True, unreachable=True, latency_ms=elapsed_ms())
        except TimeoutError:
            return _Attempt(reason="timeout", retry=True, latency_ms=elapsed_ms())
        except (aiohttp.InvalidURL, aiohttp.NonHttpUrlClientError) as error:
            return _Attempt(reason=_transport_reason(error), latency_ms=elapsed_ms())
        except aiohttp.ClientSSLError as error:
            # Before ClientConnectorError, which it also is: a bad certificate or https on a plain-http port is
            # an endpoint that answers wrongly, not one that is away; asking again cannot help.
            return _Attempt(reason=_transport_reason(error), latency_ms=elapsed_ms())
        except aiohttp.ClientConnectorError as error:
            if isinstance(error.os_error, AddressRefusedError):
                return _Attempt(reason=f"address refused: {error.os_error}", latency_ms=elapsed_ms())
            return _Attempt(reason=_transport_reason(error), retry=True, unreachable=True, latency_ms=elapsed_ms())
        except aiohttp.ClientOSError as error:
            return _Attempt(reason=_transport_reason(error), retry=True, unreachable=error.errno in UNREACHABLE_ERRNOS,
                            latency_ms=elapsed_ms())
        except aiohttp.ClientError as error:
            return _Attempt(reason=_transport_reason(error), retry=True, latency_ms=elapsed_ms())
        latency_ms = elapsed_ms()
        if 200 <= status < 300:
            try:
                completion = parse(content)
            except MalformedReply as error:
                return _Attempt(reason=f"malformed reply: {error.reason}" if error.retry else error.reason,
                                retry=error.retry, status_code=status, latency_ms=latency_ms)
            await limiter.succeeded()
            return _Attempt(reason="", completion=completion, status_code=status, latency_ms=latency_ms)
        if status == 429:
            await limiter.throttled()
        retry_after = retry_after_seconds(retry_after_header) if status in RETRY_AFTER_STATUSES else None
        return _Attempt(reason=_http_reason(status, content), retry=status == 429 or status >= 500,
                        status_code=status, latency_ms=latency_ms, retry_after=retry_after)


async def send_chat(session: aiohttp.ClientSession, config: EndpointConfig, limiter: Limiter, model: str,
                    messages: list[dict], params: dict, *, rng: random.Random,
                    on_retry: Callable[[str, float], None] | None = None,
                    breaker: EndpointBreaker | None = None, schema: dict | None = None) -> SendResult:
    """Send one chat request under the retry and failure policy of the module docstring (:func:`post_json`);
    with a ``schema``, constrained to it in the endpoint's structured-output form.

    Never raises for endpoint problems (they end in ``SendResult.error``); cancellation and the limiter's
    own errors (Redis unreachable) propagate.
    ``on_retry(reason, delay_seconds)`` is called before each backoff sleep. With a ``breaker``
    (:mod:`auditapp.endpoint_breaker`), the request waits while the endpoint is unreachable, and the attempts
    that found it unreachable with the breaker open do not count against ``max_attempts``.
    """
    path, payload = chat_payload(config.protocol, model, messages, params, schema=schema,
                                 structured_output=config.structured_output)
    return await post_json(session, config, limiter, config.url(path), payload,
                           partial(parse_chat_reply, config.protocol), rng=rng, on_retry=on_retry, breaker=breaker)


async def post_json(session: aiohttp.ClientSession, config: EndpointConfig, limiter: Limiter, url: str,
                    payload: Any, parse: ReplyParser, *, rng: random.Random,
                    on_retry: Callable[[str, float], None] | None = None,
                    breaker: EndpointBreaker | None = None) -> SendResult:
    """POST ``payload`` as JSON to ``url`` under the retry and failure policy of the module docstring; a 2xx
    body becomes the :class:`Completion` that ``parse`` makes of it (its :class:`MalformedReply` is retried or
    not as it says). Every kind of HTTP endpoint sends through this one loop (:func:`send_chat`, and
    :mod:`auditapp.scorer_kinds` for HTTP JSON scorers); it raises as :func:`send_chat` says."""
    body = json.dumps(payload).encode()
    deadline_at = time.perf_counter() + config.deadline
    retries: list[str] = []
    attempts = 0  # sent
    counted = 0  # counted against max_attempts
    in_flight_since: float | None = None
    sent_at = 0.0  # the attempt's start on the wall clock, which the breaker's store keeps time by
    last: _Attempt | None = None

    def started() -> None:
        nonlocal attempts, counted, in_flight_since, sent_at
        attempts += 1
        counted += 1
        in_flight_since = time.perf_counter()
        sent_at = time.time()

    def result(error: str) -> SendResult:
        return SendResult(completion=last.completion if last else None, error=error, attempts=attempts,
                          latency_ms=last.latency_ms if last else 0.0,
                          status_code=last.status_code if last else None, retries=tuple(retries))

    def deadline_exceeded() -> SendResult:
        reason = last.reason if last else "no attempt"
        if breaker is not None and breaker.unreachable_since is not None:
            since = datetime.fromtimestamp(breaker.unreachable_since, UTC).isoformat(timespec="seconds")
            reason = f"endpoint unreachable since {since} ({reason})"
        return result(f"deadline exceeded after {attempts} attempts: {reason}")

    while True:
        remaining = deadline_at - time.perf_counter()
        if remaining <= 0:
            return deadline_exceeded()
        if breaker is not None and not await breaker.admit(remaining):
            return deadline_exceeded()
        probing = breaker is not None and breaker.view.is_open
        in_flight_since = None
        try:
            async with asyncio.timeout(remaining) as deadline:
                last = await _attempt(session, config, limiter, url, body, parse, deadline_at, started)
        except TimeoutError:
            if not deadline.expired():
                raise
            if in_flight_since is None:
                waited = "waiting for a limiter slot"
                last = _Attempt(reason=f"{waited} (last error: {last.reason})" if last else waited)
            else:
                last = _Attempt(reason="timeout", latency_ms=(time.perf_counter() - in_flight_since) * 1000)
            return deadline_exceeded()
        if breaker is not None:
            if last.unreachable:
                if await breaker.unreachable(last.reason):
                    counted -= 1
                    continue  # held: the breaker says when to go again
            elif last.status_code is not None:
                await breaker.answered(sent_at, probe=probing)
        if last.completion is not None:
            return result("")
        if not last.retry:
            return result(last.reason)
        if counted >= config.max_attempts:
            return result(f"failed after {attempts} attempts: {last.reason}")
        delay = rng.uniform(0, min(config.backoff_cap, config.backoff_base * 2 ** (max(1, counted) - 1)))
        if last.retry_after is not None:
            delay = max(delay, last.retry_after)
        if time.perf_counter() + delay >= deadline_at:
            return deadline_exceeded()
        retries.append(last.reason)
        if on_retry is not None:
            on_retry(last.reason, delay)
        await asyncio.sleep(delay)


def _parse_model_list(protocol: Protocol, response: httpx.Response) -> list[ModelInfo]:
    if not response.is_success:
        raise EndpointError(_http_reason(response.status_code, response.content),
                            transient=response.status_code in PROBE_TRANSIENT_STATUSES or response.status_code >= 500)
    try:
        data = _json_object(response.content)
    except MalformedReply as error:
        raise EndpointError(f"malformed model list: {error.reason}") from None
    entries = data.get("data" if protocol == "openai" else "models")
    if not isinstance(entries, list) or not all(isinstance(entry, dict) for entry in entries):
        raise EndpointError("malformed model list: no list of models")
    models = []
    for entry in entries:
        if protocol == "openai":
            name, digest = entry.get("id"), None
            details = {key: value for key, value in entry.items() if key != "id"}
        else:
            name, digest = entry.get("name"), _str_or_none(entry.get("digest"))
            details = dict(entry.get("details") or {})
            details.update({key: entry[key] for key in ("size", "modified_at") if key in entry})
        if not isinstance(name, str):
            raise EndpointError(f"malformed model list: an entry without a name: {json.dumps(entry)[:100]}")
        models.append(ModelInfo(name=name, digest=digest, details=details))
    return models


def _model_list_request(config: EndpointConfig) -> tuple[str, dict[str, str]]:
    if config.protocol not in MODEL_LIST_PATHS:  # the other kinds list theirs in auditapp.scorer_kinds
        raise ValueError(f"unknown protocol {config.protocol!r}")
    return config.url(MODEL_LIST_PATHS[config.protocol]), config.headers()


def list_models_sync(config: EndpointConfig, *, timeout: float = 10) -> list[ModelInfo]:
    """The models an endpoint serves (openai: ``GET /v1/models``; ollama: ``GET /api/tags``).

    Raises :class:`EndpointError` with a readable reason (status and the server's message, or the
    connection error).
    """
    url, headers = _model_list_request(config)
    try:
        with httpx.Client(timeout=timeout) as client:
            response = client.get(url, headers=headers)
    except (httpx.TransportError, httpx.DecodingError, httpx.InvalidURL) as error:
        raise EndpointError(_transport_reason(error),
                            transient=_unreachable(error, urllib.parse.urlsplit(url).hostname or "")) from error
    return _parse_model_list(config.protocol, response)


def _unreachable(error: Exception, host: str) -> bool:
    """An httpx error that says the endpoint ``host`` is away (refused, reset, timed out, closed), not that it
    answers wrongly: a TLS failure (a bad certificate, https on a plain-http port) or a domain name that does not
    exist (a typo) is a ConnectError too, but asking again cannot help. A name server that cannot answer now, or
    a single-label name it does not know (a Docker Compose service stopped or starting: ``http://ollama:11434``),
    is away."""
    cause: BaseException | None = error
    seen: set[int] = set()
    while cause is not None and id(cause) not in seen:
        no_such_name = isinstance(cause, socket.gaierror) and cause.errno == socket.EAI_NONAME and "." in host
        if isinstance(cause, ssl.SSLError) or no_such_name:
            return False
        seen.add(id(cause))
        cause = cause.__cause__ or cause.__context__
    return isinstance(error, (httpx.ConnectError, httpx.TimeoutException, httpx.RemoteProtocolError,
                              httpx.ReadError, httpx.WriteError))


PROBE_TRANSIENT_STATUSES = frozenset({408, 429})
"""Client errors that say nothing about the request itself (a time-out, a rate limit): asking later can succeed."""


@dataclass(frozen=True)
class ProbeResult:
    """How one unretried chat request ended: ``status_code`` (None when no HTTP answer came), ``reason`` (the
    server's error as :func:`send_chat` words it, or the transport error; "" for a usable reply) and, for a usable
    reply, its ``text`` and ``finish_reason``."""

    status_code: int | None
    reason: str
    text: str | None = None
    finish_reason: str | None = None

    @property
    def refused(self) -> bool:
        """The server answered the request itself with a client error (a 4xx other than a time-out or a rate
        limit, :data:`PROBE_TRANSIENT_STATUSES`): sending it again cannot help."""
        return (self.status_code is not None and 400 <= self.status_code < 500
                and self.status_code not in PROBE_TRANSIENT_STATUSES)


def probe_chat_sync(config: EndpointConfig, model: str, messages: list[dict], params: dict, *,
                    schema: dict | None = None) -> ProbeResult:
    """Send one chat request once, synchronously, without limiter or retries (``attempt_timeout`` bounds it), to
    learn whether the endpoint accepts it: before an audit sends thousands like it (a structured-output form the
    server does not know is a 400 on every one)."""
    path, payload = chat_payload(config.protocol, model, messages, params, schema=schema,
                                 structured_output=config.structured_output)
    try:
        with httpx.Client(timeout=config.attempt_timeout) as client:
            response = client.post(config.url(path), json=payload, headers=config.headers())
    except (httpx.TransportError, httpx.DecodingError, httpx.InvalidURL) as error:
        return ProbeResult(None, _transport_reason(error))
    if not response.is_success:
        return ProbeResult(response.status_code, _http_reason(response.status_code, response.content))
    try:
        completion = parse_chat_reply(config.protocol, response.content)
    except MalformedReply as error:
        return ProbeResult(response.status_code, f"malformed reply: {error.reason}")
    return ProbeResult(response.status_code, "", completion.text, completion.finish_reason)


_JSON_TYPES = {"object": lambda v: isinstance(v, dict), "array": lambda v: isinstance(v, list),
               "string": lambda v: isinstance(v, str), "boolean": lambda v: isinstance(v, bool),
               "null": lambda v: v is None,
               "number": lambda v: isinstance(v, int | float) and not isinstance(v, bool),
               "integer": lambda v: (isinstance(v, int) and not isinstance(v, bool))
               or (isinstance(v, float) and v.is_integer())}


def schema_problems(value: object, schema: dict, where: str = "the answer") -> list[str]:
    """Why ``value`` (parsed JSON) is not valid against ``schema``: [] when it is. Checks the keywords the
    paradigms' answer schemas use (``type``, ``enum``, ``properties``, ``required``, ``additionalProperties``:
    false, ``items``), as JSON Schema defines them (an integer may be written 1.0; a boolean is no number);
    other keywords are not checked."""
    expected = schema.get("type")
    if expected in _JSON_TYPES and not _JSON_TYPES[expected](value):
        return [f"{where} is {_json_excerpt(value)}, not of type {expected}"]
    if "enum" in schema and not any(value == option and isinstance(value, bool) == isinstance(option, bool)
                                         for option in schema["enum"]):
        return [f"{where} is {_json_excerpt(value)}, not one of {json.dumps(schema['enum'])}"]
    problems = []
    if isinstance(value, dict):
        properties = schema.get("properties", {})
        missing = [name for name in schema.get("required", ()) if name not in value]
        if missing:
            problems.append(f"{where} lacks {', '.join(map(repr, missing))}")
        if schema.get("additionalProperties") is False:
            extra = [name for name in value if name not in properties]
            if extra:
                problems.append(f"{where} has keys the schema does not allow: {', '.join(map(repr, extra))}")
        for name, subschema in properties.items():
            if name in value:
                problems += schema_problems(value[name], subschema, f"{where}[{name!r}]")
    if isinstance(value, list) and isinstance(schema.get("items"), dict):
        for index, entry in enumerate(value):
            problems += schema_problems(entry, schema["items"], f"{where}[{index}]")
    return problems


def _json_excerpt(value: object) -> str:
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= 60 else text[:57] + "..."


def answer_schema_problem(text: str | None, schema: dict) -> str:
    """Why a reply's text is not an answer valid against ``schema`` ("" when it is): not JSON, or JSON that
    :func:`schema_problems` refuses (the first three problems)."""
    try:
        value = json.loads(text or "")
    except ValueError:
        return f"it is not JSON: {' '.join((text or '(empty)').split())[:80]!r}"
    problems = schema_problems(value, schema)
    return "; ".join(problems[:3])
