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
- Cohen's kappa for every pair of annotators over the items both labelled; NaN where they share fewer
  than two items or kappa is undefined (one category only). scikit-learn's ``cohen_kappa_score`` computes
  one pair at a time and its input checks dominate the cost (50 annotators: 1,225 calls, most of a study's
  recomputation), so all pairs are computed at once from the same confusion counts, with scikit-learn's
  arithmetic term by term: for pair (a, b) over their shared items, with n_ij items where a says i and
  b says j, a_j and b_i the marginal counts and N the shared items,
      κ = 1 − Σ_{i≠j} n_ij / Σ_{i≠j} (b_i · a_j / N)
  The tests check it against ``cohen_kappa_score``: bit for bit with two categories (the analysis's 0/1
  labels), to rounding with more.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
from statsmodels.stats.inter_rater import fleiss_kappa as statsmodels_fleiss_kappa


def _item_category_counts(labels: pd.DataFrame) -> np.ndarray:
    """Items × categories matrix of label counts, rows and columns in sorted order (as ``pd.crosstab``).

    Counted with ``np.bincount`` over factorised codes: ``pd.crosstab`` runs a Python function per item.
    """
    item_codes, items = pd.factorize(labels["item"], sort=True)
    value_codes, values = pd.factorize(labels["value"], sort=True)
    flat = np.bincount(item_codes * len(values) + value_codes, minlength=len(items) * len(values))
    return flat.reshape(len(items), len(values))


def krippendorff_alpha_nominal(labels: pd.DataFrame) -> float:
    """Krippendorff's alpha for nominal values from the coincidence matrix (module docstring)."""
    if labels.empty:
        return float("nan")
    counts = _item_category_counts(labels).astype(float)
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
    if len(np.unique(raters)) != 1:
        return FleissResult(float("nan"), len(table), None,
                            f"not computed: raters per item vary ({raters.min()}–{raters.max()}); Fleiss' "
                            "kappa needs the same number of raters for every item")
    if int(raters[0]) < 2:
        return FleissResult(float("nan"), len(table), int(raters[0]), "not computed: one rater per item")
    with np.errstate(invalid="ignore", divide="ignore"):
        kappa = float(statsmodels_fleiss_kappa(table, method="fleiss"))
    return FleissResult(kappa, len(table), int(raters[0]), "computed")


def cohen_kappa_matrix(labels: pd.DataFrame, *, min_shared_items: int = 2) -> pd.DataFrame:
    """Annotator × annotator Cohen's kappa over shared items (1 on the diagonal, symmetric; module docstring)."""
    wide = labels.pivot(index="item", columns="participant", values="value")
    annotators = list(wide.columns)
    present = wide.notna().to_numpy()
    values = wide.to_numpy()
    categories = np.unique(values[present].astype(int))
    # One 0/1 matrix per category (items × annotators): products of them count every pair's agreements. In float64,
    # which NumPy multiplies with BLAS (integer products it does itself, ~12× slower at 400 annotators); counts of
    # items are whole numbers far below 2**53, so every sum is exact.
    present_f = present.astype(np.float64)
    said = [((values == c) & present).astype(np.float64) for c in categories]
    shared = present_f.T @ present_f
    marginals = [s.T @ present_f for s in said]   # [c][a, b]: a said c on items shared with b
    disagreements = np.zeros_like(shared)
    expected = np.zeros(shared.shape)
    with np.errstate(invalid="ignore", divide="ignore"):
        for i, j in ((i, j) for i in range(len(categories)) for j in range(len(categories)) if i != j):
            disagreements += said[j].T @ said[i]          # a said j, b said i
            expected = expected + marginals[i].T * marginals[j] / shared
        kappa = 1 - disagreements / expected
    n_categories = sum((m > 0).astype(int) + (m.T > 0).astype(int) > 0 for m in marginals)
    kappa[(shared < min_shared_items) | (n_categories < 2)] = np.nan
    np.fill_diagonal(kappa, 1.0)
    return pd.DataFrame(kappa, index=annotators, columns=annotators, dtype=float)


def agreement_summary(labels: pd.DataFrame) -> dict:
    """Alpha, Fleiss' kappa (with its reason), and the counts behind them, for one set of labels."""
    fleiss = fleiss_kappa(labels)
    return {
        "n_annotators": int(labels["participant"].nunique()) if not labels.empty else 0,
        "n_items": int(labels["item"].nunique()) if not labels.empty else 0,
        "n_labels": len(labels),
        "krippendorff_alpha": krippendorff_alpha_nominal(labels),
        "fleiss_kappa": fleiss.kappa,
        "fleiss_note": fleiss.reason,
    }
