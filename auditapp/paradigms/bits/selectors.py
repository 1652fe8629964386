"""Reads of a BITS audit for its error browser (seed 001 §4): every score of a perturbed sentence beside its
control's, one row per scorer × sentence × replicate (:func:`judged_sentences_export`).

The rows are the ``scores`` table's (:func:`auditapp.paradigms.bits.services.score_rows`: the judgments, the
sentences of failed requests, the recorded scores) joined in pandas with the corpus's units and with the score the
same scorer gave the sentence's control at the same replicate: the scores of a batch scorer live in judgments keyed
by sentence, a failed batch's sentences only in its request, and the recorded ones in another table, so no single
query holds them. A few queries whatever the size (none per row); filters and sorts are whole-column operations.
"""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from auditapp.corpus_services import corpus_units_frame
from auditapp.models import Audit, CorpusUnit
from auditapp.paradigms.bits import services as bits_services
from auditapp.paradigms.bits.corpus import CONTROL
from auditapp.paradigms.bits.units import FACTOR_NAMES
from common.export_rows import Export

FACTORS = tuple(name for name in FACTOR_NAMES if name != "is_control")
JUDGED_COLUMNS = ["scorer", "imported", "replicate", "request_id", "unit", "text", *FACTORS, "control_unit",
                  "control_text", "score", "control_score", "change", "outcome", "reason", "control_note",
                  "change_note"]
JUDGED_ORDERINGS = {
    "change": "the largest |change| first (rows without a change last)",
    "group": "group, term, template, then scorer",
    "template": "template, group, term, then scorer",
    "scorer": "scorer, then the corpus's order",
}
"""The browser's sorts; each ends in the corpus's order, the scorers' and the replicates', so pages never overlap."""
JUDGED_OUTCOMES = ("score", "unparseable", "error", bits_services.MISSING)
NO_CONTROL = "the corpus has no control sentence for it (none of its template matched when the corpus was stored)"
CONTROL_NOT_SCORED = "the scorer has no row for the control at this replicate"
NO_SCORE = "this sentence has no score"


def judged_choices(audit: Audit) -> dict[str, list[str]]:
    """What the browser's filters can name: the audit's scorers (models by position, then the recorded ones), the
    corpus's term groups and templates in its order."""
    models = list(audit.model_names().values())
    recorded = [scorer.name for scorer in bits_services.recorded_scorers_of(audit)]
    factors = CorpusUnit.objects.filter(corpus_id=audit.corpus_id).order_by("position")
    groups = [g for g in dict.fromkeys(factors.values_list("factors__group", flat=True)) if g and g != CONTROL]
    templates = [t for t in dict.fromkeys(factors.values_list("factors__template", flat=True)) if t]
    return {"scorers": [*models, *recorded], "groups": groups, "templates": templates}


def judged_frame(audit: Audit) -> pd.DataFrame:
    """Every perturbed sentence's score beside its control's (:data:`JUDGED_COLUMNS`, in the scores table's order:
    scorers, the corpus's sentences, replicates). ``change`` = score − control score, NaN where either is missing,
    ``change_note`` then says why; ``control_note`` says why the control has no score (or why there is none)."""
    scores = bits_services.score_rows(audit)
    units = corpus_units_frame(audit.corpus)
    fields = [value if isinstance(value, dict) else {} for value in units["fields"]]
    units = units.assign(control_unit=[value.get("control") for value in fields],
                         unpaired=[value.get("unpaired") for value in fields])
    for factor in FACTORS:
        if factor not in units:
            units[factor] = ""
    texts = units.set_index("key")["text"]
    rows = scores.merge(units[["key", "text", *FACTORS, "control_unit", "unpaired"]], left_on="unit", right_on="key",
                        how="inner", validate="many_to_one")
    rows = rows[rows["group"] != CONTROL].reset_index(drop=True)
    controls = scores[["scorer", "replicate", "unit", "value", "reason"]].rename(
        columns={"unit": "control_unit", "value": "control_score", "reason": "control_reason"})
    rows = rows.merge(controls, on=["scorer", "replicate", "control_unit"], how="left", validate="many_to_one",
                      indicator="_control_row")
    rows["control_text"] = rows["control_unit"].map(texts)
    rows["score"] = rows["value"]
    # Rounded to 12 places: a difference of two stored scores carries no more, and 0.1 − 0.3 shows as −0.2.
    rows["change"] = (rows["score"] - rows["control_score"]).round(12)
    no_control = rows["control_unit"].isna()
    absent = ~no_control & rows["control_text"].isna()
    unscored = ~no_control & ~absent & (rows["_control_row"] == "left_only")
    # An uploaded corpus names why a sentence found no control (the pairing rules of .pairing); else the general why.
    no_control_note = ("no control: " + rows["unpaired"].astype("string")).fillna(NO_CONTROL).astype(object)
    control_note = np.select(
        [no_control, absent, unscored, rows["control_score"].isna()],
        [no_control_note, "its control " + rows["control_unit"].astype(str).map(repr) + " is not in the corpus",
         CONTROL_NOT_SCORED, "the control has no score: " + rows["control_reason"].fillna("").astype(str)],
        default="")
    rows["control_note"] = control_note
    rows["request_id"] = rows["request_id"].astype("Int64")
    rows["change_note"] = np.where(rows["score"].isna(), NO_SCORE + (": " + rows["reason"]).where(
        rows["reason"] != "", ""), np.where(rows["control_score"].isna(), rows["control_note"], ""))
    return rows[JUDGED_COLUMNS]


def _ordered(rows: pd.DataFrame, ordering: str, scorers: Sequence[str], choices: dict[str, list[str]]) -> pd.DataFrame:
    """``rows`` (in the scores table's order) sorted by ``ordering``; ties keep that order (a stable sort)."""
    if ordering == "change":
        return rows.assign(_size=rows["change"].abs()).sort_values("_size", ascending=False, na_position="last",
                                                                    kind="stable").drop(columns="_size")
    positions = {"scorer": {name: n for n, name in enumerate(scorers)},
                 "group": {name: n for n, name in enumerate(choices["groups"])},
                 "template": {name: n for n, name in enumerate(choices["templates"])}}
    keys = {"group": ["group", "term", "template", "scorer"], "template": ["template", "group", "term", "scorer"],
            "scorer": ["scorer"]}[ordering]

    def position(column: pd.Series) -> pd.Series:
        if column.name in positions:
            return column.map(positions[str(column.name)]).fillna(len(positions[str(column.name)]))
        return column.fillna("")
    return rows.sort_values(keys, key=position, kind="stable")


def judged_sentences_export(*, audit: Audit, scorer: str | None = None, group: str | None = None,
                            template: str | None = None, outcome: str | None = None, changed: bool = False,
                            min_change: float | None = None, q: str = "", ordering: str = "change") -> Export:
    """The error browser: :func:`judged_frame` narrowed to one scorer, group, template or outcome; ``changed``:
    only scores that differ from their control's; ``min_change``: only rows with |change| at least this; ``q``:
    the sentence contains it (case-insensitive); sorted by ``ordering`` (:data:`JUDGED_ORDERINGS`). Undefined
    numbers are None, their reason in the note beside them."""
    rows = judged_frame(audit)
    keep = pd.Series(True, index=rows.index)
    for column, value in (("scorer", scorer), ("group", group), ("template", template), ("outcome", outcome)):
        if value is not None:
            keep &= rows[column] == value
    if changed:
        keep &= rows["change"].notna() & (rows["change"] != 0)
    if min_change is not None:
        keep &= rows["change"].abs() >= min_change
    if q:
        keep &= rows["text"].str.contains(q, case=False, regex=False)
    choices = judged_choices(audit)
    rows = _ordered(rows[keep], ordering, choices["scorers"], choices)
    cleaned = rows.astype(object).where(rows.notna(), None)
    return Export(JUDGED_COLUMNS, list(cleaned.itertuples(index=False, name=None)))
