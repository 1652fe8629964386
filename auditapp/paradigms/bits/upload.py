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
  exact text of the row's control sentence, for files whose controls cannot be found by the rule below);
- every other column is a recorded scorer's score (a finite number; an empty cell is a missing score,
  never a zero).

Which control belongs to a perturbed sentence. With a ``Control`` column, the control of that text in
the same template (an empty cell falls back to the rule below), and a row whose control is not found is
a problem. Without it (the repository's shape), the control of the same template whose text
equals the perturbed sentence with its term removed, compared without case, with spaces collapsed and
"an" read as "a" (the repository writes "an autistic child" beside "a child"). The repository's own files
do not always follow their controls (in the version we read, templates T3, T5, T6, T8 and T9 of the
disability facet use other words or wording than its ``Standard_Corpus.csv``): such a row is a valid
sentence without a control. By default it is imported and reported (``unmatched``, per template, with its
row); the pair statistics leave it out and say so. ``unmatched="refuse"`` makes each one a problem instead.
"""
from __future__ import annotations

import math
import re
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

import pandas as pd

from auditapp.paradigms.bits.corpus import CONTROL, RESERVED_GROUPS, BitsSentence

Records = Iterable[tuple[int, Mapping[str, str]]]
UNMATCHED_RULES = ("report", "refuse")
IGNORED_HEADERS = {"", "unnamed: 0", "index"}
SENTENCE_COLUMNS = {"template", "sentence", "sentiment"}
PERTURBED_COLUMNS = SENTENCE_COLUMNS | {"class", "subclass", "control"}
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
    where the file has none) and the perturbed file's rows that have no control."""

    sentences: tuple[BitsSentence, ...]
    recorded_scores: pd.DataFrame
    unmatched: tuple[tuple[int, str], ...]
    """(row, template) of each perturbed sentence without a control."""

    def summary(self) -> dict:
        """Counts for the import report: sentences per group, scorers, and rows without a control."""
        per_template: dict[str, list[int]] = defaultdict(list)
        for row, template in self.unmatched:
            per_template[template].append(row)
        return {
            "sentences": len(self.sentences),
            "per_group": dict(Counter(s.group for s in self.sentences)),
            "recorded_scorers": sorted(self.recorded_scores["scorer"].unique().tolist()),
            "unmatched": len(self.unmatched),
            "unmatched_per_template": {t: {"count": len(rows), "rows": rows[:10]}
                                       for t, rows in sorted(per_template.items())},
        }


def _match_text(text: str) -> str:
    text = re.sub(r"\s+", " ", text).strip().casefold()
    text = re.sub(r" ([.,;:!?])", r"\1", text)
    return re.sub(r"\ban\b", "a", text)


def _without_term(sentence: str, term: str) -> str:
    return re.sub(r"(?i)(?<!\w)" + re.escape(term.strip()) + r"(?!\w)", " ", sentence, count=1)


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
    sentences: list[BitsSentence] = []
    control_reader = _Reader(controls_name, controls, known=SENTENCE_COLUMNS, required={"template", "sentence"},
                             problems=problems)
    by_text: dict[tuple[str, str], str] = {}
    first_row: dict[tuple[str, str], int] = {}
    for row, fields in control_reader.rows:
        template = control_reader.cell(row, fields, "template")
        text = control_reader.cell(row, fields, "sentence")
        if not template or not text:
            continue
        match = (template, _match_text(text))
        if match in by_text:
            control_reader.problem(row, control_reader.column["sentence"],
                                   f"the same control sentence as row {first_row[match]} of template {template}")
            continue
        key = f"{template}|{CONTROL}|{text}"
        by_text[match], first_row[match] = key, row
        sentences.append(BitsSentence(key=key, text=text, template=template,
                                      emotion=control_reader.cell(row, fields, "sentiment", required=False) or None,
                                      word=None, word_kind=None, group=CONTROL, term=None))
        control_reader.scores(row, fields, key, scores)

    reader = _Reader(perturbed_name, perturbed, known=PERTURBED_COLUMNS,
                     required={"template", "sentence", "class", "subclass"}, problems=problems)
    renamed = dict(group_names or {})
    seen: dict[str, int] = {}
    unmatched_rows: list[tuple[int, str]] = []
    for row, fields in reader.rows:
        template, text = reader.cell(row, fields, "template"), reader.cell(row, fields, "sentence")
        raw_group, term = reader.cell(row, fields, "class"), reader.cell(row, fields, "subclass")
        if not (template and text and raw_group and term):
            continue
        group = renamed.get(raw_group, raw_group)
        if group.casefold() in RESERVED_GROUPS:
            name, purpose = RESERVED_GROUPS[group.casefold()]
            reader.problem(row, reader.column["class"], f"{name!r} is reserved for {purpose}")
            continue
        key = f"{template}|{text}"
        if key in seen:
            reader.problem(row, reader.column["sentence"], f"the same sentence as row {seen[key]} of template "
                                                           f"{template}")
            continue
        seen[key] = row
        if term.casefold() not in text.casefold():
            reader.problem(row, reader.column["subclass"], f"the term {term!r} is not in the sentence")
            continue
        wanted = reader.cell(row, fields, "control", required=False) or " ".join(_without_term(text, term).split())
        control_key = by_text.get((template, _match_text(wanted)))
        if control_key is None:
            if "control" in reader.column or unmatched == "refuse":
                reader.problem(row, reader.column.get("control", reader.column["sentence"]),
                               f"no control sentence of template {template} matches {wanted!r}")
                continue
            unmatched_rows.append((row, template))
        sentences.append(BitsSentence(key=key, text=text, template=template,
                                      emotion=reader.cell(row, fields, "sentiment", required=False) or None,
                                      word=None, word_kind=None, group=group, term=term, control_key=control_key))
        reader.scores(row, fields, key, scores)
    if problems:
        raise BitsUploadError(problems)
    return UploadedCorpus(sentences=tuple(sentences),
                          recorded_scores=pd.DataFrame(scores, columns=["scorer", "key", "score"]),
                          unmatched=tuple(unmatched_rows))
