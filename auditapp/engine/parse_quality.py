"""Parse quality of an audit's replies (issue 16, "What a user sees" 3): what an unparseable reply looks like, and
when a model × condition cell needs the researcher's attention. Pure: no Django.

A reply's **shape** (:func:`reply_shape`) groups replies that a parser would fail on for the same reason, so the
most frequent shapes of a cell's unparseable replies say at a glance what the model does instead of answering:

- its *opening*: ``empty`` (nothing but white space), ``JSON`` (starts with ``{`` or ``[``; an object is shown with
  its first key), ``code block`` (starts with a Markdown fence), ``number`` (starts with a digit, a sign or a decimal
  point followed by one) or ``prose`` (anything else);
- for prose and numbers, its *first words*: the first three words, lower-cased, each stripped of the punctuation
  around it, every digit written ``#``, a word longer than 20 characters cut there with "…" (so "This label of 0
  indicates…" and "This label of 1 shows…" share ``"this label of"``, and "0.8 …" and "0.3 …" share ``"#.#"``);
- its *length* in characters, in buckets: ``< 20``, ``20–99``, ``100–499``, ``≥ 500``;
- ``cut off`` when the server stopped it at the token limit (:data:`TRUNCATED`: OpenAI-compatible servers and
  Ollama say ``length``; some routers ``max_tokens``).

For example ``The given sentences are not ableist and they highlight…`` stopped at 64 tokens has the shape
``prose "the given sentences" · 100–499 chars · cut off``.

:func:`cell_warning` flags a cell once it has :data:`WARN_AFTER` answered replies of which more than half are
unparseable or cut off: a researcher learns after twenty replies that a model answers in prose or runs out of
tokens, not after two thousand.
"""
from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable

TRUNCATED = ("length", "max_tokens")
RAISE_MAX_TOKENS = "cut off at the token limit: raise max_tokens"
WARN_AFTER = 20
FIRST_WORDS = 3
WORD_CHARS = 20
LENGTH_BUCKETS = ((20, "< 20 chars"), (100, "20–99 chars"), (500, "100–499 chars"))
LONGEST_BUCKET = "≥ 500 chars"
EXAMPLE_CHARS = 200

_NUMBER = re.compile(r"^[+-]?(\d|\.\d)")
_FIRST_KEY = re.compile(r'^\{\s*"([^"\n]{0,40})"')
_EDGE_PUNCTUATION = re.compile(r"^[\W_]+|[\W_]+$")


def is_truncated(finish_reason: str | None) -> bool:
    """Whether the server stopped the reply at its token limit."""
    return (finish_reason or "").lower() in TRUNCATED


def _first_words(text: str) -> str:
    words = []
    for word in text.split():
        cleaned = re.sub(r"\d", "#", _EDGE_PUNCTUATION.sub("", word.lower()))
        if len(cleaned) > WORD_CHARS:
            cleaned = cleaned[:WORD_CHARS] + "…"
        if cleaned:
            words.append(cleaned)
        if len(words) == FIRST_WORDS:
            break
    return " ".join(words)


def _length_bucket(text: str) -> str:
    return next((label for limit, label in LENGTH_BUCKETS if len(text) < limit), LONGEST_BUCKET)


def reply_shape(text: str | None, finish_reason: str | None = None) -> str:
    """The shape of a reply (see the module docstring): opening, first words, length bucket, cut off."""
    stripped = (text or "").strip()
    cut_off = " · cut off" if is_truncated(finish_reason) else ""
    if not stripped:
        return f"empty{cut_off}"
    if stripped.startswith("```"):
        opening = "code block"
    elif stripped.startswith("{"):
        key = _FIRST_KEY.match(stripped)
        opening = f'JSON {{"{key.group(1)}": …}}' if key else "JSON object"
    elif stripped.startswith("["):
        opening = "JSON array"
    else:
        kind = "number" if _NUMBER.match(stripped) else "prose"
        opening = f'{kind} "{_first_words(stripped)}"'
    return f"{opening} · {_length_bucket(stripped)}{cut_off}"


def frequent_shapes(replies: Iterable[tuple[str | None, str | None]], *, top: int = 5) -> list[dict]:
    """The ``top`` most frequent shapes of (text, finish reason) pairs, most frequent first (ties by shape), each
    with its count and the first reply of that shape (its first :data:`EXAMPLE_CHARS` characters)."""
    counts: Counter[str] = Counter()
    examples: dict[str, str] = {}
    for text, finish_reason in replies:
        shape = reply_shape(text, finish_reason)
        counts[shape] += 1
        examples.setdefault(shape, (text or "")[:EXAMPLE_CHARS])
    ranked = sorted(counts.items(), key=lambda pair: (-pair[1], pair[0]))[:top]
    return [{"shape": shape, "n": n, "example": examples[shape]} for shape, n in ranked]


def cell_warning(*, answered: int, unparseable: int, truncated: int, unparseable_or_truncated: int,
                 pending: int = 0) -> str:
    """A warning for a cell with at least :data:`WARN_AFTER` answered replies of which more than half are
    unparseable or cut off at the token limit ("" otherwise); while requests of the cell are still ``pending``, it
    says to read the shapes before waiting for them."""
    if answered < WARN_AFTER or 2 * unparseable_or_truncated <= answered:
        return ""
    parts = []
    if unparseable:
        parts.append(f"{unparseable} unparseable")
    if truncated:
        parts.append(f"{truncated} {RAISE_MAX_TOKENS}")
    advice = "read the reply shapes before waiting for the rest" if pending else "read the reply shapes"
    return (f"{unparseable_or_truncated} of {answered} answered replies are unparseable or cut off "
            f"({'; '.join(parts)}): {advice}")
