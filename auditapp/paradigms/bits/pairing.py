"""Which control sentence belongs to each perturbed sentence of an uploaded BITS corpus (seed 001 §4: ScoreSense
compares f(x_n) with f(x), x the same sentence without a group). Pure: no Django.

The public BITS repository's files (github.com/PranavNV/BITS, ``Disablility_Facet_Results.csv`` beside
``Standard_Corpus.csv``) do not always write a control as the perturbed sentence with its term removed: two
controls have typos ("The was a person at school.", "… butterfly garder."), templates T6 and T8 use the event
words in one file and the emotional words in the other, T9's controls read "… which made them aggravated." where
its sentences read "… which aggravated them.", and T6 has no neutral ("<emotion state>") control. So a sentence
is paired by the first of these rules that finds its control, and :class:`PairingReport` says which rule paired
how many sentences and why each of the others has none:

1. ``control column``: the file's optional ``Control`` column names the control's text (same template); it
   overrides every other rule. A text that names no control of the template is a problem of the upload.
2. ``exact``: the control of the same template whose text equals the sentence with its term removed, compared
   without case, with spaces collapsed, no space before punctuation and "an" read as "a" (the repository writes
   "an autistic child" beside "a child").
3. ``typo``: the one control of the same template within :data:`TYPO_MAX_EDITS` character edits (Levenshtein:
   insertions, deletions, substitutions) of that text. Two or more controls within the bound pair nothing: the
   rule never chooses. The bound is 2 because the repository's typos are 1 and 2 edits away ("garder",
   "The was") while its different words are at least 3 ("alarmed" / "alarming", "excited" / "exciting").
4. ``position``: for the sentences of one term in one template and emotion (the files' ``Sentiment`` column)
   none of which rules 1–3 paired, the k-th of them in file order takes the k-th control of that template and
   emotion in file order, only when the two counts are equal. This pairs controls that are worded differently
   (other words, other word order) by the place the repository's own files give them. Without an emotion on
   both sides it does not apply.
5. ``unpaired``: every other sentence, with its reason ("template T6 has no control with emotion Neutral").

An unpaired sentence is kept and counted apart (the pair statistics cannot use it); whether it is imported or
refused is the caller's choice (:func:`auditapp.paradigms.bits.upload.parse_upload`).
"""
from __future__ import annotations

import re
from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import dataclass

CONTROL_COLUMN = "control column"
EXACT = "exact"
TYPO = "typo"
POSITION = "position"
UNPAIRED = "unpaired"
RULES = (CONTROL_COLUMN, EXACT, TYPO, POSITION)
"""The rules in the order they are tried."""
TYPO_MAX_EDITS = 2
TYPO_MAX_STEPS = 3_000_000
"""The typo rule's work for one upload, in steps of the edit distance's programme (a few seconds of Python at
worst). The repository's disability facet needs under 10,000; what is left when it is spent stays unpaired with
that reason."""
RULE_DESCRIPTIONS = {
    CONTROL_COLUMN: "the row's Control cell names the control (same template); it overrides the other rules",
    EXACT: "the control of the same template equal to the sentence with its term removed (without case, spaces "
           "collapsed, 'an' read as 'a')",
    TYPO: f"the only control of the same template within {TYPO_MAX_EDITS} character edits of the sentence with its "
          "term removed (never chosen among two or more)",
    POSITION: "the control of the same template and emotion at the same position within that emotion, in file "
              "order, when the term's sentences and the controls of that template and emotion are as many",
    UNPAIRED: "no rule found a control: kept, counted apart, left out of the pair statistics",
}


@dataclass(frozen=True)
class ControlRow:
    """A control sentence as the pairing sees it: its corpus key, template, text, emotion (None when the file
    has none) and spreadsheet row."""

    key: str
    template: str
    text: str
    emotion: str | None
    row: int


@dataclass(frozen=True)
class PerturbedRow:
    """A perturbed sentence: spreadsheet row, template, text, group, term, emotion (None when the file has none)
    and the text of its ``Control`` cell (None when empty or absent)."""

    row: int
    template: str
    text: str
    group: str
    term: str
    emotion: str | None = None
    control_text: str | None = None


@dataclass(frozen=True)
class Pairing:
    """How one perturbed sentence was paired: the control's key (None when unpaired), the rule, and for an
    unpaired sentence the reason."""

    control_key: str | None
    rule: str
    reason: str = ""


@dataclass(frozen=True)
class TypoPair:
    """A text the typo rule read as a control: the sentence without its term, the control, their distance and
    how many sentences it paired."""

    template: str
    text: str
    control: str
    edits: int
    n: int


@dataclass(frozen=True)
class PairingReport:
    """The pairing of every perturbed row (in the rows' order), the typo rule's readings, and the rows whose
    ``Control`` cell names no control (problems: (row, message))."""

    rows: tuple[PerturbedRow, ...]
    pairings: tuple[Pairing, ...]
    typo_pairs: tuple[TypoPair, ...]
    problems: tuple[tuple[int, str], ...]

    def counts(self) -> dict[str, int]:
        """Sentences per rule, in the rules' order, ``unpaired`` last; every rule is listed, 0 included."""
        found = Counter(pairing.rule for pairing in self.pairings)
        return {rule: found.get(rule, 0) for rule in (*RULES, UNPAIRED)}

    def unpaired(self) -> list[tuple[PerturbedRow, str]]:
        """Each unpaired row with its reason, in file order."""
        return [(row, pairing.reason) for row, pairing in zip(self.rows, self.pairings, strict=True)
                if pairing.rule == UNPAIRED]

    def as_dict(self) -> dict:
        """JSON-ready: per rule its description, count and count per template; the typo rule's readings; the
        unpaired rows grouped by reason, each reason with its rows (spreadsheet numbers), templates and count per
        group."""
        per_template: dict[str, Counter] = defaultdict(Counter)
        for row, pairing in zip(self.rows, self.pairings, strict=True):
            per_template[pairing.rule][row.template] += 1
        counts = self.counts()
        by_reason: dict[str, list[PerturbedRow]] = defaultdict(list)
        for row, reason in self.unpaired():
            by_reason[reason].append(row)
        return {
            "sentences": len(self.rows),
            "rules": [{"rule": rule, "description": RULE_DESCRIPTIONS[rule], "n": counts[rule],
                       "per_template": dict(per_template[rule])} for rule in (*RULES, UNPAIRED)],
            "typo_max_edits": TYPO_MAX_EDITS,
            "typo_pairs": [{"template": t.template, "text": t.text, "control": t.control, "edits": t.edits, "n": t.n}
                           for t in self.typo_pairs],
            "unpaired": [{"reason": reason, "n": len(rows), "rows": [row.row for row in rows],
                          "templates": sorted({row.template for row in rows}),
                          "per_group": dict(Counter(row.group for row in rows))}
                         for reason, rows in by_reason.items()],
        }


def stored_report(provenance: dict) -> dict | None:
    """The pairing report a corpus stored (``PairingReport.as_dict`` in its provenance), with each count per
    template or group as (name, n) pairs for a page: a template or group may be named anything, and a page looks up
    a name such as "items" in a mapping before its method."""
    report = (provenance.get("summary") or {}).get("pairing")
    if not report:
        return None
    return {**report,
            "rules": [{**rule, "per_template": list((rule.get("per_template") or {}).items())}
                      for rule in report.get("rules", [])],
            "unpaired": [{**entry, "per_group": list((entry.get("per_group") or {}).items())}
                         for entry in report.get("unpaired", [])]}


def match_text(text: str) -> str:
    """A sentence as the rules compare it: without case, spaces collapsed, no space before punctuation, "an"
    read as "a"."""
    text = re.sub(r"\s+", " ", text).strip().casefold()
    text = re.sub(r" ([.,;:!?])", r"\1", text)
    return re.sub(r"\ban\b", "a", text)


def without_term(sentence: str, term: str) -> str:
    """The sentence with the first whole-word occurrence of its term removed (its spaces collapsed)."""
    removed = re.sub(r"(?i)(?<!\w)" + re.escape(term.strip()) + r"(?!\w)", " ", sentence, count=1)
    return " ".join(removed.split())


def edit_distance_within(a: str, b: str, bound: int) -> int | None:
    """The Levenshtein distance between ``a`` and ``b`` (insertions, deletions and substitutions of one character
    each cost 1), or None when it exceeds ``bound``. The dynamic programme of Wagner and Fischer (1974) over the
    diagonal band of width ``2 × bound + 1`` only (a path outside it costs more than ``bound``: Ukkonen 1985), stopped
    as soon as every entry of a row exceeds the bound; so a comparison costs at most ``len(a) × (2 × bound + 1)``
    steps, whatever the texts."""
    if abs(len(a) - len(b)) > bound:
        return None
    beyond = bound + 1
    previous = {j: j for j in range(min(len(b), bound) + 1)}
    for i, char_a in enumerate(a, start=1):
        current = {}
        for j in range(max(0, i - bound), min(len(b), i + bound) + 1):
            if j == 0:
                current[j] = i
                continue
            current[j] = min(previous.get(j, beyond) + 1, current.get(j - 1, beyond) + 1,
                             previous.get(j - 1, beyond) + (char_a != b[j - 1]))
        if min(current.values(), default=beyond) > bound:
            return None
        previous = current
    distance = previous.get(len(b), beyond)
    return distance if distance <= bound else None


def emotion_key(emotion: str) -> str:
    """An emotion as the rules compare it: without case or surrounding spaces ("Joy" and "joy " are one emotion)."""
    return emotion.strip().casefold()


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}{'' if n == 1 else 's'}"


class _Controls:
    """The controls indexed as the rules look them up."""

    def __init__(self, controls: Sequence[ControlRow]):
        self.by_text = {(c.template, match_text(c.text)): c for c in controls}
        self.of_template: dict[str, list[ControlRow]] = defaultdict(list)
        self.of_emotion: dict[tuple[str, str], list[ControlRow]] = defaultdict(list)
        self._by_length: dict[tuple[str, int], list[tuple[ControlRow, str]]] = defaultdict(list)
        for control in controls:
            self.of_template[control.template].append(control)
            if control.emotion:
                self.of_emotion[(control.template, emotion_key(control.emotion))].append(control)
            text = match_text(control.text)
            self._by_length[(control.template, len(text))].append((control, text))
        self._near: dict[tuple[str, str | None, str], list[tuple[ControlRow, int]]] = {}
        self.typo_steps_left = TYPO_MAX_STEPS
        self.typo_skipped: set[tuple[str, str | None, str]] = set()

    def near(self, template: str, emotion: str | None, text: str) -> list[tuple[ControlRow, int]]:
        """The controls of the template within the typo bound of ``text`` (not equal to it), with their distance;
        of the sentence's emotion when both it and the control have one ("glad" is two edits from "sad": a typo
        never pairs a sentence with a control of another emotion). Only controls whose length is within the bound
        are compared, each at most ``len(text) × (2 × bound + 1)`` steps, and all the lookups of one upload share
        :data:`TYPO_MAX_STEPS`: once spent, a lookup finds nothing and is remembered in ``typo_skipped``, so a
        hostile upload cannot make the rule run for minutes."""
        key = (template, emotion, text)
        if key not in self._near:
            buckets = [self._by_length.get((template, length), [])
                       for length in range(len(text) - TYPO_MAX_EDITS, len(text) + TYPO_MAX_EDITS + 1)]
            cost = sum(map(len, buckets)) * len(text) * (2 * TYPO_MAX_EDITS + 1)
            if cost > self.typo_steps_left:
                self.typo_skipped.add(key)
                self.typo_steps_left = 0
                buckets = []
            self.typo_steps_left -= cost if buckets else 0
            found = []
            for control, control_text in (pair for bucket in buckets for pair in bucket):
                if emotion and control.emotion and emotion_key(control.emotion) != emotion_key(emotion):
                    continue
                distance = edit_distance_within(text, control_text, TYPO_MAX_EDITS)
                if distance:
                    found.append((control, distance))
            self._near[key] = found
        return self._near[key]


def pair_sentences(rows: Sequence[PerturbedRow], controls: Sequence[ControlRow]) -> PairingReport:
    """Pair each perturbed row with its control by the rules of the module docstring, in their order."""
    index = _Controls(controls)
    wanted = [match_text(without_term(row.text, row.term)) for row in rows]
    found: list[Pairing | None] = [None] * len(rows)
    problems: list[tuple[int, str]] = []
    ambiguous: dict[int, int] = {}
    typo_readings: Counter = Counter()

    for i, row in enumerate(rows):
        if row.control_text:
            control = index.by_text.get((row.template, match_text(row.control_text)))
            if control is None:
                message = f"no control sentence of template {row.template} matches {row.control_text!r}"
                problems.append((row.row, message))
                found[i] = Pairing(None, UNPAIRED, f"its Control cell names no control: {message}")
            else:
                found[i] = Pairing(control.key, CONTROL_COLUMN)
    for i, row in enumerate(rows):
        if found[i] is None and (control := index.by_text.get((row.template, wanted[i]))) is not None:
            found[i] = Pairing(control.key, EXACT)
    for i, row in enumerate(rows):
        if found[i] is not None:
            continue
        near = index.near(row.template, row.emotion, wanted[i])
        if len(near) == 1:
            control, distance = near[0]
            found[i] = Pairing(control.key, TYPO)
            typo_readings[(row.template, without_term(row.text, row.term), control.text, distance)] += 1
        elif near:
            ambiguous[i] = len(near)

    cells: dict[tuple[str, str, str, str], list[int]] = defaultdict(list)
    for i, row in enumerate(rows):
        if row.emotion:
            cells[(row.template, emotion_key(row.emotion), row.group, row.term)].append(i)
    for (template, emotion_of_cell, _group, term), members in cells.items():
        left = [i for i in members if found[i] is None]
        if not left:
            continue
        emotion = rows[members[0]].emotion  # as the file writes it, for the reasons
        candidates = index.of_emotion.get((template, emotion_of_cell), [])
        if not index.of_template.get(template):
            reason = f"template {template} has no control"
        elif len(left) < len(members):
            reason = (f"no control matches its text, and the position rule does not apply: {len(members) - len(left)} "
                      f"of the {len(members)} sentences with {term!r} in template {template}, emotion {emotion}, "
                      "were paired by their text")
        elif not candidates:
            reason = f"template {template} has no control with emotion {emotion}"
        elif len(candidates) != len(members):
            reason = (f"template {template}, emotion {emotion}: {_count(len(members), 'sentence')} with {term!r} "
                      f"but {_count(len(candidates), 'control')}, so the position rule does not apply")
        else:
            for i, control in zip(members, candidates, strict=True):
                found[i] = Pairing(control.key, POSITION)
            continue
        for i in left:
            found[i] = Pairing(None, UNPAIRED, reason)

    pairings = []
    for i, row in enumerate(rows):
        pairing = found[i]
        if pairing is None:
            reason = (f"template {row.template} has no control" if not index.of_template.get(row.template) else
                      f"no control of template {row.template} matches {without_term(row.text, row.term)!r}, and the "
                      "row has no Sentiment for the position rule")
            pairing = Pairing(None, UNPAIRED, reason)
        if pairing.rule == UNPAIRED and (row.template, row.emotion, wanted[i]) in index.typo_skipped:
            pairing = Pairing(None, UNPAIRED, f"{pairing.reason} (the typo rule was not tried: the upload spent its "
                                              f"work limit of {TYPO_MAX_STEPS:,} steps)")
        if pairing.rule == UNPAIRED and i in ambiguous:
            pairing = Pairing(None, UNPAIRED, f"{pairing.reason} ({ambiguous[i]} controls are within "
                                              f"{TYPO_MAX_EDITS} edits of its text: the typo rule does not choose)")
        pairings.append(pairing)
    typo_pairs = tuple(TypoPair(template, text, control, edits, n)
                       for (template, text, control, edits), n in typo_readings.items())
    return PairingReport(rows=tuple(rows), pairings=tuple(pairings), typo_pairs=typo_pairs, problems=tuple(problems))
