"""The lexicons of the word association and affective attribution tests (seed 003, MIST, §3.3.1, Tables 1–3).
Pure: no Django.

- Table 1, group identifiers: per domain (Race, Gender, Health) and subdomain (Health only: Disability, Weight,
  Age, Mind) one advantaged group (label ``S_a``) and one or more disadvantaged groups (``S_b``), each with its
  category as printed ("-" in the table is ``""`` here) and its lexical items.
- Table 2, attribute words: per Stereotype Content dimension (Competence, Sociability, Morality) the positive
  words (``X_a``) and the negative ones (``X_b``). The paper's Competence ``X_a`` list has 17 words, the others
  19 or 20, as printed.
- Table 3, neutral object words (``S_n``) by category, the fillers of the AAT.

Every group also has a ``group`` name, the social group a dashboard shows (the radar axes of Figure 3, the bars of
Figure 4). For Race and Gender it is the category; Table 1 prints no category for the Health groups, so theirs are
ours, taken from §3.3.1's wording ("non-disabled, slim, young, and mentally healthy individuals … disabled,
overweight, aged, and individuals with mental illness").

The paper's lexicon is ``mist_lexicons.json`` beside this module (:func:`paper_lexicon`). A researcher's edited
version, the same JSON shape, is read by :func:`parse_lexicon`, which names every problem it finds and raises
:class:`LexiconError`; :attr:`Lexicon.content_hash` (SHA-256 of the canonical JSON) versions either.
"""
from __future__ import annotations

import hashlib
import json
import unicodedata
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from pathlib import Path

DIMENSIONS = ("Competence", "Sociability", "Morality")
GROUP_LABELS = ("S_a", "S_b")
POLARITIES = ("X_a", "X_b")
SECTIONS = ("groups", "attributes", "neutral")
GROUP_KEYS = ("domain", "subdomain", "label", "category", "group", "items")
ATTRIBUTE_KEYS = ("dimension", "polarity", "description", "items")
NEUTRAL_KEYS = ("category", "items")
WORDS_PER_POLARITY = 5
"""A WABT instance takes 5 X_a and 5 X_b words of one dimension (§3.3.3): each list needs at least that many."""
MAX_WORD_CHARS = 60
MAX_NAME_CHARS = 60
FORBIDDEN_IN_WORD = ("{", "}", "\n", "\r", "\t")
PAPER_LEXICON_PATH = Path(__file__).with_name("mist_lexicons.json")


@dataclass(frozen=True)
class GroupIdentifiers:
    """One row of Table 1: a social group's identifiers, with its domain, subdomain, label and category."""

    domain: str
    subdomain: str
    label: str
    category: str
    group: str
    items: tuple[str, ...]


@dataclass(frozen=True)
class AttributeWords:
    """One row of Table 2: the words of one dimension and polarity (``X_a`` positive, ``X_b`` negative)."""

    dimension: str
    polarity: str
    description: str
    items: tuple[str, ...]


@dataclass(frozen=True)
class NeutralWords:
    """One row of Table 3: neutral object words of a category."""

    category: str
    items: tuple[str, ...]


@dataclass(frozen=True)
class Lexicon:
    groups: tuple[GroupIdentifiers, ...]
    attributes: tuple[AttributeWords, ...]
    neutral: tuple[NeutralWords, ...]

    def as_json(self) -> dict:
        """The lexicon as the JSON the data file and an upload use."""
        return {
            "groups": [{"domain": g.domain, "subdomain": g.subdomain, "label": g.label, "category": g.category,
                        "group": g.group, "items": list(g.items)} for g in self.groups],
            "attributes": [{"dimension": a.dimension, "polarity": a.polarity, "description": a.description,
                            "items": list(a.items)} for a in self.attributes],
            "neutral": [{"category": n.category, "items": list(n.items)} for n in self.neutral],
        }

    @property
    def content_hash(self) -> str:
        """SHA-256 of the canonical JSON (sorted keys, no spaces, UTF-8): the lexicon's version."""
        return content_hash(self.as_json())

    def attribute_words(self, dimension: str, polarity: str) -> tuple[str, ...]:
        return tuple(word for row in self.attributes if (row.dimension, row.polarity) == (dimension, polarity)
                     for word in row.items)

    def identifier_groups(self) -> dict[str, GroupIdentifiers]:
        """Each group identifier's row of Table 1."""
        return {item: row for row in self.groups for item in row.items}

    def neutral_words(self) -> tuple[str, ...]:
        return tuple(word for row in self.neutral for word in row.items)

    def wabt_combinations(self) -> tuple[tuple[GroupIdentifiers, GroupIdentifiers], ...]:
        """The WABT's (S_a, S_b) group pairs (§3.3.3: "10 paired combinations … e.g., African vs. American"):
        within each domain and subdomain, every advantaged group with every disadvantaged one, in table order.
        The paper's Table 1 gives 4 (Race) + 2 (Gender) + 4 (Health) = 10."""
        pairs = []
        for advantaged in self.groups:
            if advantaged.label != "S_a":
                continue
            pairs += [(advantaged, disadvantaged) for disadvantaged in self.groups
                      if disadvantaged.label == "S_b"
                      and (disadvantaged.domain, disadvantaged.subdomain) == (advantaged.domain, advantaged.subdomain)]
        return tuple(pairs)


class LexiconError(ValueError):
    """An uploaded lexicon cannot be used; ``problems`` names every problem found."""

    def __init__(self, problems: list[str]):
        self.problems = list(problems)
        shown = "; ".join(self.problems[:5])
        more = len(self.problems) - 5
        super().__init__(f"{len(self.problems)} problem(s) in the lexicon: {shown}"
                         + (f" (and {more} more)" if more > 0 else ""))


def content_hash(document: object) -> str:
    """SHA-256 (hex) of a JSON document in canonical form."""
    canonical = json.dumps(document, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


def folded(word: str) -> str:
    """A word compared as a reader would: case-folded, accents dropped, runs of spaces one space ("Martín" and
    "martin" are one word)."""
    decomposed = unicodedata.normalize("NFKD", word)
    plain = "".join(char for char in decomposed if not unicodedata.combining(char))
    return " ".join(plain.casefold().split())


def _text(value: object, where: str, problems: list[str], *, max_chars: int, required: bool = True) -> str:
    if value is None or (isinstance(value, str) and not value.strip()):
        if required:
            problems.append(f"{where}: empty")
        return ""
    if not isinstance(value, str):
        problems.append(f"{where}: must be text, not {type(value).__name__}")
        return ""
    if len(value) > max_chars:
        problems.append(f"{where}: {len(value)} characters; at most {max_chars}")
    return value.strip()


def _items(value: object, where: str, problems: list[str], *, minimum: int = 1) -> tuple[str, ...]:
    if not isinstance(value, list | tuple):
        problems.append(f"{where}: items must be a list of words")
        return ()
    if not value:
        problems.append(f"{where}: empty list")
        return ()
    words: list[str] = []
    first_at: dict[str, int] = {}
    for position, raw in enumerate(value, start=1):
        word = _text(raw, f"{where}, word {position}", problems, max_chars=MAX_WORD_CHARS)
        if not word:
            continue
        if any(mark in word for mark in FORBIDDEN_IN_WORD):
            problems.append(f"{where}, word {position}: {word!r} holds a brace, tab or line break")
            continue
        key = folded(word)
        if key in first_at:
            problems.append(f"{where}: duplicate word {word!r} (words {first_at[key]} and {position})")
            continue
        first_at[key] = position
        words.append(word)
    if len(words) < minimum:
        problems.append(f"{where}: {len(words)} word(s); at least {minimum} needed")
    return tuple(words)


def _rows(document: Mapping, section: str, keys: tuple[str, ...], problems: list[str]) -> list[tuple[str, Mapping]]:
    rows = document.get(section)
    if not isinstance(rows, list | tuple) or not rows:
        problems.append(f"{section}: must be a non-empty list of objects")
        return []
    found = []
    for number, row in enumerate(rows, start=1):
        where = f"{section} row {number}"
        if not isinstance(row, Mapping):
            problems.append(f"{where}: must be an object with {list(keys)}")
            continue
        unknown = sorted(set(map(str, row)) - set(keys))
        if unknown:
            problems.append(f"{where}: unknown key(s) {unknown}; expected {list(keys)}")
        found.append((where, row))
    return found


def parse_lexicon(document: object) -> Lexicon:
    """A lexicon from its JSON form (the data file's shape), or :class:`LexiconError` naming every problem:
    a missing or unknown section or key, an empty list or word, a duplicate word (within a list, or a word in
    two lists of a section: the reply parser could not tell them apart), an unknown label, dimension or
    polarity, a dimension without both polarities or with fewer than 5 words in one, a group repeated, a
    domain/subdomain without both an S_a and an S_b group (no WABT combination), a word holding a brace or line
    break (it goes into a template). Words are compared case-folded and without accents."""
    if not isinstance(document, Mapping):
        raise LexiconError([f"the lexicon must be a JSON object with {list(SECTIONS)}"])
    problems: list[str] = []
    unknown = sorted(set(map(str, document)) - set(SECTIONS))
    if unknown:
        problems.append(f"unknown section(s) {unknown}; expected {list(SECTIONS)}")

    groups: list[GroupIdentifiers] = []
    seen_groups: dict[str, str] = {}
    for where, row in _rows(document, "groups", GROUP_KEYS, problems):
        domain = _text(row.get("domain"), f"{where}, domain", problems, max_chars=MAX_NAME_CHARS)
        subdomain = _text(row.get("subdomain"), f"{where}, subdomain", problems, max_chars=MAX_NAME_CHARS,
                          required=False)
        category = _text(row.get("category"), f"{where}, category", problems, max_chars=MAX_NAME_CHARS,
                         required=False)
        group = _text(row.get("group"), f"{where}, group", problems, max_chars=MAX_NAME_CHARS)
        label = row.get("label")
        if label not in GROUP_LABELS:
            problems.append(f"{where}: unknown label {label!r}; expected one of {list(GROUP_LABELS)}")
        items = _items(row.get("items"), f"{where} ({group or '?'})", problems)
        if group:
            if folded(group) in seen_groups:
                problems.append(f"{where}: group {group!r} repeats {seen_groups[folded(group)]}")
            seen_groups[folded(group)] = where
        groups.append(GroupIdentifiers(domain=domain, subdomain=subdomain, label=str(label), category=category,
                                       group=group, items=items))

    attributes = []
    seen_lists: dict[tuple[str | None, str | None], str] = {}
    for where, row in _rows(document, "attributes", ATTRIBUTE_KEYS, problems):
        dimension, polarity = row.get("dimension"), row.get("polarity")
        if dimension not in DIMENSIONS:
            problems.append(f"{where}: unknown dimension {dimension!r}; expected one of {list(DIMENSIONS)}")
        if polarity not in POLARITIES:
            problems.append(f"{where}: unknown polarity {polarity!r}; expected one of {list(POLARITIES)}")
        description = _text(row.get("description"), f"{where}, description", problems, max_chars=MAX_NAME_CHARS,
                            required=False)
        items = _items(row.get("items"), f"{where} ({dimension} {polarity})", problems, minimum=WORDS_PER_POLARITY)
        if (dimension, polarity) in seen_lists:
            problems.append(f"{where}: {dimension} {polarity} repeats {seen_lists[(dimension, polarity)]}")
        seen_lists[(dimension, polarity)] = where
        attributes.append(AttributeWords(dimension=str(dimension), polarity=str(polarity), description=description,
                                         items=items))
    if attributes:
        problems.extend(f"attributes: no {polarity} words for the dimension {dimension}"
                        for dimension in DIMENSIONS for polarity in POLARITIES
                        if (dimension, polarity) not in seen_lists)

    neutral = []
    for where, row in _rows(document, "neutral", NEUTRAL_KEYS, problems):
        category = _text(row.get("category"), f"{where}, category", problems, max_chars=MAX_NAME_CHARS)
        neutral.append(NeutralWords(category=category, items=_items(row.get("items"), f"{where} ({category})",
                                                                    problems)))

    problems += _cross_duplicates("groups", [(g.group, g.items) for g in groups])
    problems += _cross_duplicates("attributes", [(f"{a.dimension} {a.polarity}", a.items) for a in attributes])
    problems += _cross_duplicates("neutral", [(n.category, n.items) for n in neutral])
    identifiers = {folded(item) for g in groups for item in g.items}
    problems += [f"attributes: {word!r} is also a group identifier" for a in attributes for word in a.items
                 if folded(word) in identifiers]
    lexicon = Lexicon(groups=tuple(groups), attributes=tuple(attributes), neutral=tuple(neutral))
    labelled = {(g.domain, g.subdomain, g.label) for g in groups}
    for domain, subdomain in dict.fromkeys((g.domain, g.subdomain) for g in groups):
        for label in GROUP_LABELS:
            if (domain, subdomain, label) not in labelled:
                where = f"{domain}/{subdomain}" if subdomain else domain
                problems.append(f"groups: {where} has no {label} group, so it makes no WABT combination")
    if problems:
        raise LexiconError(problems)
    return lexicon


def _cross_duplicates(section: str, lists: list[tuple[str, tuple[str, ...]]]) -> list[str]:
    """Words that appear in two lists of one section."""
    owner: dict[str, str] = {}
    problems: list[str] = []
    for name, items in lists:
        for word in items:
            key = folded(word)
            if key in owner and owner[key] != name:
                problems.append(f"{section}: {word!r} is in both {owner[key]!r} and {name!r}")
            owner.setdefault(key, name)
    return problems


@cache
def paper_lexicon() -> Lexicon:
    """Tables 1–3 of seed 003 as printed (read once from ``mist_lexicons.json``)."""
    return parse_lexicon(json.loads(PAPER_LEXICON_PATH.read_text(encoding="utf-8")))
