"""Reads of corpora for the API and the admin: the list with counts, the counts per factor, the recorded
scorers with their missing scores, the unit export (one row per unit, one column per factor), and a corpus's
units as the protocol's :class:`~auditapp.engine.protocol.Unit` (:func:`corpus_units`, for request builders).

The DataFrames analyses take are :func:`auditapp.corpus_services.corpus_units_frame` and
:func:`auditapp.corpus_services.recorded_scores_frame`.
"""
from __future__ import annotations

from django.db.models import Count, IntegerField, OuterRef, Q, QuerySet, Subquery
from django.db.models.fields.json import KT
from django.db.models.functions import Coalesce

from auditapp.corpus_services import corpus_factor_names
from auditapp.engine.protocol import Unit
from auditapp.models import Corpus, CorpusUnit, RecordedScorer
from common.export_rows import Export

MAX_FACTOR_VALUES = 1000
"""Values listed per factor in a corpus's counts (the most frequent first); ``distinct`` counts them all."""


def corpus_list() -> QuerySet[Corpus]:
    """Every corpus, newest first, with ``n_recorded_scorers`` counted in the same query."""
    scorers = (RecordedScorer.objects.filter(corpus=OuterRef("pk")).order_by().values("corpus")
               .annotate(n=Count("pk")).values("n"))
    return (Corpus.objects.select_related("created_by")
            .annotate(n_recorded_scorers=Coalesce(Subquery(scorers, output_field=IntegerField()), 0))
            .order_by("-created_at", "-id"))


def corpus_factor_counts(corpus: Corpus) -> list[dict]:
    """Per factor, in the corpus's order: ``name``, ``distinct`` values, and ``counts`` (``value``, ``n``), the most
    frequent first (ties by value), at most MAX_FACTOR_VALUES. One grouped query per factor."""
    result = []
    for name in corpus_factor_names(corpus):
        rows = list(CorpusUnit.objects.filter(corpus=corpus).order_by().annotate(value=KT(f"factors__{name}"))
                    .values("value").annotate(n=Count("pk")).values_list("value", "n"))
        rows.sort(key=lambda row: (-row[1], row[0] or ""))
        result.append({"name": name, "distinct": len(rows),
                       "counts": [{"value": value, "n": n} for value, n in rows[:MAX_FACTOR_VALUES]]})
    return result


def corpus_recorded_scorers(corpus: Corpus) -> QuerySet[RecordedScorer]:
    """The corpus's recorded scorers by name, with ``n_scores`` and ``n_missing`` (scores the file did not have)."""
    return (RecordedScorer.objects.filter(corpus=corpus)
            .annotate(n_scores=Count("scores"), n_missing=Count("scores", filter=Q(scores__value__isnull=True)))
            .order_by("name"))


def corpus_units_export(corpus: Corpus) -> Export:
    """One row per unit in corpus order: ``position``, ``key``, ``text``, one column per factor, ``fields`` (JSON)
    and ``pair``."""
    names = corpus_factor_names(corpus)
    rows = (CorpusUnit.objects.filter(corpus=corpus).order_by("position")
            .values_list("position", "key", "text", "factors", "fields", "pair"))

    def expand(row: tuple) -> tuple:
        position, key, text, factors, fields, pair = row
        return (position, key, text, *(factors.get(name, "") for name in names), fields, pair)

    return Export(["position", "key", "text", *names, "fields", "pair"], rows, expand)


def corpus_units(corpus_id: int) -> list[Unit]:
    """The corpus's units in order, as the pure protocol's :class:`Unit` (read without model instances)."""
    return [Unit(key, text, factors, fields, pair) for key, text, factors, fields, pair in (
        CorpusUnit.objects.filter(corpus_id=corpus_id).order_by("position")
        .values_list("key", "text", "factors", "fields", "pair").iterator(chunk_size=5000))]
