"""The declared protocol of an audit paradigm (../shared/PARADIGMS.md, "The shape to build"). Pure: no Django.

- A :class:`Unit` is what is judged (a sentence of a template corpus, a study item, an instrument item, one side
  of a matched pair) with its ``factors`` (group, term, template, task…): the columns analyses group by.
- A request is one call to a scorer. It is rebuilt from the units whenever it is needed, never stored; its key
  (a hash of everything sent) proves the rebuilt request is the one that was sent.
- A reply is parsed into a :class:`ParsedReply`: a summary of the request (its outcome, and for a one-unit
  request its label) and one :class:`Judgment` per judged unit (a float score, a label, or a missing value with
  its reason). The engine writes the judgments in bulk with the reply and rewrites them on a re-parse.
- A :class:`ReplicateRule` names how replicates of a unit are reduced (majority for a label, mean for a score),
  and is recorded with the results.

A paradigm's request builder (:class:`RequestBuilder`) is what the worker needs; the rest of a paradigm
(settings, corpus, analysis, dashboard, exports) is declared by its adapter in :mod:`auditapp.engine.registry`.

Multi-turn requests (ARCHITECTURE.md: "a chain of keyed turns"; seed 003 §3.1's affective attribution asks a
model to describe, then to classify its own description). A builder whose audit asks in turns
(:class:`MultiTurnRequestBuilder`) says so with ``multi_turn`` true, has a ``follow_up`` method, and plans, beside a
request, later turns of the same conversation. ``multi_turn`` is this audit's answer, not the paradigm's: the engine
reads it (:func:`is_multi_turn`) before every turn query, so a builder that can ask in turns but does not in this
audit (the AAT's single-prompt form, the WABT) says false and its audits pay nothing for the mechanism; a builder
without the attribute is one-turn.

- ``requests()`` yields turn 0 as usual, and turn ``n`` as a ``PlannedRequest`` with the same model, condition,
  item or unit and replicate, ``turn=n`` and a blank ``key`` (what it sends depends on a reply not yet given).
  The engine links each turn to the one before it (``AuditRequest.previous``).
- ``payload(request)`` builds turn 0 only. Once turn ``n - 1`` is answered, the engine asks
  ``follow_up(request, previous_payload, previous_reply_text)`` for turn ``n``'s whole payload (for chat: the
  earlier messages, the model's own reply as the assistant message, the new question), hashes it with ``key()``
  and stores the key in the same transaction that records the earlier reply; only then can turn ``n`` be claimed.
  Its key covers the earlier reply, so the reply cache works per turn.
- ``follow_up`` raises :class:`NoFollowUp` (its message the reason) when the earlier reply gives nothing to
  continue from (empty, a refusal: the paradigm decides). The later turns are then closed unsent, failed with
  "turn n gave nothing to continue from: <reason>" (not counted against the error budget); an earlier turn that
  failed closes them with "turn n failed: <its error>". "Retry failed" re-opens such conversations whole.
- A turn that only prepares the next one (a description) records no judgment: its ``parse`` returns a
  :class:`ParsedReply` with no ``judgments`` (its ``outcome`` still says how the reply read: an answer, or a
  refusal or unparseable with the reason, for the parse-quality report). ``parse`` sees ``request.turn``.

Per-request answer schemas (structured output). The registry's ``answer_schema(audit)`` is the form of every answer
of the audit; a builder may narrow it to what one request sends (:class:`SchemaNarrowingBuilder`): a batch's schema
with one required key per text sent, a word test's with one key per word and the instance's identifiers as the only
values. A loose schema lets a constrained server give a well-formed but empty answer (``{"answers": []}``); a
narrowed one leaves the model only the choices the paradigm reads. The narrowed schema is a function of the payload
(which the key covers) and of the audit's schema (which the key also covers), so the key needs nothing more.
"""
from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol, overload

import numpy as np
import pandas as pd


class Outcome:
    """The outcome of a request or of one judgment."""

    LABEL = "label"
    SCORE = "score"
    REFUSAL = "refusal"
    UNPARSEABLE = "unparseable"
    ERROR = "error"
    CHOICES = ((LABEL, "Parsed label"), (SCORE, "Parsed score"), (REFUSAL, "Refusal"),
               (UNPARSEABLE, "Unparseable reply"), (ERROR, "API error"))
    ANSWERED = (LABEL, SCORE)


@dataclass(frozen=True)
class Unit:
    """What is judged. ``key`` is unique within its corpus; ``factors`` are short strings analyses group by;
    ``fields`` anything else the paradigm keeps (a control's key, a reference label); ``pair`` links the two
    sides of a matched pair."""

    key: str
    text: str
    factors: Mapping[str, str] = field(default_factory=dict)
    fields: Mapping[str, Any] = field(default_factory=dict)
    pair: str = ""


@dataclass(frozen=True)
class Judgment:
    """One unit's answer in a reply: a score (``value``), a label, or neither with the ``reason``."""

    unit: str
    outcome: str
    value: float | None = None
    label: int | None = None
    reason: str = ""
    explanation: str = ""

    def __post_init__(self):
        if self.value is not None and not math.isfinite(self.value):
            raise ValueError(f"a judgment's value must be finite, not {self.value!r} (unit {self.unit})")


@dataclass(frozen=True)
class ParsedReply:
    """A reply as the request records it (``outcome``, ``label``, ``explanation``, ``reason``) and its
    judgments, one per judged unit (for a failed request: none; the request's error is its reason)."""

    outcome: str
    label: int | None = None
    explanation: str = ""
    reason: str = ""
    judgments: tuple[Judgment, ...] = ()


class RequestBuilder(Protocol):
    """What the engine asks of a paradigm for one audit: rebuild, key and parse any of its requests.

    ``models`` maps an AuditModel id to the AuditModel (its endpoint selected); ``requests()`` yields every
    planned request; ``payload(request)`` rebuilds what is sent (chat messages, or the texts a scorer takes);
    ``key(audit_model, payload, replicate)`` hashes it; ``parse(request, text, finish_reason)`` turns the stored
    reply into a :class:`ParsedReply`; ``manifest()`` says what was asked of whom.
    """

    models: Mapping[int, Any]

    def requests(self) -> Iterable[Any]: ...

    def payload(self, request: Any) -> Any: ...

    def key(self, audit_model: Any, payload: Any, replicate: int) -> str: ...

    def parse(self, request: Any, text: str, finish_reason: str) -> ParsedReply: ...

    def manifest(self) -> dict: ...


class SchemaNarrowingBuilder(RequestBuilder, Protocol):
    """A request builder that constrains each request's reply to its own schema: ``answer_schema(request,
    schema)`` is the audit's ``schema`` narrowed to what ``request`` sends (see "Per-request answer schemas")."""

    def answer_schema(self, request: Any, schema: dict) -> dict: ...


@overload
def request_answer_schema(builder: Any, request: Any, schema: dict) -> dict: ...


@overload
def request_answer_schema(builder: Any, request: Any, schema: None) -> None: ...


@overload
def request_answer_schema(builder: Any, request: Any, schema: dict | None) -> dict | None: ...


def request_answer_schema(builder: Any, request: Any, schema: dict | None) -> dict | None:
    """The schema ``request``'s reply is constrained to: the audit's ``schema`` narrowed by the builder when it
    narrows (:class:`SchemaNarrowingBuilder`), else the audit's; None when the audit does not constrain replies."""
    narrow = getattr(builder, "answer_schema", None)
    return schema if schema is None or narrow is None else narrow(request, schema)


# The reasons the engine records on a later turn it closes unsent (a paradigm's analysis may tell them apart).
TURN_FAILED = "turn {turn} failed: {reason}"
TURN_ENDED = "turn {turn} gave nothing to continue from: {reason}"
TURN_ENDED_MARK = " gave nothing to continue from: "


class NoFollowUp(Exception):
    """Raised by :meth:`MultiTurnRequestBuilder.follow_up`: the earlier reply gives nothing to continue from; the
    message is the reason recorded on the later turns."""


class MultiTurnRequestBuilder(RequestBuilder, Protocol):
    """A request builder whose requests may be conversations (see "Multi-turn requests" above): ``multi_turn`` is
    true when this audit plans later turns."""

    multi_turn: bool

    def follow_up(self, request: Any, previous_payload: Any, previous_reply_text: str) -> Any: ...


def is_multi_turn(builder: Any) -> bool:
    """Whether the builder's audit has later turns (its ``multi_turn``; false without one): one-turn audits run no
    query of the mechanism."""
    return bool(getattr(builder, "multi_turn", False))


@dataclass(frozen=True)
class ReplicateRule:
    """How a unit's replicates become one value per scorer × unit: ``mean`` of the scores, or the ``majority``
    label (a tie is missing, never broken by a guess). Missing replicates are left out; a unit with none is
    missing."""

    name: str

    RULES = ("mean", "majority")

    def __post_init__(self):
        if self.name not in self.RULES:
            raise ValueError(f"unknown replicate rule {self.name!r}; choose from {list(self.RULES)}")

    def describe(self) -> str:
        return {"mean": "replicates averaged (missing replicates left out)",
                "majority": "the majority label of the replicates (a tie is missing)"}[self.name]

    def reduce(self, judgments: pd.DataFrame, by: list[str], column: str) -> pd.DataFrame:
        """One row per ``by`` with ``column`` reduced over the rows (replicates), and ``n_replicates`` counted."""
        if judgments.empty:
            return pd.DataFrame(columns=[*by, column, "n_replicates"])
        grouped = judgments.groupby(by, sort=True, dropna=False)[column]
        counts = grouped.count().rename("n_replicates")
        reduced = grouped.mean() if self.name == "mean" else grouped.agg(_majority)
        return pd.concat([reduced, counts], axis=1).reset_index()


def _majority(values: pd.Series) -> float:
    present = values.dropna()
    if present.empty:
        return np.nan
    counts = present.value_counts()
    if len(counts) > 1 and counts.iloc[0] == counts.iloc[1]:
        return np.nan
    return float(counts.index[0])
