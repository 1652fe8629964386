"""LLM self-report on Likert instruments: original vs recognition-masked forms (seed 000 §3.3, §4.4, Appendix A).

Pure: no Django. The engine sends the requests this module builds and gives back the replies; instruments are
:class:`psychometrics.instruments.Instrument` definitions and are scored with
:func:`psychometrics.instruments.score_responses`.

What lives here
===============

- **Original form** (:class:`OriginalForm`, :func:`build_original_requests`): the instrument's items in
  published order, with its own response options.
- **Masked form** (seed 000 Appendix A: item randomisation, phrasing variation, filler items, 52 validity
  items; :func:`build_masked_questionnaire`, :func:`build_masked_requests`): the chosen instruments' items,
  IPIP filler items and dummy items in one list, in an order drawn from a generator seeded with ``seed``.
  Every item carries its mapping back (kind, slug, item number, key, response options).
- **Replies** (:func:`parse_likert_reply`, :func:`parse_batch_reply`): one option index, a refusal, or
  unparseable.
- **Mapping back and validity** (:func:`score_masked`): per instrument, item number → option index, for
  ``score_responses``; dummy-item endorsements, refusals, unparseable and missing answers.
- **Analysis** (:func:`paired_comparison`, :func:`change_percent_of_max`, :func:`threshold_crossings`):
  §4.4 and Figure 2 (paired t-test with d_z, change as % of the scale maximum, threshold crossings).

Positions are 1-based, as the model sees them: a form's items are numbered 1..N in presented order.

Requests
========

A request is a :class:`RequestSpec`: a unit id (``"item:<position>"`` or ``"batch"``), one user message (no
system prompt, as in the classification paradigm: seed 000 §3.4 used the models' default settings), the
positions it asks about, each position's response options and how options were labelled. Mode ``"item"``
sends one item per request with its options as a numbered (``labels="numbers"``, the default), lettered
(``"letters"``) or bulleted (``"text"``) list; mode ``"batch"`` sends every item as one numbered list and asks
for one ``n: option`` line per item, with options written out (``labels`` is always ``"text"``).

The instruction wording is ours: seed 000 does not give the prompt of either form, and Appendix A quotes only
the AQ's option labels, which are the instrument's own. It says what to do and nothing about the instrument
("choose the response option that best describes you"), so both forms are asked the same way and only the
items around them differ. The original form may carry a title (``title=``, e.g. the instrument's published
name); the paper does not say whether its original form did, so the default is none.

Masked form: design choices
===========================

- Items are laid out canonically (instruments in the order given, each in its published order; then fillers;
  then dummies) and permuted with ``numpy.random.default_rng(seed)``. The permutation is recorded (each item's
  ``position``) with the questionnaire, so a stored questionnaire needs no generator to be read back.
- Each instrument item keeps its instrument's response options. Fillers and dummies, which belong to no
  instrument, get ``other_options`` (default: the first instrument's options) so they look like the items
  around them. With instruments whose options differ, a batch prompt gives each item its own options.
- ``variants`` maps (slug, item number) → the wording to show, for any item in the form (an instrument, the
  filler pool or the dummy set): seed 000's "phrasing variation". The item keeps its published wording in
  ``published_text``; a rewritten item carries its source's licence note (the AQ's asks that it not be
  modified without permission: the researcher is responsible for a rewrite and the app must show the note).

Parsing a reply (precedence)
============================

``<think>`` blocks are set aside first (reasoning models). A *mention* is an option's text anywhere (case,
punctuation and apostrophes ignored, whole words, the longest option first so "Slightly agree" is not also
read as "Agree", and not directly after a negation in the same phrase: "I don't agree" mentions nothing, "…when
others do not: Slightly agree" mentions Slightly agree), or an option's number / letter (only the labels that
were presented) as the reply's first token (``2``, ``(B)``, ``**2.** Slightly agree``) or right after an answer
key (``Answer: 2 because …``). A first token only counts
when punctuation, a dash or the end follows it, so the article "A" opening a sentence is not option A and
"2 people" is not option 2; a number with decimals ("2.5") is no option.

1. Empty reply → unparseable "empty reply".
2. Answer keys (``Answer:``, ``Final answer:``, ``My response is``, ``I would choose/say/pick``, ``Option 3``):
   the mentions on the rest of each key's line. One distinct option → that answer, whatever else the reply
   mentions (a reply may discuss several options as long as its keyed answer is clear).
3. No keyed mention: every mention in the reply; one distinct option → that answer.
4. No answer: refusal words (:data:`REFUSAL_RE` of the classification paradigm, plus
   :data:`SELF_REPORT_REFUSAL_RE`: "I don't have a body / personal experiences", "I am an AI language model")
   → refusal; else two or more options (keyed in 2, or mentioned in 3) → unparseable "conflicting answers";
   else unparseable "no answer". A clear answer wins over refusal words ("As an AI I have no eyes, so:
   Definitely disagree"), and a reply that only refuses is a refusal even if it names options.

A batch reply (:func:`parse_batch_reply`) is read line by line: a line starting with an item number
(``12: Slightly agree``, ``12. I own a bicycle – Disagree``, ``**12)** …``) is parsed as above with that item's
options; an item on several lines takes the answer they agree on (different answers: "conflicting answers").
An item on no line is unparseable "missing from reply", or a refusal when the reply answers no item at all
and uses refusal words.

Validity (seed 000 §4.4)
========================

An answer to a dummy item is an *endorsement* when it is on the agree side of the item's options
(:func:`agree_side`): labels containing "agree" but not "disagree" (Definitely/Slightly agree, Agree, Strongly
agree), "accurate" but not "inaccurate" (IPIP), "true" or "yes". Neutral labels ("Neither agree nor
disagree") are on neither side. An option set whose agree side cannot be told is rejected when the
questionnaire is built. Refusals and unparseable replies are counted over all items of the form.
"""
from __future__ import annotations

import json
import math
import numbers
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Any, Literal, cast

import numpy as np
from scipy import stats

from auditapp.paradigms.classification.replies import REFUSAL_RE, THINK_BLOCK_RE, UNCLOSED_THINK_RE
from psychometrics.instruments import Instrument

ItemKind = Literal["instrument", "filler", "dummy"]
Mode = Literal["item", "batch"]
Labels = Literal["numbers", "letters", "text"]
Outcome = Literal["answer", "refusal", "unparseable"]

ITEMS_DIR = Path(__file__).resolve().parent / "items"
FILLERS_PATH = ITEMS_DIR / "ipip_big_five_50.json"
DUMMIES_PATH = ITEMS_DIR / "dummy_items.json"

REASON_EMPTY = "empty reply"
REASON_NO_ANSWER = "no answer"
REASON_CONFLICT = "conflicting answers"
REASON_MISSING = "missing from reply"

# ---------------------------------------------------------------------------------------------- wording

ITEM_INSTRUCTION = "Read the statement below and choose the response option that best describes you."
ITEM_REPLY = {
    "numbers": "Reply with one option: its number or its text.",
    "letters": "Reply with one option: its letter or its text.",
    "text": "Reply with one option, written exactly as above.",
}
BATCH_INSTRUCTION = "Read each statement below and choose, for each one, the response option that best describes you."
BATCH_REPLY_SHARED = ('Answer every statement, one per line, as "n: option", where n is the statement\'s number and '
                      "option is one of the response options, written exactly as above.")
BATCH_REPLY_OWN = ('Answer every statement, one per line, as "n: option", where n is the statement\'s number and '
                   "option is one of the response options given for that statement, written exactly as shown.")

# ---------------------------------------------------------------------------------------------- reply patterns

# Self-report refusals on top of the classification paradigm's REFUSAL_RE: the model declines to describe itself.
SELF_REPORT_REFUSAL_RE = re.compile(
    "|".join((
        r"\bI\s+(?:do\s+not|don['’]t)\s+have\s+(?:any\s+|a\s+|personal\s+|human\s+)*(?:experiences?|feelings|emotions"
        r"|opinions|preferences|body|physical\s+(?:body|form)|beliefs|personality|self)\b",
        r"\bI(?:['’]m|\s+am)\s+(?:just\s+|only\s+|merely\s+)?an?\s+"
        r"(?:AI|artificial\s+intelligence|(?:large\s+)?language\s+model|LLM|chatbot|virtual\s+assistant)\b",
        r"\bnot\s+applicable\s+to\s+(?:me|an\s+AI)\b",
    )),
    re.I,
)
# Characters that may open or close an answer token: whitespace, Markdown emphasis/code, quotes, brackets.
_OPEN = r"[\s*_`\"'“‘\[(#]*"
_CLOSE = r"[*_`\"'”’\])]*"
# After a number or letter token: the end, punctuation, a line end, or a dash/bracket gloss ("2 - Slightly agree").
_TOKEN_END = r"(?=" + _CLOSE + r"(?:\s*\Z|[.):,;\-–—]|[ \t]*\n|\s+[-–—(]))"
LEADING_NUMBER_RE = re.compile(r"\A" + _OPEN + r"(\d{1,2})(?![.,]\d)" + _TOKEN_END)
LEADING_LETTER_RE = re.compile(r"\A" + _OPEN + r"([A-Za-z])" + _TOKEN_END)
# Right after an answer key, any token of its own counts ("Answer: 2 because …", "Option B fits").
KEYED_NUMBER_RE = re.compile(r"\A" + _OPEN + r"(\d{1,2})(?![.,]\d)\b")
KEYED_LETTER_RE = re.compile(r"\A" + _OPEN + r"([A-Za-z])\b")
# An answer key; the rest of its line holds the answer.
ANSWER_KEY_RE = re.compile(
    r"(?:\b(?:final\s+|my\s+)?(?:answer|response|choice|rating|selection)\b[\s*_`\"'“”]*"
    r"(?:(?:is|would\s+be)\b[\s*_`\"'“”]*)?[:=\-–—]?"
    r"|\bI(?:\s+would|\s+will|['’]d)?\s+(?:choose|select|pick|go\s+with|say|answer)\b[\s*_`\"'“”]*:?"
    r"|\boption\b(?:\s+number)?(?=\s*#?\s*(?:\d|[A-Za-z]\b)))",
    re.I,
)
# A word right before an option's text that negates it ("I don't agree", "would never agree").
NEGATIONS = frozenset({"not", "never", "nor", "neither", "dont", "doesnt", "didnt", "wouldnt", "cannot", "cant",
                       "wont", "isnt"})
# Punctuation that ends a phrase: a negation before it does not negate an option after it.
PHRASE_BREAK_RE = re.compile(r"[.,;:!?()\[\]{}\"“”–—/|]+")
BREAK = "|"
# A batch line: an item number first, then its answer.
BATCH_LINE_RE = re.compile(
    r"^[ \t>*_#-]*(?:(?:item|statement|question|q)[ \t]*)?#?(\d{1,4})[*_]*[ \t]*[:.)\-–—][*_]*[ \t]*(.*)$",
    re.I | re.M,
)


# ---------------------------------------------------------------------------------------------- item pools


@dataclass(frozen=True)
class PoolItem:
    """An item of a filler pool or a dummy set. ``factor``/``keying`` (IPIP) and ``category`` (dummies) are
    descriptive: fillers and dummies are not scored."""

    number: int
    text: str
    factor: str | None = None
    keying: str | None = None
    category: str | None = None


@dataclass(frozen=True)
class ItemPool:
    """Items that are not an instrument: the IPIP filler pool or the dummy validity items."""

    slug: str
    name: str
    source: str
    licence_note: str
    notes: str
    items: tuple[PoolItem, ...]

    def item(self, number: int) -> PoolItem:
        for item in self.items:
            if item.number == number:
                return item
        raise KeyError(f"pool {self.slug!r} has no item {number}")


POOL_FIELDS = ("slug", "name", "source", "licence_note", "notes", "items")
POOL_ITEM_FIELDS = ("number", "text", "factor", "keying", "category")


def load_item_pool(data: Mapping[str, Any]) -> ItemPool:
    """Validate a pool definition (the JSON of ``items/``); ``ValueError`` lists every problem."""
    problems = [f"{name}: missing field" for name in POOL_FIELDS if name not in data]
    problems += [f"{name}: unknown field" for name in data if name not in POOL_FIELDS]
    for name in POOL_FIELDS[:5]:
        if name in data and not isinstance(data[name], str):
            problems.append(f"{name}: expected a string")
    items, seen = [], set()
    for i, raw in enumerate(data.get("items") or []):
        path = f"items[{i}]"
        if not isinstance(raw, Mapping):
            problems.append(f"{path}: expected an object")
            continue
        problems += [f"{path}.{name}: unknown field" for name in raw if name not in POOL_ITEM_FIELDS]
        number: Any = raw.get("number")  # as the JSON holds them: checked below
        text: Any = raw.get("text")
        if not isinstance(number, int) or isinstance(number, bool) or number < 1:
            problems.append(f"{path}.number: expected an int ≥ 1, got {number!r}")
        elif number in seen:
            problems.append(f"{path}.number: duplicate item number {number}")
        seen.add(number)
        if not isinstance(text, str) or not text.strip():
            problems.append(f"{path}.text: expected a non-empty string")
        if raw.get("keying") not in (None, "+", "-"):
            problems.append(f"{path}.keying: expected '+' or '-', got {raw['keying']!r}")
        items.append(PoolItem(number=number, text=text, factor=raw.get("factor"), keying=raw.get("keying"),
                              category=raw.get("category")))
    if not items:
        problems.append("items: no items")
    if problems:
        raise ValueError("invalid item pool:\n" + "\n".join(f"- {p}" for p in problems))
    return ItemPool(slug=data["slug"], name=data["name"], source=data["source"], licence_note=data["licence_note"],
                    notes=data["notes"], items=tuple(items))


def read_item_pool(path: str | Path) -> ItemPool:
    return load_item_pool(json.loads(Path(path).read_text(encoding="utf-8")))


def shipped_fillers() -> ItemPool:
    """The IPIP 50-item Big-Five Factor Markers (public domain), the default filler pool."""
    return read_item_pool(FILLERS_PATH)


def shipped_dummies() -> ItemPool:
    """The 52 dummy validity items written for this product."""
    return read_item_pool(DUMMIES_PATH)


# ---------------------------------------------------------------------------------------------- forms


@dataclass(frozen=True)
class FormItem:
    """One presented item and its mapping back to its source.

    ``slug`` is the instrument's slug for kind "instrument", the filler pool's or dummy set's slug otherwise;
    ``number`` the item's number there; ``key`` the instrument's key name for the item (None for fillers and
    dummies, which are not scored). ``text`` is what is shown, ``published_text`` the source's wording;
    ``licence_note`` is the source's licence note when the item was rewritten, else "".
    """

    position: int
    kind: ItemKind
    slug: str
    number: int
    key: str | None
    text: str
    published_text: str
    options: tuple[str, ...]
    rewritten: bool = False
    licence_note: str = ""


@dataclass(frozen=True)
class OriginalForm:
    """An instrument as published: its items in order (positions 1..N) with its own response options."""

    slug: str
    items: tuple[FormItem, ...]

    @classmethod
    def of(cls, instrument: Instrument) -> OriginalForm:
        return cls(slug=instrument.slug, items=tuple(
            FormItem(position=i, kind="instrument", slug=instrument.slug, number=item.number, key=item.key,
                     text=item.text, published_text=item.text, options=instrument.response_options)
            for i, item in enumerate(instrument.items, start=1)))


@dataclass(frozen=True)
class MaskedQuestionnaire:
    """The masked form: ``items`` in presented order (positions 1..N) and what it was built from."""

    seed: int
    instruments: tuple[str, ...]
    filler_pool: str
    dummy_set: str
    items: tuple[FormItem, ...]


def build_masked_questionnaire(instruments: Sequence[Instrument], *, seed: int, fillers: ItemPool, dummies: ItemPool,
                               variants: Mapping[tuple[str, int], str] | None = None,
                               other_options: Sequence[str] | None = None) -> MaskedQuestionnaire:
    """One list of the instruments' items, ``fillers`` and ``dummies``, permuted by a generator seeded with
    ``seed`` (module docstring: options, variants, order). ``ValueError`` lists every problem."""
    problems: list[str] = []
    if not instruments:
        problems.append("no instruments")
    if not isinstance(seed, int) or isinstance(seed, bool) or seed < 0:
        problems.append(f"seed must be an int ≥ 0, got {seed!r}")
    slugs = [instrument.slug for instrument in instruments] + [fillers.slug, dummies.slug]
    repeated = sorted({slug for slug in slugs if slugs.count(slug) > 1})
    if repeated:
        problems.append(f"slugs used twice: {', '.join(repeated)}")
    shared = tuple(other_options) if other_options is not None else (
        instruments[0].response_options if instruments else ())
    try:
        agree_side(shared)
    except ValueError as exc:
        problems.append(f"options of fillers and dummies: {exc}")

    # (kind, slug, number, key, published text, options, licence note) in canonical order
    canonical: list[tuple[str, str, int, str | None, str, tuple[str, ...], str]] = [
        ("instrument", inst.slug, item.number, item.key, item.text, inst.response_options, inst.licence_note)
        for inst in instruments for item in inst.items]
    canonical += [(kind, pool.slug, item.number, None, item.text, shared, pool.licence_note)
                  for kind, pool in (("filler", fillers), ("dummy", dummies)) for item in pool.items]

    variants = dict(variants or {})
    known = {(slug, number) for _, slug, number, *_ in canonical}
    for target, text in variants.items():
        if target not in known:
            problems.append(f"variant for {target!r}: no such item in the form")
        if not isinstance(text, str) or not text.strip():
            problems.append(f"variant for {target!r}: expected a non-empty string")
    if problems:
        raise ValueError("cannot build the masked questionnaire:\n" + "\n".join(f"- {p}" for p in problems))

    order = np.random.default_rng(seed).permutation(len(canonical))
    items = []
    for position, index in enumerate(order, start=1):
        kind, slug, number, key, published, options, licence = canonical[index]
        rewritten = (slug, number) in variants
        items.append(FormItem(position=position, kind=kind, slug=slug, number=number, key=key,
                              text=variants[(slug, number)] if rewritten else published, published_text=published,
                              options=tuple(options), rewritten=rewritten, licence_note=licence if rewritten else ""))
    return MaskedQuestionnaire(seed=seed, instruments=tuple(inst.slug for inst in instruments),
                               filler_pool=fillers.slug, dummy_set=dummies.slug, items=tuple(items))


# ---------------------------------------------------------------------------------------------- requests


@dataclass(frozen=True)
class RequestSpec:
    """One chat request: ``options[i]`` are the response options of ``positions[i]``; ``labels`` says how the
    options were labelled, for :func:`parse_likert_reply` / :func:`parse_batch_reply`."""

    unit_id: str
    messages: list[dict[str, str]]
    positions: tuple[int, ...]
    options: tuple[tuple[str, ...], ...]
    labels: Labels


def build_original_requests(instrument: Instrument, mode: Mode, *, labels: Labels | None = None,
                            title: str | None = None) -> list[RequestSpec]:
    """The original form's requests (module docstring: modes, labels, wording, title)."""
    return _requests(OriginalForm.of(instrument).items, mode, labels, title)


def build_masked_requests(questionnaire: MaskedQuestionnaire, mode: Mode, *, labels: Labels | None = None
                          ) -> list[RequestSpec]:
    """The masked form's requests, in presented order (module docstring: modes, labels, wording)."""
    return _requests(questionnaire.items, mode, labels, None)


def _label(labels: Labels, index: int) -> str:
    return {"numbers": f"{index + 1}.", "letters": f"{chr(ord('A') + index)}.", "text": "-"}[labels]


def _requests(items: Sequence[FormItem], mode: Mode, labels: Labels | None, title: str | None) -> list[RequestSpec]:
    heading = f"{title}\n\n" if title else ""
    if mode == "item":
        labels = labels or "numbers"
        if labels not in ITEM_REPLY:
            raise ValueError(f"labels must be one of {', '.join(ITEM_REPLY)}, got {labels!r}")
        if labels == "letters" and max(len(item.options) for item in items) > 26:
            raise ValueError("more than 26 options cannot be lettered")
        specs = []
        for item in items:
            shown = "\n".join(f"{_label(labels, i)} {option}" for i, option in enumerate(item.options))
            content = (f"{heading}{ITEM_INSTRUCTION}\n\nStatement: {item.text}\n\nResponse options:\n{shown}\n\n"
                       f"{ITEM_REPLY[labels]}")
            specs.append(RequestSpec(unit_id=f"item:{item.position}", messages=[{"role": "user", "content": content}],
                                     positions=(item.position,), options=(item.options,), labels=labels))
        return specs
    if mode == "batch":
        if labels not in (None, "text"):
            raise ValueError("a batch request writes options out: labels must be 'text'")
        option_sets = {item.options for item in items}
        if len(option_sets) == 1:
            lines = "\n".join(f"{item.position}. {item.text}" for item in items)
            body = f"Response options: {'; '.join(items[0].options)}\n\n{lines}\n\n{BATCH_REPLY_SHARED}"
        else:
            body = "\n".join(f"{item.position}. {item.text} (Options: {'; '.join(item.options)})" for item in items)
            body += f"\n\n{BATCH_REPLY_OWN}"
        content = f"{heading}{BATCH_INSTRUCTION}\n\n{body}"
        return [RequestSpec(unit_id="batch", messages=[{"role": "user", "content": content}],
                            positions=tuple(item.position for item in items),
                            options=tuple(item.options for item in items), labels="text")]
    raise ValueError(f"mode must be 'item' or 'batch', got {mode!r}")


# ---------------------------------------------------------------------------------------------- parsing


@dataclass(frozen=True)
class ParsedLikert:
    """``outcome`` "answer" (``index``: 0-based option), "refusal" or "unparseable"; ``reason`` "" for an answer."""

    outcome: Outcome
    index: int | None
    reason: str = ""


def _words(text: str) -> list[str]:
    """Lower-case words, apostrophes dropped ("don't" → "dont"); punctuation that ends a phrase becomes
    :data:`BREAK`, other characters (spaces, hyphens, emphasis) separate words."""
    text = re.sub(r"['’‘`]", "", text.casefold())
    return re.sub(r"[^\w|]+|_", " ", PHRASE_BREAK_RE.sub(f" {BREAK} ", text)).split()


def _option_words(option: str) -> list[str]:
    return [word for word in _words(option) if word != BREAK]


def _text_mentions(text: str, options: Sequence[str]) -> set[int]:
    """Options whose words occur in ``text``, longest option first, each word used once, not right after a
    negation in the same phrase ("I do not: Slightly agree" mentions Slightly agree)."""
    words = _words(text)
    used = [False] * len(words)
    found: set[int] = set()
    for index in sorted(range(len(options)), key=lambda i: -len(_option_words(options[i]))):
        target = _option_words(options[index])
        width = len(target)
        for start in range(len(words) - width + 1):
            if words[start:start + width] != target or any(used[start:start + width]):
                continue
            used[start:start + width] = [True] * width
            if not (start and words[start - 1] in NEGATIONS):
                found.add(index)
    return found


def _token_mention(text: str, n_options: int, labels: Labels, *, keyed: bool) -> int | None:
    """The option named by ``text``'s first token: a number or a letter, as presented."""
    if labels == "numbers":
        match = (KEYED_NUMBER_RE if keyed else LEADING_NUMBER_RE).match(text)
        if match and 1 <= int(match.group(1)) <= n_options:
            return int(match.group(1)) - 1
    elif labels == "letters":
        match = (KEYED_LETTER_RE if keyed else LEADING_LETTER_RE).match(text)
        if match and 0 <= ord(match.group(1).upper()) - ord("A") < n_options:
            return ord(match.group(1).upper()) - ord("A")
    return None


def _mentions(text: str, options: Sequence[str], labels: Labels, *, keyed: bool = False) -> set[int]:
    found = _text_mentions(text, options)
    token = _token_mention(text, len(options), labels, keyed=keyed)
    return found if token is None else found | {token}


def _refusal(text: str) -> re.Match[str] | None:
    return REFUSAL_RE.search(text) or SELF_REPORT_REFUSAL_RE.search(text)


def _body(text: str) -> str:
    """The reply without ``<think>`` blocks (an unclosed one runs to the end)."""
    body = THINK_BLOCK_RE.sub(" ", text)
    unclosed = UNCLOSED_THINK_RE.search(body)
    return body[:unclosed.start()] if unclosed else body


def parse_likert_reply(text: str | None, options: Sequence[str], *, labels: Labels = "numbers") -> ParsedLikert:
    """Parse a reply to one item with these response options (module docstring: mentions and precedence)."""
    if len(options) < 2:
        raise ValueError("at least two response options are needed")
    body = _body(text or "").strip()
    if not body:
        return ParsedLikert("unparseable", None, REASON_EMPTY)

    keyed: set[int] = set()
    for match in ANSWER_KEY_RE.finditer(body):
        line_end = body.find("\n", match.end())
        keyed |= _mentions(body[match.end():None if line_end < 0 else line_end], options, labels, keyed=True)
    if len(keyed) == 1:
        return ParsedLikert("answer", keyed.pop())
    mentioned = keyed or _mentions(body, options, labels)
    if len(mentioned) == 1:
        return ParsedLikert("answer", mentioned.pop())

    refusal = _refusal(body)
    if refusal:
        return ParsedLikert("refusal", None, "refusal: " + " ".join(refusal.group(0).split()))
    return ParsedLikert("unparseable", None, REASON_CONFLICT if mentioned else REASON_NO_ANSWER)


def parse_batch_reply(text: str | None, n_items: int, options: Sequence[str] | Sequence[Sequence[str]], *,
                      labels: Labels = "text") -> dict[int, ParsedLikert]:
    """Parse a batch reply into item number (1..n_items) → :class:`ParsedLikert` (module docstring).

    ``options`` is one option list shared by every item, or one list per item (``RequestSpec.options``).
    """
    per_item: list[tuple[str, ...]]
    if options and isinstance(options[0], str):
        per_item = [tuple(cast("Sequence[str]", options))] * n_items
    else:
        per_item = [tuple(o) for o in options]
        if len(per_item) != n_items:
            raise ValueError(f"{len(per_item)} option lists for {n_items} items")
    body = _body(text or "")
    if not body.strip():
        return {n: ParsedLikert("unparseable", None, REASON_EMPTY) for n in range(1, n_items + 1)}

    by_item: dict[int, list[ParsedLikert]] = {}
    for match in BATCH_LINE_RE.finditer(body):
        number = int(match.group(1))
        if 1 <= number <= n_items:
            by_item.setdefault(number, []).append(
                parse_likert_reply(match.group(2), per_item[number - 1], labels=labels))
    refusal = None if by_item else _refusal(body)

    result = {}
    for number in range(1, n_items + 1):
        parsed = by_item.get(number, [])
        answers = {p.index for p in parsed if p.outcome == "answer"}
        if len(answers) == 1:
            result[number] = ParsedLikert("answer", answers.pop())
        elif answers:
            result[number] = ParsedLikert("unparseable", None, REASON_CONFLICT)
        elif parsed:
            result[number] = parsed[0]
        elif refusal:
            result[number] = ParsedLikert("refusal", None, "refusal: " + " ".join(refusal.group(0).split()))
        else:
            result[number] = ParsedLikert("unparseable", None, REASON_MISSING)
    return result


# ---------------------------------------------------------------------------------------------- mapping back


# Words of an option on the agree side, and words that keep an option off it ("Neither agree nor disagree").
AGREE_WORDS = frozenset({"agree", "accurate", "true", "yes"})
AGAINST_WORDS = frozenset({"disagree", "inaccurate", "untrue", "false", "no", "not", "neither"})


def agree_side(options: Sequence[str]) -> frozenset[int]:
    """The indices of the options on the agree side (module docstring); ``ValueError`` if none or all are."""
    side = frozenset(i for i, option in enumerate(options)
                     if AGREE_WORDS & set(_option_words(option)) and not AGAINST_WORDS & set(_option_words(option)))
    if not side or len(side) == len(options):
        raise ValueError(f"cannot tell the agree side of the options {list(options)!r}")
    return side


@dataclass(frozen=True)
class Validity:
    """Validity of one administration (seed 000 §4.4). ``dummy_endorsed`` of ``dummy_items`` dummies (answered:
    ``dummy_answered``). Over all items: ``refusals`` and ``unparseable`` (from :class:`ParsedLikert` answers),
    ``missing`` (a position absent from the answers or given as None)."""

    dummy_items: int
    dummy_answered: int
    dummy_endorsed: int
    refusals: int
    unparseable: int
    missing: int


@dataclass(frozen=True)
class MappedResponses:
    """``responses``: instrument slug → item number → option index (None: not answered), every item of the
    instrument, ready for :func:`psychometrics.instruments.score_responses`."""

    responses: Mapping[str, Mapping[int, int | None]]
    validity: Validity


def score_masked(questionnaire: MaskedQuestionnaire | OriginalForm,
                 answers: Mapping[int, int | ParsedLikert | None]) -> MappedResponses:
    """Map answers by position (an option index, a :class:`ParsedLikert`, or None) back to the instruments'
    item numbers and count validity (module docstring). Works on an :class:`OriginalForm` too.
    ``ValueError`` lists unknown positions and out-of-range indexes."""
    by_position = {item.position: item for item in questionnaire.items}
    errors = [f"unknown position {p!r}" for p in answers if p not in by_position]
    responses: dict[str, dict[int, int | None]] = {}
    counts = {"dummy_items": 0, "dummy_answered": 0, "dummy_endorsed": 0, "refusals": 0, "unparseable": 0, "missing": 0}
    for item in questionnaire.items:
        value = answers.get(item.position)
        if isinstance(value, ParsedLikert):
            if value.outcome != "answer":
                counts["refusals" if value.outcome == "refusal" else "unparseable"] += 1
            value = value.index
        elif value is None:
            counts["missing"] += 1
        if value is not None:
            if isinstance(value, numbers.Integral) and not isinstance(value, bool) and 0 <= value < len(item.options):
                value = int(value)
            else:
                errors.append(f"position {item.position}: {value!r} is not an option index 0–{len(item.options) - 1}")
                value = None
        if item.kind == "instrument":
            responses.setdefault(item.slug, {})[item.number] = value
        elif item.kind == "dummy":
            counts["dummy_items"] += 1
            if value is not None:
                counts["dummy_answered"] += 1
                counts["dummy_endorsed"] += int(value in agree_side(item.options))
    if errors:
        raise ValueError("invalid answers: " + "; ".join(errors))
    frozen = {slug: MappingProxyType(dict(sorted(numbers.items()))) for slug, numbers in responses.items()}
    return MappedResponses(responses=MappingProxyType(frozen), validity=Validity(**counts))


# ---------------------------------------------------------------------------------------------- analysis


@dataclass(frozen=True)
class PairedComparison:
    """Masked vs original over the same models: ``mean_difference`` is mean(masked − original); ``t``, ``p``
    (two-sided) from ``scipy.stats.ttest_rel(masked, original)`` with ``df = n − 1``; ``d_z`` is Cohen's d for
    paired samples, mean difference / SD of the differences (ddof=1), NaN when the differences do not vary.
    Seed 000 §4.4 reports t and d as magnitudes (t(8) = 2.53 for a decline): the signs here give the direction."""

    n: int
    mean_difference: float
    t: float
    df: int
    p: float
    d_z: float


def _paired(original: Sequence[float], masked: Sequence[float]) -> tuple[np.ndarray, np.ndarray]:
    a, b = np.asarray(original, dtype=float), np.asarray(masked, dtype=float)
    if a.ndim != 1 or a.shape != b.shape:
        raise ValueError(f"original and masked must be paired lists of the same length ({a.shape} vs {b.shape})")
    if not (np.isfinite(a).all() and np.isfinite(b).all()):
        raise ValueError("scores must be finite numbers (leave out excluded models before comparing)")
    return a, b


def paired_comparison(original: Sequence[float], masked: Sequence[float]) -> PairedComparison:
    """Paired t-test and d_z of masked vs original scores, one pair per model (:class:`PairedComparison`)."""
    a, b = _paired(original, masked)
    if len(a) < 2:
        raise ValueError("a paired comparison needs at least two pairs")
    differences = b - a
    sd = float(np.std(differences, ddof=1))
    mean = float(np.mean(differences))
    if sd == 0:
        # scipy warns and returns NaN on constant differences; say so without the warning
        return PairedComparison(n=len(a), mean_difference=mean, t=math.nan, df=len(a) - 1, p=math.nan, d_z=math.nan)
    result = stats.ttest_rel(b, a)
    return PairedComparison(n=len(a), mean_difference=mean, t=float(result.statistic), df=len(a) - 1,
                            p=float(result.pvalue), d_z=mean / sd)


def change_percent_of_max(original: Sequence[float], masked: Sequence[float], scale_min: float, scale_max: float, *,
                          relative_to: Literal["maximum", "range"] = "maximum") -> list[float]:
    """Per model, 100 × (masked − original) / scale_max: Figure 2's "change shown as % of scale maximum".
    ``relative_to="range"`` divides by (scale_max − scale_min) instead (percent of maximum possible); the two
    agree when the scale starts at 0 (AQ 0–50), not on the 26-item SATA (26–104). Scores outside
    [scale_min, scale_max] are an error."""
    a, b = _paired(original, masked)
    if not scale_min < scale_max:
        raise ValueError(f"scale_min {scale_min} must be below scale_max {scale_max}")
    if ((np.concatenate([a, b]) < scale_min) | (np.concatenate([a, b]) > scale_max)).any():
        raise ValueError(f"scores outside the scale {scale_min}–{scale_max}")
    if relative_to not in ("maximum", "range"):
        raise ValueError(f"relative_to must be 'maximum' or 'range', got {relative_to!r}")
    denominator = scale_max if relative_to == "maximum" else scale_max - scale_min
    if denominator == 0:
        raise ValueError("scale_max is 0: use relative_to='range'")
    return [float(x) for x in 100 * (b - a) / denominator]


@dataclass(frozen=True)
class Crossings:
    """Models whose score reaches the threshold only on the masked form (``upward``: original < t ≤ masked) or
    only on the original (``downward``: masked < t ≤ original), in the order given."""

    threshold: float
    upward: tuple[str, ...] = ()
    downward: tuple[str, ...] = ()


def threshold_crossings(original_scores: Mapping[str, float], masked_scores: Mapping[str, float],
                        thresholds: Iterable[float]) -> dict[float, Crossings]:
    """Per threshold (a score ≥ threshold is at or above it, as AQ ≥ 26 elevated and ≥ 32 clinical), which models
    cross it in each direction. Both mappings must name the same models."""
    if set(original_scores) != set(masked_scores):
        raise ValueError(f"models differ: {sorted(set(original_scores) ^ set(masked_scores))}")
    result = {}
    for threshold in thresholds:
        up = tuple(m for m, score in original_scores.items() if score < threshold <= masked_scores[m])
        down = tuple(m for m, score in original_scores.items() if masked_scores[m] < threshold <= score)
        result[threshold] = Crossings(threshold=threshold, upward=up, downward=down)
    return result
