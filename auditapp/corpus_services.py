"""Writes of corpora (the units audits judge, stored once and reused), and the two reads analyses take.

- :func:`corpus_store` stores any paradigm's units, identified by their content hash
  (:func:`auditapp.corpora.units_hash`): an identical corpus of the same team (same paradigm, same units in the
  same order) is not stored twice, the stored one is returned; another team stores its own. Units and recorded scores are written with ``bulk_create`` in
  batches, in one transaction: a corpus is stored whole or not at all.
- A paradigm's own corpora (generated from its tables, uploaded in its shape) are built in its package and
  stored through :func:`corpus_store` (BITS: :mod:`auditapp.paradigms.bits.corpora`).
- :func:`corpus_units_frame` and :func:`recorded_scores_frame` read a corpus's units and recorded scores into
  DataFrames in chunks, without model instances.

Every problem is a :class:`CorpusError` naming all of them (file, row and column for an upload), raised
before anything is written.
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

import pandas as pd
from django.db import IntegrityError, transaction

from auditapp.corpora import MAX_REPORTED, RecordedColumn, recorded_problems, units_hash, units_problems
from auditapp.engine import registry
from auditapp.engine.protocol import Unit
from auditapp.models import Corpus, CorpusUnit, RecordedScore, RecordedScorer

BULK_BATCH_SIZE = 2000
FRAME_CHUNK_SIZE = 5000
MAX_CORPUS_NAME = 200
MAX_REASON = 200


@dataclass(frozen=True)
class CorpusProblem:
    """One problem: the file (for an upload), the row as a spreadsheet counts it, the column, what is wrong."""

    message: str
    file: str | None = None
    row: int | None = None
    column: str | None = None

    def __str__(self) -> str:
        where = [*([self.file] if self.file else []), *([f"row {self.row}"] if self.row is not None else []),
                 *([f"column '{self.column}'"] if self.column is not None else [])]
        return f"{', '.join(where)}: {self.message}" if where else self.message

    def as_dict(self) -> dict:
        return asdict(self)


class CorpusError(Exception):
    """Nothing was stored; ``problems`` lists every problem found (the first 200), ``total`` counts them all."""

    def __init__(self, problems: Sequence[CorpusProblem | str], total: int | None = None):
        self.problems = [p if isinstance(p, CorpusProblem) else CorpusProblem(p) for p in problems][:MAX_REPORTED]
        self.total = max(total or 0, len(problems))
        shown = "; ".join(str(p) for p in self.problems[:5])
        more = f" (and {self.total - 5} more)" if self.total > 5 else ""
        super().__init__(f"{self.total} problem(s), nothing stored: {shown}{more}")


def corpus_store(*, paradigm: str, name: str, units: Sequence[Unit], provenance: Mapping[str, Any],
                 created_by=None, recorded: Sequence[RecordedColumn] = ()) -> Corpus:
    """Store the units (and recorded scores) as a corpus, or return the identical corpus its team already stored (the
    team a new corpus gets: :mod:`teams.signals`).

    The provenance is stored with ``factor_names`` added: the factors in the order of the first unit's.

    The returned corpus's ``reused`` attribute says which. A reused corpus keeps its name and provenance; a
    recorded column it does not have yet is added to it, and one it has under the same name is kept if it comes
    with the same scores (a file saved again), else it is a problem (rename the column). Raises :class:`CorpusError`
    with every problem and stores nothing.
    """
    problems: list[CorpusProblem] = []
    if paradigm not in registry.PARADIGMS:
        problems.append(CorpusProblem(f"paradigm: unknown paradigm {paradigm!r}"))
    if not name.strip():
        problems.append(CorpusProblem("name: the corpus needs a name"))
    elif len(name) > MAX_CORPUS_NAME:
        problems.append(CorpusProblem(f"name: {len(name)} characters; at most {MAX_CORPUS_NAME}"))
    problems += [CorpusProblem(p) for p in units_problems(units) + recorded_problems(recorded, units)]
    if problems:
        raise CorpusError(problems)
    content_hash = units_hash(units)
    with transaction.atomic():
        corpus = Corpus(paradigm=paradigm, name=name, content_hash=content_hash,
                        provenance={**provenance, "factor_names": list(units[0].factors)}, n_units=len(units),
                        created_by=created_by)
        try:
            # Inserted first, so the new corpus gets its team (teams.signals) and the database's constraint, one
            # corpus per team, paradigm and content, decides: a team never reuses, nor learns of, another team's.
            with transaction.atomic():
                corpus.save()
            reused = False
        except IntegrityError:
            if corpus.team_id is None:
                raise
            corpus = Corpus.objects.select_for_update().get(paradigm=paradigm, team_id=corpus.team_id,
                                                            content_hash=content_hash)
            reused = True
        if not reused:
            _units_store(corpus, units)
        _recorded_store(corpus=corpus, columns=recorded)
    corpus.reused = reused
    return corpus


def _units_store(corpus: Corpus, units: Sequence[Unit]) -> None:
    # The database may reorder a JSON object's keys (PostgreSQL's jsonb does): the factors' order is in the
    # provenance's factor_names.
    CorpusUnit.objects.bulk_create(
        (CorpusUnit(corpus=corpus, key=unit.key, text=unit.text, factors=dict(unit.factors), fields=dict(unit.fields),
                    pair=unit.pair, position=position) for position, unit in enumerate(units)),
        batch_size=BULK_BATCH_SIZE)


def _recorded_store(*, corpus: Corpus, columns: Sequence[RecordedColumn]) -> None:
    """Add the recorded columns the corpus does not have yet (see :func:`corpus_store`). A column the corpus has
    under the same name is kept when its scores are the same (a file saved again has another sha256, not other
    scores); other scores under that name are a problem: rename the column."""
    if not columns:
        return
    existing = dict(RecordedScorer.objects.filter(corpus=corpus, name__in=[c.name for c in columns])
                    .values_list("name", "id"))
    conflicts = []
    for column in columns:
        if column.name in existing:
            stored = {key: (value, reason) for key, value, reason in RecordedScore.objects.filter(
                scorer_id=existing[column.name]).values_list("unit__key", "value", "reason").iterator(
                chunk_size=FRAME_CHUNK_SIZE)}
            differ = sum(stored.get(key) != (value, reason[:MAX_REASON]) for key, value, reason in column.scores)
            differ += len(stored) - len(column.scores) if len(stored) > len(column.scores) else 0
            if differ:
                conflicts.append(CorpusProblem(
                    f"recorded scorer {column.name!r}: the corpus already has a recorded scorer of this name with "
                    f"other scores ({differ} unit(s) differ); rename the column", column=column.name))
    if conflicts:
        raise CorpusError(conflicts)
    new = [c for c in columns if c.name not in existing]
    if not new:
        return
    scorers = RecordedScorer.objects.bulk_create(
        [RecordedScorer(corpus=corpus, name=c.name, provenance=dict(c.provenance)) for c in new])
    scorer_ids = dict(RecordedScorer.objects.filter(corpus=corpus, name__in=[s.name for s in scorers])
                      .values_list("name", "id"))
    unit_ids = dict(CorpusUnit.objects.filter(corpus=corpus).values_list("key", "id").iterator(
        chunk_size=FRAME_CHUNK_SIZE))
    RecordedScore.objects.bulk_create(
        (RecordedScore(scorer_id=scorer_ids[c.name], unit_id=unit_ids[key], value=value, reason=reason[:MAX_REASON])
         for c in new for key, value, reason in c.scores),
        batch_size=BULK_BATCH_SIZE)


def corpus_units_frame(corpus: Corpus) -> pd.DataFrame:
    """The corpus's units in order: ``key``, ``text``, one column per factor, ``fields`` (a dict each), ``pair``.

    Read in chunks of values (no model instances). An empty corpus gives the columns and no rows.
    """
    rows = (CorpusUnit.objects.filter(corpus=corpus).order_by("position")
            .values_list("key", "text", "factors", "fields", "pair").iterator(chunk_size=FRAME_CHUNK_SIZE))
    frame = pd.DataFrame(list(rows), columns=["key", "text", "factors", "fields", "pair"])
    names = corpus_factor_names(corpus)
    factors = pd.DataFrame.from_records(frame["factors"].tolist(), index=frame.index, columns=names)
    return pd.concat([frame[["key", "text"]], factors, frame[["fields", "pair"]]], axis=1)


def corpus_factor_names(corpus: Corpus) -> list[str]:
    """The corpus's factor names in the order its units gave them (sorted, for a corpus stored without it)."""
    names = corpus.provenance.get("factor_names")
    if names is None:
        first = CorpusUnit.objects.filter(corpus=corpus).order_by("position").values_list("factors", flat=True).first()
        names = sorted(first or {})
    return list(names)


def recorded_scores_frame(scorers: Iterable[RecordedScorer]) -> pd.DataFrame:
    """Every score of the recorded scorers: ``scorer`` (its name), ``key`` (the unit's), ``value`` (NaN where
    missing) and ``reason`` (why it is missing), ordered by scorer and unit position. Read in chunks."""
    ids = [scorer.pk for scorer in scorers]
    rows = (RecordedScore.objects.filter(scorer_id__in=ids).order_by("scorer__name", "unit__position")
            .values_list("scorer__name", "unit__key", "value", "reason").iterator(chunk_size=FRAME_CHUNK_SIZE))
    frame = pd.DataFrame(list(rows), columns=["scorer", "key", "value", "reason"])
    frame["value"] = frame["value"].astype(float)
    return frame
