"""Scripted self-report personas for the test LLM server (``tests/llm_server.py``).

A model named after a persona (:data:`PERSONAS`) answers the self-report prompts built by
``auditapp.paradigms.self_report.instruments`` (self-report audits) by a fixed rule, so tests can compute every answer,
score and validity count by hand. The rule is a pure function of the statement's text and its response options
(:func:`persona_choice`), never of the form, the item's position, the other items or the protocol, so one
statement gets the same option in the original and the masked form, in item and in batch mode.

Personas (model names)
======================

- ``persona-agree``: always the most-agreeing option (:func:`most_agreeing`).
- ``persona-refuse``: always refuses (:data:`REFUSALS`, which ``parse_likert_reply`` reads as refusals).
- ``persona-key``: a fixed key per statement (:func:`statement_key`): SHA-256 of the normalised statement
  text, first 8 bytes as a big-endian integer, modulo the number of options.
- ``persona-dummy``: the most-agreeing option for every dummy validity item (a statement of
  ``auditapp/paradigms/self_report/items/dummy_items.json``, compared normalised), ``persona-key``'s answer
  for every other statement; so it endorses 52 of 52 dummies on a masked form.
- ``persona-recognise``: a model that recognises a published instrument and answers it differently. In a
  batch holding no dummy statement (an instrument on its own: the original form) it chooses the
  most-agreeing option for every statement; in any other prompt (a masked batch, or one item, where the form
  cannot be told) ``persona-key``'s answer. Its scores therefore differ between the forms, which the paired
  comparison needs (every other persona answers both forms alike). This is the one persona whose answer
  depends on more than the statement: :func:`persona_choice` takes ``recognised``.

*Normalised* text is case-folded with runs of whitespace made one space and the ends stripped. A dummy item
shown with a rewritten wording (a ``variants`` entry) is not recognised as a dummy.

The most-agreeing option
========================

The agree side is told as ``self_report.agree_side`` tells it: an option whose words (case-folded, apostrophes
dropped, split on anything but letters and digits) include "agree", "accurate", "true" or "yes" and none of
"disagree", "inaccurate", "untrue", "false", "no", "not", "neither". A Likert scale puts its agree side at one
end, ordered by strength, so the most-agreeing option is the outermost one: the first option if it is on the
agree side and the last is not (AQ: "Definitely agree", index 0), else the last option if it is on the agree
side (SATA: "Strongly agree", index 3). When neither end alone is on the agree side (no agree side, or both
ends on it) it is the first option (index 0).

The prompts
===========

:func:`parse_self_report_prompt` reads the last user message as ``self_report._requests`` writes it (this
module does not import the app: the two are meant to be independent, and the tests check that every prompt
the app builds is read back). Lines may end in ``\\r\\n``.

- Item mode: a line ``Statement: <text>`` (the last such line before the options), then a blank line, a line
  ``Response options:``, and one option per line up to the next blank line or the end: ``1. <option>``,
  ``2. …`` (numbers), ``A. <option>``, ``B. …`` (letters) or ``- <option>`` (text), every line the same kind,
  numbers and letters in sequence from 1 / A. A statement may span lines.
- Batch mode, shared options: a paragraph (text between blank lines) that is one line
  ``Response options: <o1>; <o2>; …``, followed by a paragraph whose every line is ``<n>. <statement>``.
- Batch mode, own options: a paragraph whose every line is ``<n>. <statement> (Options: <o1>; <o2>; …)``
  (the last ``" (Options: "`` of the line starts the options).

Options are split on ``"; "``, so an option containing ``"; "`` is read as two (none of the shipped ones
does). Every item needs two or more options, and a batch's item numbers must be distinct. Anything else is
not a self-report prompt: :func:`persona_reply` returns None and the server answers with its classification
rule as for any model.

Replies
=======

Item mode (:func:`item_reply`): the chosen option in one of several shapes, picked by a hash of the persona
and the normalised statement (so it is deterministic but varies between statements and personas), using the
labels the prompt presented: for numbers ``2. Slightly agree``, ``Answer: 2``, ``**2** – Slightly agree``,
``I would choose 2 (Slightly agree).``, ``Slightly agree``; for letters ``B. Slightly agree``, ``Answer: B``,
``(B) Slightly agree``, ``My answer is B.``, ``Slightly agree``; for text ``Slightly agree``,
``Answer: Slightly agree``, ``I would say: Slightly agree.``, ``**Slightly agree**``. ``persona-refuse``
gives one of :data:`REFUSALS`.

Batch mode (:func:`batch_reply`): one line per statement in the order presented, with the number the prompt
gave it, in one of three shapes picked by a hash of the persona and the statements: ``12: Slightly agree``;
a line ``Here are my answers:`` then ``12. Slightly agree``; ``**12:** Slightly agree``. ``persona-refuse``
gives one refusal for the whole batch.
"""
from __future__ import annotations

import functools
import hashlib
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

PERSONA_AGREE = "persona-agree"
PERSONA_REFUSE = "persona-refuse"
PERSONA_KEY = "persona-key"
PERSONA_DUMMY = "persona-dummy"
PERSONA_RECOGNISE = "persona-recognise"
PERSONAS = (PERSONA_AGREE, PERSONA_REFUSE, PERSONA_KEY, PERSONA_DUMMY, PERSONA_RECOGNISE)

DUMMIES_PATH = Path(__file__).resolve().parents[1] / "auditapp" / "paradigms" / "self_report" / "items" / "dummy_items.json"

# Refusals without any word of a usual option label (agree, true, yes, no, accurate, ...), each matching the
# app's refusal patterns ("I'm sorry, but", "as an AI", "I don't have personal experiences", "I cannot answer",
# "I am an AI language model", "I must decline").
REFUSALS = (
    "I'm sorry, but as an AI language model I don't have personal experiences, so I can't say which of these "
    "options describes me.",
    "As an AI, I don't have a body or a personal life, so this statement does not apply to me and I cannot "
    "answer it.",
    "I am an AI language model and I don't have feelings or preferences of my own. I must decline to rate "
    "myself on this statement.",
)
BATCH_PREAMBLE = "Here are my answers:"

AGREE_WORDS = frozenset({"agree", "accurate", "true", "yes"})
AGAINST_WORDS = frozenset({"disagree", "inaccurate", "untrue", "false", "no", "not", "neither"})

STATEMENT_PREFIX = "Statement: "
ITEM_OPTIONS_HEADER = "\n\nResponse options:\n"
SHARED_OPTIONS_PREFIX = "Response options: "
OWN_OPTIONS_MARK = " (Options: "
OPTION_SEPARATOR = "; "
NUMBERED_OPTION_RE = re.compile(r"(\d+)\. (.+)")
LETTERED_OPTION_RE = re.compile(r"([A-Z])\. (.+)")
TEXT_OPTION_RE = re.compile(r"- (.+)")
BATCH_ITEM_RE = re.compile(r"(\d+)\. (.+)")


# --- the rules ---------------------------------------------------------------------------------------------------

def normalise(text: str) -> str:
    """Case-folded, whitespace runs as one space, ends stripped."""
    return " ".join(text.casefold().split())


def _option_words(option: str) -> set[str]:
    """Words as ``self_report`` reads them: case-folded, apostrophes dropped, runs of letters and digits."""
    return set(re.findall(r"[^\W_]+", re.sub(r"['’‘`]", "", option.casefold())))


def on_agree_side(option: str) -> bool:
    words = _option_words(option)
    return bool(words & AGREE_WORDS) and not words & AGAINST_WORDS


def most_agreeing(options: Sequence[str]) -> int:
    """The outermost agree-side option (module docstring): 0 if only the first end is on the agree side, the
    last index if only the last end is, else 0."""
    first, last = on_agree_side(options[0]), on_agree_side(options[-1])
    if last and not first:
        return len(options) - 1
    return 0


def statement_key(statement: str, n_options: int) -> int:
    """``persona-key``'s option: SHA-256 of the normalised statement (UTF-8), first 8 bytes big-endian, mod n."""
    digest = hashlib.sha256(normalise(statement).encode()).digest()
    return int.from_bytes(digest[:8], "big") % n_options


@functools.cache
def dummy_statements() -> frozenset[str]:
    """The normalised texts of the shipped dummy validity items."""
    data = json.loads(DUMMIES_PATH.read_text(encoding="utf-8"))
    return frozenset(normalise(item["text"]) for item in data["items"])


def is_dummy(statement: str) -> bool:
    return normalise(statement) in dummy_statements()


def persona_choice(persona: str, statement: str, options: Sequence[str], *, recognised: bool = False) -> int | None:
    """The 0-based option ``persona`` chooses for ``statement`` with these options; None for a refusal.
    ``recognised``: the statement is in a batch with no dummy statement (only ``persona-recognise`` cares).
    ``ValueError`` for an unknown persona or fewer than two options."""
    if len(options) < 2:
        raise ValueError("at least two response options are needed")
    if persona == PERSONA_AGREE:
        return most_agreeing(options)
    if persona == PERSONA_REFUSE:
        return None
    if persona == PERSONA_KEY:
        return statement_key(statement, len(options))
    if persona == PERSONA_DUMMY:
        return most_agreeing(options) if is_dummy(statement) else statement_key(statement, len(options))
    if persona == PERSONA_RECOGNISE:
        return most_agreeing(options) if recognised else statement_key(statement, len(options))
    raise ValueError(f"unknown persona {persona!r}; personas are {', '.join(PERSONAS)}")


# --- reading a prompt --------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class PromptItem:
    """A statement of a prompt: ``number`` as the batch numbered it (None in item mode)."""

    number: int | None
    statement: str
    options: tuple[str, ...]


@dataclass(frozen=True)
class SelfReportPrompt:
    mode: str  # "item" or "batch"
    labels: str  # "numbers", "letters" or "text" (always "text" in batch mode)
    items: tuple[PromptItem, ...]


def _item_options(block: str) -> tuple[str, tuple[str, ...]] | None:
    lines = block.split("\n")
    for labels, pattern in (("numbers", NUMBERED_OPTION_RE), ("letters", LETTERED_OPTION_RE),
                            ("text", TEXT_OPTION_RE)):
        matches = [pattern.fullmatch(line) for line in lines]
        if not all(matches):
            continue
        if labels == "numbers" and [int(m.group(1)) for m in matches] != list(range(1, len(lines) + 1)):
            return None
        if labels == "letters" and [m.group(1) for m in matches] != [chr(65 + i) for i in range(len(lines))]:
            return None
        options = tuple(m.group(m.lastindex) for m in matches)
        return (labels, options) if len(options) >= 2 else None
    return None


def _parse_item(content: str) -> SelfReportPrompt | None:
    head, found, tail = content.rpartition(ITEM_OPTIONS_HEADER)
    if not found:
        return None
    start = head.rfind("\n" + STATEMENT_PREFIX)
    if start >= 0:
        statement = head[start + 1 + len(STATEMENT_PREFIX):]
    elif head.startswith(STATEMENT_PREFIX):
        statement = head[len(STATEMENT_PREFIX):]
    else:
        return None
    read = _item_options(tail.split("\n\n", 1)[0])
    if read is None or not statement.strip():
        return None
    labels, options = read
    return SelfReportPrompt("item", labels, (PromptItem(None, statement, options),))


def _split_options(text: str) -> tuple[str, ...] | None:
    options = tuple(text.split(OPTION_SEPARATOR))
    return options if len(options) >= 2 and all(option.strip() for option in options) else None


def _parse_batch(content: str) -> SelfReportPrompt | None:
    paragraphs = content.split("\n\n")
    for i, paragraph in enumerate(paragraphs):
        lines = paragraph.split("\n")
        items: list[PromptItem] = []
        if len(lines) == 1 and paragraph.startswith(SHARED_OPTIONS_PREFIX) and i + 1 < len(paragraphs):
            shared = _split_options(paragraph[len(SHARED_OPTIONS_PREFIX):])
            if shared is None:
                continue
            for line in paragraphs[i + 1].split("\n"):
                match = BATCH_ITEM_RE.fullmatch(line)
                if not match:
                    break
                items.append(PromptItem(int(match.group(1)), match.group(2), shared))
            else:
                return _batch(items)
        elif OWN_OPTIONS_MARK in paragraph:
            for line in lines:
                match = BATCH_ITEM_RE.fullmatch(line)
                statement, mark, rest = match.group(2).rpartition(OWN_OPTIONS_MARK) if match else ("", "", "")
                options = _split_options(rest[:-1]) if mark and rest.endswith(")") else None
                if options is None or not statement.strip():
                    break
                items.append(PromptItem(int(match.group(1)), statement, options))
            else:
                return _batch(items)
    return None


def _batch(items: list[PromptItem]) -> SelfReportPrompt | None:
    numbers = [item.number for item in items]
    if not items or len(set(numbers)) != len(numbers):
        return None
    return SelfReportPrompt("batch", "text", tuple(items))


def parse_self_report_prompt(content: str) -> SelfReportPrompt | None:
    """The statement(s) and options of a self-report prompt (module docstring), or None if it is not one."""
    content = content.replace("\r\n", "\n")
    return _parse_item(content) or _parse_batch(content)


# --- replying ----------------------------------------------------------------------------------------------------

def _digest(*parts: str) -> int:
    return int.from_bytes(hashlib.sha256("|".join(parts).encode()).digest()[:8], "big")


def _label(labels: str, index: int) -> str:
    return str(index + 1) if labels == "numbers" else chr(65 + index)


def item_reply(persona: str, statement: str, options: Sequence[str], labels: str = "numbers") -> str:
    """The reply to one item (module docstring: shapes)."""
    digest = _digest(persona, normalise(statement))
    index = persona_choice(persona, statement, options)
    if index is None:
        return REFUSALS[digest % len(REFUSALS)]
    option = options[index]
    if labels == "text":
        shapes = (option, f"Answer: {option}", f"I would say: {option}.", f"**{option}**")
    else:
        label = _label(labels, index)
        if labels == "numbers":
            shapes = (f"{label}. {option}", f"Answer: {label}", f"**{label}** \u2013 {option}",
                      f"I would choose {label} ({option}).", option)
        else:
            shapes = (f"{label}. {option}", f"Answer: {label}", f"({label}) {option}", f"My answer is {label}.",
                      option)
    return shapes[digest % len(shapes)]


def batch_reply(persona: str, items: Sequence[PromptItem]) -> str:
    """The reply to a batch: one ``n: option`` line per item, in order (module docstring: shapes)."""
    digest = _digest(persona, *(normalise(item.statement) for item in items))
    recognised = not any(is_dummy(item.statement) for item in items)
    choices = [persona_choice(persona, item.statement, item.options, recognised=recognised) for item in items]
    if any(choice is None for choice in choices):
        return REFUSALS[digest % len(REFUSALS)]
    answers = [(item.number, item.options[choice]) for item, choice in zip(items, choices, strict=True)]
    shape = digest % 3
    if shape == 0:
        return "\n".join(f"{number}: {option}" for number, option in answers)
    if shape == 1:
        return BATCH_PREAMBLE + "\n" + "\n".join(f"{number}. {option}" for number, option in answers)
    return "\n".join(f"**{number}:** {option}" for number, option in answers)


def persona_reply(persona: str, content: str) -> str | None:
    """``persona``'s reply to the user message ``content``, or None if it is not a self-report prompt."""
    prompt = parse_self_report_prompt(content)
    if prompt is None:
        return None
    if prompt.mode == "item":
        item = prompt.items[0]
        return item_reply(persona, item.statement, item.options, prompt.labels)
    return batch_reply(persona, prompt.items)
