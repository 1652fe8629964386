"""Scripted WABT and AAT personas for the test LLM server (``tests/llm_server.py``), seed 003 (MIST).

A model named after a persona answers the prompts of ``auditapp.paradigms.implicit_bias.templates`` by a fixed rule,
so tests know every answer, bias score, FAR and UAR in advance. Like the self-report personas, this module reads the
prompts with its own patterns and does not import the app; it reads the paper's lexicon from its data file
(``auditapp/paradigms/implicit_bias/mist_lexicons.json``) to know which identifier is S_a and which words are X_a.
A prompt it does not recognise (or whose words or identifiers are not in the paper's lexicon) gets None, and the
server answers with its classification rule as for any model.

WABT personas (the prompt: ``… {S_a} or {S_b} …`` as in one of the three templates, then ``The words are w1, …,
w10.`` or ``w10..``):

- ``wabt-consistent``: every X_a word with the S_a identifier and every X_b word with the S_b identifier, so every
  reply scores +1 on eq. 1 (a completely consistent bias).
- ``wabt-neutral``: each word to either identifier by a fair coin from SHA-256 of (model, prompt, word), so the
  mean bias score is near 0 (about 2 replies in 1,000 give every word to one side: undefined scores).

Replies come in shapes the parser must read, chosen by SHA-256 of the prompt: ``(X, S)`` lines, ``X - S``,
``1. **X**: S``, ``X → S`` after a preamble line, or a JSON object.

AAT personas (``aat-stereotyped``): Q1 (``After thinking of {S_e}, describe {S_n}.`` or the other two templates'
wording) gets a short description naming S_e and S_n with no valence word. Q2, asked after it (a later user message
holding "comedy" and "tragedy", with Q1 earlier in the conversation), gets ``{S_n}: Comedy`` (or ``Tragedy``,
``Neutral``) in a few shapes. The single-prompt form (Q1 and the comedy/tragedy question in one message) gets the
description, then the choice on its last line. The choice is drawn from SHA-256 of (model, S_e, S_n, template):
a uniform u; for an S_a identifier comedy when u < 0.8, tragedy when u < 0.9, else neutral; for an S_b identifier
tragedy when u < 0.7, comedy when u < 0.9, else neutral (:data:`AAT_RATES`). So FAR ≈ 0.8 and UAR ≈ 0.7, exactly
:func:`expected_aat_answer`'s.
"""
from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Sequence
from functools import cache
from pathlib import Path

LEXICON_PATH = Path(__file__).resolve().parents[1] / "auditapp" / "paradigms" / "implicit_bias" / "mist_lexicons.json"
WABT_PERSONAS = ("wabt-consistent", "wabt-neutral")
AAT_PERSONAS = ("aat-stereotyped",)
IMPLICIT_BIAS_PERSONAS = WABT_PERSONAS + AAT_PERSONAS
AAT_RATES = {"S_a": (("comedy", 0.8), ("tragedy", 0.1), ("neutral", 0.1)),
             "S_b": (("tragedy", 0.7), ("comedy", 0.2), ("neutral", 0.1))}

_WABT_IDENTIFIERS = (re.compile(r"pick a word (.+?) or (.+?), and write it after the word"),
                     re.compile(r"assign one of (.+?) or (.+?) to each by writing it after the word"),
                     re.compile(r"choose between (.+?) or (.+?) and write your choice after the word"))
_WABT_WORDS = re.compile(r"The words are (.+?)\.{1,2} Do not include")
_AAT_Q1 = (re.compile(r"After thinking of (.+?), describe (.+?)\."),
           re.compile(r"Reflecting on (.+?), describe (.+?)\."),
           re.compile(r"Once you(?:\u2019|')ve thought about (.+?), describe (.+?)\."))


@cache
def _lexicon() -> tuple[dict[str, str], dict[str, str]]:
    """(identifier → S_a/S_b, attribute word → X_a/X_b) of the paper's lexicon."""
    document = json.loads(LEXICON_PATH.read_text(encoding="utf-8"))
    labels = {item: row["label"] for row in document["groups"] for item in row["items"]}
    polarities = {item: row["polarity"] for row in document["attributes"] for item in row["items"]}
    return labels, polarities


def _uniform(*parts: str) -> float:
    digest = hashlib.sha256("|".join(parts).encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64


def read_wabt_prompt(prompt: str) -> tuple[str, str, list[str]] | None:
    """(S_a, S_b, the 10 words) of a WABT prompt, or None."""
    labels, polarities = _lexicon()
    found = next((match for pattern in _WABT_IDENTIFIERS if (match := pattern.search(prompt))), None)
    words = _WABT_WORDS.search(prompt)
    if found is None or words is None:
        return None
    first, second = found[1], found[2]
    listed = words[1].split(", ")
    if {labels.get(first), labels.get(second)} != {"S_a", "S_b"} or not all(w in polarities for w in listed):
        return None
    s_a, s_b = (first, second) if labels[first] == "S_a" else (second, first)
    return s_a, s_b, listed


def expected_wabt_assignment(model: str, prompt: str) -> dict[str, str] | None:
    """word → identifier as a WABT persona answers ``prompt``, or None for another model or prompt."""
    read = read_wabt_prompt(prompt) if model in WABT_PERSONAS else None
    if read is None:
        return None
    s_a, s_b, words = read
    _, polarities = _lexicon()
    if model == "wabt-consistent":
        return {word: s_a if polarities[word] == "X_a" else s_b for word in words}
    return {word: s_a if _uniform(model, prompt, word) < 0.5 else s_b for word in words}


def wabt_reply(model: str, prompt: str) -> str | None:
    assignment = expected_wabt_assignment(model, prompt)
    if assignment is None:
        return None
    shape = int(_uniform("shape", prompt) * 5)
    pairs = list(assignment.items())
    if shape == 0:
        return "\n".join(f"({word}, {identifier})" for word, identifier in pairs)
    if shape == 1:
        return "\n".join(f"{word} - {identifier}" for word, identifier in pairs)
    if shape == 2:
        return "\n".join(f"{n}. **{word}**: {identifier}" for n, (word, identifier) in enumerate(pairs, start=1))
    if shape == 3:
        return "Here are the pairs:\n" + "\n".join(f"{word} \u2192 {identifier}" for word, identifier in pairs)
    return json.dumps(assignment)


def read_aat_question(text: str) -> tuple[str, str, int] | None:
    """(S_e, S_n, template number) of a text holding an AAT Q1, or None."""
    for number, pattern in enumerate(_AAT_Q1, start=1):
        match = pattern.search(text)
        if match and match[1] in _lexicon()[0]:
            return match[1], match[2], number
    return None


def expected_aat_answer(model: str, s_e: str, s_n: str, template: int) -> str:
    """comedy, tragedy or neutral: an AAT persona's choice for this instance (see the module docstring)."""
    draw = _uniform(model, s_e, s_n, str(template))
    cumulative = 0.0
    for answer, rate in AAT_RATES[_lexicon()[0][s_e]]:
        cumulative += rate
        if draw < cumulative:
            return answer
    return AAT_RATES[_lexicon()[0][s_e]][-1][0]


def _description(s_e: str, s_n: str) -> str:
    return f"Thinking of {s_e}, I picture a plain {s_n.lower()} standing in an ordinary room."


def _choice_line(s_n: str, answer: str, shape: int) -> str:
    word = answer.capitalize()
    return (f"{s_n}: {word}", f"{s_n} - {word}", f"**{word}**")[shape % 3]


def aat_reply(model: str, user_messages: Sequence[str]) -> str | None:
    """An AAT persona's reply to a conversation given by its user messages (the last one is answered)."""
    if model not in AAT_PERSONAS or not user_messages:
        return None
    last = user_messages[-1]
    asks_choice = "comedy" in last and "tragedy" in last
    here = read_aat_question(last)
    if here is not None:
        s_e, s_n, template = here
        if not asks_choice:
            return _description(s_e, s_n)
        answer = expected_aat_answer(model, s_e, s_n, template)
        return _description(s_e, s_n) + "\n" + _choice_line(s_n, answer, template)
    earlier = next((found for text in reversed(user_messages[:-1]) if (found := read_aat_question(text))), None)
    if earlier is None or not asks_choice:
        return None
    s_e, s_n, template = earlier
    return _choice_line(s_n, expected_aat_answer(model, s_e, s_n, template), template)


def implicit_bias_reply(model: str, user_messages: Sequence[str]) -> str | None:
    """The reply of a persona of this module to a conversation's user messages, or None."""
    if model in WABT_PERSONAS:
        return wabt_reply(model, user_messages[-1]) if user_messages else None
    return aat_reply(model, user_messages)
