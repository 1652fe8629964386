"""Simulated participants for demos, tests and benchmarks (``manage.py simulate_study``). Pure numpy.

Everything here is a function of a seed: the same seed gives the same participants, answers, IAT trials,
items and labels. Each kind of draw has its own random stream (``np.random.default_rng([seed, stream,
...])``), and per-participant draws add the participant's index, so one participant's answers do not
depend on how many others there are or on the order in which they are processed.

The model
---------
Participants (``draw_participants``). Three latent traits, jointly normal:

- ``trait``: autistic-trait level (standard normal); drives the AQ-50 answers.
- ``attitude``: explicit attitude towards autistic people (standard normal, higher = more positive);
  drives the SATA answers.
- ``implicit_bias``: on the scale of the IAT D score (mean ``IAT_BIAS_MEAN``, SD ``IAT_BIAS_SD``; positive
  = more anti-autism bias); drives the IAT latencies.

Correlations (``TRAIT_CORRELATION``): trait–attitude +0.3, trait–bias −0.3, attitude–bias −0.45. Teams
are contiguous and balanced: with N participants and T teams, participant i is in team ``i * T // N``.

Questionnaires (``likert_answers``). A graded-response model: for participant i and item j the latent
response is ``loading · level_i + difficulty_j + logistic noise``, cut at thresholds spread evenly
around 0 into the item's options, in the direction of its key (the end of the option list that scores
higher). So the probability of answering in the keyed direction rises with the level: with the AQ's
0/1 keys, P(item scores 1) = sigmoid(loading · trait + difficulty). Item difficulties are drawn once
per instrument (from the seed), not per participant.

IAT (``iat_trials``). For each planned trial a lognormal latency around the participant's own speed
(about 700 ms in combined blocks, 15 % faster in single-category blocks), plus ``implicit_bias ·
IAT_PENALTY_MS`` in the prejudice-inconsistent pairing (so a larger bias gives a larger positive D).
About 6 % of trials are errors (the wrong key first, then the correct one 200–800 ms later), about
1 % are anticipations (150–300 ms, either key) and about 0.5 % are very slow (2.5–12 s, some beyond
the 10 s screen).

Items and labels (``draw_items``, ``label_probabilities``, ``participant_labels``). Each item has a
latent ``true_ableism`` (the log-odds that an annotator of average perspective calls it ableist).
Clear items (80 %) are ableist with probability ``ABLEIST_RATE``, with ``|true_ableism|`` around 2.5,
so nearly everyone agrees. Contested items (20 %) are ableist (seen as such by annotators with
autistic traits, a positive attitude and little bias) with ``true_ableism`` near 0, and perspective
matters: P(label 1) = sigmoid(true_ableism − slope · insensitivity), where ``insensitivity`` is a
standardised mix of more implicit bias, a less positive attitude and fewer autistic traits (the slope
is ``CONTESTED_SLOPE`` on contested items, ``CLEAR_SLOPE`` on clear ones). The weighted ground truth
up-weights high AQ, high SATA and low IAT D, i.e. low insensitivity, so on contested items it can
differ from the majority vote. Any label is "unrelated / needs more context" (-1) with probability
``UNRELATED_RATE``.

Labels are drawn per (participant, item) pair from the participant's own stream, so a participant
gives an item the same label whichever items they happen to be assigned.
"""
from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

# Random streams (the second element of every generator's seed).
_PARTICIPANTS, _SEEDS, _AQ, _SATA, _IAT, _ITEMS, _LABELS, _ANSWER_TIMES, _DIFFICULTIES, _LABEL_TIMES = range(1, 11)

TRAITS = ("trait", "attitude", "implicit_bias")
TRAIT_CORRELATION = np.array([
    [1.0, 0.3, -0.3],
    [0.3, 1.0, -0.45],
    [-0.3, -0.45, 1.0],
])
IAT_BIAS_MEAN = 0.35
IAT_BIAS_SD = 0.4
# Weights of (trait, attitude, standardised implicit bias), in the order of TRAITS, in the labelling
# "insensitivity": fewer autistic traits, a less positive attitude and more implicit bias make an
# annotator likelier to miss a contested item's ableism.
INSENSITIVITY_WEIGHTS = np.array([-0.15, -0.35, 0.5])

AQ_LOADING, AQ_DIFFICULTY_MEAN, AQ_DIFFICULTY_SD = 1.2, -0.5, 0.6
SATA_LOADING, SATA_DIFFICULTY_MEAN, SATA_DIFFICULTY_SD = 1.2, 1.0, 0.4
LIKERT_THRESHOLD_SPREAD = 3.0   # the outer thresholds sit at ±spread/2 on the latent response

IAT_SPEED_MS = 700.0            # median latency of a correct combined-block trial
IAT_SPEED_SD_LOG = 0.15         # between-participant spread of speed (log scale)
IAT_TRIAL_SD_LOG = 0.25         # within-participant spread (log scale)
IAT_SINGLE_BLOCK_FACTOR = 0.85  # single-category blocks are faster
IAT_PENALTY_MS = 220.0          # extra latency in the inconsistent pairing per unit of implicit bias
IAT_MIN_MS = 250.0
IAT_ERROR_RATE = 0.06
IAT_FAST_RATE = 0.01
IAT_SLOW_RATE = 0.005

CONTESTED_FRACTION = 0.2
ABLEIST_RATE = 0.35
CLEAR_STRENGTH_MEAN, CLEAR_STRENGTH_SD = 2.5, 0.6
CONTESTED_MEAN, CONTESTED_SD = 0.2, 0.5
CONTESTED_SLOPE = 2.0
CLEAR_SLOPE = 0.3
UNRELATED_RATE = 0.02

_OTHER_KEY = {"e": "i", "i": "e"}


def _rng(seed: int, stream: int, *more: int) -> np.random.Generator:
    if seed < 0:
        raise ValueError(f"seed must be a non-negative integer, not {seed}")
    return np.random.default_rng([int(seed), stream, *(int(m) for m in more)])


def _sigmoid(x: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-x))


@dataclass(frozen=True)
class SimulatedParticipants:
    """Latent traits of N simulated participants (arrays of length N, index = participant order)."""

    trait: np.ndarray
    attitude: np.ndarray
    implicit_bias: np.ndarray
    team: np.ndarray

    def __len__(self) -> int:
        return len(self.trait)

    @property
    def insensitivity(self) -> np.ndarray:
        """The standardised mix (population SD 1, mean 0) of more bias, a less positive attitude and fewer
        autistic traits that makes an annotator likelier to call a contested item not ableist."""
        z = np.column_stack([self.trait, self.attitude, (self.implicit_bias - IAT_BIAS_MEAN) / IAT_BIAS_SD])
        sd = math.sqrt(float(INSENSITIVITY_WEIGHTS @ TRAIT_CORRELATION @ INSENSITIVITY_WEIGHTS))
        return (z @ INSENSITIVITY_WEIGHTS) / sd


@dataclass(frozen=True)
class SimulatedItems:
    """M simulated items: ``ableist`` (0/1, the truth from the least biased perspective), ``contested``
    (perspective matters) and ``true_ableism`` (log-odds of "ableist" for an average annotator)."""

    ableist: np.ndarray
    contested: np.ndarray
    true_ableism: np.ndarray

    def __len__(self) -> int:
        return len(self.ableist)


def draw_participants(seed: int, n: int, *, teams: int = 2) -> SimulatedParticipants:
    """N participants' latent traits (correlated as ``TRAIT_CORRELATION``) and balanced contiguous teams
    0..teams-1 (participant i in team ``i * teams // n``)."""
    if n < 1:
        raise ValueError("n must be at least 1")
    if not 1 <= teams <= n:
        raise ValueError(f"teams must be between 1 and n ({n}), not {teams}")
    z = _rng(seed, _PARTICIPANTS).standard_normal((n, 3)) @ np.linalg.cholesky(TRAIT_CORRELATION).T
    return SimulatedParticipants(trait=z[:, 0], attitude=z[:, 1], implicit_bias=IAT_BIAS_MEAN + IAT_BIAS_SD * z[:, 2],
                                 team=np.arange(n) * teams // n)


def participant_seeds(seed: int, n: int) -> list[int]:
    """N distinct seeds in [0, 2^31) for the participants' ``Participant.seed`` (item orders, IAT design)."""
    seeds: list[int] = []
    rng = _rng(seed, _SEEDS)
    while len(seeds) < n:
        for value in rng.integers(0, 2**31, size=n - len(seeds)).tolist():
            if value not in seeds:
                seeds.append(value)
    return seeds


def likert_answers(levels: np.ndarray, item_keys: Sequence[Sequence[float]], *, seed: int, stream: int,
                   loading: float, difficulty_mean: float, difficulty_sd: float,
                   spread: float = LIKERT_THRESHOLD_SPREAD) -> np.ndarray:
    """Option indices (N × items) from a graded-response model (module docstring).

    ``item_keys`` gives, per item in the instrument's order, the score of each option (its key vector);
    the option at the higher-scoring end is the keyed direction. ``stream`` separates instruments.
    Participant i's answers come from their own stream, item difficulties from the instrument's.
    """
    levels = np.asarray(levels, dtype=float)
    keys = [np.asarray(k, dtype=float) for k in item_keys]
    n_options = {len(k) for k in keys}
    if len(n_options) != 1:
        raise ValueError("every item must have the same number of options")
    k = n_options.pop()
    difficulties = _rng(seed, _DIFFICULTIES, stream).normal(difficulty_mean, difficulty_sd, len(keys))
    increasing = np.array([key[-1] > key[0] for key in keys])
    thresholds = np.linspace(-spread / 2, spread / 2, k - 1)
    answers = np.empty((len(levels), len(keys)), dtype=int)
    for i, level in enumerate(levels):
        noise = _rng(seed, stream, i).logistic(size=len(keys))
        latent = loading * level + difficulties + noise
        position = np.searchsorted(thresholds, latent)  # 0 .. k-1, k-1 = most in the keyed direction
        answers[i] = np.where(increasing, position, k - 1 - position)
    return answers


def aq_answers(participants: SimulatedParticipants, item_keys: Sequence[Sequence[float]], *, seed: int) -> np.ndarray:
    """AQ-50 option indices (N × 50) from the autistic-trait level: P(item scores 1) = sigmoid(1.2 · trait +
    difficulty), difficulties around −0.5, so the mean total is about 20 and rises with the trait."""
    return likert_answers(participants.trait, item_keys, seed=seed, stream=_AQ, loading=AQ_LOADING,
                          difficulty_mean=AQ_DIFFICULTY_MEAN, difficulty_sd=AQ_DIFFICULTY_SD)


def sata_answers(participants: SimulatedParticipants, item_keys: Sequence[Sequence[float]], *,
                 seed: int) -> np.ndarray:
    """SATA option indices (N × items) from the explicit attitude (higher attitude = higher score)."""
    return likert_answers(participants.attitude, item_keys, seed=seed, stream=_SATA, loading=SATA_LOADING,
                          difficulty_mean=SATA_DIFFICULTY_MEAN, difficulty_sd=SATA_DIFFICULTY_SD)


def answer_times_ms(seed: int, participant: int, n: int, *, stream: int = 0) -> list[int]:
    """N plausible per-item answer times (lognormal around 3.5 s) for a questionnaire's autosave."""
    times = _rng(seed, _ANSWER_TIMES, stream, participant).lognormal(math.log(3500.0), 0.4, n)
    return [round(t) for t in times]


def label_times_ms(seed: int, participant: int, n: int) -> list[int]:
    """N plausible times to read a sentence with its context and label it (lognormal around 8 s; ours, for the
    simulated timeline, not from any paper)."""
    times = _rng(seed, _LABEL_TIMES, participant).lognormal(math.log(8000.0), 0.5, n)
    return [round(t) for t in times]


def iat_trials(design: Sequence[Mapping[str, Any]], implicit_bias: float, *, seed: int,
               participant: int) -> list[list[dict]]:
    """The trials a participant posts for each block of their IAT design, in the format of
    ``psychometrics.services.iat_block_submit``: ``{index, stimulus, first_key, modality, latency_first_ms,
    latency_correct_ms}`` per planned trial (modality "keyboard": the simulated latencies are key latencies) (latencies in ms, 0.1 ms resolution).

    ``design`` is ``IATSession.design``: blocks with ``pairing`` ("consistent", "inconsistent" or None)
    and ``trials`` (each with ``index``, ``stimulus`` and ``correct_key``). The latency model is in the
    module docstring; ``participant`` (their index) chooses their random stream.
    """
    rng = _rng(seed, _IAT, participant)
    speed = IAT_SPEED_MS * math.exp(rng.normal(0.0, IAT_SPEED_SD_LOG))
    blocks = []
    for block in design:
        planned = block["trials"]
        n = len(planned)
        pairing = block.get("pairing")
        median = speed if pairing else speed * IAT_SINGLE_BLOCK_FACTOR
        latency = rng.lognormal(math.log(median), IAT_TRIAL_SD_LOG, n)
        if pairing == "inconsistent":
            latency = latency + implicit_bias * IAT_PENALTY_MS
        latency = np.maximum(latency, IAT_MIN_MS)
        kind = rng.random(n)
        fast = kind < IAT_FAST_RATE
        slow = (kind >= IAT_FAST_RATE) & (kind < IAT_FAST_RATE + IAT_SLOW_RATE)
        latency = np.where(fast, rng.uniform(150.0, 300.0, n), latency)
        latency = np.where(slow, np.exp(rng.uniform(math.log(2500.0), math.log(12000.0), n)), latency)
        error = np.where(fast, rng.random(n) < 0.5, rng.random(n) < IAT_ERROR_RATE)
        correction = rng.uniform(200.0, 800.0, n)
        trials = []
        for t, trial in enumerate(planned):
            first = round(float(latency[t]), 1)
            correct = round(float(latency[t] + correction[t]), 1) if error[t] else first
            key = _OTHER_KEY[trial["correct_key"]] if error[t] else trial["correct_key"]
            trials.append({"index": trial["index"], "stimulus": trial["stimulus"], "first_key": key,
                           "modality": "keyboard",
                           "latency_first_ms": first, "latency_correct_ms": correct})
        blocks.append(trials)
    return blocks


def draw_items(seed: int, m: int, *, contested_fraction: float = CONTESTED_FRACTION,
               ableist_rate: float = ABLEIST_RATE) -> SimulatedItems:
    """M items: a random ``contested_fraction`` of them contested (all ableist, ``true_ableism`` near 0);
    the others clear (ableist with probability ``ableist_rate``, ``|true_ableism|`` around 2.5)."""
    if m < 1:
        raise ValueError("m must be at least 1")
    rng = _rng(seed, _ITEMS)
    contested = np.zeros(m, dtype=bool)
    contested[rng.permutation(m)[:round(contested_fraction * m)]] = True
    ableist = np.where(contested, 1, (rng.random(m) < ableist_rate).astype(int))
    strength = np.abs(rng.normal(CLEAR_STRENGTH_MEAN, CLEAR_STRENGTH_SD, m))
    contested_level = rng.normal(CONTESTED_MEAN, CONTESTED_SD, m)
    true_ableism = np.where(contested, contested_level, np.where(ableist == 1, strength, -strength))
    return SimulatedItems(ableist=ableist, contested=contested, true_ableism=true_ableism)


def items_from_labels(labels: np.ndarray) -> tuple[SimulatedItems, np.ndarray]:
    """Items whose latent truth follows labels already given (an M × K array of 1, 0 and -1, one column per
    annotator), with a mask of the items most of them called unrelated (-1).

    An item is contested when its 0/1 labels disagree (``true_ableism`` = ``CONTESTED_MEAN``, ableist as every
    contested item is); otherwise clear, ableist when they say 1, at ``±CLEAR_STRENGTH_MEAN``. An item with no 0/1
    label is clear and not ableist. So simulated annotators labelling beside real ones agree where they agreed."""
    labels = np.asarray(labels)
    if labels.ndim != 2 or labels.shape[0] < 1 or labels.shape[1] < 1:
        raise ValueError(f"labels must be an M × K array with M, K ≥ 1, not of shape {labels.shape}")
    ones, zeros = (labels == 1).sum(axis=1), (labels == 0).sum(axis=1)
    contested = (ones > 0) & (zeros > 0)
    ableist = (contested | ((ones > 0) & (zeros == 0))).astype(int)
    true_ableism = np.where(contested, CONTESTED_MEAN, np.where(ableist == 1, CLEAR_STRENGTH_MEAN,
                                                                -CLEAR_STRENGTH_MEAN))
    unrelated = (labels == -1).sum(axis=1) * 2 > labels.shape[1]
    return SimulatedItems(ableist=ableist, contested=contested, true_ableism=true_ableism), unrelated


def label_probabilities(insensitivity: np.ndarray, items: SimulatedItems) -> np.ndarray:
    """P(label 1 | the label is 0 or 1) for each annotator (rows, by ``insensitivity``) and item (columns):
    sigmoid(true_ableism − slope · insensitivity), slope ``CONTESTED_SLOPE`` on contested items and
    ``CLEAR_SLOPE`` on clear ones."""
    slope = np.where(items.contested, CONTESTED_SLOPE, CLEAR_SLOPE)
    return _sigmoid(items.true_ableism[None, :] - np.outer(np.atleast_1d(insensitivity), slope))


def participant_labels(participants: SimulatedParticipants, participant: int, items: SimulatedItems, *,
                       seed: int, unrelated_rate: float = UNRELATED_RATE) -> np.ndarray:
    """The label (1, 0 or -1) participant ``participant`` would give each item (length M), drawn from
    their own stream, so it does not depend on which items they are assigned."""
    rng = _rng(seed, _LABELS, participant)
    draws, unrelated = rng.random(len(items)), rng.random(len(items)) < unrelated_rate
    p = label_probabilities(participants.insensitivity[participant], items)[0]
    return np.where(unrelated, -1, (draws < p).astype(int))


def items_per_annotator(n_items: int, annotators_per_item: int, n_participants: int) -> int:
    """The items each annotator needs so that every item can get its annotators: ceil(M · k / N)."""
    return math.ceil(n_items * annotators_per_item / n_participants)
