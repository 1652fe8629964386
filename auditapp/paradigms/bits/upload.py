"""A BITS corpus uploaded in the public BITS repository's shape (seed 001 §3.2; github.com/PranavNV/BITS):
a file of perturbed sentences and a separate file of no-group control sentences, each optionally carrying
one score column per tool, which become *recorded scorers*.

Pure: no Django. The caller reads the files into records (spreadsheet row number, {header: cell text}),
as :mod:`annotation.item_files` does for item files, and :func:`parse_upload` validates everything at
once: it returns the corpus or raises :class:`BitsUploadError` naming the file, row and column of every
problem, so a file with a bad row imports nothing.

Columns (headers compared without case or surrounding spaces; the repository's unnamed pandas index
column is ignored):

- both files: ``Template`` and ``Sentence`` (required), ``Sentiment`` (optional: the emotion, as the
  repository's files name it);
- perturbed file: ``Class`` (the group) and ``SubClass`` (the term), required; ``Control`` (optional: the
  exact text of the row's control sentence, which overrides the pairing rules below; an empty cell leaves the
  row to them);
- the repository's other facet files (``Race Facet.xlsx``, ``Gender Facet.xlsx``) name the group column
  ``Group`` or ``Gender`` and have no ``SubClass``: any one of :data:`GROUP_HEADERS` is the group column (two
  of them in one file are a problem), and without a ``SubClass`` column each sentence's term is found by
  :func:`derived_terms`, from the sentences of the other groups at the same place of its template and emotion;
- every other column is a recorded scorer's score (a finite number; an empty cell is a missing score,
  never a zero).

Which control belongs to a perturbed sentence: the rules of :mod:`auditapp.paradigms.bits.pairing`, tried in
order (the ``Control`` column, the exact text, a typo, the position within the template and emotion), each
sentence recording the rule that paired it. The repository's own files need all of them (in the version we read,
templates T3, T5, T6, T8 and T9 of the disability facet word their controls otherwise than their sentences). A
sentence no rule pairs is a valid sentence without a control: by default it is imported and reported with its
reason (:meth:`UploadedCorpus.summary`, ``pairing``); the pair statistics count it apart.
``unmatched="refuse"`` makes each one a problem instead. A ``Control`` cell that names no control of its
template is always a problem.

Warnings (the upload is stored, the researcher is told): a score column that one file has and the other lacks,
or whose cells are empty in one file, leaves every pair with a missing side, so its ScoreSense is undefined
("the control file has no TEXTBLOB scores: its pairs' ScoreSense is undefined").
"""
from __future__ import annotations

import math
import re
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

import pandas as pd

from auditapp.paradigms.bits.corpus import CONTROL, RESERVED_GROUPS, BitsSentence
from auditapp.paradigms.bits.pairing import (
    UNPAIRED,
    ControlRow,
    PairingReport,
    PerturbedRow,
    match_text,
    pair_sentences,
    without_term,
)

Records = Iterable[tuple[int, Mapping[str, str]]]
UNMATCHED_RULES = ("report", "refuse")
IGNORED_HEADERS = {"", "unnamed: 0", "index"}
SENTENCE_COLUMNS = {"template", "sentence", "sentiment"}
GROUP_HEADERS = ("class", "group", "gender", "race")
"""The headers a perturbed file's group column may have: the results file's ``Class``, the race facet's
``Group``, the gender facet's ``Gender``, and ``Race``."""
PERTURBED_COLUMNS = SENTENCE_COLUMNS | set(GROUP_HEADERS) | {"subclass", "control"}
_ARTICLES = {"an": "a"}
"""Read alike when comparing sentences: the files write "an" before a vowel ("an female" beside "a boy")."""
_TOKEN = re.compile(r"\w[\w'-]*|[^\w\s]")
MAX_REPORTED = 200


@dataclass(frozen=True)
class UploadProblem:
    """One problem: which file, the row as a spreadsheet counts it (header = row 1), the column, what."""

    file: str
    row: int | None
    column: str | None
    message: str

    def __str__(self) -> str:
        where = [self.file, *([f"row {self.row}"] if self.row is not None else []),
                 *([f"column '{self.column}'"] if self.column is not None else [])]
        return f"{', '.join(where)}: {self.message}"

    def as_dict(self) -> dict:
        return {"file": self.file, "row": self.row, "column": self.column, "message": self.message}


class BitsUploadError(Exception):
    """The upload cannot be imported; ``problems`` lists every problem found (the first 200)."""

    def __init__(self, problems: list[UploadProblem]):
        self.problems = problems[:MAX_REPORTED]
        self.total = len(problems)
        shown = "; ".join(str(p) for p in problems[:5])
        more = f" (and {self.total - 5} more)" if self.total > 5 else ""
        super().__init__(f"{self.total} problem(s): {shown}{more}")


@dataclass(frozen=True)
class UploadedCorpus:
    """The sentences (controls first), each recorded scorer's scores (``scorer``, ``key``, ``score``: NaN
    where the file has none), how every perturbed sentence was paired with its control, and the warnings."""

    sentences: tuple[BitsSentence, ...]
    recorded_scores: pd.DataFrame
    pairing: PairingReport
    unit_fields: Mapping[str, Mapping[str, object]]
    """Per sentence key, what its unit keeps beside its control: the file row, and for a perturbed sentence the
    rule that paired it (and why not, when unpaired)."""
    warnings: tuple[str, ...] = ()

    def summary(self) -> dict:
        """Counts for the import report: sentences per group, scorers and the pairing report (sentences per rule,
        each unpaired row with its reason)."""
        return {
            "sentences": len(self.sentences),
            "per_group": dict(Counter(s.group for s in self.sentences)),
            "recorded_scorers": sorted(self.recorded_scores["scorer"].unique().tolist()),
            "pairing": self.pairing.as_dict(),
        }


def _score(cell: str) -> float | None:
    """A recorded score: None for an empty cell; ``ValueError`` unless a finite number."""
    if cell.strip() == "":
        return None
    value = float(cell)
    if not math.isfinite(value):
        raise ValueError
    return value


class _Reader:
    """Reads one file's records, collecting problems instead of stopping at the first."""

    def __init__(self, file: str, records: Records, *, known: set[str], required: set[str],
                 problems: list[UploadProblem]):
        self.file, self.problems = file, problems
        self.rows = [(row, {str(h).strip(): "" if v is None else str(v) for h, v in fields.items()})
                     for row, fields in records]
        headers = list(self.rows[0][1]) if self.rows else []
        folded = [h.casefold() for h in headers]
        for header, count in Counter(folded).items():
            if count > 1 and header not in IGNORED_HEADERS:
                self.problem(1, header, "the column appears more than once")
        self.column = {h.casefold(): h for h in headers if h.casefold() in known}
        self.score_columns = [h for h in headers if h.casefold() not in known | IGNORED_HEADERS]
        if not self.rows:
            self.problem(None, None, "the file has no rows")
            return
        for name in sorted(required - set(self.column)):
            self.problem(1, name, "a required column is missing")

    def problem(self, row: int | None, column: str | None, message: str) -> None:
        self.problems.append(UploadProblem(self.file, row, column, message))

    def cell(self, row: int, fields: Mapping[str, str], name: str, *, required: bool = True) -> str:
        if name not in self.column:
            return ""
        value = fields.get(self.column[name], "").strip()
        if required and not value:
            self.problem(row, self.column[name], "empty")
        return value

    def scores(self, row: int, fields: Mapping[str, str], key: str, out: list[dict]) -> None:
        for column in self.score_columns:
            try:
                score = _score(fields.get(column, ""))
            except ValueError:
                self.problem(row, column, f"a score must be a finite number, not {fields.get(column)!r}")
                continue
            out.append({"scorer": column, "key": key, "score": math.nan if score is None else score})


def _score_warnings(perturbed: _Reader, controls: _Reader, scores: pd.DataFrame, control_keys: set[str]
                    ) -> list[str]:
    """A score column with no score on one side of every pair: its pairs' ScoreSense is undefined."""
    warnings = []
    scored = scores[scores["score"].notna()]
    with_score = scored.groupby("scorer")["key"].agg(set) if not scored.empty else pd.Series(dtype=object)
    for column in sorted(set(perturbed.score_columns) | set(controls.score_columns)):
        keys = with_score.get(column, set())
        if column not in controls.score_columns or not keys & control_keys:
            side = "the control file"
        elif column not in perturbed.score_columns or not keys - control_keys:
            side = "the perturbed file"
        else:
            continue
        warnings.append(f"{side} has no {column} scores: its pairs' ScoreSense is undefined")
    return warnings


def _template_warnings(pairing: PairingReport, controls: list[ControlRow]) -> list[str]:
    """Unpaired sentences whose text without the term is a control of *another* template: the two files number
    their templates differently (the repository's race facet adds a template T6, so its T7 is the standard
    corpus's T6). The pairing stays within a template, as the template design intends; the researcher is told."""
    where: dict[str, set[str]] = defaultdict(set)
    for control in controls:
        where[match_text(control.text)].add(control.template)
    elsewhere: Counter[tuple[str, str]] = Counter()
    for row, _ in pairing.unpaired():
        for template in where.get(match_text(without_term(row.text, row.term)), set()) - {row.template}:
            elsewhere[row.template, template] += 1
    return [f"{n} unpaired sentence(s) of template {ours} match a control of template {theirs} in the control "
            "file: do the two files number their templates alike?" for (ours, theirs), n in sorted(elsewhere.items())]


def _differing(mine: list[str], other: list[str]) -> tuple[int, int] | None:
    """The first and last of ``mine``'s words between its common beginning and common end with ``other``."""
    start = 0
    while start < min(len(mine), len(other)) and mine[start] == other[start]:
        start += 1
    end = 0
    while end < min(len(mine), len(other)) - start and mine[-1 - end] == other[-1 - end]:
        end += 1
    return (start, len(mine) - 1 - end) if start <= len(mine) - 1 - end else None


def derived_terms(rows: Iterable[tuple[int, str, str, str, str]]) -> tuple[dict[int, str], list[tuple[int, str]]]:
    """Each sentence's term, for a file without a ``SubClass`` column, and the rows where none can be found.

    ``rows`` are (row, template, emotion, group, sentence). The repository's facet files write, for each template
    and emotion, the same sentences once per group in the same order, the group's word the only difference
    ("… of a white child." / "… of a black child."). So the k-th sentences of the groups of one template and
    emotion are compared word by word, and a sentence's term is the words between their common beginning and
    common end ("american indian", "non-binary"), against the group whose sentence differs from it least (a
    sentence of one group worded otherwise, as some of the gender facet's, then spoils no other group's term). So
    two groups' terms that share a word lose it ("African American" beside "Native American" gives "African"): a
    file with such terms needs its SubClass column. Needs at least two groups, each with as many sentences there,
    differing only in one stretch of words; otherwise the row is returned with the reason.
    """
    places: dict[tuple[str, str], dict[str, list[tuple[int, str]]]] = defaultdict(lambda: defaultdict(list))
    for row, template, emotion, group, text in rows:
        places[template, emotion][group].append((row, text))
    terms: dict[int, str] = {}
    problems: list[tuple[int, str]] = []
    for (template, emotion), by_group in places.items():
        where = f"template {template}" + (f", emotion {emotion}" if emotion else "")
        counts = {group: len(sentences) for group, sentences in by_group.items()}
        if len(by_group) < 2 or len(set(counts.values())) > 1:
            why = (f"{where} has sentences of one group only" if len(by_group) < 2 else
                   f"{where} has {', '.join(f'{n} of {g}' for g, n in counts.items())}: the groups' sentences "
                   "cannot be compared")
            problems += [(row, f"no SubClass column and no term found: {why}")
                         for sentences in by_group.values() for row, _ in sentences]
            continue
        for place in zip(*by_group.values(), strict=True):
            tokens = [list(_TOKEN.finditer(text)) for _, text in place]
            words = [[_ARTICLES.get(w := t.group().casefold(), w) for t in found] for found in tokens]
            for (row, text), found, mine in zip(place, tokens, words, strict=True):
                spans = [span for other in words if other is not mine and (span := _differing(mine, other))]
                if not spans:
                    problems.append((row, f"no SubClass column and no term found: {where} has the same sentence "
                                          "in every group"))
                    continue
                first, last = min(spans, key=lambda span: span[1] - span[0])
                terms[row] = text[found[first].start():found[last].end()]
    return terms, problems


def parse_upload(perturbed: Records, controls: Records, *, perturbed_name: str = "perturbed file",
                 controls_name: str = "control file", unmatched: str = "report",
                 group_names: Mapping[str, str] | None = None) -> UploadedCorpus:
    """The corpus of an upload in the BITS repository's shape (see the module docstring).

    ``group_names`` renames the file's ``Class`` values (e.g. ``{"Normal": "NRM"}``); a group may not be
    named ``control``. Raises :class:`BitsUploadError` with every problem of both files.
    """
    if unmatched not in UNMATCHED_RULES:
        raise ValueError(f"unmatched must be one of {', '.join(UNMATCHED_RULES)}, not {unmatched!r}")
    problems: list[UploadProblem] = []
    scores: list[dict] = []
    control_sentences: list[BitsSentence] = []
    control_rows: list[ControlRow] = []
    unit_fields: dict[str, dict[str, object]] = {}
    control_reader = _Reader(controls_name, controls, known=SENTENCE_COLUMNS, required={"template", "sentence"},
                             problems=problems)
    first_row: dict[tuple[str, str], int] = {}
    for row, fields in control_reader.rows:
        template = control_reader.cell(row, fields, "template")
        text = control_reader.cell(row, fields, "sentence")
        if not template or not text:
            continue
        match = (template, match_text(text))
        if match in first_row:
            control_reader.problem(row, control_reader.column["sentence"],
                                   f"the same control sentence as row {first_row[match]} of template {template}")
            continue
        first_row[match] = row
        key = f"{template}|{CONTROL}|{text}"
        emotion = control_reader.cell(row, fields, "sentiment", required=False) or None
        control_sentences.append(BitsSentence(key=key, text=text, template=template, emotion=emotion, word=None,
                                              word_kind=None, group=CONTROL, term=None))
        control_rows.append(ControlRow(key=key, template=template, text=text, emotion=emotion, row=row))
        unit_fields[key] = {"row": row}
        control_reader.scores(row, fields, key, scores)

    n_control_problems = len(problems)
    reader = _Reader(perturbed_name, perturbed, known=PERTURBED_COLUMNS, required={"template", "sentence"},
                     problems=problems)
    group_headers = [reader.column[h] for h in GROUP_HEADERS if h in reader.column]
    if reader.rows and not group_headers:
        reader.problem(1, "class", "a required column is missing: the group column (Class, Group, Gender or Race)")
    elif len(group_headers) > 1:
        reader.problem(1, group_headers[1], f"two group columns, {' and '.join(map(repr, group_headers))}: keep one")
    group_column = next(h.casefold() for h in [*group_headers, "class"])
    term_of: dict[int, str] = {}
    if "subclass" not in reader.column and len(group_headers) == 1:
        # Rows with an empty cell are left out here: the loop below names them.
        def text_of(fields: Mapping[str, str], name: str) -> str:
            return fields.get(reader.column.get(name, ""), "").strip()

        named = [(row, text_of(fields, "template"), text_of(fields, "sentiment"), text_of(fields, group_column),
                  text_of(fields, "sentence")) for row, fields in reader.rows]
        term_of, term_problems = derived_terms(r for r in named if r[1] and r[3] and r[4])
        for row, message in term_problems:
            reader.problem(row, reader.column.get("sentence"), message)
    renamed = dict(group_names or {})
    seen: dict[str, int] = {}
    perturbed_rows: list[PerturbedRow] = []
    for row, fields in reader.rows:
        template, text = reader.cell(row, fields, "template"), reader.cell(row, fields, "sentence")
        raw_group = reader.cell(row, fields, group_column)
        term = reader.cell(row, fields, "subclass") if "subclass" in reader.column else term_of.get(row, "")
        if not (template and text and raw_group and term):
            continue
        group = renamed.get(raw_group, raw_group)
        if group.casefold() in RESERVED_GROUPS:
            name, purpose = RESERVED_GROUPS[group.casefold()]
            reader.problem(row, reader.column[group_column], f"{name!r} is reserved for {purpose}")
            continue
        key = f"{template}|{text}"
        if key in seen:
            reader.problem(row, reader.column["sentence"], f"the same sentence as row {seen[key]} of template "
                                                           f"{template}")
            continue
        seen[key] = row
        if term.casefold() not in text.casefold():
            reader.problem(row, reader.column.get("subclass"), f"the term {term!r} is not in the sentence")
            continue
        perturbed_rows.append(PerturbedRow(
            row=row, template=template, text=text, group=group, term=term,
            emotion=reader.cell(row, fields, "sentiment", required=False) or None,
            control_text=reader.cell(row, fields, "control", required=False) or None))
        reader.scores(row, fields, key, scores)

    pairing = pair_sentences(perturbed_rows, control_rows)
    for row, message in pairing.problems:
        reader.problem(row, reader.column["control"], message)
    if unmatched == "refuse":
        for unpaired, reason in pairing.unpaired():
            if unpaired.control_text is None:
                reader.problem(unpaired.row, reader.column["sentence"], f"no control: {reason}")
    if problems:
        # The pairing's problems come last; each file's are listed in row order.
        raise BitsUploadError(problems[:n_control_problems]
                              + sorted(problems[n_control_problems:], key=lambda p: p.row or 0))
    sentences = list(control_sentences)
    for sentence, paired in zip(pairing.rows, pairing.pairings, strict=True):
        key = f"{sentence.template}|{sentence.text}"
        sentences.append(BitsSentence(key=key, text=sentence.text, template=sentence.template,
                                      emotion=sentence.emotion, word=None, word_kind=None, group=sentence.group,
                                      term=sentence.term, control_key=paired.control_key))
        unit_fields[key] = {"row": sentence.row, "pairing": paired.rule,
                            **({"unpaired": paired.reason} if paired.rule == UNPAIRED else {})}
    score_frame = pd.DataFrame(scores, columns=["scorer", "key", "score"])
    return UploadedCorpus(sentences=tuple(sentences), recorded_scores=score_frame, pairing=pairing,
                          unit_fields=unit_fields,
                          warnings=tuple(_score_warnings(reader, control_reader, score_frame,
                                                         {c.key for c in control_rows})
                                         + _template_warnings(pairing, control_rows)))
