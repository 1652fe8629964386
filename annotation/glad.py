"""crowd-kit 1.4.2's GLAD (Whitehill et al. 2009) computed with numpy instead of pandas: the same fit, bit for bit,
30 to 70 times faster (benchmarks/glad.py). Pure numpy, scipy and pandas (pandas to read the input, to build the
returned frames, and for its groupby sums, :mod:`annotation.group_sums`).

crowd-kit's ``GLAD`` keeps one row per label and candidate true label (``melt``) and rebuilds that frame with
``set_index``, ``merge`` and ``groupby`` at its every E-step and at every objective and gradient evaluation inside
scipy's conjugate gradients (milliseconds each, hundreds of evaluations a fit). Here the labels are coded once with
``pd.factorize`` of worker, task and label, the order of appearance crowd-kit's ``pd.unique`` gives them; each
evaluation is a few array operations on (class × label) arrays laid out as crowd-kit's melted frame is (the classes
in order of appearance, then the labels in input order), each written in crowd-kit's order of operations, with
pandas' groupby sums on the group numbers crowd-kit's ``groupby`` gives those rows (sorted tasks, workers and
classes), which decide how pandas adds them. Everything else follows crowd-kit's ``fit``, ``_init``,
``_e_step``, ``_compute_Q``, ``_gradient_Q`` and ``_m_step`` line by line:

- alphas and betas start at 1 with N(1, 1) priors, the class priors are uniform over the labels present; every
  M-step is the same ``scipy.optimize.minimize(method="CG", tol=m_step_tol, options={"maxiter": m_step_max_iter})``
  from the previous parameters, on crowd-kit's objective (−Q) and gradient, with its ``_softplus`` (cut at ±30) and
  scipy's ``logsumexp``, ``expit`` and normal density, so every evaluation, and so every CG step, is crowd-kit's;
- the EM stops when the loss gains less than ``tol``; as in crowd-kit the loss before the first iteration is Q
  itself while every later one is Q over the number of melted rows (labels × classes), so the first iteration
  never stops it;
- ``probas_`` are the posteriors of the last E-step, which precedes the last M-step: as in crowd-kit they are not
  recomputed from the final ``alphas_`` and ``betas_``. ``probas_`` has the tasks and the classes sorted (crowd-kit's
  ``groupby`` and ``unstack``), ``alphas_`` and ``betas_`` the order of appearance;
- sums skip NaN as pandas' do: with one class crowd-kit's log-likelihood of a wrong label is 0 × log 0 = NaN, which
  its sums drop, so every task gets that class with probability 1 (numpy warns of the log 0, as in crowd-kit); the
  objective then keeps only the priors while the gradient keeps the labels' terms, and the conjugate gradients
  fail their line searches as crowd-kit's do.

tests/annotation/test_glad.py checks ``probas_``, ``labels_``, ``alphas_``, ``betas_``, ``priors_`` and
``loss_history_`` equal to crowd-kit's on random studies. Only crowd-kit's default priors are here (the study's:
``labels_priors``, ``alphas_priors_mean`` and ``betas_priors_mean`` not given), and no progress bars.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import cast

import numpy as np
import pandas as pd
import scipy.special
from numpy.typing import NDArray
from scipy.optimize import minimize

from annotation.group_sums import group_sums

Array = NDArray[np.float64]

# crowd-kit's prior mean of every alpha and beta (``alphas_priors_mean_``, ``betas_priors_mean_``) and their start.
PRIOR_MEAN = 1.0
# crowd-kit's ``_softplus`` limit: beyond ±30 softplus(x) is taken as max(x, 0).
SOFTPLUS_LIMIT = 30
# scipy.stats.norm's density constant, as scipy computes it (``_norm_pdf_C``)
NORM_PDF_C = np.sqrt(2 * np.pi)


def _softplus(x: Array) -> Array:
    """crowd-kit's ``GLAD._softplus``, log(1 + exp(x)), with its masks as 0/1 factors (so the same products)."""
    positive, negative = x > SOFTPLUS_LIMIT, x < -SOFTPLUS_LIMIT
    inside = 1.0 - (positive | negative)
    return cast(Array, np.log1p(np.exp(x * inside)) * inside + x * positive)


def _log_prior(x: Array) -> Array:
    """crowd-kit's ``np.log(scipy.stats.norm.pdf(x))`` of each parameter's distance from its prior mean, with
    scipy's formula for the density (``_norm_pdf``) but not its argument handling, a third of the port's time."""
    return cast(Array, np.log(np.exp(-x**2 / 2.0) / NORM_PDF_C))


def _ranks(names: pd.Index) -> NDArray[np.intp]:
    """Each name's place in sorted order: the group numbers of crowd-kit's ``groupby`` (``sort=True``)."""
    ranks = np.empty(len(names), dtype=np.intp)
    ranks[np.argsort(names)] = np.arange(len(names))
    return ranks


@dataclass
class _Codes:
    """The labels coded once per fit. Arrays over the melted rows are (classes, labels): the classes in order of
    appearance, then the labels in input order, crowd-kit's melted frame row for row; they are summed by the group
    numbers crowd-kit's groupby gives them (sorted keys), which decide how pandas adds (annotation.group_sums)."""

    workers: NDArray[np.intp]  # each label's worker, task and class, numbered in order of appearance
    tasks: NDArray[np.intp]
    classes: NDArray[np.intp]
    worker_ranks: NDArray[np.intp]  # each worker's, task's and class's place in sorted order
    task_ranks: NDArray[np.intp]
    class_ranks: NDArray[np.intp]
    delta: Array = field(init=False)  # (classes, labels): 1.0 where the label is the class, crowd-kit's ``delta``
    cells: NDArray[np.intp] = field(init=False)  # melted row → (sorted task, sorted class): the E-step's groups
    melted_task_ranks: NDArray[np.intp] = field(init=False)  # melted row → sorted task, sorted worker
    melted_worker_ranks: NDArray[np.intp] = field(init=False)

    def __post_init__(self) -> None:
        n_classes = len(self.class_ranks)
        self.delta = (self.classes == np.arange(n_classes)[:, np.newaxis]).astype(float)
        self.melted_task_ranks = np.tile(self.task_ranks[self.tasks], n_classes)
        self.melted_worker_ranks = np.tile(self.worker_ranks[self.workers], n_classes)
        self.cells = self.melted_task_ranks * n_classes + np.repeat(self.class_ranks, len(self.tasks))


@dataclass
class GLAD:
    """crowd-kit 1.4.2's ``GLAD`` with its default priors and the same fitted attributes (``probas_``, ``labels_``,
    ``alphas_``, ``betas_``, ``priors_``, ``loss_history_``), computed vectorised (module docstring)."""

    n_iter: int = 100
    tol: float = 1e-5
    m_step_max_iter: int = 25
    m_step_tol: float = 1e-2
    probas_: pd.DataFrame = field(init=False, repr=False)
    labels_: pd.Series = field(init=False, repr=False)
    alphas_: pd.Series = field(init=False, repr=False)
    betas_: pd.Series = field(init=False, repr=False)
    priors_: pd.Series = field(init=False, repr=False)
    loss_history_: list[float] = field(init=False, repr=False)

    def _log_likelihoods(self, codes: _Codes, alphas: Array, betas: Array) -> Array:
        """Each melted row's log-probability of its label if the true label were the row's class (crowd-kit's
        ``_e_step`` and ``_compute_Q`` write it alike), with α·exp(β) as its reparameterisation has it."""
        alpha_beta = alphas[codes.workers] * np.exp(betas[codes.tasks])
        log_sigma = -_softplus(-alpha_beta)
        log_one_minus_sigma = -_softplus(alpha_beta)
        return cast(Array, codes.delta * log_sigma + (1.0 - codes.delta) * (
            log_one_minus_sigma - np.log(len(codes.class_ranks) - 1)))

    def _e_step(self, codes: _Codes, alphas: Array, betas: Array, log_priors: Array) -> tuple[Array, Array]:
        """crowd-kit's ``_e_step``: each task's posterior over the classes, (sorted task × sorted class) as its
        ``probas_``, and the same posteriors on the melted rows."""
        n_tasks, n_classes = len(codes.task_ranks), len(codes.class_ranks)
        sums = group_sums(codes.cells, self._log_likelihoods(codes, alphas, betas).ravel(), n_tasks * n_classes)
        by_task = sums.reshape(n_tasks, n_classes) + log_priors
        posteriors = np.exp(by_task - scipy.special.logsumexp(by_task, axis=1, keepdims=True))
        return posteriors, posteriors[:, codes.class_ranks].T[:, codes.task_ranks[codes.tasks]]

    def _q(self, codes: _Codes, posteriors: Array, alphas: Array, betas: Array) -> float:
        """crowd-kit's ``_compute_Q``: the expected complete log-likelihood under the posteriors, plus the N(1, 1)
        log-priors of every alpha and beta; NaN becomes −inf."""
        expectation = posteriors * self._log_likelihoods(codes, alphas, betas)
        q = np.where(np.isnan(expectation), 0.0, expectation).ravel().sum()
        q += _log_prior(alphas - PRIOR_MEAN).sum()
        q += _log_prior(betas - PRIOR_MEAN).sum()
        return -np.inf if np.isnan(q) else float(q)

    def _gradient(self, codes: _Codes, posteriors: Array, alphas: Array, betas: Array) -> tuple[Array, Array]:
        """crowd-kit's ``_gradient_Q``: dQ/dα per annotator and dQ/dβ per task, each with its prior's term."""
        exp_beta = np.exp(betas[codes.tasks])
        sigma = scipy.special.expit(alphas[codes.workers] * exp_beta)
        common = posteriors * (codes.delta - sigma)
        d_beta = group_sums(codes.melted_task_ranks, (common * alphas[codes.workers] * exp_beta).ravel(),
                            len(betas))[codes.task_ranks]
        d_beta -= betas - PRIOR_MEAN
        d_alpha = group_sums(codes.melted_worker_ranks, (common * exp_beta).ravel(), len(alphas))[codes.worker_ranks]
        d_alpha -= alphas - PRIOR_MEAN
        return d_alpha, d_beta

    def _m_step(self, codes: _Codes, posteriors: Array, alphas: Array, betas: Array) -> tuple[Array, Array]:
        """crowd-kit's ``_m_step``: scipy's conjugate gradients on −Q over (alphas, betas) from the current ones."""
        n_workers = len(alphas)

        def objective(x: Array) -> float:
            return -self._q(codes, posteriors, x[:n_workers], x[n_workers:])

        def gradient(x: Array) -> Array:
            d_alpha, d_beta = self._gradient(codes, posteriors, x[:n_workers], x[n_workers:])
            return -np.concatenate([d_alpha, d_beta])

        result = minimize(objective, np.concatenate([alphas, betas]), method="CG", jac=gradient, tol=self.m_step_tol,
                          options={"disp": False, "maxiter": self.m_step_max_iter})
        return result.x[:n_workers], result.x[n_workers:]

    def fit(self, data: pd.DataFrame) -> GLAD:
        """Fits crowd-kit's GLAD to ``data`` (``worker``, ``task``, ``label`` columns) and returns ``self``."""
        workers, worker_names = pd.factorize(data["worker"])
        tasks, task_names = pd.factorize(data["task"])
        classes, class_names = pd.factorize(data["label"])
        codes = _Codes(workers=workers, tasks=tasks, classes=classes, worker_ranks=_ranks(worker_names),
                       task_ranks=_ranks(task_names), class_ranks=_ranks(class_names))
        alphas, betas = np.full(len(worker_names), PRIOR_MEAN), np.full(len(task_names), PRIOR_MEAN)
        self.priors_ = pd.Series(1.0 / len(class_names), index=class_names)
        log_priors = np.log(self.priors_.to_numpy())[np.argsort(class_names)]

        probas, posteriors = self._e_step(codes, alphas, betas, log_priors)
        q = self._q(codes, posteriors, alphas, betas)
        self.loss_history_ = []
        for _ in range(self.n_iter):
            last_q = q
            probas, posteriors = self._e_step(codes, alphas, betas, log_priors)
            alphas, betas = self._m_step(codes, posteriors, alphas, betas)
            q = self._q(codes, posteriors, alphas, betas) / posteriors.size
            self.loss_history_.append(q)
            if q - last_q < self.tol:
                break

        self.alphas_ = pd.Series(alphas, index=pd.Index(worker_names, name="worker"), name="alpha")
        self.betas_ = pd.Series(betas, index=pd.Index(task_names, name="task"), name="beta")
        self.probas_ = pd.DataFrame(probas, index=pd.Index(task_names[np.argsort(task_names)], name="task"),
                                    columns=pd.Index(class_names[np.argsort(class_names)], name="variable"))
        labels_ = self.probas_.idxmax(axis="columns")
        labels_.name = "agg_label"  # what crowd-kit's labels_ attribute names every Series set on it
        self.labels_ = labels_
        return self
