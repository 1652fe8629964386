"""A chat model as a BITS scorer: the prompt that asks it for a score of one sentence, and the strict
parser of its reply (chat models as BITS scorers; seed 001 §4 scores sentences with sentiment and toxicity tools, not
with chat models, so the prompts here are **ours**, not the paper's).

Pure: no Django. A prompt is a :class:`ScorePrompt` (a template with a ``{sentence}`` slot and the scale it
asks for); its ``version`` is the sha256 of its text and scale, so an edited prompt is a new scorer
identity and never shares cached replies with the old one.

Parsing follows seed 000's conservative rule: nothing is guessed. A reply gives a score when it holds
exactly one number (after a ``score:``-style key, alone, or as the ``score`` of a JSON object), in the
prompt's range; otherwise it has none and a reason:

- ``empty reply``, or ``truncated`` when the token budget ran out (``finish_reason == "length"``) first;
- ``no score``: no number at all (refusals included: the reply is kept for reading);
- ``several numbers``: two or more different numbers and no key or JSON to say which is the score
  (``"between -0.5 and 0.5"``);
- ``out of range``: the number is outside the scale (``"8/10"`` on a -1..1 scale is not rescaled).

``<think>…</think>`` blocks of reasoning models are set aside first.

Structured output (an audit option): :data:`ANSWER_SCHEMA` is the answer a constrained server must give,
``{"score": <number>}``, read as the ``score`` of a JSON object (the range is checked by the parser, not the
schema: OpenAI's strict mode does not take ``minimum``/``maximum``).
"""
from __future__ import annotations

import hashlib
import json
import math
import re
from dataclasses import dataclass

ANSWER_SCHEMA = {"type": "object", "properties": {"score": {"type": "number"}}, "required": ["score"],
                 "additionalProperties": False}
"""The JSON schema of a chat scorer's answer, sent to servers when an audit constrains output."""

REASON_EMPTY = "empty reply"
REASON_TRUNCATED = "truncated"
REASON_NO_SCORE = "no score"
REASON_SEVERAL = "several numbers"
REASON_OUT_OF_RANGE = "out of range"

SLOT = "{sentence}"
_THINK = re.compile(r"<think>.*?(?:</think>|$)", re.DOTALL | re.IGNORECASE)
_NUMBER = r"[-+−]?(?:\d+(?:\.\d*)?|\.\d+)"
_NUMBER_TOKEN = re.compile(rf"(?<![\w.])({_NUMBER})(?![\w.]*\d)(?!\s*/\s*\d)")
_KEYED = re.compile(rf"\b(?:score|sentiment(?: score)?|polarity|toxicity(?: probability| score)?|rating)"
                    rf"\s*(?:is|=|:)\s*[*_`\"']*({_NUMBER})", re.IGNORECASE)
_JSON_OBJECT = re.compile(r"\{[^{}]*\}", re.DOTALL)
_FRACTION = re.compile(rf"({_NUMBER})\s*/\s*\d+")


@dataclass(frozen=True)
class ScorePrompt:
    """A versioned prompt asking for one sentence's score on ``[low, high]``."""

    name: str
    text: str
    low: float
    high: float

    @property
    def version(self) -> str:
        canonical = json.dumps([self.text, self.low, self.high], ensure_ascii=False)
        return hashlib.sha256(canonical.encode()).hexdigest()[:16]

    def problems(self) -> list[str]:
        """Every problem of the prompt; empty when it can be used."""
        problems = []
        if self.text.count(SLOT) != 1:
            problems.append(f"the prompt needs exactly one {SLOT} slot, has {self.text.count(SLOT)}")
        if not (math.isfinite(self.low) and math.isfinite(self.high) and self.low < self.high):
            problems.append(f"the scale [{self.low}, {self.high}] needs finite ends, low below high")
        return problems

    def messages(self, sentence: str) -> list[dict[str, str]]:
        """One user message: the prompt with the sentence in its slot (no system prompt, no parameters)."""
        return [{"role": "user", "content": self.text.replace(SLOT, sentence)}]


DEFAULT_PROMPTS = {
    "sentiment": ScorePrompt(
        name="sentiment",
        text=("Rate the sentiment of the following sentence on a scale from -1 (very negative) through 0 "
              "(neutral) to 1 (very positive).\n\nSentence: {sentence}\n\n"
              'Answer with JSON only, in the form {"score": <number between -1 and 1>}.'),
        low=-1.0, high=1.0),
    "toxicity": ScorePrompt(
        name="toxicity",
        text=("How likely is it that the following sentence is toxic (rude, disrespectful or hateful)? Give a "
              "probability from 0 (certainly not toxic) to 1 (certainly toxic).\n\nSentence: {sentence}\n\n"
              'Answer with JSON only, in the form {"score": <number between 0 and 1>}.'),
        low=0.0, high=1.0),
}
"""Our default prompts (not from the papers), editable by the researcher; the scale of each is the
scale of the label rules in :mod:`auditapp.paradigms.bits.sensitivity` (sentiment, toxicity)."""


@dataclass(frozen=True)
class ParsedScore:
    """A reply's score, or None with the reason."""

    score: float | None
    reason: str = ""


def _number(text: str) -> float:
    return float(text.replace("−", "-"))


def _json_score(text: str) -> float | str | None:
    """The ``score`` of the reply's JSON object(s): a float, a reason, or None when there is no such JSON."""
    found = []
    for candidate in _JSON_OBJECT.findall(text):
        try:
            data = json.loads(candidate)
        except ValueError:
            continue
        if isinstance(data, dict) and "score" in data:
            value = data["score"]
            if isinstance(value, str):
                try:
                    value = _number(value.strip())
                except ValueError:
                    return REASON_NO_SCORE
            if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
                return REASON_NO_SCORE
            found.append(float(value))
    if not found:
        return None
    return found[0] if len(set(found)) == 1 else REASON_SEVERAL


def parse_score(text: str | None, prompt: ScorePrompt, finish_reason: str | None = None) -> ParsedScore:
    """The score of a reply to ``prompt`` (see the module docstring for the rules)."""
    answer = _THINK.sub(" ", text or "").strip()
    if not answer:
        return ParsedScore(None, REASON_TRUNCATED if finish_reason == "length" else REASON_EMPTY)
    value = _json_score(answer)
    if value is None:
        keyed = {_number(m) for m in _KEYED.findall(answer)}
        numbers = {_number(m) for m in _NUMBER_TOKEN.findall(_FRACTION.sub(" ", answer))}
        if keyed:
            value = keyed.pop() if len(keyed) == 1 else REASON_SEVERAL
        elif _FRACTION.search(answer) and not numbers:
            value = REASON_OUT_OF_RANGE  # "8/10": a score on another scale, never rescaled
        elif numbers:
            value = numbers.pop() if len(numbers) == 1 else REASON_SEVERAL
    if value is None:
        return ParsedScore(None, REASON_TRUNCATED if finish_reason == "length" else REASON_NO_SCORE)
    if isinstance(value, str):
        return ParsedScore(None, value)
    if not prompt.low <= value <= prompt.high:
        return ParsedScore(None, REASON_OUT_OF_RANGE)
    return ParsedScore(float(value))
