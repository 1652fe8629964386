"""What identifies a corpus: the content hash of its units, and the checks every stored corpus passes. Pure: no
Django (the services in :mod:`auditapp.corpus_services` store what these functions accept).

Two corpora with the same units in the same order are one corpus (stored once, reused by every audit that
names it); the hash covers each unit's key, text, factors, fields and pair, so an edited word, a renamed
group or a reordered corpus is a new corpus.
"""
from __future__ import annotations

import hashlib
import json
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from auditapp.engine.protocol import Unit

MAX_KEY_LENGTH = 300
"""A unit key's longest length (``CorpusUnit.key``)."""
MAX_REPORTED = 200
MAX_NAME_LENGTH = 200
"""A recorded scorer's longest name (``RecordedScorer.name``)."""
RESERVED_FACTOR_NAMES = frozenset({"key", "text", "fields", "pair", "position"})
"""Column names of a corpus's unit table that a factor cannot take."""
FACTOR_NAME = re.compile(r"[A-Za-z](?:_?[A-Za-z0-9])*")
"""A factor's name: a database query can group by it (no ``__``, which separates the parts of a lookup)."""


@dataclass(frozen=True)
class RecordedColumn:
    """One tool's scores of a corpus's units, made elsewhere and imported: ``(key, value, reason)`` per unit,
    ``value`` None where there is no score and ``reason`` saying why (empty when there is a value).
    ``provenance`` says where the column came from (file, sha256, column)."""

    name: str
    scores: tuple[tuple[str, float | None, str], ...]
    provenance: Mapping[str, Any] = field(default_factory=dict)

    @property
    def n_missing(self) -> int:
        return sum(value is None for _, value, _ in self.scores)


def units_canonical_json(units: Sequence[Unit]) -> str:
    """The units, in order, as JSON with sorted keys and no insignificant whitespace."""
    return json.dumps([{"key": u.key, "text": u.text, "factors": dict(u.factors), "fields": dict(u.fields),
                        "pair": u.pair} for u in units],
                      sort_keys=True, ensure_ascii=False, separators=(",", ":"))


def units_hash(units: Sequence[Unit]) -> str:
    """sha256 (hex) of :func:`units_canonical_json`."""
    return hashlib.sha256(units_canonical_json(units).encode("utf-8")).hexdigest()


def units_problems(units: Sequence[Unit]) -> list[str]:
    """Every problem that keeps units from being stored as one corpus (the first 200), or an empty list.

    A corpus has at least one unit; keys are unique, non-empty and at most 300 characters; every unit has the
    same factor names (so its export has one column per factor: a unit without a value has an empty string);
    factors are strings; no text holds a NUL character (PostgreSQL cannot store one).
    """
    problems: list[str] = []
    if not units:
        return ["the corpus has no units"]
    names = list(units[0].factors)
    reserved = sorted(RESERVED_FACTOR_NAMES.intersection(names))
    if reserved:
        problems.append(f"factors: {', '.join(reserved)} cannot name a factor (a column of the unit table)")
    odd = [name for name in names if not FACTOR_NAME.fullmatch(name)]
    if odd:
        problems.append(f"factors: {', '.join(map(repr, odd))}: a factor's name is a letter, then letters, digits "
                        "and single underscores")
    first: dict[str, int] = {}
    for position, unit in enumerate(units):
        where = f"unit {position + 1} ({unit.key[:80]!r})"
        if not unit.key.strip():
            problems.append(f"{where}: the key is empty")
        elif len(unit.key) > MAX_KEY_LENGTH:
            problems.append(f"{where}: the key has {len(unit.key)} characters; at most {MAX_KEY_LENGTH}")
        elif unit.key in first:
            problems.append(f"{where}: the same key as unit {first[unit.key] + 1}")
        first.setdefault(unit.key, position)
        if set(unit.factors) != set(names):
            problems.append(f"{where}: factors {list(unit.factors)} where the corpus has {names}")
        elif any(not isinstance(value, str) for value in unit.factors.values()):
            problems.append(f"{where}: every factor must be text")
        if "\x00" in unit.text or "\x00" in unit.key:
            problems.append(f"{where}: contains a NUL character (byte 0), which cannot be stored")
        if len(problems) >= MAX_REPORTED:
            break
    return problems


def recorded_problems(columns: Sequence[RecordedColumn], units: Sequence[Unit]) -> list[str]:
    """Every problem of recorded score columns for these units (the first 200): names empty, too long or used
    twice; scores of keys that are not units, or not finite."""
    problems: list[str] = []
    keys = {unit.key for unit in units}
    seen: set[str] = set()
    for column in columns:
        where = f"recorded scorer {column.name[:80]!r}"
        if not column.name.strip():
            problems.append(f"{where}: the name is empty")
        elif len(column.name) > MAX_NAME_LENGTH:
            problems.append(f"{where}: the name has {len(column.name)} characters; at most {MAX_NAME_LENGTH}")
        elif column.name in seen:
            problems.append(f"{where}: the name is used twice")
        seen.add(column.name)
        for key, value, _ in column.scores:
            if key not in keys:
                problems.append(f"{where}: scores {key[:80]!r}, which is not a unit of the corpus")
            elif value is not None and not math.isfinite(value):
                problems.append(f"{where}: the score of {key[:80]!r} is {value!r}, not a finite number")
            if len(problems) >= MAX_REPORTED:
                return problems
    return problems
