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
from scipy import stats as scipy_stats

from auditapp.engine.headlines import Headline, HeadlineRow
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


def _t_interval(row: dict) -> tuple[float | None, float | None]:
    """The 95% CI of Table 4's mean that its one-sample t-test implies, mean ± t(0.975, df) · sd / √n; none where
    the test is undefined (one score, or no variance)."""
    if row.get("mean") is None or not row.get("sd") or not row.get("df") or not row.get("n"):
        return None, None
    half = float(scipy_stats.t.ppf(0.975, row["df"])) * row["sd"] / math.sqrt(row["n"])
    return row["mean"] - half, row["mean"] + half


def wabt_headline(analysis: dict) -> Headline | None:
    """Table 4 (seed 003 §4.2): each model's mean bias score per dimension, with the 95% CI of its t-test."""
    if not analysis.get("analysed"):
        return None
    rows = tuple(HeadlineRow(row["model"], row["dimension"], row["mean"], *_t_interval(row), row["n"],
                             row.get("note") or "") for row in analysis["tables"]["table4"])
    return Headline("Mean bias score (Table 4)", "Dimension", "abs", rows)


def aat_headline(analysis: dict) -> Headline | None:
    """Table 5 (seed 003 §4.3): each model's FAR (comedy answers for advantaged groups, eq. 2) and UAR (tragedy
    answers for disadvantaged groups, eq. 3), n the answers they are shares of."""
    if not analysis.get("analysed"):
        return None
    rows = tuple(HeadlineRow(row["model"], name, row[key], n=row[n_key])
                 for row in analysis["tables"]["table5"]
                 for name, key, n_key in (("FAR", "far", "sa_n"), ("UAR", "uar", "sb_n")))
    return Headline("FAR and UAR (Table 5)", "Rate", "max", rows)


HEADLINES = {"wabt": wabt_headline, "aat": aat_headline}
"""Each task's headline, by ``Task.task``."""
