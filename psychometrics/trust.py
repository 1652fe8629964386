"""Psychometric trust weights of annotators: seed 000, §3.2 and Appendix B, eqs. 1–5. Pure pandas.

Input: one row per annotator with ``participant``, ``team``, ``aq``, ``sata`` and ``iat_d`` (NaN
where the annotator has no score). Output: the same rows with the standardised scores, the raw
trust score R and the weight W.

    x̂_AQ,i   = (x_AQ,i − min x_AQ) / (max x_AQ − min x_AQ)              (eq. 1)
    x̂_SATA,i = (x_SATA,i − min x_SATA) / (max x_SATA − min x_SATA)      (eq. 2)
    x̂_IAT,i  = 1 − (x_IAT,i − min x_IAT) / (max x_IAT − min x_IAT)      (eq. 3)
    R_i      = (x̂_AQ,i + x̂_SATA,i + x̂_IAT,i) / 3                        (eq. 4)
    W_i      = R_i / mean_{j ∈ T} R_j, T the annotator's team             (eq. 5)

Two generalisations serve the robustness analysis (``annotation.alternatives``), each off by default so
the paper's weights are unchanged: ``instruments`` takes a subset of the three (a leave-one-instrument-out
weighting: R is the mean over the chosen instruments, the others are not read at all, so an annotator missing
only a left-out instrument keeps a weight under ``missing="exclude"``: such a weighting changes the set of
weighted annotators as well as the instruments, which ``annotation.alternatives`` states beside its results), and
``team_normalise=False`` skips eq. 5 (W = R). Without eq. 5 an included annotator whose R is undefined (under
"average", one whose only scores are of instruments that do not vary) gets the included annotators' mean R, the
place W = 1 holds on the team-normalised scale; when no annotator has an R every W is 1.

The IAT is inverted (eq. 3) so that a higher standardised value means less implicit bias; the D score
sign convention is the one of ``psychometrics`` scoring: positive D = more implicit bias.

Edge cases (each recorded in ``TrustWeights.notes``):
- **Missing instrument.** ``missing="exclude"`` (default): the annotator gets no weight (R and W are
  NaN, ``included`` is False) and does not enter any min or max. ``missing="average"``: R is the mean
  of the standardised scores the annotator has; min and max use every annotator who has the score.
- **max = min for an instrument** (one annotator, or everyone scored alike): the instrument says
  nothing about relative reliability, so it is left out of R for every annotator (0/0 has no value).
- **No informative instrument at all** (e.g. a single annotator): every included annotator gets
  R = NaN and W = 1, so the weighted ground truth equals the unweighted mean.
- **A team whose R are all zero**: eq. 5 is 0/0; every member gets W = 1 (the team mean weight
  stays 1, as eq. 5 intends). A zero R in a team with a positive mean gives W = 0, as eq. 5 says.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

import numpy as np
import pandas as pd

INSTRUMENTS = ("aq", "sata", "iat_d")
NORM_COLUMNS = {"aq": "aq_norm", "sata": "sata_norm", "iat_d": "iat_norm"}
MissingRule = Literal["exclude", "average"]


@dataclass
class TrustWeights:
    """Per-annotator table (columns below) and the notes on every edge case met."""

    table: pd.DataFrame
    notes: list[str] = field(default_factory=list)

    COLUMNS = ("participant", "team", "aq", "sata", "iat_d", "aq_norm", "sata_norm", "iat_norm",
               "trust_raw", "weight", "included")


def _standardise(values: pd.Series, *, invert: bool) -> tuple[pd.Series, bool]:
    """Min–max scale to [0, 1] (eqs. 1–3); returns (scaled, informative). NaN stays NaN."""
    low, high = values.min(), values.max()
    if pd.isna(low) or high == low:
        return pd.Series(np.nan, index=values.index), False
    scaled = (values - low) / (high - low)
    return (1.0 - scaled if invert else scaled), True


def trust_weights(scores: pd.DataFrame, *, missing: MissingRule = "exclude",
                  instruments: tuple[str, ...] = INSTRUMENTS, team_normalise: bool = True) -> TrustWeights:
    """R and W for each annotator (Appendix B, eqs. 1–5); see the module docstring for edge cases.

    ``scores`` has columns participant, team, aq, sata, iat_d. An empty frame gives an empty table.
    ``instruments`` (a non-empty subset of aq, sata, iat_d) enter R; ``team_normalise=False`` gives W = R.
    """
    if missing not in ("exclude", "average"):
        raise ValueError(f"missing must be 'exclude' or 'average', not {missing!r}")
    if not instruments or set(instruments) - set(INSTRUMENTS):
        raise ValueError(f"instruments must be a non-empty subset of {INSTRUMENTS}, not {instruments!r}")
    used = [name for name in INSTRUMENTS if name in instruments]
    table = scores.loc[:, ["participant", "team", *INSTRUMENTS]].copy()
    table[list(INSTRUMENTS)] = table[list(INSTRUMENTS)].astype(float)

    has_all = table[used].notna().all(axis=1)
    has_any = table[used].notna().any(axis=1)
    table["included"] = has_all if missing == "exclude" else has_any
    notes = [f"{pseudonym}: no weight (missing instrument score; rule '{missing}')"
             for pseudonym in table.loc[~table["included"], "participant"]]
    if missing == "average":
        notes.extend(f"{pseudonym}: R averages only the instruments they have (rule 'average')"
                     for pseudonym in table.loc[table["included"] & ~has_all, "participant"])

    informative = []
    for instrument, column in NORM_COLUMNS.items():
        if instrument not in used:
            table[column] = np.nan
            continue
        values = table[instrument].where(table["included"])
        table[column], useful = _standardise(values, invert=instrument == "iat_d")
        if useful:
            informative.append(column)
        elif table["included"].any():
            notes.append(f"{instrument}: max = min across annotators, left out of R for everyone")

    if informative:
        table["trust_raw"] = table[informative].mean(axis=1, skipna=True).where(table["included"])
    else:
        table["trust_raw"] = np.nan
        if table["included"].any():
            notes.append("no instrument varies across annotators: every included annotator has W = 1")

    if not team_normalise:
        no_r = table["included"] & table["trust_raw"].isna()
        mean_r = table.loc[table["included"], "trust_raw"].mean()
        fill = 1.0 if pd.isna(mean_r) else float(mean_r)
        if no_r.any() and pd.notna(mean_r):
            notes.append(f"{', '.join(table.loc[no_r, 'participant'])}: no informative score, so W = the included "
                         f"annotators' mean R ({fill:.4g}), the middle of this weighting's scale (no team "
                         "normalisation)")
        weight = table["trust_raw"].mask(no_r, fill)
        table["weight"] = weight.where(table["included"])
        return TrustWeights(table=table.loc[:, list(TrustWeights.COLUMNS)].reset_index(drop=True), notes=notes)
    team_mean = table.groupby("team")["trust_raw"].transform("mean")
    weight = table["trust_raw"] / team_mean
    zero_teams = sorted(table.loc[table["included"] & (team_mean == 0), "team"].unique())
    notes.extend(f"team {team}: every R is 0, so every member has W = 1" for team in zero_teams)
    no_r = table["included"] & table["trust_raw"].isna()
    weight = weight.mask(table["included"] & ((team_mean == 0) | no_r), 1.0)
    table["weight"] = weight.where(table["included"])
    return TrustWeights(table=table.loc[:, list(TrustWeights.COLUMNS)].reset_index(drop=True), notes=notes)
