"""crowd-kit 1.4.2's Dawid–Skene (Dawid & Skene 1979, EM initialised from the majority vote) computed with numpy
instead of pandas: the same fit, bit for bit, 20 to 100 times faster (benchmarks/dawid_skene.py). Pure numpy and pandas
(pandas to read the input, to build the returned frames, and for its groupby sums, :mod:`annotation.group_sums`).

crowd-kit's ``DawidSkene`` joins the labels with the posteriors or the error matrices and groups them again at
every E-step, M-step and evidence lower bound (about twenty milliseconds an iteration even for three annotators).
Here the labels are coded once with ``pd.factorize`` of task, worker, label and (worker, label) pair, the order of
appearance in which crowd-kit's ``groupby(sort=False)`` and ``MajorityVote``'s ``unstack`` lay out every frame; each
step is a few array operations in crowd-kit's order of operations, with pandas' groupby sums on the same group
numbers. Everything else follows crowd-kit's ``fit``, ``_m_step``, ``_e_step`` and ``_evidence_lower_bound`` line by
line:

- the start is ``MajorityVote``'s posteriors (each task's label shares); the priors are the posteriors' mean over
  the tasks; an annotator's error matrix has a row for each label they gave (only those), each cell clipped below
  at 1e-10 before the rows are divided by their column sums; the E-step works in base-2 logarithms with the priors
  clipped at 1e-10 and each task's log-likelihoods shifted by their maximum;
- the EM stops when the evidence lower bound over the number of labels gains less than ``tol`` (the first
  iteration compares with −inf, so it never stops there);
- crowd-kit's layout and quirks are kept: tasks, classes and (worker, label) rows in order of appearance, not
  sorted; the evidence lower bound clips the posteriors it is given at 1e-10 in place, so ``probas_`` (those of the
  last E-step) are clipped too and need not sum to 1 exactly; its joint term renames classes equal to 1 or 0 to
  "True" and "False" before aligning the posteriors with the log-probabilities, so its per-class sums are added
  in the order of that aligned (sorted) index, as here; ``errors_`` has the unnamed columns of a joined frame.

pandas' memory layout matters too. A frame's block holds each class's values either together or interleaved, and
numpy adds along a class pairwise in the first case, one value after the other in the second: so the priors (a
mean over the tasks), the posteriors' normalisation and both terms of the evidence lower bound add in one order or
the other. The layout follows the groupby that made the frame: ``np.add.reduceat`` (rows of each group together,
in order: the study's input, sorted by task, takes it for the posteriors) leaves classes together, the compensated
kernel interleaved, and a product of two frames has them together if either factor does. :func:`_block` lays the
arrays out alike before each of those reductions.

tests/annotation/test_dawid_skene.py checks ``probas_``, ``labels_``, ``priors_``, ``errors_`` and
``loss_history_`` equal to crowd-kit's on random studies, in shuffled, task-sorted and task-grouped row orders. Not
here: ``true_labels``, ``initial_error`` (the study passes neither), and crowd-kit's early exit on data without
labels (the study fits no model then).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from annotation.group_sums import group_sums, ordered

Array = NDArray[np.float64]

# crowd-kit's floor for error-matrix cells, priors and posteriors, computed as crowd-kit computes it (not the literal).
EPS = np.float_power(10, -10)


@dataclass
class _Codes:
    """The labels coded once per fit, in order of appearance (crowd-kit's ``groupby(sort=False)`` order)."""

    tasks: NDArray[np.intp]
    pairs: NDArray[np.intp]  # each label's (worker, label) row of the error matrices
    pair_workers: NDArray[np.intp]  # each (worker, label) row's worker
    n_tasks: int
    n_workers: int
    n_pairs: int
    # How pandas lays out crowd-kit's posteriors and error matrices (annotation.group_sums.ordered): each class's
    # values together when the groupby that makes them took np.add.reduceat. It decides the order of some additions.
    posteriors_together: bool
    errors_together: bool
    # Where each class's per-class sum of the joint term goes in crowd-kit's aligned columns (module docstring),
    # and how many columns that alignment has (one more: crowd-kit's ``label`` column, whose sum is 0).
    joint_positions: NDArray[np.intp]
    n_joint_columns: int


def _block(values: Array, together: bool) -> Array:
    """A frame's values (rows × columns, C order) laid out as pandas holds them, (columns × rows): each column's
    values together, or interleaved. numpy reduces along a column of the first pairwise, of the second one value
    after the other, so pandas' reductions of crowd-kit's frames are reproduced on this layout."""
    return np.ascontiguousarray(values.T) if together else values.T


def _joint_positions(class_names: pd.Index) -> tuple[NDArray[np.intp], int]:
    """crowd-kit's ``_evidence_lower_bound`` renames the classes with ``{True: "True", False: "False"}`` (which
    also catches 1 and 0) and multiplies the posteriors by a frame with those columns and its ``label`` column:
    pandas aligns the two on the sorted union of their columns, and the per-column sums are then added in that
    order. The positions of the classes in that union, and its length."""
    renaming = {True: "True", False: "False"}
    renamed = pd.Index([renaming.get(name, name) for name in class_names])
    aligned = renamed.union(pd.Index(["label", *renamed]))
    return aligned.get_indexer(renamed), len(aligned)


@dataclass
class DawidSkene:
    """crowd-kit 1.4.2's ``DawidSkene`` with the same fitted attributes (``probas_``, ``labels_``, ``priors_``,
    ``errors_``, ``loss_history_``), computed vectorised (module docstring)."""

    n_iter: int = 100
    tol: float = 1e-5
    probas_: pd.DataFrame = field(init=False, repr=False)
    labels_: pd.Series = field(init=False, repr=False)
    priors_: pd.Series = field(init=False, repr=False)
    errors_: pd.DataFrame = field(init=False, repr=False)
    loss_history_: list[float] = field(init=False, repr=False)

    @staticmethod
    def _m_step(codes: _Codes, probas: Array) -> Array:
        """crowd-kit's ``_m_step``: each (worker, label) row's expected counts over the true classes, clipped at
        ``EPS``, over each worker's column sums."""
        errors = np.clip(group_sums(codes.pairs, probas[codes.tasks], codes.n_pairs), EPS, None)
        return errors / group_sums(codes.pair_workers, errors, codes.n_workers)[codes.pair_workers]

    @staticmethod
    def _e_step(codes: _Codes, priors: Array, errors: Array) -> Array:
        """crowd-kit's ``_e_step``: each task's posterior over the classes, from base-2 log-likelihoods shifted by
        their maximum."""
        log_likelihoods = np.log2(np.clip(priors, EPS, None)) + group_sums(
            codes.tasks, np.log2(errors)[codes.pairs], codes.n_tasks)
        scaled = np.exp2(log_likelihoods - log_likelihoods.max(axis=1, keepdims=True))
        return scaled / _block(scaled, codes.posteriors_together).sum(axis=0)[:, np.newaxis]

    @staticmethod
    def _evidence_lower_bound(codes: _Codes, probas: Array, priors: Array, errors: Array) -> float:
        """crowd-kit's ``_evidence_lower_bound``: the expected joint log-likelihood plus the posteriors' entropy.
        Clips ``probas`` at ``EPS`` in place, as crowd-kit does."""
        joint_terms = probas[codes.tasks] * (np.log(errors)[codes.pairs] + np.log(np.clip(priors, EPS, None)))
        joint_sums = np.zeros(codes.n_joint_columns)
        # pandas' product of two frames holds each column together if either factor does
        joint_sums[codes.joint_positions] = _block(
            joint_terms, codes.posteriors_together or codes.errors_together).sum(axis=1)
        np.clip(probas, EPS, None, out=probas)
        entropy = -_block(np.log(probas) * probas, codes.posteriors_together).sum(axis=1).sum()
        return float(joint_sums.sum() + entropy)

    def fit(self, data: pd.DataFrame) -> DawidSkene:
        """Fits crowd-kit's Dawid–Skene to ``data`` (``task``, ``worker``, ``label`` columns, at least one row)
        and returns ``self``."""
        tasks, task_names = pd.factorize(data["task"])
        workers, worker_names = pd.factorize(data["worker"])
        labels, class_names = pd.factorize(data["label"])
        n_classes = len(class_names)
        pairs, pair_codes = pd.factorize(workers * n_classes + labels)
        joint_positions, n_joint_columns = _joint_positions(class_names)
        pair_workers = pair_codes // n_classes
        codes = _Codes(tasks=tasks, pairs=pairs, pair_workers=pair_workers,
                       n_tasks=len(task_names), n_workers=len(worker_names), n_pairs=len(pair_codes),
                       posteriors_together=ordered(tasks), errors_together=ordered(pairs) or ordered(pair_workers),
                       joint_positions=joint_positions, n_joint_columns=n_joint_columns)

        # MajorityVote's posteriors: each task's label counts over its number of labels
        counts = np.bincount(tasks * n_classes + labels, minlength=codes.n_tasks * n_classes).reshape(-1, n_classes)
        probas = counts / counts.sum(axis=1, keepdims=True)
        priors = _block(probas, together=False).sum(axis=1) / codes.n_tasks  # unstack's frame: interleaved
        errors = self._m_step(codes, probas)
        loss = -np.inf
        self.loss_history_ = []
        for _ in range(self.n_iter):
            probas = self._e_step(codes, priors, errors)
            priors = _block(probas, codes.posteriors_together).sum(axis=1) / codes.n_tasks
            errors = self._m_step(codes, probas)
            new_loss = self._evidence_lower_bound(codes, probas, priors, errors) / len(data)
            self.loss_history_.append(new_loss)
            if new_loss - loss < self.tol:
                break
            loss = new_loss

        classes = pd.Index(class_names, name="label")
        self.probas_ = pd.DataFrame(probas, index=pd.Index(task_names, name="task"), columns=classes)
        self.priors_ = pd.Series(priors, index=classes, name="prior")
        # crowd-kit's errors_ columns are what is left of its joined frame's columns (task, worker, label, classes):
        # unnamed, and of the dtype pandas infers for all of them (object for integer classes)
        self.errors_ = pd.DataFrame(
            errors, columns=pd.Index(["task", "worker", "label", *class_names])[3:],
            index=pd.MultiIndex.from_arrays([worker_names[pair_workers], class_names[pair_codes % n_classes]],
                                            names=["worker", "label"]))
        labels_ = self.probas_.idxmax(axis="columns")
        labels_.name = "agg_label"  # what crowd-kit's labels_ attribute names every Series set on it
        self.labels_ = labels_
        return self
