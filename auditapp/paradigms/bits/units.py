"""BITS sentences as the engine's units (:class:`auditapp.engine.protocol.Unit`), and an uploaded corpus's
per-tool score columns as recorded scorers. Pure: no Django.

A sentence becomes a unit with its key (:func:`auditapp.paradigms.bits.corpus.sentence_key` for a generated
corpus, template and text for an uploaded one), its text, and the factors analyses group by: ``template``,
``emotion``, ``word``, ``group``, ``term`` (an empty string where the sentence has none: a neutral template has
no word, a control no term), ``is_control`` ("1" or "0") and, for a perturbed post
(:mod:`auditapp.paradigms.bits.posts`), ``source`` (its platform; "" when the file names none). ``fields["control"]`` is the key of its control
sentence: None for a control, and for an uploaded sentence no pairing rule found one. An uploaded sentence's fields
also keep its file ``row`` and, for a perturbed one, the ``pairing`` rule that found its control
(:mod:`auditapp.paradigms.bits.pairing`), or ``unpaired`` and the reason under ``unpaired``.
"""
from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping

import pandas as pd

from auditapp.corpora import RecordedColumn
from auditapp.engine.protocol import Unit
from auditapp.paradigms.bits.corpus import BitsSentence
from auditapp.paradigms.bits.posts import PerturbedPosts
from auditapp.paradigms.bits.upload import UploadedCorpus

FACTOR_NAMES = ("template", "emotion", "word", "group", "term", "is_control")
EMPTY_CELL = "empty cell in the file"


def sentence_unit(sentence: BitsSentence) -> Unit:
    """One sentence as a unit (see the module docstring)."""
    return Unit(
        key=sentence.key,
        text=sentence.text,
        factors={"template": sentence.template, "emotion": sentence.emotion or "", "word": sentence.word or "",
                 "group": sentence.group, "term": sentence.term or "",
                 "is_control": "1" if sentence.is_control else "0",
                 **({"source": sentence.source} if sentence.source is not None else {})},
        fields={"control": sentence.control_key},
    )


def sentence_units(sentences: Iterable[BitsSentence]) -> list[Unit]:
    """The sentences as units, in their order."""
    return [sentence_unit(sentence) for sentence in sentences]


def uploaded_units(corpus: UploadedCorpus, *, column_provenance: Callable[[str], Mapping] | None = None,
                   ) -> tuple[list[Unit], list[RecordedColumn]]:
    """The units of an uploaded corpus and one :class:`RecordedColumn` per score column, sorted by name.

    ``column_provenance(name)`` gives each column's provenance (the files it came from). Every column has a row
    for every unit: a unit of the file that lacks the column (the repository's control file carries fewer tools
    than its perturbed file) is missing with that reason, never left out silently.
    """
    units = [Unit(key=unit.key, text=unit.text, factors=unit.factors,
                  fields={**unit.fields, **corpus.unit_fields.get(unit.key, {})})
             for unit in sentence_units(corpus.sentences)]
    by_scorer: dict[str, dict[str, float]] = {}
    for scorer, key, score in corpus.recorded_scores[["scorer", "key", "score"]].itertuples(index=False):
        by_scorer.setdefault(scorer, {})[key] = float(score)
    columns = []
    for name in sorted(by_scorer):
        scored = by_scorer[name]
        rows: list[tuple[str, float | None, str]] = []
        for sentence in corpus.sentences:
            score = scored.get(sentence.key)
            if score is None:
                file = "control" if sentence.is_control else "perturbed"
                rows.append((sentence.key, None, f"the {file} file has no column {name!r}"))
            elif math.isnan(score):
                rows.append((sentence.key, None, EMPTY_CELL))
            else:
                rows.append((sentence.key, score, ""))
        columns.append(RecordedColumn(name=name, scores=tuple(rows),
                                      provenance=column_provenance(name) if column_provenance else {}))
    return units, columns


def corpus_frame_of_units(units: pd.DataFrame) -> pd.DataFrame:
    """The analysis's corpus frame (the columns of :func:`auditapp.paradigms.bits.corpus.corpus_frame`) from a
    stored corpus's units frame (``key``, ``text``, the factors, ``fields``): the inverse of
    :func:`sentence_unit`, empty factors back to None."""
    frame = pd.DataFrame({"key": units["key"], "text": units["text"]})
    for factor in ("template", "emotion", "word", "group", "term"):
        frame[factor] = units[factor].where(units[factor] != "", None) if factor in units else None
    frame["word_kind"] = None
    frame["control_key"] = [fields.get("control") if isinstance(fields, dict) else None for fields in units["fields"]]
    columns = ["key", "text", "template", "emotion", "word", "word_kind", "group", "term", "control_key"]
    if "source" in units:  # "" (a text without one) stays a source of its own, not a missing value
        frame["source"] = units["source"].fillna("")
        columns.append("source")
    return frame[columns]


def posts_units(posts: PerturbedPosts) -> list[Unit]:
    """The units of a corpus of perturbed posts: each post's control, then its perturbed sentences, each keeping the
    post's file ``row`` and its ``post`` id; the control also keeps the file's other columns under ``metadata``
    (once per post, not once per term)."""
    units = []
    for post in posts.posts:
        fields = {"row": post.row, "post": post.id}
        for sentence in (post.control, *post.sentences):
            unit = sentence_unit(sentence)
            extra = {"metadata": dict(post.metadata)} if sentence is post.control else {}
            units.append(Unit(key=unit.key, text=unit.text, factors=unit.factors,
                              fields={**unit.fields, **fields, **extra}))
    return units
