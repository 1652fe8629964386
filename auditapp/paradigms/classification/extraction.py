"""The second-pass extraction of classification audits (replies left unparseable by the strict parser), its pure part:
the extractor's template, the strict reading of its answer, and the labels a metric sees under an outcome source.

After an audit, the replies the strict parser (:mod:`.replies`) left unparseable can be read a second time, in
one of two modes, and the outcomes are stored beside the strict ones, never instead of them:

- ``rules``: the verbal rules (:mod:`.verbal_rules`), version :data:`~.verbal_rules.RULES_VERSION`;
- ``model``: a chosen chat model is asked, by :data:`EXTRACTION_TEMPLATE` (version :data:`TEMPLATE_VERSION`), only
  which label the reply gives, if any; its answer is read strictly by :func:`parse_extractor_answer`.

An extraction's outcome per reply is ``label`` (0/1), ``none`` (the extractor says the reply gives no label),
``unparseable`` (the extractor's own answer is not 0, 1 or none) or ``error`` (its request failed).

Metrics "with an extraction" (:func:`labels_with_extraction`): strict labels are kept; a reply whose current
strict outcome is unparseable takes the extraction's label where the extraction gives one (a reply a re-parse has
since read as a refusal or a label is not overridden); every other reply stays without a label and is treated by
the audit's unparsed rule (excluded, or counted as wrong), as under the strict outcomes.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

import numpy as np
import pandas as pd

MODES = ("rules", "model")
TEMPLATE_VERSION = "1"
REPLY_PLACEHOLDER = "{reply}"
QUESTION = "Which label does this reply give, if any: 0, 1, or none?"
EXTRACTION_TEMPLATE = (
    "A model was asked to label a sentence as ableist (1) or not ableist (0). Its reply is quoted below, between "
    "the lines <<< and >>>.\n"
    f"{QUESTION}\n"
    "Answer with one word only: 0, 1, or none. Answer none when the reply gives no label, gives both, or only "
    "hedges. Do not label the sentence yourself.\n"
    "Reply:\n<<<\n" + REPLY_PLACEHOLDER + "\n>>>"
)

ExtractionOutcome = Literal["label", "none", "unparseable", "error"]
OUTCOMES = ("label", "none", "unparseable", "error")
REASON_NOT_AN_ANSWER = "the extractor's answer is not 0, 1 or none"
# Wrapping allowed around the extractor's one word: whitespace, Markdown emphasis, quotes, a final full stop.
_ANSWER_RE = re.compile(r"\A[\s*_`\"'“”]*(0|1|none)[\s*_`\"'“”]*\.?[\s*_`\"'“”]*\Z", re.I)


def extraction_messages(reply: str) -> list[dict[str, str]]:
    """The extractor's chat messages for one reply: a single user message, the reply inserted as written
    (``str.replace`` on the one placeholder, so braces in a reply are safe)."""
    return [{"role": "user", "content": EXTRACTION_TEMPLATE.replace(REPLY_PLACEHOLDER, reply)}]


@dataclass(frozen=True)
class ExtractedAnswer:
    outcome: ExtractionOutcome
    label: int | None
    reason: str


def parse_extractor_answer(text: str | None) -> ExtractedAnswer:
    """The extractor's answer, strictly: exactly ``0``, ``1`` or ``none`` (any case, optionally in emphasis or
    quotes, with a final full stop); anything else is unparseable, and nothing is guessed from it."""
    match = _ANSWER_RE.match(text or "")
    if match is None:
        return ExtractedAnswer("unparseable", None, REASON_NOT_AN_ANSWER)
    word = match.group(1).lower()
    if word == "none":
        return ExtractedAnswer("none", None, "the extractor says the reply gives no label")
    return ExtractedAnswer("label", int(word), "")


def labels_with_extraction(requests: pd.DataFrame, extracted: pd.DataFrame) -> pd.Series:
    """Each request's label under an extraction (see the module docstring): ``requests`` has columns id, outcome
    (the current strict outcome), label (the strict label, NaN where the strict parser gave none); ``extracted``
    has columns request, label (NaN where the extraction gave none). Returns the labels aligned with ``requests``
    (NaN: no label)."""
    strict = requests["label"].astype(float)
    second = extracted.dropna(subset=["label"]).set_index("request")["label"].astype(float)
    replacement = requests["id"].map(second).astype(float).where(requests["outcome"] == "unparseable")
    return pd.Series(np.where(strict.notna(), strict, replacement), index=requests.index, dtype=float)
