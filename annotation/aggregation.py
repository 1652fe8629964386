"""Ground truth from labels: majority vote and the psychometrically weighted mean (seed 000, Appendix B,
eq. 6). Pure pandas, vectorised over items.

Input labels: one row per label with ``participant``, ``item`` and ``value``. Only the values 0 and 1
enter either aggregation; any other value (such as -1, "unrelated / needs more context") is counted per
item in ``n_excluded`` and otherwise ignored.

Majority vote: the label given by more than half of the item's 0/1 labels. An exact tie (equal
numbers of 0 and 1) is always marked in ``majority_tie``; ``majority_tie_rule`` decides the label shown
for it: ``"none"`` (default, no label), ``"positive"`` (1) or ``"negative"`` (0). Ties are never
resolved without being marked.

Weighted ground truth (eq. 6):  ŷ = Σ_i W_i·y_i / Σ_i W_i  over the item's annotators that have a
weight. The weighted label is 1 when ŷ > threshold, 0 when ŷ < threshold; when ŷ equals the threshold
``weighted_tie_rule`` decides: ``"positive"`` (default: ŷ ≥ 0.5 → 1), ``"negative"`` or ``"none"``.
Items with no weighted label (no weighted annotator, or Σ W = 0) have ``weighted_score`` NaN and no
weighted label.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Literal

import numpy as np
import pandas as pd

TieRule = Literal["none", "positive", "negative"]
GROUND_TRUTH_COLUMNS = ("item", "n_labels", "n_excluded", "majority_label", "majority_tie", "n_weighted",
                        "weighted_score", "weighted_label", "weighted_tie")


@dataclass(frozen=True)
class AggregationSettings:
    """Every choice that changes a ground truth label; stored with each computation."""

    threshold: float = 0.5
    weighted_tie_rule: TieRule = "positive"
    majority_tie_rule: TieRule = "none"

    def __post_init__(self):
        for rule in (self.weighted_tie_rule, self.majority_tie_rule):
            if rule not in ("none", "positive", "negative"):
                raise ValueError(f"tie rule must be 'none', 'positive' or 'negative', not {rule!r}")
        if not 0.0 <= self.threshold <= 1.0:
            raise ValueError("threshold must lie in [0, 1]")

    def as_dict(self) -> dict:
        return asdict(self)


def _tie_value(rule: TieRule) -> float:
    return {"none": np.nan, "positive": 1.0, "negative": 0.0}[rule]


def ground_truth(labels: pd.DataFrame, weights: pd.Series | None = None, *,
                 settings: AggregationSettings = AggregationSettings()) -> pd.DataFrame:
    """One row per labelled item: counts, majority vote with ties marked, and the weighted label.

    ``weights`` maps participant → W (NaN or absent: the participant's labels are left out of the
    weighted mean but still count in the majority vote). With ``weights=None`` every annotator
    weighs 1, so the weighted score is the plain mean of the 0/1 labels.
    Labels come back as nullable integers (``pd.NA`` where there is no label).
    """
    if labels.empty:
        return pd.DataFrame({c: pd.Series(dtype="object") for c in GROUND_TRUTH_COLUMNS})
    frame = labels.loc[:, ["participant", "item", "value"]].copy()
    binary = frame["value"].isin([0, 1])
    frame["positive"] = (frame["value"] == 1) & binary
    frame["binary"] = binary
    if weights is None:
        frame["weight"] = 1.0
    else:
        frame["weight"] = frame["participant"].map(weights).astype(float)
    weighted = binary & frame["weight"].notna()
    frame["w"] = frame["weight"].where(weighted, 0.0)
    frame["wy"] = frame["w"] * frame["positive"]
    frame["weighted"] = weighted

    by_item = frame.groupby("item", sort=False).agg(
        n_labels=("binary", "sum"), n_positive=("positive", "sum"), n_weighted=("weighted", "sum"),
        sum_w=("w", "sum"), sum_wy=("wy", "sum"), n_all=("value", "size"))
    result = pd.DataFrame(index=by_item.index)
    result["n_labels"] = by_item["n_labels"].astype(int)
    result["n_excluded"] = (by_item["n_all"] - by_item["n_labels"]).astype(int)

    n_negative = by_item["n_labels"] - by_item["n_positive"]
    tie = (by_item["n_positive"] == n_negative) & (by_item["n_labels"] > 0)
    majority = np.where(by_item["n_positive"] > n_negative, 1.0, 0.0)
    majority = np.where(tie, _tie_value(settings.majority_tie_rule), majority)
    majority = np.where(by_item["n_labels"] == 0, np.nan, majority)
    result["majority_label"] = pd.array(majority, dtype="Float64").astype("Int64")
    result["majority_tie"] = tie.to_numpy()

    result["n_weighted"] = by_item["n_weighted"].astype(int)
    score = by_item["sum_wy"] / by_item["sum_w"].where(by_item["sum_w"] > 0)
    result["weighted_score"] = score
    at_threshold = np.isclose(score, settings.threshold, rtol=0.0, atol=1e-12)
    label = np.where(score > settings.threshold, 1.0, 0.0)
    label = np.where(at_threshold, _tie_value(settings.weighted_tie_rule), label)
    label = np.where(score.isna(), np.nan, label)
    result["weighted_label"] = pd.array(label, dtype="Float64").astype("Int64")
    result["weighted_tie"] = at_threshold & score.notna().to_numpy()
    return result.reset_index().loc[:, list(GROUND_TRUTH_COLUMNS)]
