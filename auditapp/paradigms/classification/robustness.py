"""A classification audit re-scored against every alternative ground truth (seed 000 §4.1–4.2: robustness). Pure.

No model is asked again: the cell predictions (:func:`.analysis.cell_predictions`) are scored against each
alternative of :mod:`annotation.alternatives` with :func:`auditapp.audit_metrics.reference_metrics` (κ and F1 with
the paired item bootstrap CIs, one set of resamples shared by every cell and alternative).

- ``cells``: model × condition × alternative: κ, F1, their CIs, n, and Δκ = κ(alternative) − κ(paper).
- ``ranks``: per alternative, the mean κ of each model (over conditions) and of each condition (over models), and
  its rank (1 = highest; ties share the mean rank, ``scipy.stats.rankdata``).
- ``tau``: per alternative and scope (model, condition, cell), Kendall's τ-b (``scipy.stats.kendalltau``) between
  the mean κ under the alternative and under the paper's label, over the keys defined under both (undefined with
  fewer than two).
- ``tests``: the §4.1 test redone against every alternative: mean Δκ over cells, the paired t-test over cells and
  the bootstrap CI of the mean Δκ. Against ``majority`` it is the paper's test (there Δκ > 0 means the weighted
  label is the stricter standard).
"""
from __future__ import annotations

import warnings
from collections.abc import Sequence

import numpy as np
import pandas as pd
from scipy import stats

from auditapp.audit_metrics import UnparsedRule, reference_metrics
from auditapp.paradigms.classification.analysis import cell_predictions

PAPER = "weighted"


def _finite(value) -> float | None:
    return float(value) if value is not None and np.isfinite(value) else None


def _tau(paper: pd.Series, other: pd.Series) -> dict:
    both = paper.notna() & other.notna()
    if both.sum() < 2:
        return {"tau": None, "p_value": None, "n": int(both.sum()), "note": "fewer than two keys defined under both"}
    with warnings.catch_warnings():  # a constant side makes τ undefined (NaN): said in the note
        warnings.simplefilter("ignore", RuntimeWarning)
        result = stats.kendalltau(paper[both], other[both])
    note = "" if np.isfinite(result.statistic) else "one side is constant: τ is undefined"
    return {"tau": _finite(result.statistic), "p_value": _finite(result.pvalue), "n": int(both.sum()), "note": note}


def robustness(replies: pd.DataFrame, references: pd.DataFrame, *, alternatives: Sequence[str], models: Sequence,
               conditions: Sequence[str], unparsed: UnparsedRule = "exclude", n_resamples: int = 2000,
               seed: int = 0, soft_threshold: float = 0.5, soft_tie_label: float = 1.0) -> dict[str, list[dict]]:
    """The tables of the module docstring. ``replies``: model, condition, item, replicate, label (1/0/NaN).
    ``references``: item and one column per alternative (0/1/NaN, or a score in [0, 1] for a soft label), with
    ``weighted`` (the paper's label) among them. ``soft_threshold`` and ``soft_tie_label``: how the weighted label
    cuts the soft score, so that under ``unparsed="wrong"`` an unparsed reply is the opposite of that label
    (:func:`auditapp.audit_metrics.reference_metrics`)."""
    alternatives = list(alternatives)
    items = references["item"].to_numpy()
    predictions = cell_predictions(replies)
    keyed = predictions.set_index(["model", "condition", "item"])["prediction"].sort_index()
    cell_keys = [(m, c) for m in models for c in conditions
                 if ((predictions["model"] == m) & (predictions["condition"] == c)).any()]
    if not cell_keys:
        return {"cells": [], "ranks": [], "tau": [], "tests": []}
    preds = np.vstack([keyed.loc[(m, c)].reindex(items).to_numpy(dtype=float) for m, c in cell_keys])
    refs = references[alternatives].to_numpy(dtype=float).T
    result = reference_metrics(preds, refs, base=alternatives.index(PAPER), unparsed=unparsed,
                               n_resamples=n_resamples, seed=seed, soft_threshold=soft_threshold,
                               soft_tie_label=soft_tie_label)
    cells = []
    for i, (model, condition) in enumerate(cell_keys):
        for r, alternative in enumerate(alternatives):
            row = {"model": model, "condition": condition, "alternative": alternative, "n": _finite(result.n[i, r])}
            for name in ("kappa", "f1"):
                row[name] = _finite(result.point[name][i, r])
                row[f"{name}_low"], row[f"{name}_high"] = (_finite(result.low[name][i, r]),
                                                           _finite(result.high[name][i, r]))
                row[f"{name}_note"] = "; ".join(v for k, v in result.notes[i][r].items() if k.startswith(name)) or None
            row["delta_kappa"] = _finite(result.delta[i, r])
            cells.append(row)
    # An undefined κ is None in the rows; as a float column it is NaN, which the means and ranks leave out (an
    # object column of Nones would make them fail when no cell has a κ, e.g. every reply unparseable).
    table = pd.DataFrame(cells).astype({"kappa": float})
    ranks: list[dict[str, object]] = []
    taus: list[dict[str, object]] = []
    for scope, keys in (("model", list(models)), ("condition", list(conditions))):
        means = table.groupby([scope, "alternative"])["kappa"].mean().unstack("alternative").reindex(keys)
        for alternative in alternatives:
            rank = pd.Series(stats.rankdata(-means[alternative].to_numpy(), nan_policy="omit"), index=means.index)
            ranks.extend({"scope": scope, "key": key, "alternative": alternative,
                          "mean_kappa": _finite(means.at[key, alternative]), "rank": _finite(rank.at[key])}
                         for key in means.index)
            taus.append({"scope": scope, "alternative": alternative, **_tau(means[PAPER], means[alternative])})
    by_cell = table.pivot_table(index=["model", "condition"], columns="alternative", values="kappa", dropna=False)
    taus.extend({"scope": "cell", "alternative": alternative, **_tau(by_cell[PAPER], by_cell[alternative])}
                for alternative in alternatives)
    tests = [{"alternative": alternative, "mean_delta": _finite(result.mean_delta[r]),
              "t_statistic": _finite(result.t_statistic[r]), "p_value": _finite(result.p_value[r]),
              "df": result.df[r], "bootstrap_low": _finite(result.delta_low[r]),
              "bootstrap_high": _finite(result.delta_high[r]),
              "n_cells": int(np.isfinite(result.delta[:, r]).sum()),
              "note": "; ".join(result.test_notes[r].values()) or None}
             for r, alternative in enumerate(alternatives)]
    return {"cells": cells, "ranks": ranks, "tau": taus, "tests": tests}
