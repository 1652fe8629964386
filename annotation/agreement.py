"""Inter-annotator agreement: Krippendorff's alpha (nominal), Fleiss' kappa, pairwise Cohen's kappa.

Input labels: one row per label with ``participant``, ``item`` and ``value`` (categories are the
distinct values present; callers choose which values to pass).

- Krippendorff's alpha for nominal data is computed here from the coincidence matrix (Krippendorff
  2011, "Computing Krippendorff's Alpha-Reliability", §C), because the ``krippendorff`` package is
  GPL-licensed and this product is MIT; the tests check it against that package. Annotators may label
  different items: items with fewer than two labels are not pairable and are left out.
      o_ck = Σ_u Σ_{i≠j} [v_ui = c][v_uj = k] / (m_u − 1)      (coincidences within unit u)
      n_c  = Σ_k o_ck,  n = Σ_c n_c
      α    = 1 − (n − 1) · Σ_{c≠k} o_ck / Σ_{c≠k} n_c·n_k
  α is NaN when there are no pairable items or only one category occurs (no expected disagreement).
- Fleiss' kappa (statsmodels ``fleiss_kappa``) assumes every item has the same number of raters; it
  is computed only when that holds, otherwise it is NaN and the reason says so.
- Cohen's kappa (scikit-learn ``cohen_kappa_score``) for every pair of annotators over the items both
  labelled; NaN where they share fewer than two items or kappa is undefined (one category only).
"""
from __future__ import annotations

import itertools
import warnings
from dataclasses import dataclass

import numpy as np
import pandas as pd
from sklearn.metrics import cohen_kappa_score
from statsmodels.stats.inter_rater import fleiss_kappa as statsmodels_fleiss_kappa


def _item_category_counts(labels: pd.DataFrame) -> pd.DataFrame:
    """Items × categories matrix of label counts."""
    return pd.crosstab(labels["item"], labels["value"])


def krippendorff_alpha_nominal(labels: pd.DataFrame) -> float:
    """Krippendorff's alpha for nominal values from the coincidence matrix (module docstring)."""
    if labels.empty:
        return float("nan")
    counts = _item_category_counts(labels).to_numpy(dtype=float)
    pairable = counts.sum(axis=1)
    counts = counts[pairable >= 2]
    if counts.shape[0] == 0:
        return float("nan")
    per_unit = 1.0 / (counts.sum(axis=1) - 1.0)
    coincidences = (counts * per_unit[:, None]).T @ counts - np.diag((counts * per_unit[:, None]).sum(axis=0))
    n_c = coincidences.sum(axis=1)
    n = n_c.sum()
    observed = coincidences.sum() - np.trace(coincidences)
    expected = n_c.sum() ** 2 - (n_c ** 2).sum()
    if expected == 0:
        return float("nan")
    return float(1.0 - (n - 1.0) * observed / expected)


@dataclass(frozen=True)
class FleissResult:
    kappa: float
    n_items: int
    raters_per_item: int | None
    reason: str


def fleiss_kappa(labels: pd.DataFrame) -> FleissResult:
    """Fleiss' kappa via statsmodels, only where every item has the same number of raters."""
    if labels.empty:
        return FleissResult(float("nan"), 0, None, "no labels")
    table = _item_category_counts(labels)
    raters = table.sum(axis=1)
    if raters.nunique() != 1:
        return FleissResult(float("nan"), len(table), None,
                            f"not computed: raters per item vary ({raters.min()}–{raters.max()}); Fleiss' "
                            "kappa needs the same number of raters for every item")
    if int(raters.iloc[0]) < 2:
        return FleissResult(float("nan"), len(table), int(raters.iloc[0]), "not computed: one rater per item")
    with np.errstate(invalid="ignore", divide="ignore"):
        kappa = float(statsmodels_fleiss_kappa(table.to_numpy(), method="fleiss"))
    return FleissResult(kappa, len(table), int(raters.iloc[0]), "computed")


def cohen_kappa_matrix(labels: pd.DataFrame, *, min_shared_items: int = 2) -> pd.DataFrame:
    """Annotator × annotator Cohen's kappa over shared items (1 on the diagonal, symmetric)."""
    wide = labels.pivot(index="item", columns="participant", values="value")
    annotators = list(wide.columns)
    matrix = pd.DataFrame(np.nan, index=annotators, columns=annotators, dtype=float)
    present = wide.notna().to_numpy()
    values = wide.to_numpy()
    for a, b in itertools.combinations(range(len(annotators)), 2):
        shared = present[:, a] & present[:, b]
        if shared.sum() < min_shared_items:
            continue
        first, second = values[shared, a], values[shared, b]
        if len(set(first) | set(second)) < 2:
            continue
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            kappa = cohen_kappa_score(first.astype(int), second.astype(int))
        matrix.iat[a, b] = matrix.iat[b, a] = kappa
    for i in range(len(annotators)):
        matrix.iat[i, i] = 1.0
    return matrix


def agreement_summary(labels: pd.DataFrame) -> dict:
    """Alpha, Fleiss' kappa (with its reason), and the counts behind them, for one set of labels."""
    fleiss = fleiss_kappa(labels)
    return {
        "n_annotators": int(labels["participant"].nunique()) if not labels.empty else 0,
        "n_items": int(labels["item"].nunique()) if not labels.empty else 0,
        "n_labels": int(len(labels)),
        "krippendorff_alpha": krippendorff_alpha_nominal(labels),
        "fleiss_kappa": fleiss.kappa,
        "fleiss_note": fleiss.reason,
    }
