"""The kinds of scorer an endpoint can be, in one registry: how each lists its models, what identifies its
replies (for the request key) and how a request is sent (ARCHITECTURE.md, "Scorers").

Pure layer, like :mod:`auditapp.llm_clients`: no Django; the caller passes an
:class:`~auditapp.llm_clients.EndpointConfig` whose ``protocol`` names the kind.

- ``openai``, ``ollama``: chat LLMs. The payload is the chat messages, sent by
  :func:`~auditapp.llm_clients.send_chat`; models are listed by the server; no identity beyond the key's
  protocol, base URL, model and digest (so their request keys are those made before kinds existed).
- ``http_json``: a scoring service reached by a JSON POST (:mod:`auditapp.scorers.http_json`). The payload is
  ``{"text": ...}``; the request template with the text in it is POSTed to ``base_url`` (the whole URL) with
  the endpoint's API key as ``Authorization: Bearer``, through the same retry, limiter, breaker and deadline
  loop as a chat request (:func:`~auditapp.llm_clients.post_json`). A 2xx whose body is not JSON is garbage and
  retried like a broken chat reply; a JSON reply without a score in scale (the path finds nothing, not a
  number, out of scale) fails at once with the reason: asking again would get the same answer. The reply body
  is the completion's text, so a re-parse re-extracts the score. One model, ``"score"``, with digest ``""``:
  such a server says nothing about its version; the identity (request template, score path, scale) goes into
  the key instead.
- ``local``: VADER and TextBlob in the worker (:mod:`auditapp.scorers.local`), no server: ``base_url`` is
  unused, no address is checked, no limiter slot is taken and no breaker is asked. The payload is
  ``{"texts": [...]}``, scored in one thread per process, batch after batch (the event loop keeps serving the other senders); the completion's
  text is a JSON list with, per text, its score or ``{"error": reason}`` (a scorer that fails on one text
  fails only that text). Models ``vader`` and ``textblob``; each one's identity (package version, lexicon
  sha256) goes into the key, and its digest is a short hash of it.

Generation parameters mean nothing to a scorer that is not a chat model: ``http_json`` and ``local`` refuse
any (``ValueError``, as :func:`~auditapp.llm_clients.chat_payload` refuses reserved ones).
"""
from __future__ import annotations

import asyncio
import hashlib
import json
import math
import random
import time
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING, Any

import aiohttp
import jmespath

from auditapp.llm_clients import (
    Completion,
    EndpointConfig,
    MalformedReply,
    ModelInfo,
    SendResult,
    list_models_sync,
    post_json,
    send_chat,
    structured_output_problem,
)
from auditapp.scorers.http_json import (
    MAX_REPLY_BYTES,
    compile_score_path,
    extract_score,
    render_request,
    validate_request_template,
)
from auditapp.scorers.local import LOCAL_SCORERS, ScoreFailure, local_scorer, score_batch

if TYPE_CHECKING:
    from auditapp.endpoint_breaker import EndpointBreaker
    from auditapp.llm_limits import Limiter

HTTP_JSON_MODEL = "score"
DIGEST_CHARS = 12
# Local scorers hold the GIL while they score: batches scored in one thread run one after the other instead of
# taking the GIL from each other every few hundred microseconds (the worker's loop shortens the switch interval).
# Measured by benchmarks/bits_throughput.py (TextBlob, 2,310 sentences in batches of 64): the worker's work went
# from 440–520 ms with Python's default executor (6 threads on 2 cores) to 375 ms. The price: a batch past its
# deadline, which runs on to its end (a thread cannot be stopped), delays the process's next batches until it ends.
_LOCAL_SCORING = ThreadPoolExecutor(max_workers=1, thread_name_prefix="local-scorer")

Send = Callable[..., Awaitable[SendResult]]


@dataclass(frozen=True)
class ScorerKind:
    """One kind of endpoint. ``networked``: it has a base URL that is checked against the address policy, and
    its requests take limiter slots and answer to the breaker. ``models_known``: its models are listed without
    asking a server. ``takes``: the payload a paradigm builds for it, ``messages`` (chat), ``text`` (one text) or
    ``texts`` (a batch)."""

    name: str
    networked: bool
    models_known: bool
    takes: str
    list_models: Callable[[EndpointConfig], list[ModelInfo]]
    identity: Callable[[EndpointConfig, str], dict]
    send: Send


def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":"))


def _no_params(kind: str, params: dict) -> None:
    if params:
        raise ValueError(f"a {kind} scorer takes no generation parameters, not {sorted(params)}")


# ------------------------------------------------------------------------------------------------ chat

def _chat_identity(config: EndpointConfig, model: str) -> dict:
    return {}


# ------------------------------------------------------------------------------------------- http_json

def _http_json_identity(config: EndpointConfig, model: str) -> dict:
    return {"kind": "http_json", "request_template": config.request_template, "score_path": config.score_path,
            "scale": [float(config.scale[0]), float(config.scale[1])]}


def _http_json_models(config: EndpointConfig) -> list[ModelInfo]:
    return [ModelInfo(name=HTTP_JSON_MODEL, digest="",
                      details={"url": config.base_url, **_http_json_identity(config, HTTP_JSON_MODEL)})]


def _score_reply(body: bytes, *, path: jmespath.parser.ParsedResult, scale: tuple[float, float]) -> Completion:
    """The reply body as a completion when it holds a score in scale; :class:`MalformedReply` otherwise."""
    try:
        text = body.decode("utf-8")
        if len(body) <= MAX_REPLY_BYTES:  # a longer one is refused unread by extract_score
            json.loads(text)
    except (UnicodeDecodeError, ValueError, RecursionError):
        raise MalformedReply(f"not JSON ({body[:80].decode('utf-8', errors='replace')!r})") from None
    score = extract_score(text, path, scale=scale)
    if isinstance(score, ScoreFailure):
        raise MalformedReply(f"no score: {score.reason}", retry=False)
    return Completion(text=text, finish_reason=None, prompt_tokens=None, completion_tokens=None, model_reported=None)


async def _send_http_json(session: aiohttp.ClientSession, config: EndpointConfig, limiter: Limiter, model: str,
                          payload: dict, params: dict, **options) -> SendResult:
    _no_params("http_json", params)
    if not isinstance(payload, dict) or not isinstance(payload.get("text"), str):
        raise ValueError(f'an HTTP JSON scorer is sent {{"text": ...}}, not {_canonical(payload)[:80]}')
    parse = partial(_score_reply, path=compile_score_path(config.score_path), scale=config.scale)
    return await post_json(session, config, limiter, config.base_url,
                           render_request(config.request_template, payload["text"]), parse, **options)


# ----------------------------------------------------------------------------------------------- local

def _local_identity(config: EndpointConfig, model: str) -> dict:
    return local_scorer(model).identity()


def _local_models(config: EndpointConfig) -> list[ModelInfo]:
    models = []
    for name, scorer in LOCAL_SCORERS.items():
        identity = scorer.identity()
        digest = hashlib.sha256(_canonical(identity).encode()).hexdigest()[:DIGEST_CHARS]
        models.append(ModelInfo(name=name, digest=digest, details=identity))
    return models


def _scores_text(results: list[float | ScoreFailure]) -> str:
    return json.dumps([{"error": r.reason} if isinstance(r, ScoreFailure) else r for r in results])


async def _send_local(session: aiohttp.ClientSession | None, config: EndpointConfig, limiter: Limiter | None,
                      model: str, payload: dict, params: dict, **options) -> SendResult:
    _no_params("local", params)
    texts = payload.get("texts") if isinstance(payload, dict) else None
    if not isinstance(texts, list):
        raise ValueError(f'a local scorer is sent {{"texts": [...]}}, not {_canonical(payload)[:80]}')
    started = time.perf_counter()

    def result(completion: Completion | None, error: str) -> SendResult:
        return SendResult(completion=completion, error=error, attempts=1,
                          latency_ms=(time.perf_counter() - started) * 1000, status_code=None, retries=())

    try:
        # A thread the deadline gives up on runs on to its end; its scores are discarded.
        async with asyncio.timeout(config.deadline):
            results = await asyncio.get_running_loop().run_in_executor(_LOCAL_SCORING, score_batch, model, texts)
    except TimeoutError:
        return result(None, f"deadline exceeded after 1 attempts: {len(texts)} texts not scored in "
                            f"{config.deadline:g} s")
    except Exception as error:  # noqa: BLE001 - a scorer that cannot load is the request's failure, with its reason
        reason = error.args[0] if isinstance(error, KeyError) and error.args else error
        return result(None, f"{type(error).__name__}: {reason}")
    return result(Completion(text=_scores_text(results), finish_reason=None, prompt_tokens=None,
                             completion_tokens=None, model_reported=model), "")


# ---------------------------------------------------------------------------------------------- registry

KINDS: dict[str, ScorerKind] = {kind.name: kind for kind in (
    ScorerKind("openai", True, False, "messages", list_models_sync, _chat_identity, send_chat),
    ScorerKind("ollama", True, False, "messages", list_models_sync, _chat_identity, send_chat),
    ScorerKind("http_json", True, True, "text", _http_json_models, _http_json_identity, _send_http_json),
    ScorerKind("local", False, True, "texts", _local_models, _local_identity, _send_local),
)}


def scorer_kind(name: str) -> ScorerKind:
    """The kind of that name; ``KeyError`` naming the known ones otherwise."""
    try:
        return KINDS[name]
    except KeyError:
        raise KeyError(f"no endpoint kind {name!r}; known: {', '.join(sorted(KINDS))}") from None


def takes(name: str) -> str:
    """What a request to an endpoint of that kind carries: ``messages``, ``text`` or ``texts``."""
    return scorer_kind(name).takes


def list_models(config: EndpointConfig) -> list[ModelInfo]:
    """The models the endpoint offers (a chat server is asked: :class:`~auditapp.llm_clients.EndpointError`
    when it cannot answer; the other kinds know theirs)."""
    return scorer_kind(config.protocol).list_models(config)


def identity(config: EndpointConfig, model: str) -> dict:
    """What decides a reply beyond the key's protocol, base URL, model and digest ({} for chat kinds)."""
    return scorer_kind(config.protocol).identity(config, model)


async def send(session: aiohttp.ClientSession | None, config: EndpointConfig, limiter: Limiter, model: str,
               payload: Any, params: dict, *, rng: random.Random, on_retry: Callable[[str, float], None] | None = None,
               breaker: EndpointBreaker | None = None, schema: dict | None = None) -> SendResult:
    """Send one request of the endpoint's kind (payload and policy in the module docstring). Never raises for
    endpoint or scorer problems (they end in ``SendResult.error``); a payload or parameters the kind cannot
    take raise ``ValueError``, and so does a ``schema`` (structured output) for a kind that is not a chat model;
    cancellation and the limiter's own errors propagate. ``session`` is None only where no endpoint of a networked
    kind is asked (a local scorer needs none)."""
    kind = scorer_kind(config.protocol)
    if schema is None:
        return await kind.send(session, config, limiter, model, payload, params, rng=rng, on_retry=on_retry,
                               breaker=breaker)
    if kind.takes != "messages":
        raise ValueError(f"a {kind.name} endpoint is not a chat model: its output cannot be constrained")
    return await kind.send(session, config, limiter, model, payload, params, rng=rng, on_retry=on_retry,
                           breaker=breaker, schema=schema)


def endpoint_problems(*, kind: str, base_url: str, request_template: Any, score_path: str, score_min: float | None,
                      score_max: float | None, structured_output: str = "") -> dict[str, list[str]]:
    """What is wrong with an endpoint's settings for its kind, by field name ({} when nothing is): a local
    endpoint has no base URL, every other kind needs one; a structured-output form is one its protocol takes
    (:func:`~auditapp.llm_clients.structured_output_problem`), and only a chat endpoint has one; an HTTP JSON
    scorer needs a request template with ``"{{text}}"`` exactly once, a JMESPath score path and a finite scale
    with ``score_min < score_max``."""
    if kind not in KINDS:
        return {"protocol": [f"no endpoint kind {kind!r}; known: {', '.join(sorted(KINDS))}"]}
    problems: dict[str, list[str]] = {}
    if not KINDS[kind].networked and base_url:
        problems["base_url"] = [f"a {kind} endpoint runs in the worker and has no base URL; leave it empty"]
    if KINDS[kind].networked and not base_url:
        problems["base_url"] = [f"a {kind} endpoint needs a base URL"]
    if structured_output:
        problem = (structured_output_problem(kind, structured_output) if KINDS[kind].takes == "messages"
                   else f"a {kind} endpoint is not a chat model: its output cannot be constrained")
        if problem:
            problems["structured_output"] = [problem]
    if kind != "http_json":
        return problems
    if request_template is None:
        problems["request_template"] = ['an HTTP JSON scorer needs a request template, e.g. {"inputs": "{{text}}"}']
    elif template_problems := validate_request_template(request_template):
        problems["request_template"] = template_problems
    try:
        compile_score_path(score_path or "")
    except ValueError as error:
        problems["score_path"] = [str(error)]
    bounds = {"score_min": score_min, "score_max": score_max}
    for name, value in bounds.items():
        if value is None or not math.isfinite(value):
            problems[name] = [f"{name} must be a finite number, not {value}"]
    if score_min is not None and score_max is not None and not problems.keys() & bounds.keys() \
            and not score_min < score_max:
        problems["score_max"] = [f"score_max ({score_max:g}) must be more than score_min ({score_min:g})"]
    return problems
