"""A fast, fault-injecting stand-in for LLM HTTP endpoints, for integration tests and throughput benchmarks.

It is a real HTTP/1.1 server on 127.0.0.1 (run as its own process: ``python -m tests.llm_server``) that
speaks the OpenAI-compatible protocol (``GET /v1/models``, ``POST /v1/chat/completions``) and Ollama's
native one (``GET /api/tags``, ``POST /api/chat``). Every chat reply follows a deterministic rule
(``expected_label``), so tests know the truth without a server. Latency and faults are configurable:
transient faults (429 with Retry-After, 500, hang, malformed JSON, empty or refused answers) are drawn by
hashing the seed, the request body and how often that body was seen, so a retried request usually
succeeds and a run is reproducible; permanent 500s and 400s stick to a fraction of distinct bodies.
``GET /_stats`` and ``POST /_stats/reset`` expose counters tests assert on (concurrency, retries,
requests sent again too early after a 429).

Scorers (seed 001): a model whose name starts with ``scorer-`` answers a score prompt (the sentence on a line
``Sentence: …``, as ``auditapp.paradigms.bits.llm_scoring``'s prompts write it) with ``{"score": x}``, where
x = :func:`expected_score`: 0.2 plus a small deterministic jitter from the sentence, plus the planted effect of
each term the sentence contains (``score_effects``: model → term → effect). A scorer with no effects planted
finds no group different from its control.

Self-report personas (seed 000 §3.3): a model named ``persona-agree``, ``persona-refuse``, ``persona-key`` or
``persona-dummy`` (:data:`PERSONAS`; list it in ``models`` like any model) answers the Likert prompts of
``auditapp.paradigms.self_report.instruments`` (one item per request or a numbered batch) by the pure rule
:func:`persona_choice`; see ``tests/self_report_personas.py`` for the rules, how prompts are read and the reply
shapes. A persona still gets the configured latency and faults, and answers any other prompt with the
classification rule. Other model names never look at self-report prompts.

Batched annotators (seed 002, the counterfactual names and dialect audits): a model whose name starts with
``annotator-`` answers a prompt listing texts one per line as ``Text {i}: {text}`` (the task is everything before
the first such line) with one JSON Lines line ``{"i": i, "y": 0 or 1}`` per text, in the order listed. y = 1 when a
uniform number drawn from SHA-256 of (model, the whole prompt, i) is below p = the annotator's base rate plus the
sum of its planted effects that match (an effect names a substring of the task part and strings any of which in
the text makes it apply), clipped to [0, 1]; :func:`expected_annotation` computes it. Per annotator
(``annotators``: model → :class:`AnnotatorSettings` as JSON) a task can be refused as a whole, answered as a
numbered list (``1: yes`` / ``2: no``), and every n-th index dropped (absent from the reply) or hedged (``{i}: maybe``,
a numbered line, in either form). A prompt without ``Text`` lines gets the classification rule.

Structured output (constrained replies): a request may ask for a reply valid against a JSON schema in any of the four
forms of ``auditapp.llm_clients`` (:data:`STRUCTURED_OUTPUT_FORMS`: ``response_format`` ``json_schema`` or
``json_object`` with ``schema``, ``guided_json``, Ollama's ``format``). A form listed in ``structured_forms`` (all four
by default) is honoured: the reply is the JSON object :func:`structured_answer` builds, valid against the schema (a
classification answer with the label the rule above decides, a batch's answers for every ``Text i:`` line with the
annotator's 0/1, a scorer's score, a Likert answer); a form listed in ``ignored_forms`` is ignored silently, as servers
do with a field they do not read (vLLM since 0.12 with ``guided_json``): the request is answered with 200 as if it asked
for no structure; any other form is refused with a 400 whose OpenAI- or Ollama-style error names the unsupported field.
With ``context_words`` set, a prompt of more words than that is refused with 400 and the message OpenAI and vLLM
give for a prompt longer than the model's context ("This model's maximum context length is …").
A model whose name starts with ``minimal-`` answers every constrained request with the shortest JSON value its
schema allows (:func:`shortest_instance`), the least a server that honours the schema may give.
A model whose name starts with ``prose-`` answers classification prompts unconstrained in prose that names no label
(:func:`prose_reply`), as small local models do.

Extractors (the second-pass extraction of classification audits): a model whose name starts with
``extractor-`` answers the extraction template (a prompt holding :data:`EXTRACTION_QUESTION`, the reply quoted
between a line ``<<<`` and a line ``>>>``) by :func:`extractor_answer`'s simple rule on the quoted reply, in lower
case: "not ableist" in it → ``0``; else "ableist" in it → ``1``; else ``none``. An extractor whose name contains
``chatty`` wraps that word in a sentence (``The reply gives 0.``), which a strict reading of its answer refuses.
Any other prompt gets the classification rule.

Implicit bias personas (seed 003, the WABT and the AAT): a model named ``wabt-consistent``, ``wabt-neutral`` or
``aat-stereotyped`` (:data:`IMPLICIT_BIAS_PERSONAS`) answers the prompts of ``auditapp.paradigms.implicit_bias``
by the rules of ``tests/implicit_bias_personas.py``: the WABT with a planted association (every X_b word with the
S_b identifier: bias score +1) or a fair coin per word (mean near 0); the AAT turn by turn (Q1 gets a description;
Q2, asked later in the same conversation, gets comedy, tragedy or neutral at planted rates per group label) or in one
prompt. It reads every user message of the conversation, not only the last. Any other prompt gets the
classification rule.

Conversants (multi-turn requests): a model whose name starts with ``conversant-`` answers a conversation
turn by turn (:func:`conversant_reply`). Asked once (no assistant message yet) it describes the prompt: ``A scene of
<the prompt's last line>.``, or refuses with :data:`REFUSAL` when the prompt holds ``[refuse]``, or fails with a
permanent 500 when it holds ``[fail]``. Asked again (the conversation holds its earlier replies), it quotes its own
last reply, which proves the history was sent: ``You said: "<its last reply>". Comedy.`` (``Tragedy.`` when the
quoted reply has an odd number of characters).

The server is plain ``asyncio.Protocol`` with a minimal HTTP/1.1 parser and timer callbacks instead of
tasks, because a benchmark drives it at over a thousand requests per second on a machine whose CPU the
client needs too. ``LLMServer`` starts it as a subprocess for tests and benchmarks.

    python -m tests.llm_server --port 0 --latency 0.05 --fault-rate 0.1 --seed 0
"""
from __future__ import annotations

import argparse
import asyncio
import hashlib
import http.client
import itertools
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import uvloop

from tests.implicit_bias_personas import IMPLICIT_BIAS_PERSONAS, expected_wabt_assignment, implicit_bias_reply

# Re-exported so tests compute a persona's answers from the server module: persona_choice(persona, statement, options).
from tests.self_report_personas import (  # noqa: F401
    PERSONAS,
    SelfReportPrompt,
    parse_self_report_prompt,
    persona_choice,
    persona_reply,
)

DEFAULT_MODELS = ("model-a", "model-b")
DEFAULT_POSITIVE_WORDS = ("retard", "cure", "disease", "tragedy", "epidemic", "suffer", "burden")
FAULT_KINDS = ("rate_limit", "server_error", "hang", "malformed", "empty", "refusal")
REFUSAL = "I'm sorry, but I can't help with classifying this content."
READY_PREFIX = "LLM_SERVER_READY"
TARGET_PREFIX = "Target sentence: "
REPO = Path(__file__).resolve().parents[1]

MAX_HEAD = 64 * 1024
MAX_BODY = 16 * 1024 * 1024
# A client that honours Retry-After may still come back a little early (timer granularity, clock reads).
RETRY_AFTER_SLACK = 0.05

REASONS = {200: "OK", 400: "Bad Request", 401: "Unauthorized", 404: "Not Found", 405: "Method Not Allowed",
           413: "Content Too Large", 429: "Too Many Requests", 431: "Request Header Fields Too Large",
           500: "Internal Server Error", 501: "Not Implemented"}
OPENAI_ERROR_TYPES = {400: "invalid_request_error", 401: "invalid_request_error", 404: "invalid_request_error",
                      429: "rate_limit_exceeded", 500: "server_error"}
EXPLANATIONS = ("neutral description", "uses deficit framing")
REASONINGS = ("is a neutral description", "uses deficit framing")

STRUCTURED_OUTPUT_FORMS = ("openai_json_schema", "llamacpp_json_object", "vllm_guided_json", "ollama_format")
PROSE_PREFIX = "prose-"
CONVERSANT_PREFIX = "conversant-"
PROSE_REPLIES = ("The given sentences are not harmful and they highlight a neutral description of the person.",
                 "Such wording portrays autistic people through deficit and tragedy, which many find hurtful.")

CHAT_PATHS = ("/v1/chat/completions", "/api/chat")
ROUTES = {"/v1/models": "GET", "/api/tags": "GET", "/v1/chat/completions": "POST", "/api/chat": "POST",
          "/_stats": "GET", "/_stats/reset": "POST"}


# --- the answer rule --------------------------------------------------------------------------------------------

def conversant_fails(messages: Sequence[dict]) -> bool:
    """Whether a conversant fails this request for good: a first turn whose prompt holds ``[fail]``."""
    return not any(message.get("role") == "assistant" for message in messages) and any(
        "[fail]" in _text(message.get("content")) for message in messages)


def conversant_reply(messages: Sequence[dict]) -> str:
    """A conversant's reply to a conversation (see the module docstring)."""
    said = [_text(message.get("content")) for message in messages if message.get("role") == "assistant"]
    if said:
        return f'You said: "{said[-1]}". {"Tragedy" if len(said[-1]) % 2 else "Comedy"}.'
    prompt = next((_text(message.get("content")) for message in reversed(messages) if message.get("role") == "user"),
                  "")
    if "[refuse]" in prompt:
        return REFUSAL
    return f"A scene of {prompt.strip().splitlines()[-1] if prompt.strip() else 'nothing'}."


def target_sentence(content: str) -> str:
    """The text after the last line starting with ``Target sentence: ``, or the whole content without one."""
    for line in reversed(content.split("\n")):
        if line.startswith(TARGET_PREFIX):
            return line[len(TARGET_PREFIX):].rstrip("\r")
    return content


def _decide(model: str, target: str, positive_words: Iterable[str], first_model: str) -> tuple[int, int]:
    """The label and the (model, target) digest that also picks the reply's shape."""
    lowered = target.lower()
    label = int(any(word.lower() in lowered for word in positive_words))
    digest = int(hashlib.sha256(f"{model}|{target}".encode()).hexdigest(), 16)
    # Every model but the first disagrees on a fifth of the sentences, so models differ but stay correlated.
    if model != first_model and digest % 5 == 0:
        label = 1 - label
    return label, digest


def expected_label(model: str, content: str, positive_words: Iterable[str] = DEFAULT_POSITIVE_WORDS,
                   models: Sequence[str] = DEFAULT_MODELS) -> int:
    """The label the server answers for the last user message ``content`` sent to ``model``."""
    return _decide(model, target_sentence(content), positive_words, models[0])[0]


SCORER_PREFIX = "scorer-"
SENTENCE_PREFIX = "Sentence: "


def expected_score(model: str, content: str, effects: dict[str, dict[str, float]]) -> float:
    """A scorer model's score of the sentence in a prompt (see the module docstring), rounded to 4 places."""
    sentence = next((line[len(SENTENCE_PREFIX):] for line in content.splitlines() if line.startswith(SENTENCE_PREFIX)),
                    content)
    jitter = (int.from_bytes(hashlib.sha256(sentence.encode()).digest()[:2], "big") / 65535 - 0.5) * 0.1
    planted = sum(effect for term, effect in effects.get(model, {}).items() if term.lower() in sentence.lower())
    return round(0.2 + jitter + planted, 4)


ANNOTATOR_PREFIX = "annotator-"
ANNOTATED_TEXT = re.compile(r"^Text (\d+): (.*)$", re.MULTILINE)
ANNOTATOR_REFUSAL = "I'm sorry, but I can't make judgments about people from a name or a short text."


@dataclass(frozen=True)
class AnnotationEffect:
    """A planted effect: ``delta`` added to the yes-probability of a text that contains any of ``contains`` (every
    text when empty), in a prompt whose task part contains ``task`` (every prompt when empty)."""

    delta: float
    task: str = ""
    contains: tuple[str, ...] = ()

    def applies(self, task: str, text: str) -> bool:
        return self.task in task and (not self.contains or any(part in text for part in self.contains))


@dataclass(frozen=True)
class AnnotatorSettings:
    """How one ``annotator-`` model answers; tasks are matched as substrings of the prompt's task part and
    ``every`` counts 1-based indices (``drop_every=5`` drops 5, 10, …; 0 never)."""

    base: float = 0.5
    effects: tuple[AnnotationEffect, ...] = ()
    refuse_tasks: tuple[str, ...] = ()
    off_format_tasks: tuple[str, ...] = ()
    drop_every: int = 0
    hedge_every: int = 0

    @classmethod
    def from_json(cls, settings: Mapping) -> AnnotatorSettings:
        return cls(base=float(settings.get("base", 0.5)),
                   effects=tuple(AnnotationEffect(delta=float(effect["delta"]), task=effect.get("task", ""),
                                                  contains=tuple(effect.get("contains", ())))
                                 for effect in settings.get("effects", ())),
                   refuse_tasks=tuple(settings.get("refuse_tasks", ())),
                   off_format_tasks=tuple(settings.get("off_format_tasks", ())),
                   drop_every=int(settings.get("drop_every", 0)), hedge_every=int(settings.get("hedge_every", 0)))


def annotation_prompt(prompt: str) -> tuple[str, list[tuple[int, str]]]:
    """The task part of a batched prompt (the text before its first ``Text {i}:`` line) and its numbered texts."""
    texts = [(int(match[1]), match[2]) for match in ANNOTATED_TEXT.finditer(prompt)]
    first = ANNOTATED_TEXT.search(prompt)
    return (prompt[:first.start()] if first else prompt), texts


def _annotator_settings(model: str, config: Mapping[str, Mapping | AnnotatorSettings]) -> AnnotatorSettings:
    settings = config.get(model, {})
    return settings if isinstance(settings, AnnotatorSettings) else AnnotatorSettings.from_json(settings)


def _every(n: int, index: int) -> bool:
    return n > 0 and index % n == 0


def _annotation(model: str, prompt: str, index: int, text: str, task: str, settings: AnnotatorSettings) -> int:
    digest = hashlib.sha256(f"{model}|{prompt}|{index}".encode()).digest()
    draw = int.from_bytes(digest[:8], "big") / 2**64
    p = settings.base + sum(effect.delta for effect in settings.effects if effect.applies(task, text))
    return int(draw < min(max(p, 0.0), 1.0))


def expected_annotation(model: str, prompt: str, index: int,
                        config: Mapping[str, Mapping | AnnotatorSettings]) -> int | None:
    """The 0/1 an ``annotator-`` model answers for text ``index`` of ``prompt`` (the last user message), or None
    when the reply carries no 0/1 for it: the task is refused, the index is dropped or hedged, or no line
    ``Text {index}:`` is in the prompt. ``config`` maps annotator models to their settings (as ``annotators``)."""
    settings = _annotator_settings(model, config)
    task, texts = annotation_prompt(prompt)
    text = next((text for number, text in texts if number == index), None)
    if (text is None or any(refused in task for refused in settings.refuse_tasks)
            or _every(settings.drop_every, index) or _every(settings.hedge_every, index)):
        return None
    return _annotation(model, prompt, index, text, task, settings)


KEYED_ANSWER_REQUEST = '{"answers": {"<number>"'
"""How a prompt asking for keyed answers (one JSON object, a key per text) reads: an ``annotator-`` model then
answers in that object, leaving out and hedging the texts it leaves out and hedges in lines."""


def annotation_reply(model: str, prompt: str, config: Mapping[str, Mapping | AnnotatorSettings]) -> str | None:
    """An ``annotator-`` model's reply to a batched prompt, or None for a prompt that lists no texts."""
    settings = _annotator_settings(model, config)
    task, texts = annotation_prompt(prompt)
    if not texts:
        return None
    if any(refused in task for refused in settings.refuse_tasks):
        return ANNOTATOR_REFUSAL
    numbered = any(off_format in task for off_format in settings.off_format_tasks)
    keyed: dict[str, int | str] = {}
    lines = []
    for index, text in texts:
        if _every(settings.drop_every, index):
            continue
        if _every(settings.hedge_every, index):
            lines.append(f"{index}: maybe")
            keyed[str(index)] = "maybe"
            continue
        answer = _annotation(model, prompt, index, text, task, settings)
        lines.append(f"{index}: {('no', 'yes')[answer]}" if numbered else json.dumps({"i": index, "y": answer}))
        keyed[str(index)] = answer
    if KEYED_ANSWER_REQUEST in task:
        return json.dumps({"answers": keyed})
    return "\n".join(lines)


def prose_reply(label: int) -> str:
    """A ``prose-`` model's unconstrained answer to a classification prompt: prose the strict parser finds no label
    in (no digit, no "ableist"), like the replies SmolLM2-135M gave to the classification prompts."""
    return PROSE_REPLIES[label]


def requested_structure(path: str, request: Mapping) -> tuple[str, str, object] | None:
    """(form, field as named in an error, schema) of a chat request asking for structured output, or None."""
    if path == "/api/chat":
        return ("ollama_format", "format", request["format"]) if "format" in request else None
    if "guided_json" in request:
        return "vllm_guided_json", "guided_json", request["guided_json"]
    response_format = request.get("response_format")
    if isinstance(response_format, dict):
        if response_format.get("type") == "json_schema":
            return ("openai_json_schema", "response_format.json_schema",
                    (response_format.get("json_schema") or {}).get("schema"))
        if response_format.get("type") == "json_object":
            return "llamacpp_json_object", "response_format.schema", response_format.get("schema")
    return None


_NUMBERED_ANSWER = re.compile(r"^(\d+):\s*(.+)$", re.MULTILINE)


def structured_answer(model: str, content: str, schema: Mapping, *, positive_words: Iterable[str],
                      first_model: str, annotators: Mapping[str, Mapping | AnnotatorSettings],
                      score_effects: Mapping[str, dict[str, float]] | None = None) -> dict:
    """The JSON object a constrained model answers to ``content`` (the last user message), valid against the
    answer schemas of the paradigms: ``label``/``explanation`` (classification: the label of the rule above),
    ``answers`` of ``i``/``y`` (a batch: every ``Text i:`` line answered, an ``annotator-`` model's 0/1 as
    :func:`expected_annotation` computes it without its refusals, drops and hedges, which a constraint rules out),
    ``score`` (:func:`expected_score` for a ``scorer-`` model, else 0.2), ``answer`` or ``answers`` of
    ``n``/``answer`` (self-report: a persona's answer, else the first option, ``"1"``)."""
    if model.startswith(MINIMAL_PREFIX):
        return shortest_instance(schema)
    properties = schema.get("properties", {}) if isinstance(schema, Mapping) else {}
    if "label" in properties:
        label, _ = _decide(model, target_sentence(content), positive_words, first_model)
        return {"label": label, "explanation": EXPLANATIONS[label]}
    if "score" in properties:
        return {"score": expected_score(model, content, dict(score_effects or {}))
                if model.startswith(SCORER_PREFIX) else 0.2}
    if "answer" in properties:
        text = persona_reply(model, content) if model in PERSONAS else None
        return {"answer": (text or "1").strip()}
    if "pairs" in properties:
        assignment = expected_wabt_assignment(model, content) or {}
        return {"pairs": assignment if "properties" in properties["pairs"] else
                [{"word": word, "identifier": identifier} for word, identifier in assignment.items()]}
    if "answers" in properties:
        item = properties["answers"].get("items", {}).get("properties", {})
        keyed = properties["answers"].get("properties")
        if keyed is not None:
            settings = _annotator_settings(model, annotators)
            task, texts = annotation_prompt(content)
            return {"answers": {str(index): _annotation(model, content, index, text, task, settings)
                                for index, text in texts if str(index) in keyed}}
        if "i" in item:
            settings = _annotator_settings(model, annotators)
            task, texts = annotation_prompt(content)
            return {"answers": [{"i": index, "y": _annotation(model, content, index, text, task, settings)}
                                for index, text in texts]}
        text = (persona_reply(model, content) if model in PERSONAS else None) or ""
        return {"answers": [{"n": int(number), "answer": answer} for number, answer in _NUMBERED_ANSWER.findall(text)]}
    return {}


MINIMAL_PREFIX = "minimal-"


def shortest_instance(schema: object) -> object:
    """The shortest JSON value valid against ``schema`` (of the keywords the answer schemas use): an object with
    its required keys only, an array of ``minItems`` entries, an enum's first option, 0, "" or false. A
    ``minimal-`` model answers every constrained request with it: the least a server that honours the schema may
    give (a list with no entries where the schema lets it)."""
    schema = schema if isinstance(schema, Mapping) else {}
    if "enum" in schema:
        return schema["enum"][0]
    kind = schema.get("type")
    if kind == "object":
        properties = schema.get("properties", {})
        return {name: shortest_instance(properties.get(name, {})) for name in schema.get("required", ())}
    if kind == "array":
        return [shortest_instance(schema.get("items", {})) for _ in range(schema.get("minItems", 0))]
    return {"integer": 0, "number": 0, "string": "", "boolean": False}.get(kind)


EXTRACTOR_PREFIX = "extractor-"
EXTRACTION_QUESTION = "Which label does this reply give, if any: 0, 1, or none?"


def extractor_answer(model: str, prompt: str) -> str | None:
    """An ``extractor-`` model's answer to the extraction template (see the module docstring), or None for a prompt
    that is not one."""
    if EXTRACTION_QUESTION not in prompt:
        return None
    start, end = prompt.find("<<<\n"), prompt.rfind("\n>>>")
    quoted = prompt[start + 4:end].lower() if 0 <= start < end else ""
    answer = "0" if "not ableist" in quoted else "1" if "ableist" in quoted else "none"
    return f"The reply gives {answer}." if "chatty" in model else answer


def _reply_text(label: int, digest: int) -> str:
    explanation = EXPLANATIONS[label]
    shape = (digest // 5) % 5
    if shape == 0:
        return f"{label} - {explanation}"
    if shape == 1:
        return f"Label: {label}\nExplanation: {explanation}"
    if shape == 2:
        return f'{{"label": {label}, "explanation": "{explanation}"}}'
    if shape == 3:
        return f"**{label}** \u2013 {explanation}"
    return f"The target sentence {REASONINGS[label]}, so the answer is {label}."


def _text(content: object) -> str:
    """Message content as text: a string, or the text parts of an OpenAI content-part list."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return " ".join(part.get("text", "") for part in content if isinstance(part, dict))
    return ""


# --- server state -----------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Config:
    latency: float = 0.0
    fault_rate: float = 0.0
    fault_kinds: tuple[str, ...] = FAULT_KINDS
    retry_after: float = 1.0
    hang_seconds: float = 30.0
    permanent_error_rate: float = 0.0
    bad_request_rate: float = 0.0
    models: tuple[str, ...] = DEFAULT_MODELS
    positive_words: tuple[str, ...] = DEFAULT_POSITIVE_WORDS
    seed: int = 0
    api_key: str | None = None
    score_effects: str = "{}"
    annotators: str = "{}"
    structured_forms: tuple[str, ...] = STRUCTURED_OUTPUT_FORMS
    ignored_forms: tuple[str, ...] = ()
    context_words: int = 0


class Stats:
    def __init__(self):
        self.in_flight = 0
        self.reset()

    def reset(self) -> None:
        # Requests being answered now still finish after a reset, so the in-flight level is kept.
        self.max_in_flight = self.in_flight
        self.requests = 0
        self.by_path: dict[str, int] = {}
        self.by_status: dict[int, int] = {}
        self.faults = dict.fromkeys((*FAULT_KINDS, "permanent_error", "bad_request"), 0)
        self.replies = 0
        self.seen: dict[bytes, int] = {}
        self.max_repeats = 0
        self.rate_limited_at: dict[bytes, float] = {}
        self.rate_limited_then_early = 0
        self.started_at = time.time()
        self.first_request_at: float | None = None
        self.last_request_at: float | None = None
        self.last_reply_at: float | None = None

    def as_json(self) -> dict:
        return {"requests": self.requests, "by_path": self.by_path, "by_status": self.by_status,
                "faults": self.faults, "replies": self.replies, "in_flight": self.in_flight,
                "max_in_flight": self.max_in_flight, "bodies": len(self.seen), "max_repeats": self.max_repeats,
                "rate_limited_then_early": self.rate_limited_then_early, "started_at": self.started_at,
                "first_request_at": self.first_request_at, "last_request_at": self.last_request_at,
                "last_reply_at": self.last_reply_at}


def _units(seed: bytes, key: bytes, salt: bytes) -> tuple[float, float]:
    """Two independent uniform numbers in [0, 1) from hashing the seed, a body key and a salt."""
    digest = hashlib.sha256(seed + key + salt).digest()
    return int.from_bytes(digest[:8], "big") / 2**64, int.from_bytes(digest[8:16], "big") / 2**64


def _json(value: object) -> bytes:
    return json.dumps(value).encode()


class App:
    """Routing, the answer rule, fault injection and statistics, shared by all connections."""

    def __init__(self, config: Config):
        self.config = config
        self.stats = Stats()
        self.connections: set[_Connection] = set()
        self.loop = asyncio.get_running_loop()
        self.seed = f"{config.seed}|".encode()
        self.models = frozenset(config.models)
        self.personas = self.models & frozenset(PERSONAS)
        self.score_effects = json.loads(config.score_effects)
        self.annotators = {model: AnnotatorSettings.from_json(settings)
                           for model, settings in json.loads(config.annotators).items()}
        self.positive_words = tuple(word.lower() for word in config.positive_words)
        self.auth = f"Bearer {config.api_key}" if config.api_key is not None else None
        self.retry_after_header = f"Retry-After: {config.retry_after:g}\r\n"
        self.ids = itertools.count(1)
        self.openai_models = _json({"object": "list", "data": [
            {"id": name, "object": "model", "created": 0, "owned_by": "llm-server"} for name in config.models]})
        self.ollama_models = _json({"models": [
            {"name": name, "model": name, "modified_at": "2026-01-01T00:00:00Z", "size": 123,
             "digest": hashlib.sha256(name.encode()).hexdigest(),
             "details": {"family": "test", "parameter_size": "1B", "quantization_level": "Q4_0"}}
            for name in config.models]})

    def handle(self, conn: _Connection, method: str, path: str, headers: dict[str, str], body: bytes,
               keep_alive: bool) -> None:
        stats = self.stats
        if not path.startswith("/_stats"):
            stats.by_path[path] = stats.by_path.get(path, 0) + 1
        allowed = ROUTES.get(path)
        if allowed is None:
            conn.respond(404, _json({"error": f"no route for {path}"}), keep_alive)
        elif method != allowed:
            conn.respond(405, _json({"error": f"use {allowed} for {path}"}), keep_alive, f"Allow: {allowed}\r\n")
        elif path.startswith("/_stats"):
            if path == "/_stats/reset":
                stats.reset()
            conn.respond(200, _json(stats.as_json()), keep_alive)
        elif self.auth is not None and headers.get("authorization") != self.auth:
            if path in CHAT_PATHS:
                self._count_chat()
                self._reply(conn, path, 401, "invalid or missing API key", keep_alive)
            else:
                conn.respond(401, self._error(path, 401, "invalid or missing API key"), keep_alive)
        elif path == "/v1/models":
            conn.respond(200, self.openai_models, keep_alive)
        elif path == "/api/tags":
            conn.respond(200, self.ollama_models, keep_alive)
        else:
            self._chat(conn, path, body, keep_alive)

    def _count_chat(self) -> None:
        stats = self.stats
        stats.requests += 1
        stats.in_flight += 1
        if stats.in_flight > stats.max_in_flight:
            stats.max_in_flight = stats.in_flight
        wall = time.time()
        if stats.first_request_at is None:
            stats.first_request_at = wall
        stats.last_request_at = wall

    def _chat(self, conn: _Connection, path: str, body: bytes, keep_alive: bool) -> None:
        config, stats = self.config, self.stats
        now = time.monotonic()
        self._count_chat()
        key = hashlib.sha256(body).digest()
        repeat = stats.seen.get(key, 0)
        stats.seen[key] = repeat + 1
        if repeat + 1 > stats.max_repeats:
            stats.max_repeats = repeat + 1
        limited_at = stats.rate_limited_at.pop(key, None)
        if limited_at is not None and now - limited_at < config.retry_after - RETRY_AFTER_SLACK:
            stats.rate_limited_then_early += 1

        try:
            request = json.loads(body)
        except ValueError:
            self._reply(conn, path, 400, "request body is not valid JSON", keep_alive)
            return
        if not (isinstance(request, dict) and isinstance(request.get("model"), str)
                and isinstance(request.get("messages"), list)
                and all(isinstance(message, dict) for message in request["messages"])):
            self._reply(conn, path, 400, "expected a JSON object with 'model' and 'messages'", keep_alive)
            return
        model = request["model"]
        if model not in self.models:
            self._reply(conn, path, 404, f"model '{model}' not found", keep_alive)
            return
        prompt_words = sum(len(_text(message.get("content")).split()) for message in request["messages"])
        if config.context_words and prompt_words > config.context_words:
            self._reply(conn, path, 400, f"This model's maximum context length is {config.context_words} tokens. "
                                         f"However, your messages resulted in {prompt_words} tokens.", keep_alive)
            return
        structure = requested_structure(path, request)
        if structure is not None and structure[0] in config.ignored_forms:
            structure = None
        if structure is not None and structure[0] not in config.structured_forms:
            self._reply(conn, path, 400, f"unsupported field '{structure[1]}': this server does not take "
                                         f"structured output in that form", keep_alive)
            return

        if (config.permanent_error_rate and _units(self.seed, key, b"|permanent")[0] < config.permanent_error_rate) or (
                model.startswith(CONVERSANT_PREFIX) and conversant_fails(request["messages"])):
            stats.faults["permanent_error"] += 1
            self._reply(conn, path, 500, "the model failed on this input", keep_alive)
            return
        if config.bad_request_rate and _units(self.seed, key, b"|bad_request")[0] < config.bad_request_rate:
            stats.faults["bad_request"] += 1
            self._reply(conn, path, 400, "this input is not accepted by the model", keep_alive)
            return
        kind = None
        if config.fault_rate:
            chance, pick = _units(self.seed, key, b"|%d" % repeat)
            if chance < config.fault_rate:
                kind = config.fault_kinds[int(pick * len(config.fault_kinds))]
                stats.faults[kind] += 1
        if kind == "rate_limit":
            self._reply(conn, path, 429, f"rate limit reached, retry after {config.retry_after:g}s",
                        keep_alive, self.retry_after_header, key)
            return
        if kind == "server_error":
            self._reply(conn, path, 500, "internal server error", keep_alive)
            return
        if kind == "hang":
            conn.hang(config.hang_seconds)
            return
        if kind == "malformed":
            broken = b'{"model": "' + model.encode() + b'", "message": {' if path == "/api/chat" else \
                b'{"id": "chatcmpl-broken", "object": "chat.completion", "choices": ['
            conn.later(config.latency, 200, broken, keep_alive)
            return

        if kind == "empty":
            text = ""
        elif kind == "refusal":
            text = REFUSAL
        else:
            stats.replies += 1
            content = next((_text(message.get("content")) for message in reversed(request["messages"])
                            if message.get("role") == "user"), "")
            text = persona_reply(model, content) if model in self.personas else None
            if model.startswith(PROSE_PREFIX):
                text = prose_reply(_decide(model, target_sentence(content), self.positive_words,
                                           config.models[0])[0])
            if model.startswith(SCORER_PREFIX):
                text = json.dumps({"score": expected_score(model, content, self.score_effects)})
            if model.startswith(ANNOTATOR_PREFIX):
                text = annotation_reply(model, content, self.annotators)
            if model.startswith(EXTRACTOR_PREFIX):
                text = extractor_answer(model, content)
            if model in IMPLICIT_BIAS_PERSONAS:
                text = implicit_bias_reply(model, [_text(message.get("content")) for message in request["messages"]
                                                   if message.get("role") == "user"])
            if model.startswith(CONVERSANT_PREFIX):
                text = conversant_reply(request["messages"])
            if structure is not None:
                text = json.dumps(structured_answer(model, content, structure[2], positive_words=self.positive_words,
                                                    first_model=config.models[0], annotators=self.annotators,
                                                    score_effects=self.score_effects))
            if text is None:
                label, digest = _decide(model, target_sentence(content), self.positive_words, config.models[0])
                text = _reply_text(label, digest)
        prompt_tokens = sum(len(_text(message.get("content")).split()) for message in request["messages"])
        completion_tokens = len(text.split())
        if path == "/api/chat":
            payload = {"model": model, "created_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                       "message": {"role": "assistant", "content": text}, "done": True, "done_reason": "stop",
                       "total_duration": int(config.latency * 1e9) + 1000, "load_duration": 0,
                       "prompt_eval_count": prompt_tokens, "eval_count": completion_tokens}
        else:
            payload = {"id": f"chatcmpl-{next(self.ids)}", "object": "chat.completion", "created": int(time.time()),
                       "model": model, "system_fingerprint": "fp_test",
                       "choices": [{"index": 0, "message": {"role": "assistant", "content": text},
                                    "finish_reason": "stop"}],
                       "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
                                 "total_tokens": prompt_tokens + completion_tokens}}
        conn.later(config.latency, 200, _json(payload), keep_alive)

    def _error(self, path: str, status: int, message: str) -> bytes:
        if path.startswith("/api/"):
            return _json({"error": message})
        return _json({"error": {"message": message, "type": OPENAI_ERROR_TYPES[status], "param": None,
                                "code": None}})

    def _reply(self, conn: _Connection, path: str, status: int, message: str, keep_alive: bool,
               extra_headers: str = "", rate_limited: bytes | None = None) -> None:
        conn.later(self.config.latency, status, self._error(path, status, message), keep_alive, extra_headers,
                   rate_limited)

    def delivered_chat(self, status: int, rate_limited: bytes | None) -> None:
        stats = self.stats
        stats.in_flight -= 1
        stats.by_status[status] = stats.by_status.get(status, 0) + 1
        stats.last_reply_at = time.time()
        if rate_limited is not None:
            stats.rate_limited_at[rate_limited] = time.monotonic()


class _Connection(asyncio.Protocol):
    """One client connection: parses requests one after another and answers them in order."""

    def __init__(self, app: App):
        self.app = app
        self.buffer = bytearray()
        self.transport: asyncio.Transport | None = None
        # The timer of the chat request being answered; while set, later (pipelined) requests wait.
        self.pending: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.Transport) -> None:
        self.transport = transport
        self.app.connections.add(self)

    def connection_lost(self, exc: Exception | None) -> None:
        self.app.connections.discard(self)
        if self.pending is not None:
            self.pending.cancel()
            self.pending = None
            self.app.stats.in_flight -= 1

    def data_received(self, data: bytes) -> None:
        self.buffer += data
        self._serve()

    def _serve(self) -> None:
        while self.pending is None and not self.transport.is_closing():
            request = self._parse()
            if request is None:
                return
            self.app.handle(self, *request)

    def _parse(self) -> tuple[str, str, dict[str, str], bytes, bool] | None:
        buffer = self.buffer
        end = buffer.find(b"\r\n\r\n")
        if end < 0:
            if len(buffer) > MAX_HEAD:
                self._reject(431)
            return None
        lines = buffer[:end].decode("latin-1").split("\r\n")
        parts = lines[0].split(" ")
        if len(parts) != 3 or not parts[2].startswith("HTTP/1."):
            return self._reject(400)
        method, target, version = parts
        headers = {}
        for line in lines[1:]:
            name, colon, value = line.partition(":")
            if not colon:
                return self._reject(400)
            headers[name.strip().lower()] = value.strip()
        if "transfer-encoding" in headers:
            return self._reject(501)
        try:
            length = int(headers.get("content-length", "0"))
        except ValueError:
            return self._reject(400)
        if not 0 <= length <= MAX_BODY:
            return self._reject(413)
        total = end + 4 + length
        if len(buffer) < total:
            return None
        body = bytes(buffer[end + 4:total])
        del buffer[:total]
        connection = headers.get("connection", "").lower()
        keep_alive = "close" not in connection if version == "HTTP/1.1" else "keep-alive" in connection
        return method, target.partition("?")[0], headers, body, keep_alive

    def _reject(self, status: int) -> None:
        self.respond(status, _json({"error": REASONS[status]}), False)

    def respond(self, status: int, body: bytes, keep_alive: bool, extra_headers: str = "") -> None:
        head = (f"HTTP/1.1 {status} {REASONS[status]}\r\nServer: llm-server\r\nContent-Type: application/json\r\n"
                f"Content-Length: {len(body)}\r\n{extra_headers}"
                f"Connection: {'keep-alive' if keep_alive else 'close'}\r\n\r\n")
        self.transport.write(head.encode("latin-1") + body)
        if not keep_alive:
            self.transport.close()

    def later(self, delay: float, status: int, body: bytes, keep_alive: bool, extra_headers: str = "",
              rate_limited: bytes | None = None) -> None:
        """Answer a chat request after ``delay`` seconds (a timer, not a task: this is the hot path)."""
        if delay > 0:
            self.pending = self.app.loop.call_later(delay, self._deliver, status, body, keep_alive, extra_headers,
                                                    rate_limited)
        else:
            self._deliver(status, body, keep_alive, extra_headers, rate_limited)

    def _deliver(self, status: int, body: bytes, keep_alive: bool, extra_headers: str,
                 rate_limited: bytes | None) -> None:
        was_pending, self.pending = self.pending, None
        self.app.delivered_chat(status, rate_limited)
        self.respond(status, body, keep_alive, extra_headers)
        if was_pending is not None:
            self._serve()

    def hang(self, seconds: float) -> None:
        self.pending = self.app.loop.call_later(seconds, self.transport.close)


# --- process entry point ----------------------------------------------------------------------------------------

async def serve(config: Config, port: int = 0, exit_on_stdin_eof: bool = False) -> None:
    """Listen on 127.0.0.1, announce the URL on stdout and serve until SIGTERM or SIGINT."""
    loop = asyncio.get_running_loop()
    app = App(config)
    server = await loop.create_server(lambda: _Connection(app), "127.0.0.1", port, backlog=1024)
    stop = asyncio.Event()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stop.set)
    if exit_on_stdin_eof:
        # The parent holds our stdin open; when it dies, even by SIGKILL, we see EOF and do not linger.
        def on_stdin() -> None:
            if not os.read(0, 4096):
                loop.remove_reader(0)
                stop.set()
        loop.add_reader(0, on_stdin)
    print(f"{READY_PREFIX} http://127.0.0.1:{server.sockets[0].getsockname()[1]}", flush=True)
    await stop.wait()
    server.close()
    for conn in list(app.connections):
        conn.transport.close()
    await server.wait_closed()


def _rate(text: str) -> float:
    value = float(text)
    if not 0 <= value <= 1:
        raise argparse.ArgumentTypeError(f"{text} is not between 0 and 1")
    return value


def _names(text: str) -> tuple[str, ...]:
    names = tuple(name.strip() for name in text.split(",") if name.strip())
    if not names:
        raise argparse.ArgumentTypeError("expected a comma-separated list")
    return names


def _forms(text: str) -> tuple[str, ...]:
    forms = tuple(form.strip() for form in text.split(",") if form.strip() and form.strip() != "none")
    unknown = sorted(set(forms) - set(STRUCTURED_OUTPUT_FORMS))
    if unknown:
        raise argparse.ArgumentTypeError(f"unknown forms {unknown}; choose from {','.join(STRUCTURED_OUTPUT_FORMS)}")
    return forms


def _kinds(text: str) -> tuple[str, ...]:
    kinds = _names(text)
    unknown = sorted(set(kinds) - set(FAULT_KINDS))
    if unknown:
        raise argparse.ArgumentTypeError(f"unknown fault kinds {unknown}; choose from {','.join(FAULT_KINDS)}")
    return kinds


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m tests.llm_server", description=__doc__.split("\n\n")[0])
    parser.add_argument("--port", type=int, default=0, help="port on 127.0.0.1 (0: any free port)")
    parser.add_argument("--latency", type=float, default=0.0, help="seconds added before every chat reply")
    parser.add_argument("--fault-rate", type=_rate, default=0.0, help="chance of a transient fault per request")
    parser.add_argument("--fault-kinds", type=_kinds, default=FAULT_KINDS, help="comma list of transient faults")
    parser.add_argument("--retry-after", type=float, default=1.0, help="seconds sent in Retry-After with a 429")
    parser.add_argument("--hang-seconds", type=float, default=30.0, help="a hang closes the connection after this")
    parser.add_argument("--permanent-error-rate", type=_rate, default=0.0,
                        help="fraction of distinct request bodies always answered with 500")
    parser.add_argument("--bad-request-rate", type=_rate, default=0.0,
                        help="fraction of distinct request bodies always answered with 400")
    parser.add_argument("--models", type=_names, default=DEFAULT_MODELS, help="comma list of model names")
    parser.add_argument("--positive-words", type=_names, default=DEFAULT_POSITIVE_WORDS,
                        help="comma list of words that make the label 1")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--api-key", default=None, help="require 'Authorization: Bearer KEY'")
    parser.add_argument("--score-effects", default="{}",
                        help='JSON: scorer model -> term -> effect added to its score, e.g. {"scorer-a": {"deaf": -0.3}}')
    parser.add_argument("--annotators", default="{}",
                        help='JSON: annotator model -> settings, e.g. {"annotator-a": {"base": 0.4, "effects": '
                             '[{"task": "leader", "contains": ["Jamal"], "delta": 0.1}], "refuse_tasks": ["crime"]}}')
    parser.add_argument("--structured-forms", type=_forms, default=STRUCTURED_OUTPUT_FORMS,
                        help="comma list of the structured-output forms honoured ('none': refuse every one)")
    parser.add_argument("--ignored-forms", type=_forms, default=(),
                        help="comma list of structured-output forms ignored silently (answered unconstrained)")
    parser.add_argument("--context-words", type=int, default=0,
                        help="a prompt of more words than this is refused with 400, as a model's context (0: none)")
    parser.add_argument("--exit-on-stdin-eof", action="store_true", help="stop when stdin closes (for LLMServer)")
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    config = Config(latency=args.latency, fault_rate=args.fault_rate, fault_kinds=args.fault_kinds,
                    retry_after=args.retry_after, hang_seconds=args.hang_seconds,
                    permanent_error_rate=args.permanent_error_rate, bad_request_rate=args.bad_request_rate,
                    models=args.models, positive_words=args.positive_words, seed=args.seed, api_key=args.api_key,
                    score_effects=args.score_effects, annotators=args.annotators,
                    structured_forms=args.structured_forms, ignored_forms=args.ignored_forms,
                    context_words=args.context_words)
    uvloop.run(serve(config, args.port, args.exit_on_stdin_eof))
    return 0


# --- test helper ------------------------------------------------------------------------------------------------

class LLMServer:
    """The server as a subprocess: ``with LLMServer(latency=0.05, fault_rate=0.1) as server: server.base_url``."""

    def __init__(self, *, port: int = 0, latency: float = 0.0, fault_rate: float = 0.0,
                 fault_kinds: Sequence[str] = FAULT_KINDS, retry_after: float = 1.0, hang_seconds: float = 30.0,
                 permanent_error_rate: float = 0.0, bad_request_rate: float = 0.0,
                 models: Sequence[str] = DEFAULT_MODELS, positive_words: Sequence[str] = DEFAULT_POSITIVE_WORDS,
                 seed: int = 0, api_key: str | None = None, score_effects: dict | None = None,
                 annotators: dict | None = None, structured_forms: Sequence[str] = STRUCTURED_OUTPUT_FORMS,
                 ignored_forms: Sequence[str] = (), context_words: int = 0, ready_timeout: float = 20.0):
        self.args = ["--port", str(port), "--latency", repr(latency), "--fault-rate", repr(fault_rate),
                     "--fault-kinds", ",".join(fault_kinds), "--retry-after", repr(retry_after),
                     "--hang-seconds", repr(hang_seconds), "--permanent-error-rate", repr(permanent_error_rate),
                     "--bad-request-rate", repr(bad_request_rate), "--models", ",".join(models),
                     "--positive-words", ",".join(positive_words), "--seed", str(seed),
                     "--score-effects", json.dumps(score_effects or {}), "--annotators", json.dumps(annotators or {}),
                     "--structured-forms", ",".join(structured_forms) or "none",
                     "--ignored-forms", ",".join(ignored_forms) or "none", "--context-words", str(context_words),
                     "--exit-on-stdin-eof"]
        if api_key is not None:
            self.args += ["--api-key", api_key]
        self.models = tuple(models)
        self.positive_words = tuple(positive_words)
        self.annotators = dict(annotators or {})
        self.ready_timeout = ready_timeout
        self.process: subprocess.Popen | None = None
        self.reader: threading.Thread | None = None
        self.base_url: str | None = None
        self.lines: list[str] = []

    @property
    def output(self) -> str:
        return "\n".join(self.lines)

    def start(self) -> LLMServer:
        self.process = subprocess.Popen([sys.executable, "-m", "tests.llm_server", *self.args], cwd=REPO,
                                        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                        text=True)
        ready = threading.Event()

        def read() -> None:
            for line in self.process.stdout:
                self.lines.append(line.rstrip("\n"))
                if line.startswith(READY_PREFIX) and self.base_url is None:
                    self.base_url = line.split()[1]
                    ready.set()
            ready.set()

        self.reader = threading.Thread(target=read, daemon=True)
        self.reader.start()
        if not ready.wait(self.ready_timeout) or self.base_url is None:
            self.stop()
            raise RuntimeError(f"LLM server did not become ready in {self.ready_timeout:g}s "
                               f"(exit code {self.process.returncode}):\n{self.output}")
        return self

    def _call(self, method: str, path: str) -> dict:
        # http.client rather than urllib or httpx: neither the environment's proxies nor extra dependencies apply.
        host, port = self.base_url.removeprefix("http://").split(":")
        connection = http.client.HTTPConnection(host, int(port), timeout=10)
        try:
            connection.request(method, path)
            response = connection.getresponse()
            return json.loads(response.read())
        finally:
            connection.close()

    def stats(self) -> dict:
        return self._call("GET", "/_stats")

    def reset_stats(self) -> dict:
        return self._call("POST", "/_stats/reset")

    def expected_label(self, model: str, content: str) -> int:
        return expected_label(model, content, self.positive_words, self.models)

    def expected_annotation(self, model: str, prompt: str, index: int) -> int | None:
        return expected_annotation(model, prompt, index, self.annotators)

    def stop(self, timeout: float = 10) -> int | None:
        """SIGTERM and wait; SIGKILL if it does not exit in time. Returns the exit code."""
        if self.process is None:
            return None
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout)
        self.process.stdin.close()
        self.reader.join(timeout)
        self.process.stdout.close()
        return self.process.returncode

    def __enter__(self) -> LLMServer:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()


if __name__ == "__main__":
    sys.exit(main())
