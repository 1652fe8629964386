"""annotation.glad, crowd-kit 1.4.2's GLAD computed vectorised, against crowd-kit's own GLAD: on seeded random studies
(2–3 classes named by integers or strings; rows shuffled, sorted by task, or grouped by task, so the order of
appearance is not always the sorted order; tasks with one label, an annotator with one label, annotators missing
from most tasks), on one task and on one class, the same probas_, labels_, alphas_, betas_, priors_ and
loss_history_, bit for bit."""
from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest
from crowdkit.aggregation import GLAD as CrowdKitGLAD

from annotation.glad import GLAD
from tests.seed_sweep import seed_sweep

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning:crowdkit")  # crowd-kit 1.4.2 on pandas 3

# crowd-kit evaluates its objective and gradient in milliseconds, dozens of times an M-step: few EM iterations and
# short M-steps keep every study under a second; together they still run the first iteration's unnormalised loss,
# the convergence test (a large tol stops the third setting early), M-steps cut by maxiter and M-steps ended by
# their tolerance. The study's own settings (100 iterations, crowd-kit's M-step) are compared on the worked example
# by test_alternatives.py.
SETTINGS = [{"n_iter": 2, "m_step_max_iter": 4}, {"n_iter": 3, "m_step_max_iter": 2, "m_step_tol": 0.5},
            {"n_iter": 100, "tol": 1e-2, "m_step_max_iter": 3}, {"n_iter": 1}]
CLASS_NAMES = [[0, 1, 2], [1, 0, 7], ["yes", "no", "maybe"], ["b", "a", "c"]]


def random_study(seed: int) -> pd.DataFrame:
    """A small study of 2 or 3 classes with what every fit must get right: annotators named out of sorted order
    who label a random subset of the tasks, an annotator with a single label, tasks labelled once (one of each
    class, so every class is present). The rows come in one of three orders, which decide how pandas adds in
    crowd-kit (annotation.group_sums): shuffled, sorted by task then worker (annotation.alternatives.crowdkit_input's
    order), or each task's labels together with the tasks shuffled."""
    rng = np.random.default_rng(seed)
    names = CLASS_NAMES[seed % len(CLASS_NAMES)][:int(rng.integers(2, 4))]
    n_workers, n_tasks = int(rng.integers(2, 7)), int(rng.integers(2, 16))
    workers = [f"w{number}" for number in rng.permutation(n_workers)]
    rows = [("once", f"t{rng.integers(n_tasks)}", names[int(rng.integers(len(names)))])]
    for task in range(n_tasks):
        rows.extend((workers[worker], f"t{task}", names[int(rng.integers(len(names)))])
                    for worker in rng.choice(n_workers, int(rng.integers(1, n_workers + 1)), replace=False))
    rows.extend((workers[0], f"alone{number}", name) for number, name in enumerate(names))  # every class present
    data = pd.DataFrame(rows, columns=["worker", "task", "label"]).sample(frac=1, random_state=seed)
    if seed % 3 == 1:
        data = data.sort_values(["task", "worker"])
    elif seed % 3 == 2:
        data = data.sort_values("task", key=lambda tasks: tasks.map(
            dict(zip(pd.unique(tasks), rng.permutation(tasks.nunique()), strict=True))), kind="stable")
    return data.reset_index(drop=True)


def fit_both(data: pd.DataFrame, **settings) -> tuple[CrowdKitGLAD, GLAD]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)  # crowd-kit's inplace= on pandas 3
        reference = CrowdKitGLAD(**settings).fit(data)
    return reference, GLAD(**settings).fit(data)


def assert_same_fit(reference: CrowdKitGLAD, port: GLAD) -> None:
    """Equal, not close: every sum is pandas' own kernel in crowd-kit's row order (annotation.group_sums), every
    other operation crowd-kit's in its order, so each objective and gradient value, and with them scipy's CG steps,
    are crowd-kit's to the bit."""
    pd.testing.assert_frame_equal(port.probas_, reference.probas_, check_exact=True)
    pd.testing.assert_series_equal(port.labels_, reference.labels_, check_exact=True)
    pd.testing.assert_series_equal(port.alphas_, reference.alphas_, check_exact=True)
    pd.testing.assert_series_equal(port.betas_, reference.betas_, check_exact=True)
    pd.testing.assert_series_equal(port.priors_, reference.priors_, check_exact=True)
    assert port.loss_history_ == reference.loss_history_


@pytest.mark.parametrize("seed", seed_sweep(12, quick=6))
def test_the_port_fits_what_crowd_kits_glad_fits(seed):
    assert_same_fit(*fit_both(random_study(seed), **SETTINGS[seed % len(SETTINGS)]))


def test_the_port_fits_what_crowd_kit_fits_on_one_task():
    data = pd.DataFrame({"worker": ["w1", "w0", "w2", "w3"], "task": "t", "label": [0, 0, 1, 1]})
    assert_same_fit(*fit_both(data, n_iter=3, m_step_max_iter=4))


def test_the_port_fits_what_crowd_kit_fits_with_one_class():
    # One M-step: its line search fails (the objective keeps only the priors, the labels' terms being NaN, while
    # the gradient keeps them), so crowd-kit evaluates dozens of times, the alphas and betas staying at 1.
    with warnings.catch_warnings():  # log(0) for the absent classes' share, in crowd-kit and here alike
        warnings.simplefilter("ignore", RuntimeWarning)
        reference, port = fit_both(random_study(1).assign(label=1), n_iter=1, m_step_max_iter=1)
    assert_same_fit(reference, port)
    assert set(port.labels_) == {1} and (port.probas_[1] == 1.0).all() and (port.alphas_ == 1.0).all()


def test_the_outputs_keep_crowd_kits_orders():
    data = pd.DataFrame({"worker": ["b", "a", "c", "a", "b", "c"], "task": ["t2", "t2", "t2", "t1", "t1", "t1"],
                         "label": [1, 0, 1, 1, 1, 0]})
    reference, port = fit_both(data, n_iter=2, m_step_max_iter=3)
    assert list(port.probas_.index) == ["t1", "t2"] and list(port.probas_.columns) == [0, 1]  # sorted
    assert list(port.alphas_.index) == ["b", "a", "c"] and list(port.betas_.index) == ["t2", "t1"]  # as they come
    assert list(port.priors_.index) == [1, 0]
    assert_same_fit(reference, port)
