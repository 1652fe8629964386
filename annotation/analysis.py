"""A study's whole analysis from its scores and labels: trust weights, ground truth, agreement by scope,
psychometric groups, test sets and ICL example sets (seed 000 §3.2, §3.4, Appendix B). Pure pandas.

Groups (seed 000 §3.2, "psychometric extremes"):
- ``high_aq``: AQ ≥ ``aq_high`` (32, Baron-Cohen et al. 2001); ``low_aq``: AQ < ``aq_low`` (26).
- ``low_bias`` / ``high_bias``: seed 000 names these groups without defining the cut. Our operational
  definition, recorded with every result: a bias index = 1 − mean(x̂_SATA, x̂_IAT) from the standardised
  scores of eqs. 2–3 (so 0 = most accepting, 1 = most biased, over this study's annotators); low bias is
  an index at or below ``bias_low_cut``, high bias at or above ``bias_high_cut``, where the cuts are
  quantiles of the index (``bias_method="quantile"``, default 0.25 / 0.75) or index values
  (``bias_method="threshold"``).

Test sets: for each group (and ``all``), the items whose 0/1 labels from that group's annotators all agree,
with at least ``min_group_labels`` such labels; the agreed value is the test label.

ICL example sets (seed 000 §3.4): ``icl_a`` from the ``high_aq`` test set, ``icl_b`` from the ``low_aq``
test set, each ``icl_size`` items (284 in the paper) drawn with a seeded generator, leaving out the items
of the ``evaluation_set`` test set so examples never overlap the items they are used to classify. When
fewer items are available the set is smaller, and a note says so.

Touch IAT (``touch_iat_in_weights``): a D score measured wholly or partly by taps (``iat_modality`` "touch"
or "mixed") enters the trust weights by default. D divides each participant's latency difference by their
own SD, which removes most of the overall slowness of taps; but touch and keyboard D are not known to be
equivalent, so a study can leave touch D out. It then counts as a missing IAT score (the
``missing_instrument`` rule decides what happens to that annotator, and the bias index has no IAT for
them), and a note names each annotator it concerns. A frame without ``iat_modality`` is all keyboard.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Literal

import numpy as np
import pandas as pd

from annotation.aggregation import AggregationSettings, ground_truth
from annotation.agreement import agreement_summary, cohen_kappa_matrix
from psychometrics.trust import trust_weights

GROUPS = ("high_aq", "low_aq", "low_bias", "high_bias")


@dataclass(frozen=True)
class AnalysisSettings:
    """Every choice behind a study's analysis; stored with each result."""

    missing_instrument: Literal["exclude", "average"] = "exclude"
    aggregation: AggregationSettings = field(default_factory=AggregationSettings)
    aq_high: float = 32
    aq_low: float = 26
    bias_method: Literal["quantile", "threshold"] = "quantile"
    bias_low_cut: float = 0.25
    bias_high_cut: float = 0.75
    min_group_labels: int = 2
    icl_size: int = 284
    icl_seed: int = 0
    evaluation_set: str = ""
    touch_iat_in_weights: bool = True

    def as_dict(self) -> dict:
        return asdict(self)


@dataclass
class Analysis:
    weights: pd.DataFrame          # per annotator: trust table + bias_index + groups
    ground_truth: pd.DataFrame     # per item
    agreement: pd.DataFrame        # per scope: scope, group, n_annotators, n_items, n_labels, alpha, fleiss, note
    cohen_kappa: pd.DataFrame      # annotator × annotator
    item_sets: pd.DataFrame        # set, item, label
    notes: list[str]
    settings: AnalysisSettings
    weight_scores: pd.DataFrame    # the scores as the weights read them (touch D masked per the setting)


def _groups(weights: pd.DataFrame, settings: AnalysisSettings) -> dict[str, set[str]]:
    """Annotators (pseudonyms) in each psychometric group."""
    aq = weights.set_index("participant")["aq"]
    bias = weights.set_index("participant")["bias_index"]
    groups = {"high_aq": set(aq[aq >= settings.aq_high].index), "low_aq": set(aq[aq < settings.aq_low].index)}
    known = bias.dropna()
    if settings.bias_method == "quantile" and not known.empty:
        low_cut, high_cut = float(known.quantile(settings.bias_low_cut)), float(known.quantile(settings.bias_high_cut))
    else:
        low_cut, high_cut = settings.bias_low_cut, settings.bias_high_cut
    groups["low_bias"] = set(known[known <= low_cut].index)
    groups["high_bias"] = set(known[known >= high_cut].index)
    return groups


def perfect_agreement_items(labels: pd.DataFrame, *, min_labels: int) -> pd.DataFrame:
    """Items whose 0/1 labels all agree, with at least ``min_labels`` of them: columns item, label."""
    binary = labels.loc[labels["value"].isin([0, 1])]
    stats = binary.groupby("item")["value"].agg(["min", "max", "size"])
    agreed = stats.loc[(stats["min"] == stats["max"]) & (stats["size"] >= min_labels)]
    return pd.DataFrame({"item": agreed.index, "label": agreed["min"].astype(int).to_numpy()})


def _touch_iat_applied(scores: pd.DataFrame, *, include: bool) -> tuple[pd.DataFrame, list[str]]:
    """``scores`` with the touch and mixed IAT D scores made missing unless ``include`` (module docstring)."""
    if include or "iat_modality" not in scores.columns:
        return scores, []
    touch = scores["iat_modality"].isin(["touch", "mixed"]) & scores["iat_d"].notna()
    notes = [f"{pseudonym}: IAT D measured by touch, left out of the weights (setting touch_iat_in_weights)"
             for pseudonym in scores.loc[touch, "participant"]]
    return scores.assign(iat_d=scores["iat_d"].mask(touch)), notes


def _agreement_row(scope: str, group: str, labels: pd.DataFrame) -> dict:
    summary = agreement_summary(labels.loc[labels["value"].isin([0, 1])])
    return {"scope": scope, "group": group, **summary}


def analyse(scores: pd.DataFrame, labels: pd.DataFrame, settings: AnalysisSettings = AnalysisSettings()) -> Analysis:
    """The full analysis. ``scores``: participant, team, aq, sata, iat_d and optionally iat_modality.
    ``labels``: participant, item, value."""
    scores, touch_notes = _touch_iat_applied(scores, include=settings.touch_iat_in_weights)
    trust = trust_weights(scores, missing=settings.missing_instrument)
    weights = trust.table.copy()
    weights["bias_index"] = 1.0 - weights[["sata_norm", "iat_norm"]].mean(axis=1, skipna=False)
    notes = touch_notes + list(trust.notes)
    groups = _groups(weights, settings)
    for name in GROUPS:
        weights[name] = weights["participant"].isin(groups[name])

    truth = ground_truth(labels, weights.set_index("participant")["weight"], settings=settings.aggregation)

    rows = [_agreement_row("overall", "all", labels),
            *(_agreement_row("team", str(team), labels.loc[labels["participant"].isin(set(members))])
              for team, members in weights.groupby("team")["participant"]),
            *(_agreement_row("psychometric group", name, labels.loc[labels["participant"].isin(groups[name])])
              for name in GROUPS)]
    agreement = pd.DataFrame(rows)
    binary = labels.loc[labels["value"].isin([0, 1])]
    kappa = cohen_kappa_matrix(binary) if not binary.empty else pd.DataFrame()

    sets = [perfect_agreement_items(labels, min_labels=settings.min_group_labels).assign(set="all")]
    for name in GROUPS:
        group_labels = labels.loc[labels["participant"].isin(groups[name])]
        sets.append(perfect_agreement_items(group_labels, min_labels=settings.min_group_labels).assign(set=name))
    test_sets = pd.concat(sets, ignore_index=True)

    excluded: set = set()
    if settings.evaluation_set:
        excluded = set(test_sets.loc[test_sets["set"] == settings.evaluation_set, "item"])
    for icl_name, source in (("icl_a", "high_aq"), ("icl_b", "low_aq")):
        pool = test_sets.loc[(test_sets["set"] == source) & ~test_sets["item"].isin(excluded)]
        pool = pool.sort_values("item", key=lambda s: s.astype(str)).reset_index(drop=True)
        rng = np.random.default_rng([settings.icl_seed, 0 if icl_name == "icl_a" else 1])
        take = min(settings.icl_size, len(pool))
        if take < settings.icl_size:
            notes.append(f"{icl_name}: only {take} of {settings.icl_size} examples available from {source}")
        chosen = pool.iloc[np.sort(rng.choice(len(pool), size=take, replace=False))] if take else pool.iloc[:0]
        sets.append(chosen.assign(set=icl_name))
    item_sets = pd.concat(sets, ignore_index=True).loc[:, ["set", "item", "label"]]
    return Analysis(weights=weights, ground_truth=truth, agreement=agreement, cohen_kappa=kappa,
                    item_sets=item_sets, notes=notes, settings=settings, weight_scores=scores)
