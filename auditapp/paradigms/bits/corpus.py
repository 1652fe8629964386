"""The BITS corpus of seed 001 (§3.2, Tables 3–5): templates with a group slot, emotion and event words,
term groups, and the no-group control sentence of every (template, word).

Pure: no Django. :func:`paper_spec` reads the paper's tables from ``seed001_tables.json`` (transcribed as
printed); a researcher's own spec (other groups, templates or words) goes through :func:`validate_spec`,
which names every problem, and :func:`generate` builds the sentences.

How a sentence is made from a template:

- ``<group>`` is replaced by a term, lower-cased by default (the paper's own example sentences, Table 1,
  write "a mentally handicapped person"); ``term_case="as_printed"`` keeps Table 4's capitals. The term is
  recorded as printed.
- ``<emotional word>`` takes each emotional word of Table 3, ``<event word>`` each event word; a template
  has at most one of the two. Templates T1–T5 have neither (the paper's "neutral" templates).
- The control sentence of a (template, word) is the same sentence with the group slot removed ("They are
  parents of a child."); every perturbed sentence records the key of its control.
- The paper "manually edit[s] each sentence to ensure syntactic and grammatical correctness" (§3.2) without
  saying how. Ours: with ``article_agreement`` (default on) a standalone "a" before a word that begins
  with a vowel letter becomes "an" ("an autistic child", "in an alarming situation"); that is right for
  every word of the paper's tables, and a letter rule, not a pronunciation rule, for a researcher's own
  words ("a unicorn" would become "an unicorn": turn it off, or edit the template). Nothing else is
  edited: T9 with an adjective ("which happy them") reads as the printed template makes it read.

Counts. The full cross-product of Tables 3–5 is 5 neutral templates × 20 terms = 100 sentences,
3 emotional-word templates (T6, T7, T9) × 21 words × 20 terms = 1,260, and 2 event-word templates
(T8, T10) × 21 words × 20 terms = 840: 2,200 perturbed sentences, with 5 + 63 + 42 = 110 control
sentences. The paper's text reports 1,920 sentences and a control group of 420 (§3.2) and speaks of
"eight primary emotions" where Table 3 has seven rows; neither count follows from its tables, and the
public BITS repository's files (1,560 perturbed sentences over 78 controls, with other words per template)
follow neither. We generate the full cross-product of the printed tables and say so in the manifest.
"""
from __future__ import annotations

import hashlib
import json
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

import pandas as pd

GROUP_SLOT = "<group>"
WORD_SLOTS = {"<emotional word>": "emotional", "<event word>": "event"}
CONTROL = "control"
ALL_GROUPS = "All"
"""The name of ScoreDev's figure over all groups (Table 8's "All"): no group may be called so either."""
RESERVED_GROUPS = {CONTROL.casefold(): (CONTROL, "the no-group control sentences"),
                   ALL_GROUPS.casefold(): (ALL_GROUPS, "ScoreDev over all groups")}
"""Group names no term group may take (compared without case): the name and what it stands for."""
"""The group name of control sentences; reserved, so a researcher's group cannot take it."""
TERM_CASES = ("lower", "as_printed")
PAPER_TABLES = Path(__file__).with_name("seed001_tables.json")
_SLOT = re.compile(r"<[^<>]*>")
_ARTICLE = re.compile(r"\b([Aa]) (?=[AEIOUaeiou])")


@dataclass(frozen=True)
class Template:
    """A sentence template (Table 5): exactly one ``<group>`` slot and at most one word slot."""

    id: str
    text: str

    @property
    def word_kind(self) -> str | None:
        """``"emotional"``, ``"event"`` or None, from the template's word slot."""
        for slot, kind in WORD_SLOTS.items():
            if slot in self.text:
                return kind
        return None


@dataclass(frozen=True)
class Emotion:
    """One row of Table 3: an emotion with its emotional words and its event words."""

    name: str
    emotional_words: tuple[str, ...]
    event_words: tuple[str, ...]

    def words(self, kind: str) -> tuple[str, ...]:
        return self.emotional_words if kind == "emotional" else self.event_words


@dataclass(frozen=True)
class TermGroup:
    """One row of Table 4: a social group and the terms that name it."""

    name: str
    terms: tuple[str, ...]


@dataclass(frozen=True)
class BitsSpec:
    """Everything a BITS corpus is generated from; its :meth:`content_hash` identifies the corpus."""

    templates: tuple[Template, ...]
    emotions: tuple[Emotion, ...]
    groups: tuple[TermGroup, ...]
    term_case: str = "lower"
    article_agreement: bool = True
    source: str = ""

    def to_dict(self) -> dict:
        return asdict(self)

    def content_hash(self) -> str:
        """sha256 of the spec's canonical JSON (``source`` included, so an edited spec is a new corpus)."""
        canonical = json.dumps(self.to_dict(), sort_keys=True, ensure_ascii=False, separators=(",", ":"))
        return hashlib.sha256(canonical.encode()).hexdigest()


@dataclass(frozen=True)
class BitsSentence:
    """One sentence of the corpus with its factors. A control sentence has ``group == CONTROL``, no term
    and no ``control_key``."""

    key: str
    text: str
    template: str
    emotion: str | None
    word: str | None
    word_kind: str | None
    group: str
    term: str | None
    control_key: str | None = field(default=None)
    source: str | None = field(default=None)
    """Where the text came from (a perturbed post's platform: the per-source breakdown); None for a corpus made
    from templates."""

    @property
    def is_control(self) -> bool:
        return self.group == CONTROL


def spec_from_dict(data: dict) -> BitsSpec:
    """A :class:`BitsSpec` from the JSON shape of ``seed001_tables.json`` (plus optional ``term_case``,
    ``article_agreement``). Shape errors raise ``ValueError``; content problems are for
    :func:`validate_spec`."""
    lists = [("templates", data.get("templates")), ("emotions", data.get("emotions", [])),
             ("groups", data.get("groups"))]
    lists += [(f"groups[{i}].terms", g.get("terms")) for i, g in enumerate(data.get("groups") or [])
              if isinstance(g, dict)]
    lists += [(f"emotions[{i}].{kind}", e.get(kind, [])) for i, e in enumerate(data.get("emotions") or [])
              if isinstance(e, dict) for kind in ("emotional_words", "event_words")]
    not_lists = [name for name, value in lists if not isinstance(value, list | tuple)]
    if not_lists:
        raise ValueError(f"not a BITS spec: {', '.join(not_lists)} must be lists")
    try:
        return BitsSpec(
            templates=tuple(Template(id=str(t["id"]), text=str(t["text"])) for t in data["templates"]),
            emotions=tuple(Emotion(name=str(e["emotion"]),
                                   emotional_words=tuple(str(w) for w in e.get("emotional_words", ())),
                                   event_words=tuple(str(w) for w in e.get("event_words", ())))
                           for e in data.get("emotions", ())),
            groups=tuple(TermGroup(name=str(g["group"]), terms=tuple(str(t) for t in g["terms"]))
                         for g in data["groups"]),
            term_case=str(data.get("term_case", "lower")),
            article_agreement=bool(data.get("article_agreement", True)),
            source=str(data.get("source", "")),
        )
    except (KeyError, TypeError) as error:
        raise ValueError(f"not a BITS spec: {error!r} (expected templates, emotions and groups)") from None


def paper_spec() -> BitsSpec:
    """Seed 001's Tables 3–5 exactly as printed."""
    return spec_from_dict(json.loads(PAPER_TABLES.read_text(encoding="utf-8")))


def validate_spec(spec: BitsSpec) -> list[str]:
    """Every problem of a spec, each naming where it is; an empty list means it generates a corpus."""
    problems: list[str] = []
    if spec.term_case not in TERM_CASES:
        problems.append(f"term_case: {spec.term_case!r} is not one of {', '.join(TERM_CASES)}")
    if not spec.templates:
        problems.append("templates: none given")
    seen_ids: set[str] = set()
    for index, template in enumerate(spec.templates):
        where = f"templates[{index}] ({template.id or 'no id'})"
        if not template.id.strip():
            problems.append(f"{where}: the id is empty")
        elif template.id in seen_ids:
            problems.append(f"{where}: the id {template.id!r} is used twice")
        seen_ids.add(template.id)
        slots = _SLOT.findall(template.text)
        if slots.count(GROUP_SLOT) != 1:
            problems.append(f"{where}: needs exactly one {GROUP_SLOT} slot, has {slots.count(GROUP_SLOT)}")
        word_slots = [slot for slot in slots if slot in WORD_SLOTS]
        if len(word_slots) > 1:
            problems.append(f"{where}: has {len(word_slots)} word slots; at most one of "
                            f"{' or '.join(WORD_SLOTS)} is allowed")
        unknown = sorted({slot for slot in slots if slot != GROUP_SLOT and slot not in WORD_SLOTS})
        if unknown:
            problems.append(f"{where}: unknown slot(s) {', '.join(unknown)}; the slots are {GROUP_SLOT}, "
                            f"{', '.join(WORD_SLOTS)}")
    kinds_used = {WORD_SLOTS[slot] for t in spec.templates for slot in _SLOT.findall(t.text) if slot in WORD_SLOTS}
    for kind in sorted(kinds_used):
        words = [w for e in spec.emotions for w in e.words(kind)]
        if not words:
            problems.append(f"emotions: a template has a <{kind} word> slot but no emotion has {kind} words")
        duplicates = sorted(word for word, n in Counter(words).items() if n > 1)
        if duplicates:
            problems.append(f"emotions: {kind} word(s) listed twice: {', '.join(duplicates)}")
        empty = [e.name for e in spec.emotions if any(not w.strip() for w in e.words(kind))]
        if empty:
            problems.append(f"emotions: empty {kind} word in {', '.join(empty)}")
    problems += group_problems(spec.groups)
    return problems


def group_problems(groups: Sequence[TermGroup]) -> list[str]:
    """Every problem of a list of term groups (none, an empty or reserved name, a name or term twice, no terms),
    each naming the group as ``groups[index] (name): …``."""
    problems: list[str] = []
    if not groups:
        problems.append("groups: none given")
    seen_groups: set[str] = set()
    for index, group in enumerate(groups):
        where = f"groups[{index}] ({group.name or 'no name'})"
        if not group.name.strip():
            problems.append(f"{where}: the name is empty")
        elif group.name.casefold() in RESERVED_GROUPS:
            name, purpose = RESERVED_GROUPS[group.name.casefold()]
            problems.append(f"{where}: {name!r} is reserved for {purpose}")
        elif group.name in seen_groups:
            problems.append(f"{where}: the name {group.name!r} is used twice")
        seen_groups.add(group.name)
        if not group.terms:
            problems.append(f"{where}: has no terms")
        if any(not term.strip() for term in group.terms):
            problems.append(f"{where}: has an empty term")
        duplicates = sorted(term for term, n in Counter(group.terms).items() if n > 1)
        if duplicates:
            problems.append(f"{where}: term(s) listed twice: {', '.join(duplicates)}")
    return problems


def _sentence(text: str, *, term: str | None, word: str | None, spec: BitsSpec) -> str:
    if term is None:
        text = re.sub(r"\s*" + re.escape(GROUP_SLOT) + r"\s*", " ", text)
    else:
        text = text.replace(GROUP_SLOT, term.lower() if spec.term_case == "lower" else term)
    for slot in WORD_SLOTS:
        text = text.replace(slot, word or "")
    text = re.sub(r" {2,}", " ", text).strip()
    text = re.sub(r" ([.,;:!?])", r"\1", text)
    if spec.article_agreement:
        text = _ARTICLE.sub(lambda m: m.group(1) + "n ", text)
    return text


def sentence_key(template: str, word: str | None, group: str, term: str | None = None) -> str:
    """The stable key of a sentence: ``T6|aggravated|PWD:SD|Deaf``, ``T6|aggravated|control``, ``T1|control``."""
    parts = [template, *([word] if word else []), group, *([term] if term is not None else [])]
    return "|".join(parts)


def generate(spec: BitsSpec) -> list[BitsSentence]:
    """The corpus of a valid spec: for each template and word, its control sentence, then one sentence per
    group and term. Raises ``ValueError`` listing every problem of an invalid spec."""
    problems = validate_spec(spec)
    if problems:
        raise ValueError("; ".join(problems))
    sentences: list[BitsSentence] = []
    for template in spec.templates:
        kind = template.word_kind
        slots: list[tuple[str | None, str | None]] = (
            [(e.name, w) for e in spec.emotions for w in e.words(kind)] if kind else [(None, None)])
        for emotion, word in slots:
            control_key = sentence_key(template.id, word, CONTROL)
            sentences.append(BitsSentence(
                key=control_key, text=_sentence(template.text, term=None, word=word, spec=spec),
                template=template.id, emotion=emotion, word=word, word_kind=kind, group=CONTROL, term=None))
            sentences.extend(BitsSentence(
                key=sentence_key(template.id, word, group.name, term),
                text=_sentence(template.text, term=term, word=word, spec=spec),
                template=template.id, emotion=emotion, word=word, word_kind=kind, group=group.name,
                term=term, control_key=control_key) for group in spec.groups for term in group.terms)
    return sentences


def corpus_frame(sentences: Sequence[BitsSentence]) -> pd.DataFrame:
    """The sentences as a DataFrame, one row each, with every factor as a column."""
    columns = ["key", "text", "template", "emotion", "word", "word_kind", "group", "term", "control_key"]
    return pd.DataFrame([asdict(s) for s in sentences], columns=columns)


def corpus_counts(sentences: Sequence[BitsSentence]) -> pd.DataFrame:
    """Sentences per template and group (``control`` included), with a total row and column."""
    frame = corpus_frame(sentences)
    for column in ("template", "group"):  # in the spec's order, not alphabetically (T2 before T10)
        frame[column] = pd.Categorical(frame[column], categories=frame[column].unique())
    return pd.crosstab(frame["template"], frame["group"], margins=True, margins_name="total")
