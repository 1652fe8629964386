"""Reading a model's reply to a counterfactual batch: per numbered text a 0/1 label, or none with its reason
(seed 002, SI Appendix "Handling of missing and non-parsed responses"). Pure: no Django.

The paper asked for JSON Lines (``{"i": <index>, "y": 0 or 1}``), fell back to a numbered-list parser when they
were not followed, and coded everything else ("outright refusals, hedged replies, and off-format outputs") as
missing: never imputed, never read as a yes or a no. The exact rules of its parsers are not printed; these are
**ours**:

1. ``<think>…</think>`` blocks of reasoning models are set aside.
2. **JSON Lines**: every ``{…}`` object in the reply with an ``"i"`` is an answer (so a ```json fence, blank lines,
   prose around the lines, extra keys, several objects on a line and a JSON array of objects are all read).
   ``"y"`` may be 0 or 1 (also ``1.0``, ``true``), or the strings ``"0"``, ``"1"``, ``"yes"``, ``"no"``,
   ``"true"``, ``"false"``. An answer object holding another object (``{"i": 1, "y": 0, "why": {…}}``) is
   read whole.
3. **Numbered list**, only when no JSON answer is found (among JSON answers, a numbered line that hedges, ``11:
   maybe``, is read as that text's hedge): a line ``1: 0``, ``1. yes``, ``1) No``, ``Text 1 — 1``,
   ``**Text 1:** 1``, ``- 1 = false``… whose value starts with yes/no/true/false/0/1, or is a hedge, or is short
   (at most four words, e.g. ``2`` or ``N/A``). A long value that is none of these (a text echoed back) is not an
   answer.
4. **Keyed answers**: a JSON object whose keys are all text numbers, ``{"1": 0, "2": 1}``, alone or as the value of
   another key (``{"answers": {"1": 0, "2": 1}}``, the structured-output form below), is one answer per key, its
   value read as rule 2 reads a ``"y"``.

Per text, the reason when there is no label (the exact phrases are counted on the dashboard; a
``value not 0 or 1`` reason is followed by ``: <the value>``, so count by the part before the colon):

- ``hedged``: "maybe", "unsure", "cannot determine", "0.5", "50%", "0 or 1", "1 (maybe)"…;
- ``value not 0 or 1``: anything else (``2``, ``null``, ``"N/A"``);
- ``duplicated index with different values``: the index is answered twice or more, not all alike (the same value
  twice is that value);
- ``cut off``: the index is absent and the reply stopped at the token limit (``finish_reason == "length"``);
- ``index absent``: the index is not answered;
- when no answer at all could be read: ``refused`` if the reply is a refusal ("I can't", "I cannot", "I won't",
  "I'm sorry", "As an AI"…) or was stopped by the provider's content filter, else ``cut off`` if it stopped at the
  token limit, else ``off-format``.

- ``numbered from 0``: the reply answers an index 0 while the texts are numbered from 1, so its answers
  cannot be matched to texts without a guess: every text of the reply is missing.

Answers to indices the request did not ask are ignored and counted in the summary.

Structured output (an audit option; a server constrains a reply to one JSON value, not to lines). An audit launched
now asks for keyed answers (:data:`ANSWER_FORM_KEYED`): each request's schema (:func:`batch_answer_schema`) has one
required key per text it sends, each 0 or 1, and no other key, so a constrained reply answers every text sent and
only those; the prompt asks for that object (``prompt.OUR_KEYED_ANSWER_INSTRUCTION``). Audits recorded before
kept their list form, :data:`ANSWER_SCHEMA` (``{"answers": [{"i": 1, "y": 0}, ...]}``), under which a server could
answer two texts of twenty, or none, and stay valid.
"""
from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal, overload

from auditapp.engine.protocol import Judgment, Outcome, ParsedReply
from auditapp.paradigms.counterfactual.plan import PlannedText

ANSWER_SCHEMA = {
    "type": "object",
    "properties": {"answers": {"type": "array", "items": {
        "type": "object",
        "properties": {"i": {"type": "integer"}, "y": {"type": "integer", "enum": [0, 1]}},
        "required": ["i", "y"],
        "additionalProperties": False}}},
    "required": ["answers"],
    "additionalProperties": False,
}
"""The list form of a batch's answers, sent by audits recorded before the keyed form: it does not tie the answers
to the texts sent."""

ANSWER_FORM_KEYED = "keyed"
"""The answer form an audit's design records (``design["answer_form"]``) when its constrained replies are keyed
by text number; an audit without it uses :data:`ANSWER_SCHEMA`."""

_BINARY = {"type": "integer", "enum": [0, 1]}
KEYED_ANSWER_SCHEMA = {
    "type": "object",
    "properties": {"answers": {"type": "object", "additionalProperties": _BINARY}},
    "required": ["answers"],
    "additionalProperties": False,
}
"""The keyed form of every batch's answers (the audit's schema); each request sends it narrowed to its own texts
(:func:`batch_answer_schema`)."""


def batch_answer_schema(indices: Sequence[int]) -> dict:
    """The schema of one batch's keyed answers: ``{"answers": {"<i>": 0 or 1, ...}}`` with exactly the numbers
    asked, each required, in the order they are listed in the prompt."""
    keys = [str(index) for index in dict.fromkeys(indices)]
    return {
        "type": "object",
        "properties": {"answers": {"type": "object", "properties": {key: dict(_BINARY) for key in keys},
                                   "required": keys, "additionalProperties": False}},
        "required": ["answers"],
        "additionalProperties": False,
    }


REASON_HEDGED = "hedged"
REASON_NOT_BINARY = "value not 0 or 1"
REASON_DUPLICATED = "duplicated index with different values"
REASON_CUT_OFF = "cut off"
REASON_ABSENT = "index absent"
REASON_REFUSED = "refused"
REASON_OFF_FORMAT = "off-format"
REASON_MISNUMBERED = "numbered from 0"
REASONS = (REASON_HEDGED, REASON_NOT_BINARY, REASON_DUPLICATED, REASON_CUT_OFF, REASON_ABSENT, REASON_REFUSED,
           REASON_OFF_FORMAT, REASON_MISNUMBERED)

FORMAT_JSONL, FORMAT_NUMBERED, FORMAT_NONE = "jsonl", "numbered", "none"

_THINK = re.compile(r"<think>.*?(?:</think>|\Z)", re.S | re.I)
_JSON_OBJECT = re.compile(r"\{[^{}]*\}")
_CANONICAL_OBJECT = re.compile(r'\{\s*"i"\s*:\s*(\d+)\s*,\s*"y"\s*:\s*([01])\s*\}')
# A reply of canonical objects and nothing else, as most are, is read by the regular expression engine alone.
# One whitespace run between objects, never two adjacent \s*: with two, a reply that is not all canonical (cut off at
# the token limit, "Done." at the end) made the engine try every split of every gap, time doubling per object.
_ONLY_CANONICAL = re.compile(r'\s*(?:\{\s*"i"\s*:\s*\d+\s*,\s*"y"\s*:\s*[01]\s*\}\s*)*')
_NUMBERED_LINE = re.compile(
    r"^\s*(?:[-*•+]\s+)?[*_`#\[(]*\s*(?:text|item|no\.|number|#)?\s*(\d{1,6})\s*[*_`]*\s*"
    r"(?:->|=>|\.(?!\d)|[:)\]=\-–—→])+\s*[*_`]*\s*(.*?)\s*$", re.I | re.M)
_LABEL_WORDS = {"0": 0, "1": 1, "no": 0, "yes": 1, "false": 0, "true": 1}
_LEADING_LABEL = re.compile(r"(0|1|yes|no|true|false)\b(?![.,]\d)", re.I)
_ALTERNATIVE = re.compile(r"\s*(?:or|/)\s*(?:0|1|yes|no|true|false)\b", re.I)
_HEDGE = re.compile(
    r"\b(?:maybe|perhaps|possibly|unsure|not sure|uncertain|unclear|undetermined|undecided|ambiguous|unknown|"
    r"either|depends|insufficient|not enough (?:information|info|context)|hard to (?:say|tell)|"
    r"can(?:not|'t| not) (?:be )?(?:determined?|tell|say|decide|judge))\b"
    r"|(?<![\d.])0?\.5(?!\d)|\b50\s*%|\b50\s*/\s*50\b", re.I)
_REFUSAL = re.compile(
    r"\bI\s*(?:can ?not|can't|won't|will not|am (?:not able|unable)|'m (?:not able|unable|sorry)|am sorry|"
    r"must decline|apologi[sz]e|(?:do not|don't) feel comfortable)|\bas an AI\b|\bsorry\b", re.I)
_SHORT_VALUE_WORDS = 4
# An index is ASCII digits: str.isdigit() also takes "¹", which int() refuses.
_ASCII_DIGITS = re.compile(r"[0-9]+")
_SHOWN_VALUE_CHARS = 40


@dataclass(frozen=True)
class TextReading:
    """One requested text's answer: a label 0/1, or None with the reason."""

    index: int
    label: int | None
    reason: str = ""


@dataclass(frozen=True)
class BatchReading:
    """A reply read: one :class:`TextReading` per requested index (in the request's order), the format found,
    how many answers to indices not asked were ignored, and a summary (empty when every text is labelled and
    nothing was ignored)."""

    texts: tuple[TextReading, ...]
    format: str
    ignored: int = 0
    reason: str = ""

    @property
    def labelled(self) -> int:
        return sum(text.label is not None for text in self.texts)

    @property
    def refused(self) -> bool:
        return bool(self.texts) and all(text.reason == REASON_REFUSED for text in self.texts)

    def by_index(self) -> dict[int, TextReading]:
        return {text.index: text for text in self.texts}


def reason_kind(reason: str) -> str:
    """The counted phrase of a reason (``value not 0 or 1: 2`` → ``value not 0 or 1``)."""
    return reason.split(":", 1)[0]


def _not_binary(shown: str) -> str:
    shown = shown if len(shown) <= _SHOWN_VALUE_CHARS else shown[:_SHOWN_VALUE_CHARS - 1] + "…"
    return f"{REASON_NOT_BINARY}: {shown}"


@overload
def _text_value(text: str, *, answer_required: Literal[True]) -> int | str: ...


@overload
def _text_value(text: str, *, answer_required: bool) -> int | str | None: ...


def _text_value(text: str, *, answer_required: bool) -> int | str | None:
    """A label, a reason, or (``answer_required`` false) None when the text is no answer at all."""
    value = text.strip().strip("*_`\"'").strip().rstrip(".!").strip()
    label = _LABEL_WORDS.get(value.lower())
    if label is not None:
        return label
    leading = _LEADING_LABEL.match(value)
    rest = value[leading.end():] if leading else value
    if _HEDGE.search(rest) or (leading and _ALTERNATIVE.match(rest)):
        return REASON_HEDGED
    if leading:
        return _LABEL_WORDS[leading.group(1).lower()]
    if not answer_required and len(value.split()) > _SHORT_VALUE_WORDS:
        return None
    return _not_binary(value)


def _json_value(value: object) -> int | str:
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, int | float):
        if value in (0, 1):
            return int(value)
        return REASON_HEDGED if value == 0.5 else _not_binary(json.dumps(value))
    if isinstance(value, str):
        return _text_value(value, answer_required=True)
    return _not_binary(json.dumps(value))


def _json_index(value: object) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str) and _ASCII_DIGITS.fullmatch(value.strip()):
        return int(value.strip())
    return None


def _json_answers(reply: str) -> list[tuple[int, int | str]]:
    if _ONLY_CANONICAL.fullmatch(reply):
        return [(int(index), int(label)) for index, label in _CANONICAL_OBJECT.findall(reply)]
    return _every_json_answer(reply)


def _every_json_answer(reply: str) -> list[tuple[int, int | str]]:
    """Every answer object in the reply as (index, label or reason). Objects are read outermost first (one with a
    nested object is read whole, a structured reply's ``{"answers": [...]}`` is searched), the common
    ``{"i": 3, "y": 1}`` by a regular expression without building a dict; an object written with single quotes
    is read with them turned into double ones."""
    decoder = json.JSONDecoder()
    answers: list[tuple[int, int | str]] = []
    position = 0
    while (start := reply.find("{", position)) != -1:
        canonical = _CANONICAL_OBJECT.match(reply, start)
        if canonical:
            answers.append((int(canonical.group(1)), int(canonical.group(2))))
            position = canonical.end()
            continue
        try:
            data, position = decoder.raw_decode(reply, start)
        except ValueError:
            flat = _JSON_OBJECT.match(reply, start)
            position = start + 1
            if flat is None:
                continue
            try:
                data = json.loads(flat.group().replace("'", '"'))
            except ValueError:
                continue
            position = flat.end()
        answers += [answer for answer in map(_json_answer, _answer_objects(data)) if answer is not None]
    return answers


def _answer_objects(data):
    """The answer objects in a JSON value: an object with an "i", one per key of an object keyed by text numbers
    (rule 4), or those inside any other object or list."""
    if isinstance(data, dict):
        if any(str(key).strip().lower() == "i" for key in data):
            yield data
            return
        if data and all(_ASCII_DIGITS.fullmatch(str(key).strip()) and not isinstance(value, dict | list)
                        for key, value in data.items()):
            for key, value in data.items():
                yield {"i": key, "y": value}
            return
        data = list(data.values())
    if isinstance(data, list):
        for value in data:
            yield from _answer_objects(value)


def _json_answer(data: dict) -> tuple[int, int | str] | None:
    """An answer object as (index, label or reason); None when its "i" is not an index."""
    data = {str(key).strip().lower(): value for key, value in data.items()}
    index = _json_index(data.get("i"))
    if index is None:
        return None
    return index, _json_value(data["y"]) if "y" in data else _not_binary('no "y"')


def _numbered_answers(reply: str) -> list[tuple[int, int | str]]:
    answers = []
    for match in _NUMBERED_LINE.finditer(reply):
        value = _text_value(match.group(2), answer_required=False)
        if value is not None:
            answers.append((int(match.group(1)), value))
    return answers


def _combined(values: list[int | str]) -> int | str:
    """One index's answers as one label or reason: the same label every time is that label."""
    labels = {value for value in values if isinstance(value, int)}
    others = [value for value in values if isinstance(value, str)]
    if len(labels) == 1 and not others:
        return labels.pop()
    if labels:
        return REASON_DUPLICATED
    return REASON_HEDGED if REASON_HEDGED in others else others[0]


def _summary(texts: Sequence[TextReading], ignored: int) -> str:
    counts = Counter(reason_kind(text.reason) for text in texts if text.label is None)
    if not counts and not ignored:
        return ""
    parts = [f"{len(texts) - sum(counts.values())} of {len(texts)} texts labelled"]
    parts += [f"{counts[reason]} {reason}" for reason in REASONS if counts[reason]]
    if ignored:
        parts.append(f"{ignored} answer{'s' if ignored != 1 else ''} to indices not asked ignored")
    return "; ".join(parts)


def parse_batch(text: str | None, indices: Sequence[int], finish_reason: str | None = None) -> BatchReading:
    """Read a reply to a batch that asked about ``indices`` (see the module docstring for the rules)."""
    reply = _THINK.sub(" ", text or "").replace("\u2019", "'")
    answers, found = _json_answers(reply), FORMAT_JSONL
    if not answers:
        answers, found = _numbered_answers(reply), FORMAT_NUMBERED
    asked = list(dict.fromkeys(indices))
    if not answers:
        if _REFUSAL.search(reply) or finish_reason == "content_filter":
            reason = REASON_REFUSED
        elif finish_reason == "length":
            reason = REASON_CUT_OFF
        else:
            reason = REASON_OFF_FORMAT
        unread = tuple(TextReading(index, None, reason) for index in asked)
        return BatchReading(unread, FORMAT_NONE, 0, _summary(unread, 0))

    by_index: dict[int, list[int | str]] = {}
    for index, value in answers:
        by_index.setdefault(index, []).append(value)
    if found == FORMAT_JSONL:
        # A hedge written as a line among JSON answers ("11: maybe") is the text's hedge, not its absence.
        for index, value in _numbered_answers(reply):
            if value == REASON_HEDGED and index not in by_index and index in asked:
                by_index[index] = [value]
    if 0 in by_index and 0 not in asked and min(asked, default=0) == 1:
        # The texts are numbered from 1: answers from 0 cannot be matched to texts without a guess.
        unmatched = tuple(TextReading(index, None, REASON_MISNUMBERED) for index in asked)
        return BatchReading(unmatched, found, len(answers), _summary(unmatched, 0))
    absent = REASON_CUT_OFF if finish_reason == "length" else REASON_ABSENT
    texts: list[TextReading] = []
    for index in asked:
        values = by_index.get(index)
        value = absent if values is None else values[0] if len(values) == 1 else _combined(values)
        texts.append(TextReading(index, value, "") if isinstance(value, int) else TextReading(index, None, value))
    asked_set = set(asked)
    ignored = sum(len(values) for index, values in by_index.items() if index not in asked_set)
    return BatchReading(tuple(texts), found, ignored, _summary(texts, ignored))


def judgments(reading: BatchReading, texts: Sequence[PlannedText]) -> ParsedReply:
    """The engine's records of a reading: one judgment per planned text (its unit), and the request's outcome:
    "label" when every text has a label, "refusal" when the reply refused, else "unparseable" with the summary."""
    read = reading.by_index()
    records = []
    for planned in texts:
        text = read.get(planned.index, TextReading(planned.index, None, REASON_ABSENT))
        if text.label is not None:
            records.append(Judgment(unit=planned.unit, outcome=Outcome.LABEL, label=text.label))
        elif text.reason == REASON_REFUSED:
            records.append(Judgment(unit=planned.unit, outcome=Outcome.REFUSAL, reason=REASON_REFUSED))
        else:
            records.append(Judgment(unit=planned.unit, outcome=Outcome.UNPARSEABLE, reason=text.reason))
    if records and all(record.outcome == Outcome.LABEL for record in records):
        return ParsedReply(Outcome.LABEL, reason=reading.reason, judgments=tuple(records))
    if reading.refused:
        return ParsedReply(Outcome.REFUSAL, reason=REASON_REFUSED, judgments=tuple(records))
    return ParsedReply(Outcome.UNPARSEABLE, reason=reading.reason or "no text labelled", judgments=tuple(records))
