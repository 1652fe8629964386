"""How a BITS audit asks each kind of scorer about the corpus's sentences, and how a reply becomes judgments.
Pure: no Django.

A scorer kind says what it takes (``auditapp.scorer_kinds``): a chat model takes **messages** (one sentence per
request, through a versioned :class:`~auditapp.paradigms.bits.llm_scoring.ScorePrompt`); an HTTP JSON scorer takes
one **text**; a local scorer takes a batch of **texts** (``batch_size`` sentences per request, in corpus order, so
a batch is rebuilt from its index and never stored).

Every judgment is a sentence's score (``value``) or a missing score with its reason; a request's own outcome is
"score" when each of its sentences has one, else "unparseable" with how many did.
"""
from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Sequence
from dataclasses import dataclass

from auditapp.engine.protocol import Judgment, Outcome, ParsedReply, Unit
from auditapp.paradigms.bits.llm_scoring import ScorePrompt, parse_score
from auditapp.scorers.http_json import compile_score_path, extract_score
from auditapp.scorers.local import ScoreFailure

MESSAGES, TEXT, TEXTS = "messages", "text", "texts"
BATCH_PREFIX = "batch:"
MAX_BATCH_SIZE = 1000


@dataclass(frozen=True)
class PlannedUnitRequest:
    """One request of one scorer: its ``unit`` (a sentence's key, or ``batch:<index>``), the units it judges, and
    its dispatch order."""

    unit: str
    units: tuple[Unit, ...]
    order: int


def dispatch_order(seed: int, unit: str) -> int:
    """A seeded position (smaller goes first), so scorers and sentences are interleaved in the sending."""
    digest = hashlib.sha256(f"bits-order:{seed}:{unit}".encode()).digest()
    return int.from_bytes(digest[:8], "big") >> 1


def plan(units: Sequence[Unit], takes: str, *, batch_size: int, seed: int) -> list[PlannedUnitRequest]:
    """The requests a scorer that takes ``takes`` needs to judge every unit once."""
    if takes == TEXTS:
        return [PlannedUnitRequest(f"{BATCH_PREFIX}{index}", tuple(units[start:start + batch_size]),
                                   dispatch_order(seed, f"{BATCH_PREFIX}{index}"))
                for index, start in enumerate(range(0, len(units), batch_size))]
    return [PlannedUnitRequest(unit.key, (unit,), dispatch_order(seed, unit.key)) for unit in units]


def units_of(unit: str, units: Sequence[Unit], by_key: dict[str, Unit], *, batch_size: int) -> tuple[Unit, ...]:
    """The units a request judges, from its ``unit``."""
    if unit.startswith(BATCH_PREFIX):
        start = int(unit.removeprefix(BATCH_PREFIX)) * batch_size
        return tuple(units[start:start + batch_size])
    return (by_key[unit],)


def payload(units: Sequence[Unit], takes: str, prompt: ScorePrompt):
    """What is sent: a chat model's messages, an HTTP scorer's ``{"text": …}``, a local scorer's ``{"texts": […]}``."""
    if takes == MESSAGES:
        return prompt.messages(units[0].text)
    if takes == TEXT:
        return {"text": units[0].text}
    return {"texts": [unit.text for unit in units]}


@dataclass(frozen=True)
class ScoreReader:
    """How a scorer's reply is read: ``takes`` and what that kind needs (the prompt of a chat model, the score path
    and scale of an HTTP JSON scorer)."""

    takes: str
    prompt: ScorePrompt
    score_path: str = ""
    scale: tuple[float, float] = (-1.0, 1.0)

    def judgments(self, units: Sequence[Unit], text: str, finish_reason: str) -> list[Judgment]:
        if self.takes == MESSAGES:
            parsed = parse_score(text, self.prompt, finish_reason or None)
            return [_judgment(units[0], parsed.score, parsed.reason)]
        if self.takes == TEXT:
            try:
                path = compile_score_path(self.score_path)
            except ValueError as error:
                return [_judgment(units[0], None, str(error))]
            score = extract_score(text, path, scale=self.scale)
            return [_judgment(units[0], None, score.reason) if isinstance(score, ScoreFailure)
                    else _judgment(units[0], score, "")]
        return _batch_judgments(units, text)

    def parse(self, units: Sequence[Unit], text: str, finish_reason: str) -> ParsedReply:
        judgments = tuple(self.judgments(units, text, finish_reason))
        scored = sum(j.outcome == Outcome.SCORE for j in judgments)
        if scored == len(judgments):
            return ParsedReply(Outcome.SCORE, judgments=judgments)
        reason = judgments[0].reason if len(judgments) == 1 else f"{scored} of {len(judgments)} sentences scored"
        return ParsedReply(Outcome.UNPARSEABLE, reason=reason[:200], judgments=judgments)


def _judgment(unit: Unit, score: float | None, reason: str) -> Judgment:
    if score is None:
        return Judgment(unit.key, Outcome.UNPARSEABLE, reason=reason[:200] or "no score")
    return Judgment(unit.key, Outcome.SCORE, value=float(score))


def _batch_judgments(units: Sequence[Unit], text: str) -> list[Judgment]:
    """A local scorer's reply: a JSON list with, per text in order, its score or ``{"error": reason}``."""
    try:
        values = json.loads(text)
    except ValueError as error:
        return [_judgment(unit, None, f"the scorer's reply is not JSON: {error}") for unit in units]
    if not isinstance(values, list) or len(values) != len(units):
        got = f"{len(values)} values" if isinstance(values, list) else type(values).__name__
        return [_judgment(unit, None, f"the scorer returned {got} for {len(units)} texts") for unit in units]
    judgments = []
    for unit, value in zip(units, values, strict=True):
        if isinstance(value, dict):
            judgments.append(_judgment(unit, None, str(value.get("error") or "no score")))
        elif isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value):
            judgments.append(_judgment(unit, value, ""))
        else:
            judgments.append(_judgment(unit, None, f"not a number: {json.dumps(value)[:60]}"))
    return judgments
