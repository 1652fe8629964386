"""Alternative ground truths beside the paper's weighted label, and how far each moves from it (the robustness of the
ground truth; seed 000 §3, Appendix B eqs. 1–6, and §4.1's claim that the weighted ground truth is "a stricter
standard"). Pure pandas, numpy and scikit-learn, with crowd-kit 1.4.2's Dawid–Skene, GLAD and MACE as
:mod:`annotation.dawid_skene`, :mod:`annotation.glad` and :mod:`annotation.mace` compute them (crowd-kit itself is
imported by their tests only, which compare the two).

Every alternative is built from the labels and scores the study already has (only 0/1 labels; other values such
as -1 stay out, as in :mod:`annotation.aggregation`):

==================  ===================================================================================
``weighted``        The paper's label: eq. 6 over W of eqs. 1–5 (all three instruments, team-normalised).
``majority``        Majority vote; an exact tie follows the study's ``majority_tie_rule`` (default: none).
``equal_weights``   Eq. 6 with W = 1 for every annotator (also those without scores): the plain mean of the
                    0/1 labels, cut at the study's threshold with the weighted tie rule (default ŷ = 0.5 → 1).
                    It differs from majority vote only on ties and on the threshold.
``loo_aq_sata``     Eqs. 1–6 with R over AQ and SATA (the IAT left out); likewise ``loo_aq_iat`` (SATA out)
``loo_aq_iat``      and ``loo_sata_iat`` (AQ out). The missing-instrument rule, threshold and tie rule are the
``loo_sata_iat``    study's; under "exclude" an annotator needs only the instruments that are used, so
                    these weightings also weight annotators missing only the left-out instrument (the paper's
                    exclude them): a note beside the results names them, per weighting.
``no_team_norm``    Eqs. 1–4 and 6 with W = R (eq. 5's division by the team mean left out); an annotator
                    without an R gets the mean R (``psychometrics.trust``).
``dawid_skene``     crowd-kit 1.4.2's ``DawidSkene(n_iter=100, tol=1e-5)``: deterministic (initialised from the
                    majority vote). The label is crowd-kit's ``labels_`` (highest posterior). Computed vectorised
                    by :mod:`annotation.dawid_skene` (crowd-kit's pandas steps take about 20 ms an iteration) and
                    tested equal to crowd-kit's, bit for bit (``tests/annotation/test_dawid_skene.py``).
``glad``            crowd-kit 1.4.2's ``GLAD(n_iter=100, tol=1e-5)``, deterministic. Computed vectorised by
                    :mod:`annotation.glad` (crowd-kit rebuilds pandas frames at every one of the hundreds of
                    objective and gradient evaluations of its conjugate-gradient M-steps) and tested equal to
                    crowd-kit's, bit for bit (``tests/annotation/test_glad.py``).
``mace``            crowd-kit 1.4.2's ``MACE(n_restarts=10, n_iter=50, method="vb", default_noise=0.5,
                    alpha=0.5, beta=0.5, random_state=numpy.random.RandomState(seed))``, computed vectorised by
                    :mod:`annotation.mace` (crowd-kit's pandas E-step takes seconds to minutes a fit) and tested
                    equal to crowd-kit's (``tests/annotation/test_mace.py``: same starts and restart chosen, outputs
                    within rtol 1e-9, labels exactly). The seed is :data:`CROWDKIT_SEED` unless given. Ten random
                    starts, each drawn from one RandomState seeded once, keep the fit with the highest marginal
                    likelihood: crowd-kit 1.4.2 reseeds every start with an integer ``random_state``, which would
                    make the ten starts identical. The same seed gives the same fit. Variational Bayes: the priors
                    are ``alpha``/``beta`` on each annotator's spamming and 10 on each strategy; crowd-kit's
                    ``smoothing`` is not passed (1.4.2 never reads it: ``fit`` sets its own ``smoothing_`` = 0.01 /
                    number of classes, used only by ``method="em"``).
``soft``            The weighted score ŷ of eq. 6 itself, a probability rather than a label. Its label (ŷ cut
                    at the threshold) is the paper's by construction; what it adds is the score, which the
                    audit metrics use as expected counts (``auditapp.audit_metrics``).
==================  ===================================================================================

Ties: crowd-kit's label is ``probas_.idxmax(axis="columns")``, so an item whose posteriors are equal gets the
class of the first column of ``probas_``, in crowd-kit's column order (stored with each model's output as
``probas.classes``). The rule is stored in the settings (``crowdkit_tie_rule``).

crowd-kit's models see the items with at least one 0/1 label and the annotators who gave one; an item without
any has no label there (NaN), as everywhere. Their whole output (labels, posteriors, and each model's annotator
and item parameters) is returned unchanged in ``crowdkit``, so it can be stored and checked.

Comparison with the paper's weighted label, over the items where both have a label: the share of items whose
label differs, Cohen's κ (``sklearn.metrics.cohen_kappa_score``; undefined, NaN, when both hold one class only)
and the flipped items. Items where only one of the two has a label are counted in ``n_undefined``. The agreement
matrix holds κ between every pair of labelled alternatives, over the items both label.
"""
from __future__ import annotations

import hashlib
import io
import json
import warnings
from dataclasses import dataclass, field
from typing import Any, TypedDict

import numpy as np
import pandas as pd
from sklearn.exceptions import UndefinedMetricWarning
from sklearn.metrics import cohen_kappa_score

from annotation.aggregation import AggregationSettings, ground_truth
from annotation.dawid_skene import DawidSkene
from annotation.glad import GLAD
from annotation.mace import MACE
from psychometrics.trust import MissingRule, trust_weights

CROWDKIT_SEED = 0
CROWDKIT_TIE_RULE = ("crowd-kit's labels_ is probas_.idxmax(axis='columns'): equal posteriors give the class of "
                     "probas_'s first column")
PAPER = "weighted"


@dataclass(frozen=True)
class Alternative:
    """One way to build a ground truth: its name, a short label, and every choice behind it in words."""

    name: str
    label: str
    description: str


ALTERNATIVES = (
    Alternative(PAPER, "Weighted (paper)", "Seed 000 eqs. 1–6: AQ, SATA and IAT, team-normalised weights."),
    Alternative("majority", "Majority vote", "More than half of the 0/1 labels; ties follow the majority tie rule."),
    Alternative("equal_weights", "Equal weights", "Eq. 6 with W = 1 for every annotator; threshold and tie rule "
                                                  "of the weighted label."),
    Alternative("loo_aq_sata", "AQ + SATA", "Eqs. 1–6 with R over AQ and SATA (IAT left out)."),
    Alternative("loo_aq_iat", "AQ + IAT", "Eqs. 1–6 with R over AQ and IAT (SATA left out)."),
    Alternative("loo_sata_iat", "SATA + IAT", "Eqs. 1–6 with R over SATA and IAT (AQ left out)."),
    Alternative("no_team_norm", "No team normalisation", "Eqs. 1–4 and 6 with W = R (eq. 5 left out)."),
    Alternative("dawid_skene", "Dawid–Skene", "crowd-kit 1.4.2 DawidSkene(n_iter=100, tol=1e-5), computed "
                                              "vectorised here and tested equal to crowd-kit's; deterministic."),
    Alternative("glad", "GLAD", "crowd-kit 1.4.2 GLAD(n_iter=100, tol=1e-5), computed vectorised here and tested "
                                "equal to crowd-kit's; deterministic."),
    Alternative("mace", "MACE", "crowd-kit 1.4.2 MACE(n_restarts=10, n_iter=50, method='vb', default_noise=0.5, "
                                "alpha=0.5, beta=0.5, random_state=RandomState(seed)), computed vectorised here and "
                                "tested equal to crowd-kit's: ten different random starts, best likelihood kept."),
    Alternative("soft", "Soft labels", "The weighted score ŷ of eq. 6 (a probability); its thresholded label is "
                                       "the paper's."),
)
NAMES = tuple(alternative.name for alternative in ALTERNATIVES)
class _Weighting(TypedDict, total=False):
    """Keyword arguments of :func:`psychometrics.trust.trust_weights` that make an alternative weighting."""

    instruments: tuple[str, ...]
    team_normalise: bool


WEIGHTINGS: dict[str, _Weighting] = {"loo_aq_sata": {"instruments": ("aq", "sata")}, "loo_aq_iat": {"instruments": ("aq", "iat_d")},
                                     "loo_sata_iat": {"instruments": ("sata", "iat_d")},
                                     "no_team_norm": {"team_normalise": False}}


@dataclass
class GroundTruthAlternatives:
    """``labels``: one row per item (``item``), one column per alternative (1.0/0.0, NaN = no label; ``soft``
    holds ŷ). ``weights``: participant × weighting alternative (W). ``crowdkit``: each model's output as
    returned. ``summary``: one row per alternative against the paper's label. ``agreement``: κ between every
    pair. ``flipped``: item, alternative, paper label, alternative label. ``settings``: every choice."""

    labels: pd.DataFrame
    weights: pd.DataFrame
    crowdkit: dict
    summary: pd.DataFrame
    agreement: pd.DataFrame
    flipped: pd.DataFrame
    settings: dict
    notes: list[str] = field(default_factory=list)


def _weighted_labels(labels: pd.DataFrame, weights: pd.Series | None, settings: AggregationSettings) -> pd.DataFrame:
    return ground_truth(labels, weights, settings=settings).set_index("item")


def crowdkit_models(seed: int = CROWDKIT_SEED) -> dict:
    """The three crowd-kit models with the settings of the module docstring, as :mod:`annotation.dawid_skene`,
    :mod:`annotation.glad` and :mod:`annotation.mace` compute them. MACE gets a RandomState made here from ``seed``,
    so each call starts from the same draws and its restarts differ from one another."""
    return {"dawid_skene": DawidSkene(n_iter=100, tol=1e-5), "glad": GLAD(n_iter=100, tol=1e-5),
            "mace": MACE(n_restarts=10, n_iter=50, default_noise=0.5, alpha=0.5, beta=0.5,
                         random_state=np.random.RandomState(seed))}


def crowdkit_input(labels: pd.DataFrame) -> pd.DataFrame:
    """crowd-kit's input: worker, task, label (0/1 only), sorted so the result does not depend on row order."""
    binary = labels.loc[labels["value"].isin([0, 1]), ["participant", "item", "value"]]
    frame = binary.rename(columns={"participant": "worker", "item": "task", "value": "label"}).astype(
        {"worker": str, "task": str, "label": int})
    return frame.sort_values(["task", "worker"]).reset_index(drop=True)


def _series_dict(series: pd.Series) -> dict:
    return {str(key): float(value) for key, value in series.items()}


def _crowdkit_output(name: str, model, data: pd.DataFrame) -> dict:
    """Everything the fitted model returns, as JSON-ready values, unchanged."""
    probas = model.probas_
    output: dict[str, Any] = {"labels": {str(task): int(label) for task, label in model.labels_.items()},
              "probas": {"classes": [int(c) for c in probas.columns], "tasks": [str(t) for t in probas.index],
                         "values": probas.to_numpy(dtype=float).tolist()}}
    if name == "dawid_skene":
        errors = model.errors_
        output["priors"] = _series_dict(model.priors_)
        output["errors"] = {"index": [[str(worker), int(label)] for worker, label in errors.index],
                            "classes": [int(c) for c in errors.columns], "values": errors.to_numpy(float).tolist()}
    elif name == "glad":
        output["priors"] = _series_dict(model.priors_)
        output["alphas"] = _series_dict(model.alphas_)
        output["betas"] = _series_dict(model.betas_)
    else:
        output["workers"] = [str(worker) for worker in pd.unique(data["worker"])]
        output["label_order"] = [int(label) for label in pd.unique(data["label"])]
        output["spamming"] = np.asarray(model.spamming_, dtype=float).tolist()
        output["thetas"] = np.asarray(model.thetas_, dtype=float).tolist()
    return output


def _compare(paper: pd.Series, other: pd.Series) -> tuple[dict, pd.Index]:
    both = paper.notna() & other.notna()
    n_undefined = int((paper.notna() ^ other.notna()).sum())
    if not both.any():
        return {"n_compared": 0, "n_undefined": n_undefined, "n_differ": 0, "share_differ": np.nan,
                "kappa": np.nan}, pd.Index([])
    p, o = paper[both].astype(int), other[both].astype(int)
    differ = p != o
    with warnings.catch_warnings():  # one class in both: κ is undefined, NaN as documented
        warnings.simplefilter("ignore", UndefinedMetricWarning)
        kappa = cohen_kappa_score(p, o, labels=[0, 1], replace_undefined_by=np.nan)
    return {"n_compared": int(both.sum()), "n_undefined": n_undefined, "n_differ": int(differ.sum()),
            "share_differ": float(differ.mean()), "kappa": float(kappa)}, differ[differ].index


def agreement_matrix(labels: pd.DataFrame, names: tuple[str, ...]) -> pd.DataFrame:
    """κ between every pair of alternatives over the items both label (1 on the diagonal where defined)."""
    matrix = pd.DataFrame(np.nan, index=list(names), columns=list(names))
    for i, first in enumerate(names):
        for second in names[i:]:
            value = _compare(labels[first], labels[second])[0]["kappa"]
            matrix.loc[first, second] = matrix.loc[second, first] = value
    return matrix


SCORE_COLUMNS = ("participant", "team", "aq", "sata", "iat_d")


def alternatives_inputs_pack(scores: pd.DataFrame, labels: pd.DataFrame, *, missing: MissingRule,
                             aggregation: AggregationSettings) -> bytes:
    """Everything :func:`alternative_ground_truths` reads, compressed for storage beside the analysis run that used
    it (``annotation.study_alternatives``): the scores as the weights read them (``SCORE_COLUMNS``), the labels as
    a participant code, an item code and a value per row with the two code lists, and the settings. A compressed
    numpy archive without pickles, bounded by the number of labels: 50 annotators × 2,121 items (106,050 random
    labels) take about 33 kB. :func:`alternatives_inputs_unpack` gives back equal frames (same digest)."""
    participants, participant_codes = np.unique(labels["participant"].astype(str).to_numpy(), return_inverse=True)
    items, item_codes = np.unique(labels["item"].astype(str).to_numpy(), return_inverse=True)
    buffer = io.BytesIO()
    np.savez_compressed(
        buffer, settings=np.array(json.dumps({"missing": missing, "aggregation": aggregation.as_dict()})),
        score_participant=scores["participant"].astype(str).to_numpy(dtype=str),
        score_team=scores["team"].astype(str).to_numpy(dtype=str),
        # mypy matches the unpacked arrays against savez_compressed's allow_pickle: bool as well
        **{f"score_{name}": scores[name].to_numpy(dtype=float)  # type: ignore[arg-type]
           for name in ("aq", "sata", "iat_d")},
        participants=participants.astype(str), items=items.astype(str),
        participant_codes=participant_codes.astype(np.int32), item_codes=item_codes.astype(np.int32),
        values=labels["value"].to_numpy(dtype=np.int8))
    return buffer.getvalue()


def alternatives_inputs_unpack(data: bytes) -> tuple[pd.DataFrame, pd.DataFrame, MissingRule, AggregationSettings]:
    """The scores, labels, missing rule and aggregation settings packed by :func:`alternatives_inputs_pack`
    (participants, teams and items as strings, as the study's frames hold them)."""
    with np.load(io.BytesIO(bytes(data)), allow_pickle=False) as archive:
        settings = json.loads(str(archive["settings"]))
        scores = pd.DataFrame({"participant": archive["score_participant"].astype(object),
                               "team": archive["score_team"].astype(object),
                               **{name: archive[f"score_{name}"] for name in ("aq", "sata", "iat_d")}})
        labels = pd.DataFrame({"participant": archive["participants"].astype(object)[archive["participant_codes"]],
                               "item": archive["items"].astype(object)[archive["item_codes"]],
                               "value": archive["values"].astype(np.int64)})
    return scores, labels, settings["missing"], AggregationSettings(**settings["aggregation"])


def alternatives_inputs_digest(scores: pd.DataFrame, labels: pd.DataFrame, *, missing: MissingRule,
                               aggregation: AggregationSettings) -> str:
    """A SHA-256 of everything :func:`alternative_ground_truths` reads (scores, labels, missing rule, aggregation
    settings), independent of row order: equal digests mean equal inputs, so alternatives computed later from the
    stored data are known to be those of the analysis that asked for them."""
    digest = hashlib.sha256(json.dumps({"missing": missing, "aggregation": aggregation.as_dict()},
                                       sort_keys=True, default=str).encode())
    for frame in (scores, labels):
        ordered = frame.sort_values(list(frame.columns)).reset_index(drop=True) if len(frame.columns) else frame
        digest.update(",".join(map(str, frame.columns)).encode())
        digest.update(pd.util.hash_pandas_object(ordered, index=False).to_numpy().tobytes())
    return digest.hexdigest()


LEFT_OUT = {"loo_aq_sata": "IAT", "loo_aq_iat": "SATA", "loo_sata_iat": "AQ"}


def _annotator_set_notes(weights: pd.DataFrame, missing: MissingRule) -> list[str]:
    """Under "exclude" a leave-one-instrument-out weighting needs only the instruments it uses, so it also weights
    the annotators missing only the one left out, whom the paper's weights exclude: its difference from the paper's
    label then mixes the instrument with those annotators. Said per weighting, with their names."""
    if missing != "exclude":
        return []
    notes = []
    for name, instrument in LEFT_OUT.items():
        added = sorted(map(str, weights.index[weights[name].notna() & weights[PAPER].isna()]))
        if added:
            notes.append(f"{name}: also weights {len(added)} annotator(s) without an {instrument} score, whom the "
                         f"paper's weights exclude ({', '.join(added)}): its difference from the paper's label "
                         "changes the annotators as well as the instruments")
    return notes


def alternative_ground_truths(scores: pd.DataFrame, labels: pd.DataFrame, *, missing: MissingRule = "exclude",
                              aggregation: AggregationSettings | None = None,
                              crowdkit_seed: int = CROWDKIT_SEED) -> GroundTruthAlternatives:
    """Every alternative of the module docstring over ``scores`` (participant, team, aq, sata, iat_d) and
    ``labels`` (participant, item, value), compared with the paper's weighted label."""
    aggregation = aggregation or AggregationSettings()
    notes: list[str] = []
    weight_columns = {PAPER: trust_weights(scores, missing=missing)}
    for name, options in WEIGHTINGS.items():
        weight_columns[name] = trust_weights(scores, missing=missing, **options)
    for name, result in weight_columns.items():
        notes.extend(f"{name}: {note}" for note in result.notes)
    weights = pd.DataFrame({name: result.table.set_index("participant")["weight"]
                            for name, result in weight_columns.items()})
    notes.extend(_annotator_set_notes(weights, missing))

    paper = _weighted_labels(labels, weights[PAPER], aggregation)
    table = pd.DataFrame(index=paper.index)
    table[PAPER] = paper["weighted_label"].astype("Float64").astype(float)
    table["majority"] = paper["majority_label"].astype("Float64").astype(float)
    table["equal_weights"] = _weighted_labels(labels, None, aggregation)["weighted_label"].astype("Float64").astype(float)
    for name in WEIGHTINGS:
        table[name] = _weighted_labels(labels, weights[name], aggregation)["weighted_label"].astype(
            "Float64").astype(float)

    data = crowdkit_input(labels)
    crowdkit: dict = {"seed": crowdkit_seed, "n_labels": len(data)}
    one_class = data["label"].nunique() == 1
    if one_class:
        notes.append(f"every 0/1 label is {int(data['label'].iloc[0])}: crowd-kit's models can only return that class")
    for name, model in crowdkit_models(crowdkit_seed).items():
        if data.empty:
            table[name] = np.nan
            notes.append(f"{name}: no 0/1 labels, no model fitted")
            continue
        with warnings.catch_warnings():
            if one_class:  # log(0) of the absent classes' probabilities, as in crowd-kit: the fit still returns the one
                warnings.simplefilter("ignore", RuntimeWarning)
            model.fit(data)
        crowdkit[name] = _crowdkit_output(name, model, data)
        table[name] = pd.Series(crowdkit[name]["labels"], dtype=float).reindex(table.index.astype(str)).to_numpy()
    table["soft"] = paper["weighted_score"].astype(float)

    rows: list[dict[str, Any]] = []
    flips: list[dict[str, Any]] = []
    labelled = [name for name in NAMES if name != "soft"]
    for alternative in ALTERNATIVES:
        other = table[PAPER] if alternative.name == "soft" else table[alternative.name]
        summary, flipped = _compare(table[PAPER], other)
        if alternative.name == "soft":
            distance = (table["soft"] - table[PAPER]).abs()
            summary["mean_distance"] = float(distance.mean()) if distance.notna().any() else np.nan
        rows.append({"alternative": alternative.name, "label": alternative.label,
                     "description": alternative.description, **summary})
        # pandas-stubs type a cell read with .at as any Scalar (dates too); these columns hold 0.0 and 1.0
        flips.extend({"item": item, "alternative": alternative.name,
                      "paper_label": int(table.at[item, PAPER]),  # type: ignore[arg-type]
                      "alternative_label": int(table.at[item, alternative.name])}  # type: ignore[arg-type]
                     for item in flipped)
    return GroundTruthAlternatives(
        labels=table.reset_index(), weights=weights.rename_axis("participant").reset_index(), crowdkit=crowdkit,
        summary=pd.DataFrame(rows), agreement=agreement_matrix(table, tuple(labelled)),
        flipped=pd.DataFrame(flips, columns=["item", "alternative", "paper_label", "alternative_label"]),
        settings={"missing_instrument": missing, "aggregation": aggregation.as_dict(), "crowdkit_seed": crowdkit_seed,
                  "crowdkit_tie_rule": CROWDKIT_TIE_RULE,
                  "alternatives": [{"name": a.name, "label": a.label, "description": a.description}
                                   for a in ALTERNATIVES]},
        notes=notes)
