"""The ableism classification paradigm (seed 000 §3.4, §4.1–4.2): build the requests, parse, analyse.

Pure: no Django. The engine gives this module plain data and stores what it returns.

- :func:`build_messages`: one chat request per model × condition × item × replicate, a single user
  message holding the condition's prompt (seed 000 §3.4: "All models were accessed via Ollama using
  default temperature and generation settings", i.e. no system prompt and no parameters of ours). ICL
  examples are put in an order drawn from a generator seeded with (audit seed, item id), so every item
  sees the same examples in its own reproducible order.
- :func:`dispatch_order`: the order in which items are sent, also seeded with (audit seed, item id).
- :func:`parse`: :func:`auditapp.paradigms.classification.replies.parse_reply`.
- :func:`analyse`: metrics per model × condition × reference (Tables 1–2), Δκ with the paired t-test over
  cells and a paired item bootstrap (Figure 1, §4.1), and per-model and per-condition means.

Replicates: an item's prediction in a cell is the label most of its replicates gave; when the parsed
replicates tie (or none parsed) the item has no prediction, which the ``unparsed`` rule then excludes or
counts as wrong. With one replicate, as in the paper, this is simply the parsed label.
"""
from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
import pandas as pd

from auditapp.audit_metrics import METRICS, UnparsedRule, classification_metrics, kappa_gap, without_float_noise
from auditapp.paradigms.classification.prompts import PromptTemplate, format_examples, render
from auditapp.paradigms.classification.replies import ParsedReply, parse_reply

REFERENCES = ("weighted", "majority")


@dataclass(frozen=True)
class Sentence:
    """An item's text: the target with its optional context, and (for examples) its label."""

    item_id: int
    target: str
    preceding: str = ""
    following: str = ""
    label: int | None = None


def _seed_int(*parts: object) -> int:
    return int.from_bytes(hashlib.sha256(":".join(map(str, parts)).encode()).digest()[:8], "big") >> 1


def dispatch_order(seed: int, item_id: int) -> int:
    """A position for the item in the audit's seeded item order (smaller goes first)."""
    return _seed_int("order", seed, item_id)


def example_order(examples: Sequence[Sentence], seed: int, item_id: int) -> list[Sentence]:
    """The examples in the order shown with this item, from a generator seeded with (seed, item id)."""
    ordered = sorted(examples, key=lambda example: example.item_id)
    return [ordered[i] for i in _example_permutation(seed, item_id, len(ordered))]


@lru_cache(maxsize=4096)
def _example_permutation(seed: int, item_id: int, n: int) -> tuple[int, ...]:
    """A worker rebuilds each request's messages, and both ICL conditions of an item ask for the same permutation:
    a seeded generator costs more than the rest of the prompt (2% of the worker's CPU in a profile of
    benchmarks/audit_throughput.py), so the last few thousand are kept."""
    return tuple(int(i) for i in np.random.default_rng([_seed_int("examples", seed), item_id]).permutation(n))


def build_messages(template_text: str, item: Sentence, *, examples: Sequence[Sentence] = (), seed: int = 0
                   ) -> list[dict[str, str]]:
    """The chat messages for one item under one condition's template (see the module docstring)."""
    template = PromptTemplate(code="", name="", text=template_text, note="", source="")
    shown = format_examples([(e.preceding, e.target, e.following, e.label) for e in
                             example_order(examples, seed, item.item_id)]) if template.needs_examples else ""
    prompt = render(template, preceding=item.preceding, target=item.target, following=item.following,
                    examples=shown)
    return [{"role": "user", "content": prompt}]


def parse(text: str | None, finish_reason: str | None = None) -> ParsedReply:
    return parse_reply(text, finish_reason)


def cell_predictions(replies: pd.DataFrame) -> pd.DataFrame:
    """One prediction per (model, condition, item) from replies with columns model, condition, item,
    label (NaN when the reply gave none): the majority of the parsed replicates, NaN on a tie."""
    parsed = replies.dropna(subset=["label"])
    counts = parsed.groupby(["model", "condition", "item"])["label"].agg(ones="sum", n="count")
    share = counts["ones"] / counts["n"]
    prediction = pd.Series(np.where(share > 0.5, 1.0, np.where(share < 0.5, 0.0, np.nan)), index=counts.index)
    cells = replies[["model", "condition", "item"]].drop_duplicates().set_index(["model", "condition", "item"])
    return cells.assign(prediction=prediction.reindex(cells.index)).reset_index()


@dataclass(frozen=True)
class ClassificationAnalysis:
    cells: list[dict]
    gap: dict
    model_means: list[dict]
    condition_means: list[dict]


def analyse(replies: pd.DataFrame, references: pd.DataFrame, *, models: Sequence, conditions: Sequence[str],
            unparsed: UnparsedRule = "exclude", n_resamples: int = 2000, seed: int = 0) -> ClassificationAnalysis:
    """Tables 1–2, Figure 1 and §4.1 from the replies and the references.

    ``replies``: model, condition, item, replicate, label (1/0/NaN). ``references``: item, weighted, majority
    (1/0/NaN). ``models`` and ``conditions`` give the row and column order. Each cell row holds the model,
    condition, reference, the unparsed rule and every field of :class:`~auditapp.audit_metrics.CellMetrics`
    (CIs flattened to ``<metric>_low``/``<metric>_high``; the reason an undefined value is undefined to
    ``<metric>_note``/``<metric>_ci_note``). The gap holds Δκ per cell (``delta_kappa_note`` where undefined),
    the t-test (which needs two cells with a Δκ) and the bootstrap, with ``t_test_note``, ``mean_delta_note`` and
    ``bootstrap_note`` where those are undefined.
    """
    items = references["item"].to_numpy()
    refs = {name: references[name].to_numpy(dtype=float) for name in REFERENCES}
    predictions = cell_predictions(replies)
    cells, kappa_rows, cell_keys = [], [], []
    for model in models:
        for condition in conditions:
            rows = predictions[(predictions["model"] == model) & (predictions["condition"] == condition)]
            if rows.empty:
                continue
            pred = rows.set_index("item")["prediction"].reindex(items).to_numpy(dtype=float)
            kappa_rows.append(pred)
            cell_keys.append((model, condition))
            for reference in REFERENCES:
                metrics = classification_metrics(pred, refs[reference], unparsed=unparsed, n_resamples=n_resamples,
                                                 seed=seed)
                row = {"model": model, "condition": condition, "reference": reference}
                values = metrics.as_dict()
                ci, notes = values.pop("ci"), values.pop("notes")
                row.update(values)
                for name in METRICS:
                    row[f"{name}_low"], row[f"{name}_high"] = ci[name]
                row.update({f"{name}_note": note for name, note in notes.items()})
                cells.append(row)
    gap: dict = {"unparsed": unparsed, "cells": []}
    if kappa_rows:
        result = kappa_gap(np.vstack(kappa_rows), refs["majority"], refs["weighted"], unparsed=unparsed,
                           n_resamples=n_resamples, seed=seed)
        gap.update(mean_delta=result.mean_delta, t_statistic=result.t_statistic, p_value=result.p_value,
                   df=result.df, bootstrap_low=result.bootstrap_ci[0], bootstrap_high=result.bootstrap_ci[1],
                   **{f"{name}_note": note for name, note in result.notes.items()},
                   cells=[{"model": m, "condition": c, "delta_kappa": float(d),
                           **({"delta_kappa_note": note} if note else {})}
                          for (m, c), d, note in zip(cell_keys, result.delta, result.cell_notes, strict=True)])
    table = pd.DataFrame(cells)
    return ClassificationAnalysis(cells=cells, gap=gap, model_means=_means(table, gap, "model", models),
                                  condition_means=_means(table, gap, "condition", conditions))


def _means(table: pd.DataFrame, gap: dict, by: str, order: Sequence) -> list[dict]:
    """Mean κ and F1 against each reference, and mean Δκ, per model or per condition (cells with an
    undefined value are left out of its mean)."""
    if table.empty:
        return []
    deltas = pd.DataFrame(gap["cells"], columns=["model", "condition", "delta_kappa"])
    out = []
    for key in order:
        row = {by: key}
        for reference in REFERENCES:
            part = table[(table[by] == key) & (table["reference"] == reference)]
            for name in ("kappa", "f1"):
                row[f"{name}_{reference}"] = _nanmean(part[name])
        row["delta_kappa"] = float(without_float_noise(_nanmean(deltas.loc[deltas[by] == key, "delta_kappa"])))
        out.append(row)
    return out


def _nanmean(values: pd.Series) -> float:
    finite = values.to_numpy(dtype=float)
    finite = finite[np.isfinite(finite)]
    return float(finite.mean()) if finite.size else float("nan")
