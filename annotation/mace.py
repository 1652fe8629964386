"""crowd-kit 1.4.2's MACE (Hovy et al. 2013, variational Bayes, ``method="vb"``) computed with numpy instead of
pandas: the same fit, restart for restart, about forty times faster (benchmarks/mace.py). Pure numpy, scipy and
pandas (pandas only to read the input and to build the returned frames).

crowd-kit's ``MACE._e_step`` rebuilds its per-label products and per-annotator sums with pandas groupby and column
assignment (~23 ms a call even for three annotators, 501 calls a fit). Here the labels are coded once with
``pd.factorize`` of worker, label and task, in that order and as given, as crowd-kit codes them; each E-step is then a
few array operations: a task's products by ``np.multiply.reduceat`` over the rows sorted by task (stable, so each
product multiplies in crowd-kit's row order), an annotator's sums by ``np.bincount``. Everything else follows
crowd-kit's ``fit``, ``_initialize``, ``_e_step``, ``_variational_m_step`` and ``decode_distribution`` line by line:

- each restart draws its start from the one ``random_state`` through ``scipy.stats.uniform(1, 1 + default_noise)``,
  spamming first, then strategies (so a seed gives crowd-kit's restarts, and an integer seed, as in crowd-kit,
  gives ten identical ones);
- the log marginal likelihood adds 1e-8 to each task's marginal; a restart replaces the best only if its likelihood
  is strictly greater; the best restart's parameters get one more E-step, whose marginals give ``probas_``;
- crowd-kit's layout is kept where it is inconsistent: the strategy counts are grouped by worker and label
  *sorted* (pandas groupby), so after the first M-step ``thetas_`` has its rows in sorted worker order and its
  columns in sorted label order, while every E-step indexes it with the factorize codes (order of appearance).
  ``spamming_`` is aligned by worker name, so its rows are in order of appearance.

One difference: pandas' groupby sums are compensated, ``np.bincount`` adds plainly in row order, so an annotator's
expected counts can differ from crowd-kit's in the last bits after the first M-step; everything before (the starts,
the products, the marginals) is bit for bit crowd-kit's. tests/annotation/test_mace.py checks ``probas_``,
``labels_``, ``spamming_`` and ``thetas_`` against crowd-kit's on random studies (rtol 1e-9, labels exactly). Only
``method="vb"`` is here (the study's), and no progress bars.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import cast

import numpy as np
import pandas as pd
import scipy.stats as sps
from numpy.typing import NDArray
from scipy.special import digamma

Array = NDArray[np.float64]

# crowd-kit's Dirichlet prior on every annotator's strategy (``strategy_priors_``), fixed there too.
STRATEGY_PRIOR = 10.0
# Added to each task's marginal before its log (crowd-kit's ``_e_step``): a task whose labels no setting explains
# still adds a finite term.
LOG_FLOOR = 1e-8


def _variational_normalize(x: Array, priors: Array | float) -> Array:
    """crowd-kit's ``variational_normalize``: exp(ψ(x + prior)) / exp(ψ(row sum)), rows whose normaliser is ~0 zero
    (reachable only with priors summing to far below 1)."""
    norm = np.exp(digamma((x + priors).sum(axis=1)))[:, np.newaxis]
    return np.divide(np.exp(digamma(x + priors)), norm, out=np.zeros_like(x), where=~np.isclose(norm, 0.0))


def _row_sums(gold: Array) -> Array:
    """Each task's marginal, summed as pandas 3.1 sums crowd-kit's gold label frame (``sum(axis=1)``): crowd-kit
    assigns that frame column by column, which leaves one block per column with the last column's first, and pandas
    adds the blocks in that order (last column, then the first to the last but one). Floating-point addition is not
    associative, so any other order could change the last bit for three labels or more."""
    total = gold[:, -1]
    for label in range(gold.shape[1] - 1):
        total = total + gold[:, label]
    return total


def _sums(groups: NDArray[np.intp], values: Array, n_groups: int) -> Array:
    """Each group's sum of ``values`` (``np.bincount`` with weights, which numpy's stubs type as integers)."""
    return cast(Array, np.bincount(groups, weights=values, minlength=n_groups))


@dataclass
class _Codes:
    """The labels coded once per fit, with what every E-step reuses."""

    workers: NDArray[np.intp]
    labels: NDArray[np.intp]
    tasks: NDArray[np.intp]
    n_workers: int
    n_labels: int
    by_task: NDArray[np.intp]  # rows sorted by task code, stably: crowd-kit's row order within each task
    task_starts: NDArray[np.intp]  # where each task code's rows start in by_task
    # Row → cell of crowd-kit's strategy counts: (worker, label) both ranked in sorted order, as groupby sorts them.
    strategy_cell: NDArray[np.intp]
    is_label: NDArray[np.bool_] = field(init=False)  # (rows, labels): the row's label is this column's

    def __post_init__(self) -> None:
        self.is_label = self.labels[:, np.newaxis] == np.arange(self.n_labels)


@dataclass
class MACE:
    """crowd-kit 1.4.2's ``MACE(method="vb")`` with the same parameters and fitted attributes (``probas_``,
    ``labels_``, ``spamming_``, ``thetas_``), computed vectorised (module docstring)."""

    n_restarts: int = 10
    n_iter: int = 50
    default_noise: float = 0.5
    alpha: float = 0.5
    beta: float = 0.5
    random_state: np.random.RandomState | int = 0
    spamming_: Array = field(init=False, repr=False)
    thetas_: Array = field(init=False, repr=False)
    probas_: pd.DataFrame = field(init=False, repr=False)
    labels_: pd.Series = field(init=False, repr=False)

    def _initialize(self, n_workers: int, n_labels: int) -> tuple[Array, Array]:
        """One restart's start, drawn as crowd-kit's ``_initialize`` draws it (spamming, then strategies)."""
        start = sps.uniform(1, 1 + self.default_noise)
        spamming = start.rvs(size=(n_workers, 2), random_state=self.random_state)
        thetas = start.rvs(size=(n_workers, n_labels), random_state=self.random_state)
        return spamming / spamming.sum(axis=1, keepdims=True), thetas / thetas.sum(axis=1, keepdims=True)

    def _e_step(self, codes: _Codes, spamming: Array, thetas: Array) -> tuple[float, Array, Array, Array]:
        """crowd-kit's ``_e_step``: the log marginal likelihood, the gold label marginals (task × label, unnormalised),
        the strategy expected counts (sorted worker × sorted label) and the knowing expected counts (worker × 2).
        Each product and quotient is written in crowd-kit's order of operations, so they round alike."""
        workers, labels, tasks = codes.workers, codes.labels, codes.tasks
        spam_0, spam_1, theta = spamming[workers, 0], spamming[workers, 1], thetas[workers, labels]
        # A row's probability of its label if the gold label were each column's: spamming, or knowing and right.
        given_gold = (spam_0 * theta)[:, np.newaxis] + spam_1[:, np.newaxis] * codes.is_label
        gold = np.multiply.reduceat(given_gold[codes.by_task], codes.task_starts, axis=0) / codes.n_labels
        instance = _row_sums(gold)
        log_marginal_likelihood = float(np.log(instance + LOG_FLOOR).sum())

        strategy = np.zeros(len(workers))
        for label in range(codes.n_labels):
            strategy = strategy + gold[tasks, label] / given_gold[:, label]
        strategy = strategy * spam_0 * theta / instance[tasks]
        knowing = gold[tasks, labels] * spam_1 / (spam_0 * theta + spam_1) / instance[tasks]

        strategy_counts = _sums(codes.strategy_cell, strategy, codes.n_workers * codes.n_labels)
        knowing_counts = np.column_stack([_sums(workers, strategy, codes.n_workers),
                                          _sums(workers, knowing, codes.n_workers)])
        return log_marginal_likelihood, gold, strategy_counts.reshape(codes.n_workers, -1), knowing_counts

    def fit(self, data: pd.DataFrame) -> MACE:
        """Fits crowd-kit's MACE to ``data`` (``worker``, ``task``, ``label`` columns) and returns ``self``."""
        workers, worker_names = pd.factorize(data["worker"])
        labels, label_names = pd.factorize(data["label"])
        tasks, task_names = pd.factorize(data["task"])
        n_workers, n_labels = len(worker_names), len(label_names)
        by_task = np.argsort(tasks, kind="stable")
        sorted_workers, _ = pd.factorize(data["worker"], sort=True)
        sorted_labels, _ = pd.factorize(data["label"], sort=True)
        codes = _Codes(workers=workers, labels=labels, tasks=tasks, n_workers=n_workers, n_labels=n_labels,
                       by_task=by_task,
                       task_starts=np.flatnonzero(np.r_[True, np.diff(tasks[by_task]) != 0]),
                       strategy_cell=sorted_workers * n_labels + sorted_labels)
        theta_priors = np.array([self.alpha, self.beta])

        best_log_marginal_likelihood = -np.inf
        best: tuple[Array, Array] | None = None
        for _ in range(self.n_restarts):
            spamming, thetas = self._initialize(n_workers, n_labels)
            log_marginal_likelihood, _, strategy_counts, knowing_counts = self._e_step(codes, spamming, thetas)
            for _ in range(self.n_iter):
                spamming = _variational_normalize(knowing_counts, theta_priors)
                thetas = _variational_normalize(strategy_counts, STRATEGY_PRIOR)
                log_marginal_likelihood, _, strategy_counts, knowing_counts = self._e_step(codes, spamming, thetas)
            if log_marginal_likelihood > best_log_marginal_likelihood:
                best_log_marginal_likelihood = log_marginal_likelihood
                best = spamming, thetas
        if best is None:  # crowd-kit fails here too (an unbound best_thetas): no restart, or no finite likelihood
            raise ValueError(f"MACE: no restart of {self.n_restarts} had a likelihood above -inf")
        self.spamming_, self.thetas_ = best
        _, gold, _, _ = self._e_step(codes, self.spamming_, self.thetas_)

        # crowd-kit's decode_distribution: each task's marginals over their sum
        self.probas_ = pd.DataFrame(gold / _row_sums(gold)[:, np.newaxis], index=task_names, columns=label_names)
        labels_ = self.probas_.idxmax(axis="columns")
        labels_.name = "agg_label"  # what crowd-kit's labels_ attribute names every Series set on it
        labels_.index.name = "task"  # the index probas_ shares: crowd-kit names both so
        self.labels_ = labels_
        return self
