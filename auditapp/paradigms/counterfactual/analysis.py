"""What the two counterfactual analyses share (seed 002): their settings, the completion tables of the paper's
Table 1, and tables as JSON-ready records. Pure: no Django.

Completion counts every text a request asked: a labelled text is complete; a text without a label is missing
with its reason (the reply's, "request failed" for a request that got no reply, "no judgment recorded" for a
request an audit stopped before sending).
"""
from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from auditapp.paradigms.counterfactual import stats
from auditapp.paradigms.counterfactual.replies import reason_kind

PRIMARY_TESTS = ("paired", "welch")


@dataclass(frozen=True)
class AnalysisSettings:
    """``alpha``: the FDR level of Benjamini–Hochberg (0.05 in seed 002); ``primary``: the dialect test whose p
    enters the correction (seed 002: the paired t-test over text pairs; Welch's as the robustness check)."""

    alpha: float = 0.05
    primary: str = "paired"

    def problems(self) -> list[str]:
        problems = []
        if not (isinstance(self.alpha, int | float) and not isinstance(self.alpha, bool)
                and math.isfinite(self.alpha) and 0 < self.alpha < 1):
            problems.append(f"alpha must be a number between 0 and 1, not {self.alpha!r}")
        if self.primary not in PRIMARY_TESTS:
            problems.append(f"primary must be one of {list(PRIMARY_TESTS)}, not {self.primary!r}")
        return problems


def settings_of(design: Mapping) -> AnalysisSettings:
    return AnalysisSettings(**(design.get("analysis") or {}))


def analysis_problems(analysis: Mapping) -> list[str]:
    """What is wrong with an audit's analysis settings (unknown keys included)."""
    if not isinstance(analysis, Mapping):
        return ["analysis must be an object"]
    unknown = sorted(set(analysis) - {"alpha", "primary"})
    if unknown:
        return [f"analysis: unknown settings {unknown} (known: alpha, primary)"]
    return [f"analysis: {problem}" for problem in AnalysisSettings(**analysis).problems()]


def records(frame: pd.DataFrame) -> list[dict]:
    """A table as JSON-ready records: NaN and ±inf become None, numpy scalars Python ones."""
    if frame.empty:
        return []
    clean = frame.astype(object).where(frame.notna(), None)
    return [{key: _plain(value) for key, value in row.items()} for row in clean.to_dict("records")]


def tables_payload(frames: Mapping[str, pd.DataFrame]) -> dict:
    """The stored form of named tables: ``tables`` (records) and ``columns`` (each table's columns, so an empty
    table still exports its header)."""
    return {"tables": {name: records(frame) for name, frame in frames.items()},
            "columns": {name: [str(column) for column in frame.columns] for name, frame in frames.items()}}


def _plain(value):
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def model_column(model_ids: pd.Series, model_names: Mapping[int, str]) -> pd.Categorical:
    """Each row's model name as a category, in the audit's model order (renaming the distinct ids, never
    building a string per row)."""
    ids = pd.Categorical(model_ids.to_numpy(), categories=list(model_names))
    return ids.rename_categories({model_id: model_names[model_id] for model_id in model_names})


def task_column(tasks: pd.Series, order: Sequence[str]) -> pd.Categorical:
    """Each row's task as a category in the design's order (the paper's), not the reader's sorted one."""
    return pd.Categorical(tasks, categories=list(order)) if not isinstance(tasks.dtype, pd.CategoricalDtype) \
        else tasks.cat.set_categories(list(order)).array


def completion_tables(judged: pd.DataFrame, requests: pd.DataFrame, model_names: Mapping[int, str],
                      texts_per_request: int) -> dict[str, pd.DataFrame]:
    """Table 1's completion per model and per model × task, and the reasons texts are missing (per model, by kind:
    "value not 0 or 1: 2" counts as "value not 0 or 1"; per model × task, as recorded).

    ``judged``: one row per judgment (model_id, task, label, reason); ``requests``: per model_id × task × state,
    ``n`` requests (answered, failed or pending: a pending request's texts, those an audit stopped before sending,
    count as asked and not recorded, "no judgment recorded")."""
    # The task stays categorical (its codes are counted, 4 million strings are not) and no column is copied.
    frame = pd.DataFrame({"model": model_column(judged["model_id"], model_names), "task": judged["task"].array,
                          "y": judged["label"].to_numpy(float), "reason": judged["reason"].astype("category").array},
                         copy=False)
    texts = requests["n"] * texts_per_request
    targets = pd.DataFrame({"model": requests["model_id"].map(model_names), "task": requests["task"].astype(str),
                            "n_texts_asked": texts,
                            "n_texts_failed_requests": texts.where(requests["state"] == "failed", 0)})
    per_model, per_model_task, missing = stats.completion(frame, targets)
    by_kind = (missing.assign(reason=missing["reason"].astype(str).map(reason_kind))
               .groupby(["model", "reason"], sort=False, observed=True)["n"].sum().reset_index())
    return {"completion": _with_percent(per_model), "completion_tasks": _with_percent(per_model_task),
            "missing": by_kind, "missing_tasks": missing}


def _with_percent(frame: pd.DataFrame) -> pd.DataFrame:
    return frame.assign(rate_percent=frame["rate"] * 100)
