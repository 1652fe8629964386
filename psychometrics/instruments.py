"""Likert instruments as data: our JSON file format, its validation, and scoring. Pure Python.

A researcher can load any Likert instrument (e.g. the full SATA, which is not public) from a file in this
format; the product ships a few in ``psychometrics/instruments/`` (``aq50.json``, ``sata_partial.json``).

File format
===========

One JSON object::

    {
      "slug": "aq50",                    # [a-z0-9][a-z0-9_-]*, at most 100 characters
      "name": "Autism-Spectrum Quotient (AQ-50)",            # at most 200 characters
      "version": "1.0",                  # revision of this definition, at most 50 characters
      "source": "Baron-Cohen et al. (2001) ...",            # citation of the items and the key
      "licence_note": "...",             # terms of use; may be ""
      "partial": false,                  # true when this is not the full published scale
      "notes": "...",                    # free text; may be ""
      "response_options": ["Definitely agree", "Slightly agree", "Slightly disagree", "Definitely disagree"],
      "keys": {"agree": [1, 1, 0, 0], "disagree": [0, 0, 1, 1]},
      "items": [{"number": 1, "text": "I prefer to ...", "key": "disagree"}, ...],
      "subscales": {"social_skill": [1, 11, 13, ...], ...},
      "total": {"items": "all"},
      "tiers": [{"min": 0, "max": 25, "label": "below screening threshold (< 26)"}, ...],
      "cutoffs": {"26": "elevated: ...", "32": "clinical range: ..."}
    }

- ``response_options``: the option labels in display order (at least two, distinct). A response is the
  0-based index of the chosen option.
- ``keys``: key name → one score per response option (numbers), so the vector's length is the number of
  options. A 1–4 Likert has e.g. ``"forward": [1, 2, 3, 4]`` and ``"reverse": [4, 3, 2, 1]``; the AQ has
  ``"agree": [1, 1, 0, 0]`` and ``"disagree": [0, 0, 1, 1]``.
- ``items``: in display order; ``number`` is a unique int ≥ 1 (the published item number where known),
  ``text`` the item's wording, ``key`` a name in ``keys``. At least one item.
- ``subscales``: name → item numbers (each an existing item, no repeats); ``{}`` when there are none.
- ``total``: ``{"items": "all"}`` or ``{"items": [item numbers]}``: the items summed into the total.
- ``tiers`` (optional): labelled inclusive ranges ``min ≤ total ≤ max`` on the total. They must not
  overlap, and each must meet the range of totals the keys allow (26-item tiers on a 5-item form
  fail). A total in no tier has tier ``None``.
- ``cutoffs`` (optional): threshold (a number, written as a JSON string key) → description.

Every field except ``tiers`` and ``cutoffs`` is required; a field not listed here is an error (it is
most likely a typo). Numbers that are whole (``1.0``) are stored as ints.

Validation
==========

``load_instrument(data)`` checks everything and raises ``InstrumentError`` listing *every* problem, each
prefixed by its JSON path (list indexes are 0-based positions in the file), e.g.::

    items[3].key: unknown key 'foo'
    keys.reverse: 3 scores for 4 response options
    subscales.social_skill[2]: item 51 does not exist
    tiers[1]: overlaps tiers[0] (26–31 and 0–26)

``parse_instrument`` does the same from JSON text (an uploaded file), also reporting invalid JSON and
repeated keys. ``Instrument.content_hash`` is the SHA-256 of the canonical JSON dump of the definition
(``Instrument.to_dict()``, keys sorted, no whitespace, UTF-8), so a score can record the exact version
it was computed with; reordering keys or reformatting the file does not change it, any change of
content does.

Scoring
=======

``score_responses(instrument, responses)`` takes item number → 0-based option index. An unknown item
number, a non-int or an out-of-range index raises ``ValueError`` (all of them, in one message); a
``None`` value counts as not answered. **Scores are only defined on complete answers**: the total is
``None`` unless every item in the total is answered, and a subscale is ``None`` unless every item in it
is answered; nothing is imputed or prorated. ``complete`` says whether every item of the instrument is
answered (with ``"total": {"items": "all"}``, ``complete`` is False exactly when the total is None).
"""
from __future__ import annotations

import hashlib
import json
import math
import numbers
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any, TypeGuard

from common.json_input import JSONTooDeepError, json_loads_bounded

__all__ = [
    "INSTRUMENTS_DIR",
    "Instrument",
    "InstrumentError",
    "InstrumentScore",
    "Item",
    "Tier",
    "instrument_path",
    "load_instrument",
    "parse_instrument",
    "read_instrument",
    "score_responses",
    "shipped_instrument",
    "shipped_instruments",
]

INSTRUMENTS_DIR = Path(__file__).resolve().parent / "instruments"

FIELDS = ("slug", "name", "version", "source", "licence_note", "partial", "notes", "response_options", "keys",
          "items", "subscales", "total", "tiers", "cutoffs")
OPTIONAL_FIELDS = ("tiers", "cutoffs")
ITEM_FIELDS = ("number", "text", "key")
TIER_FIELDS = ("min", "max", "label")
SLUG_RE = re.compile(r"[a-z0-9][a-z0-9_-]*")
# Lengths the database columns hold (psychometrics.models).
MAX_LENGTHS = {"slug": 100, "name": 200, "version": 50, "tier_label": 200}

Number = int | float


class InstrumentError(ValueError):
    """An invalid instrument definition; ``problems`` lists every problem, each starting with its JSON path."""

    def __init__(self, problems: Iterable[str], origin: str | None = None):
        self.problems = list(problems)
        self.origin = origin
        where = f" {origin}" if origin else ""
        lines = "\n".join(f"- {p}" for p in self.problems)
        super().__init__(f"invalid instrument{where} ({len(self.problems)} problem(s)):\n{lines}")


@dataclass(frozen=True)
class Item:
    """One item: its published number, its wording and the name of its key."""

    number: int
    text: str
    key: str


@dataclass(frozen=True)
class Tier:
    """A labelled inclusive range ``min ≤ total ≤ max`` of the total."""

    min: Number
    max: Number
    label: str

    def contains(self, value: Number) -> bool:
        return self.min <= value <= self.max


@dataclass(frozen=True)
class Instrument:
    """A validated instrument (build it with ``load_instrument``). Immutable; mappings are read-only."""

    slug: str
    name: str
    version: str
    source: str
    licence_note: str
    partial: bool
    notes: str
    response_options: tuple[str, ...]
    keys: Mapping[str, tuple[Number, ...]]
    items: tuple[Item, ...]
    subscales: Mapping[str, tuple[int, ...]]
    total: str | tuple[int, ...]  # "all", or the item numbers listed in the file
    tiers: tuple[Tier, ...] = ()
    cutoffs: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))

    def __hash__(self) -> int:
        return hash(self.content_hash)

    @property
    def item_numbers(self) -> tuple[int, ...]:
        return tuple(item.number for item in self.items)

    @property
    def total_items(self) -> tuple[int, ...]:
        """The item numbers summed into the total."""
        return self.item_numbers if isinstance(self.total, str) else self.total  # a str is "all"

    def item(self, number: int) -> Item:
        for item in self.items:
            if item.number == number:
                return item
        raise KeyError(f"instrument {self.slug!r} has no item {number}")

    def score_range(self, numbers: Iterable[int]) -> tuple[Number, Number]:
        """The lowest and highest possible sum over the given items."""
        by_number = {item.number: item for item in self.items}
        vectors = [self.keys[by_number[n].key] for n in numbers]
        return _sum(min(v) for v in vectors), _sum(max(v) for v in vectors)

    @property
    def total_range(self) -> tuple[Number, Number]:
        """The lowest and highest possible total."""
        return self.score_range(self.total_items)

    def tier_for(self, total: Number | None) -> str | None:
        """The label of the tier holding ``total``, or None (no total, no tiers, or in no tier)."""
        if total is None:
            return None
        for tier in self.tiers:
            if tier.contains(total):
                return tier.label
        return None

    def to_dict(self) -> dict[str, Any]:
        """The definition in the file format (always with ``tiers`` and ``cutoffs``)."""
        return {
            "slug": self.slug,
            "name": self.name,
            "version": self.version,
            "source": self.source,
            "licence_note": self.licence_note,
            "partial": self.partial,
            "notes": self.notes,
            "response_options": list(self.response_options),
            "keys": {name: list(vector) for name, vector in self.keys.items()},
            "items": [{"number": i.number, "text": i.text, "key": i.key} for i in self.items],
            "subscales": {name: list(numbers) for name, numbers in self.subscales.items()},
            "total": {"items": self.total if self.total == "all" else list(self.total)},
            "tiers": [{"min": t.min, "max": t.max, "label": t.label} for t in self.tiers],
            "cutoffs": dict(self.cutoffs),
        }

    def canonical_json(self) -> str:
        return json.dumps(self.to_dict(), sort_keys=True, ensure_ascii=False, separators=(",", ":"),
                          allow_nan=False)

    @property
    def content_hash(self) -> str:
        """SHA-256 (hex) of ``canonical_json()`` in UTF-8."""
        return hashlib.sha256(self.canonical_json().encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class InstrumentScore:
    """Scores of one set of responses. ``total`` and each subscale are None unless all their items are answered."""

    slug: str
    content_hash: str
    total: Number | None
    subscales: Mapping[str, Number | None]
    tier: str | None
    n_answered: int
    n_items: int
    complete: bool
    item_scores: Mapping[int, Number]  # item number → score, answered items only


# ---------------------------------------------------------------------------------------------- loading


def _is_int(value: Any) -> TypeGuard[int]:
    return isinstance(value, numbers.Integral) and not isinstance(value, bool)


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def _whole(value: Number) -> Number:
    return int(value) if isinstance(value, float) and value.is_integer() else value


def _sum(values: Iterable[Number]) -> Number:
    values = list(values)
    if all(isinstance(v, int) for v in values):
        return sum(values)
    return _whole(math.fsum(values))


def _member(path: str, name: str) -> str:
    return f"{path}.{name}" if re.fullmatch(r"[A-Za-z0-9_-]+", name) else f"{path}[{json.dumps(name)}]"


def _type_name(value: Any) -> str:
    return {dict: "object", list: "list", str: "string", bool: "boolean", type(None): "null",
            int: "number", float: "number"}.get(type(value), type(value).__name__)


class _Checker:
    def __init__(self) -> None:
        self.problems: list[str] = []

    def add(self, path: str, message: str) -> None:
        self.problems.append(f"{path}: {message}")

    def string(self, value: Any, path: str, *, empty: bool = False, max_length: int | None = None
               ) -> TypeGuard[str]:
        if not isinstance(value, str):
            self.add(path, f"expected a string, got {_type_name(value)}")
            return False
        if not empty and not value.strip():
            self.add(path, "must not be empty")
            return False
        if max_length is not None and len(value) > max_length:
            self.add(path, f"longer than {max_length} characters")
            return False
        return True

    def unknown_fields(self, obj: Mapping, allowed: Iterable[str], path: str) -> None:
        allowed = set(allowed)
        for name in obj:
            if name not in allowed:
                self.add(_member(path, str(name)) if path else str(name), "unknown field")

    def item_numbers(self, value: Any, path: str, existing: set[int] | None) -> list[int] | None:
        """A non-empty list of distinct existing item numbers (``existing`` None: items unknown, not checked)."""
        if not isinstance(value, list):
            self.add(path, f"expected a list of item numbers, got {_type_name(value)}")
            return None
        if not value:
            self.add(path, "no items")
            return None
        ok, seen = True, set()
        for index, number in enumerate(value):
            if not _is_int(number):
                self.add(f"{path}[{index}]", f"expected an item number, got {number!r}")
                ok = False
            elif number in seen:
                self.add(f"{path}[{index}]", f"item {number} listed twice")
                ok = False
            elif existing is not None and number not in existing:
                self.add(f"{path}[{index}]", f"item {number} does not exist")
                ok = False
            else:
                seen.add(number)
        return [int(n) for n in value] if ok else None


def load_instrument(data: Mapping[str, Any]) -> Instrument:
    """Validate a definition in the file format and return it; ``InstrumentError`` lists every problem."""
    check = _Checker()
    if not isinstance(data, Mapping):
        raise InstrumentError([f"(root): expected an object, got {_type_name(data)}"])
    for name in FIELDS:
        if name not in data and name not in OPTIONAL_FIELDS:
            check.add(name, "missing field")
    check.unknown_fields(data, FIELDS, "")

    # Each field as the JSON holds it (Any until checked; the checks below add a problem for each bad one).
    slug: Any = data.get("slug")
    if "slug" in data and check.string(slug, "slug", max_length=MAX_LENGTHS["slug"]) and not SLUG_RE.fullmatch(slug):
        check.add("slug", f"{slug!r} is not a slug (lower-case letters, digits, '_' and '-')")
    for name in ("name", "version", "source"):
        if name in data:
            check.string(data[name], name, max_length=MAX_LENGTHS.get(name))
    for name in ("licence_note", "notes"):
        if name in data:
            check.string(data[name], name, empty=True)
    if "partial" in data and not isinstance(data["partial"], bool):
        check.add("partial", f"expected true or false, got {data['partial']!r}")

    # response options
    n_options: int | None = None
    options: Any = data.get("response_options")
    if "response_options" in data:
        if not isinstance(options, list):
            check.add("response_options", f"expected a list of strings, got {_type_name(options)}")
        elif len(options) < 2:
            check.add("response_options", f"at least 2 options needed, got {len(options)}")
        else:
            # Every option is checked, not just up to the first bad one, so that each bad one is named.
            strings = [check.string(o, f"response_options[{i}]") for i, o in enumerate(options)]
            ok = all(strings)
            for i, option in enumerate(options):
                if isinstance(option, str) and option in options[:i]:
                    check.add(f"response_options[{i}]", f"repeats option {option!r}")
                    ok = False
            n_options = len(options) if ok else None

    # keys
    keys: Any = data.get("keys")
    key_names: set[str] | None = None
    if "keys" in data:
        if not isinstance(keys, Mapping):
            check.add("keys", f"expected an object (key name → scores), got {_type_name(keys)}")
        elif not keys:
            check.add("keys", "no keys")
        else:
            key_names = set(keys)
            for name, vector in keys.items():
                path = _member("keys", str(name))
                if not str(name).strip():
                    check.add(path, "empty key name")
                if not isinstance(vector, list):
                    check.add(path, f"expected a list of scores, got {_type_name(vector)}")
                    continue
                for i, score in enumerate(vector):
                    if not _is_number(score):
                        check.add(f"{path}[{i}]", f"expected a number, got {score!r}")
                if n_options is not None and len(vector) != n_options:
                    check.add(path, f"{len(vector)} scores for {n_options} response options")

    # items
    items: Any = data.get("items")
    existing: set[int] | None = None
    if "items" in data:
        if not isinstance(items, list):
            check.add("items", f"expected a list of items, got {_type_name(items)}")
        elif not items:
            check.add("items", "no items")
        else:
            seen_numbers: set[int] = set()
            first_at: dict[int, int] = {}
            for i, item in enumerate(items):
                path = f"items[{i}]"
                if not isinstance(item, Mapping):
                    check.add(path, f"expected an object, got {_type_name(item)}")
                    continue
                for name in ITEM_FIELDS:
                    if name not in item:
                        check.add(f"{path}.{name}", "missing field")
                check.unknown_fields(item, ITEM_FIELDS, path)
                number = item.get("number")
                if "number" in item:
                    if not _is_int(number) or number < 1:
                        check.add(f"{path}.number", f"expected an int ≥ 1, got {number!r}")
                    elif number in first_at:
                        check.add(f"{path}.number", f"duplicate item number {number} (also items[{first_at[number]}])")
                    else:
                        first_at[number] = i
                        seen_numbers.add(int(number))
                if "text" in item:
                    check.string(item["text"], f"{path}.text")
                if "key" in item:
                    key = item["key"]
                    if not isinstance(key, str):
                        check.add(f"{path}.key", f"expected a key name, got {key!r}")
                    elif key_names is not None and key not in key_names:
                        check.add(f"{path}.key", f"unknown key {key!r}")
            # when some numbers are unusable, do not report every reference to them
            existing = seen_numbers if len(seen_numbers) == len(items) else None

    # subscales
    subscales: Any = data.get("subscales")
    if "subscales" in data:
        if not isinstance(subscales, Mapping):
            check.add("subscales", f"expected an object (name → item numbers), got {_type_name(subscales)}")
        else:
            for name, numbers_ in subscales.items():
                path = _member("subscales", str(name))
                if not str(name).strip():
                    check.add(path, "empty subscale name")
                check.item_numbers(numbers_, path, existing)

    # total
    total: Any = data.get("total")
    total_items: list[int] | None = None
    if "total" in data:
        if not isinstance(total, Mapping):
            check.add("total", f'expected an object like {{"items": "all"}}, got {_type_name(total)}')
        else:
            check.unknown_fields(total, ("items",), "total")
            if "items" not in total:
                check.add("total.items", "missing field")
            elif total["items"] == "all":
                total_items = sorted(existing) if existing is not None else None
            elif isinstance(total["items"], str):
                check.add("total.items", f'expected "all" or a list of item numbers, got {total["items"]!r}')
            else:
                total_items = check.item_numbers(total["items"], "total.items", existing)

    # tiers
    tiers = data.get("tiers", [])
    valid_tiers: list[tuple[int, Number, Number]] = []
    if not isinstance(tiers, list):
        check.add("tiers", f"expected a list of tiers, got {_type_name(tiers)}")
    else:
        for i, tier in enumerate(tiers):
            path = f"tiers[{i}]"
            if not isinstance(tier, Mapping):
                check.add(path, f"expected an object, got {_type_name(tier)}")
                continue
            for name in TIER_FIELDS:
                if name not in tier:
                    check.add(f"{path}.{name}", "missing field")
            check.unknown_fields(tier, TIER_FIELDS, path)
            if "label" in tier:
                check.string(tier["label"], f"{path}.label", max_length=MAX_LENGTHS["tier_label"])
            bounds_ok = True
            for name in ("min", "max"):
                if name in tier and not _is_number(tier[name]):
                    check.add(f"{path}.{name}", f"expected a number, got {tier[name]!r}")
                    bounds_ok = False
            if bounds_ok and "min" in tier and "max" in tier:
                if tier["min"] > tier["max"]:
                    check.add(path, f"min {tier['min']} is above max {tier['max']}")
                else:
                    valid_tiers.append((i, tier["min"], tier["max"]))
        for a, (i, lo_i, hi_i) in enumerate(valid_tiers):
            for j, lo_j, hi_j in valid_tiers[:a]:
                if lo_i <= hi_j and lo_j <= hi_i:
                    check.add(f"tiers[{i}]", f"overlaps tiers[{j}] ({lo_i}–{hi_i} and {lo_j}–{hi_j})")

    # cutoffs
    cutoffs = data.get("cutoffs", {})
    if not isinstance(cutoffs, Mapping):
        check.add("cutoffs", f"expected an object (threshold → description), got {_type_name(cutoffs)}")
    else:
        for threshold, description in cutoffs.items():
            path = _member("cutoffs", str(threshold))
            try:
                ok = math.isfinite(float(threshold))
            except (TypeError, ValueError):
                ok = False
            if not ok:
                check.add(path, f"threshold {threshold!r} is not a number")
            check.string(description, path)

    # tiers must be reachable (e.g. 26-item tiers on a 5-item form); only when keys, items and total are valid
    if not check.problems and valid_tiers and total_items is not None:
        key_of = {item["number"]: item["key"] for item in items}
        low = _sum(min(keys[key_of[n]]) for n in total_items)
        high = _sum(max(keys[key_of[n]]) for n in total_items)
        for i, lo, hi in valid_tiers:
            if hi < low or lo > high:
                check.add(f"tiers[{i}]", f"range {lo}–{hi} lies outside the possible total {low}–{high}")

    if check.problems:
        raise InstrumentError(check.problems, origin=repr(slug) if isinstance(slug, str) else None)

    return Instrument(
        slug=slug,
        name=data["name"],
        version=data["version"],
        source=data["source"],
        licence_note=data["licence_note"],
        partial=data["partial"],
        notes=data["notes"],
        response_options=tuple(options),
        keys=MappingProxyType({name: tuple(_whole(s) for s in vector) for name, vector in keys.items()}),
        items=tuple(Item(number=int(i["number"]), text=i["text"], key=i["key"]) for i in items),
        subscales=MappingProxyType({name: tuple(int(n) for n in ns) for name, ns in subscales.items()}),
        total="all" if total["items"] == "all" else tuple(int(n) for n in total["items"]),
        tiers=tuple(Tier(min=_whole(t["min"]), max=_whole(t["max"]), label=t["label"]) for t in tiers),
        cutoffs=MappingProxyType(dict(cutoffs)),
    )


def parse_instrument(text: str | bytes, origin: str | None = None) -> Instrument:
    """``load_instrument`` from JSON text (e.g. an uploaded file); invalid JSON and repeated keys are problems."""
    repeated: list[str] = []

    def pairs(items: list[tuple[str, Any]]) -> dict[str, Any]:
        seen: dict[str, Any] = {}
        for name, value in items:
            if name in seen:
                repeated.append(f"(json): key {name!r} appears twice in one object")
            seen[name] = value
        return seen

    def constant(name: str) -> Any:
        raise ValueError(f"{name} is not allowed")

    try:
        data = json_loads_bounded(text, object_pairs_hook=pairs, parse_constant=constant)
    except JSONTooDeepError as exc:
        raise InstrumentError([f"(json): {exc}"], origin=origin) from None
    except (ValueError, UnicodeDecodeError) as exc:
        raise InstrumentError([f"(json): not valid JSON: {exc}"], origin=origin) from exc
    if repeated:
        raise InstrumentError(repeated, origin=origin)
    try:
        return load_instrument(data)
    except InstrumentError as exc:
        raise InstrumentError(exc.problems, origin=origin or exc.origin) from None


def read_instrument(path: str | Path) -> Instrument:
    """``parse_instrument`` on a file."""
    path = Path(path)
    return parse_instrument(path.read_bytes(), origin=str(path))


# ---------------------------------------------------------------------------------------------- shipped


def instrument_path(slug: str) -> Path:
    """The shipped file of ``slug`` (``FileNotFoundError`` if the product does not ship it)."""
    if not isinstance(slug, str) or not SLUG_RE.fullmatch(slug):
        raise ValueError(f"{slug!r} is not an instrument slug")
    path = INSTRUMENTS_DIR / f"{slug}.json"
    if not path.is_file():
        shipped = ", ".join(sorted(p.stem for p in INSTRUMENTS_DIR.glob("*.json"))) or "none"
        raise FileNotFoundError(f"no shipped instrument {slug!r} (shipped: {shipped})")
    return path


def shipped_instrument(slug: str) -> Instrument:
    return read_instrument(instrument_path(slug))


def shipped_instruments() -> list[Instrument]:
    """Every instrument in ``psychometrics/instruments/*.json``, by slug; each file is named after its slug."""
    result = []
    for path in sorted(INSTRUMENTS_DIR.glob("*.json")):
        instrument = read_instrument(path)
        if instrument.slug != path.stem:
            raise InstrumentError([f"slug: {instrument.slug!r} does not match the file name"], origin=str(path))
        result.append(instrument)
    return result


# ---------------------------------------------------------------------------------------------- scoring


def score_responses(instrument: Instrument, responses: Mapping[int, int | None]) -> InstrumentScore:
    """Score item number → 0-based option index. Scores are only defined on complete answers (module doc)."""
    if not isinstance(responses, Mapping):
        raise TypeError(f"responses must map item number → option index, got {type(responses).__name__}")
    by_number = {item.number: item for item in instrument.items}
    n_options = len(instrument.response_options)
    errors: list[str] = []
    item_scores: dict[int, Number] = {}
    for number, index in responses.items():
        if not _is_int(number):
            errors.append(f"item number {number!r} is not an int")
        elif int(number) not in by_number:
            errors.append(f"unknown item number {number} (not an item of {instrument.slug!r})")
        elif index is None:
            continue
        elif not _is_int(index):
            errors.append(f"item {number}: response index {index!r} is not an int")
        elif not 0 <= index < n_options:
            errors.append(f"item {number}: response index {index} out of range 0–{n_options - 1} "
                          f"({n_options} options)")
        else:
            item = by_number[int(number)]
            item_scores[item.number] = instrument.keys[item.key][int(index)]
    if errors:
        raise ValueError(f"invalid responses for instrument {instrument.slug!r}: " + "; ".join(errors))

    def sum_over(numbers_: Iterable[int]) -> Number | None:
        numbers_ = list(numbers_)
        if any(n not in item_scores for n in numbers_):
            return None
        return _sum(item_scores[n] for n in numbers_)

    total = sum_over(instrument.total_items)
    ordered = {n: item_scores[n] for n in instrument.item_numbers if n in item_scores}
    return InstrumentScore(
        slug=instrument.slug,
        content_hash=instrument.content_hash,
        total=total,
        subscales=MappingProxyType({name: sum_over(ns) for name, ns in instrument.subscales.items()}),
        tier=instrument.tier_for(total),
        n_answered=len(item_scores),
        n_items=len(instrument.items),
        complete=len(item_scores) == len(instrument.items),
        item_scores=MappingProxyType(ordered),
    )
