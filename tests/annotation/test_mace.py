"""annotation.mace, crowd-kit 1.4.2's MACE computed vectorised, against crowd-kit's own MACE: on seeded random studies
(2–3 labels, rows shuffled so factorize order is not sorted order, tasks with one label, annotators with one task,
an annotator who always gives the same label) the same probas_ (index, columns, dtype), labels_, spamming_ and
thetas_; the same restarts' draws from the same seed, different ones from another seed."""
from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest
from crowdkit.aggregation import MACE as CrowdKitMACE

from annotation.mace import MACE
from tests.seed_sweep import seed_sweep

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning:crowdkit")  # crowd-kit 1.4.2 on pandas 3

# crowd-kit's pandas E-step costs ~23 ms a call: few restarts and iterations keep 40 studies fast; every
# comparison still runs restarts (the best chosen among them), M-steps and the final E-step. The study's own
# settings (10 restarts, 50 iterations) are compared on the worked example by test_alternatives.py.
SETTINGS = [{"n_restarts": 3, "n_iter": 4}, {"n_restarts": 2, "n_iter": 6}, {"n_restarts": 1, "n_iter": 0},
            {"n_restarts": 4, "n_iter": 2, "default_noise": 0.2, "alpha": 1.0, "beta": 2.0}]


def random_study(seed: int) -> pd.DataFrame:
    """A small study of 2 or 3 labels with the awkward cases every fit must get right: an annotator who always
    gives label 0, one who labels a single task, a task with one label, and rows in random order."""
    rng = np.random.default_rng(seed)
    n_labels, n_workers, n_tasks = int(rng.integers(2, 4)), int(rng.integers(2, 9)), int(rng.integers(2, 40))
    rows = [("always_0", f"t{task}", 0) for task in rng.choice(n_tasks, min(n_tasks, 5), replace=False)]
    rows.append(("once", f"t{rng.integers(n_tasks)}", int(rng.integers(n_labels))))
    for task in range(n_tasks):
        rows.extend((f"w{worker}", f"t{task}", int(rng.integers(n_labels)))
                    for worker in rng.choice(n_workers, int(rng.integers(1, n_workers + 1)), replace=False))
    rows.append(("w0", f"alone{seed}", int(rng.integers(n_labels))))
    data = pd.DataFrame(rows, columns=["worker", "task", "label"])
    return data.sample(frac=1, random_state=seed).reset_index(drop=True)


def fit_both(data: pd.DataFrame, seed: int | None, **settings) -> tuple[CrowdKitMACE, MACE]:
    """Both fitted with the same settings, each with its own RandomState of ``seed`` (an integer seed as is when
    ``seed`` is None: crowd-kit's default 0)."""
    state = (lambda: 0) if seed is None else (lambda: np.random.RandomState(seed))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)  # crowd-kit's inplace= on pandas 3
        reference = CrowdKitMACE(method="vb", random_state=state(), **settings).fit(data)
    return reference, MACE(random_state=state(), **settings).fit(data)


def assert_same_fit(reference: CrowdKitMACE, port: MACE) -> None:
    pd.testing.assert_index_equal(port.probas_.index, reference.probas_.index, exact=True)
    pd.testing.assert_index_equal(port.probas_.columns, reference.probas_.columns, exact=True)
    assert port.probas_.dtypes.tolist() == reference.probas_.dtypes.tolist()
    # Not bit for bit: pandas' groupby sums round differently from np.bincount's (annotation.mace's docstring).
    np.testing.assert_allclose(port.probas_.to_numpy(), reference.probas_.to_numpy(), rtol=1e-9, atol=1e-12)
    pd.testing.assert_series_equal(port.labels_, reference.labels_, check_exact=True)
    np.testing.assert_allclose(port.spamming_, reference.spamming_, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(port.thetas_, reference.thetas_, rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("seed", seed_sweep(40, quick=8))
def test_the_port_fits_what_crowd_kits_mace_fits(seed):
    data = random_study(seed)
    assert_same_fit(*fit_both(data, seed, **SETTINGS[seed % len(SETTINGS)]))


def test_the_port_fits_what_crowd_kit_fits_with_an_integer_seed_and_with_one_class():
    data = random_study(1)
    assert_same_fit(*fit_both(data, None, n_restarts=2, n_iter=3))  # every restart the same start, as crowd-kit's
    with warnings.catch_warnings():  # one class: log(0) of nothing else, in crowd-kit and here alike
        warnings.simplefilter("ignore", RuntimeWarning)
        assert_same_fit(*fit_both(data.assign(label=1), 3, n_restarts=2, n_iter=3))


def test_the_first_columns_are_in_order_of_appearance_and_thetas_in_crowd_kits_sorted_layout():
    data = pd.DataFrame({"worker": ["b", "a", "c", "a", "b", "c"], "task": ["t2", "t2", "t2", "t1", "t1", "t1"],
                         "label": [1, 0, 1, 1, 1, 0]})
    reference, port = fit_both(data, 0, n_restarts=2, n_iter=3)
    assert list(port.probas_.columns) == [1, 0] and list(port.probas_.index) == ["t2", "t1"]
    assert port.probas_.index.name == "task" and port.labels_.name == "agg_label"
    assert_same_fit(reference, port)


def recorded_starts(model, data: pd.DataFrame) -> list[np.ndarray]:
    """Each restart's starting strategies, crowd-kit's (``_initialize`` sets ``thetas_``) or the port's (returns
    spamming and strategies)."""
    starts: list[np.ndarray] = []
    original = type(model)._initialize

    def recording(self, *args):
        drawn = original(self, *args)
        starts.append((self.thetas_ if drawn is None else drawn[1]).copy())
        return drawn

    model._initialize = recording.__get__(model)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        model.fit(data)
    assert len(starts) == model.n_restarts
    return starts


def test_a_seed_gives_crowd_kits_restarts_and_another_seed_other_ones():
    data = random_study(5)
    starts = {}
    for seed in (7, 8):
        reference = recorded_starts(CrowdKitMACE(n_restarts=4, n_iter=1, random_state=np.random.RandomState(seed)),
                                    data)
        port = recorded_starts(MACE(n_restarts=4, n_iter=1, random_state=np.random.RandomState(seed)), data)
        assert all(np.array_equal(mine, theirs) for mine, theirs in zip(port, reference, strict=True))
        assert len({start.tobytes() for start in port}) == 4, "each restart starts elsewhere"
        starts[seed] = port
    assert not any(np.array_equal(a, b) for a, b in zip(starts[7], starts[8], strict=True))
