"""The dashboard tables of the WABT and the AAT (seed 003, MIST, §4: Table 4, Figure 3, Table 5, Figure 4, and the
invalid replies of §4.2–4.3) as JSON-ready payloads. Pure: no Django.

:func:`wabt_payload` and :func:`aat_payload` take a judgments DataFrame (one row per instance reply, the columns of
:mod:`.stats`) and return ``{"tables": {name: [records]}, "columns": {name: [column names]}}``: every NaN or ±inf
becomes None and numpy scalars plain Python ones, so the payload goes to ``json.dumps`` as it is and an empty table
still has its header. The radar's and the stacked bars' tables are long (one row per model × group × dimension or
answer) so a chart script reads them without reshaping.
"""
from __future__ import annotations

import math

import numpy as np
import pandas as pd

from auditapp.paradigms.implicit_bias import stats
from auditapp.paradigms.implicit_bias.aat_replies import ANSWERS


def records(frame: pd.DataFrame) -> list[dict]:
    """A table as JSON-ready records: NaN, None and ±inf become None, numpy scalars Python ones."""
    return [{str(key): _plain(value) for key, value in row.items()} for row in frame.to_dict("records")]


def _plain(value):
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if value is pd.NA or value is pd.NaT:
        return None
    return value


def payload(frames: dict[str, pd.DataFrame]) -> dict:
    return {"tables": {name: records(frame) for name, frame in frames.items()},
            "columns": {name: [str(column) for column in frame.columns] for name, frame in frames.items()}}


def wabt_payload(judgments: pd.DataFrame) -> dict:
    """Tables ``wabt_table`` (Table 4), ``wabt_radar`` (Figure 3) and ``wabt_reasons`` (invalid replies and
    undefined scores by reason)."""
    return payload({"wabt_table": stats.wabt_table(judgments), "wabt_radar": stats.radar_means(judgments),
                    "wabt_reasons": stats.reason_counts(judgments, task="wabt")})


def aat_payload(judgments: pd.DataFrame) -> dict:
    """Tables ``aat_table`` (Table 5 with FAR and UAR), ``aat_bars`` (Figure 4: one row per model × social group ×
    answer with its ``share``) and ``aat_reasons`` (unparseable answers by reason)."""
    groups = stats.aat_group_proportions(judgments)
    bars = groups.melt(id_vars=["model", "social_group", "group_label", "n_answered"], value_vars=list(ANSWERS),
                       var_name="answer", value_name="share")
    order = {answer: position for position, answer in enumerate(ANSWERS)}
    bars = (bars.assign(answer_order=bars["answer"].map(order), group_order=bars.index % len(groups))
            .sort_values(["group_order", "answer_order"], kind="stable")
            .drop(columns=["answer_order", "group_order"]).reset_index(drop=True))
    return payload({"aat_table": stats.aat_table(judgments), "aat_bars": bars,
                    "aat_reasons": stats.reason_counts(judgments, task="aat")})
