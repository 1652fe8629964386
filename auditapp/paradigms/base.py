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
(settings, corpus, analysis, dashboard, exports) is declared by its adapter in :mod:`auditapp.paradigms.registry`.
"""
from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

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
        if self.name == "mean":
            reduced = grouped.mean()
        else:
            reduced = grouped.agg(_majority)
        return pd.concat([reduced, counts], axis=1).reset_index()


def _majority(values: pd.Series) -> float:
    present = values.dropna()
    if present.empty:
        return np.nan
    counts = present.value_counts()
    if len(counts) > 1 and counts.iloc[0] == counts.iloc[1]:
        return np.nan
    return float(counts.index[0])
