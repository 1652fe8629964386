"""annotation.dawid_skene, crowd-kit 1.4.2's Dawid–Skene computed vectorised, against crowd-kit's own DawidSkene: on
seeded random studies (2–3 classes named by integers, among them 0 and 1, or by strings; rows shuffled, sorted by
task, or grouped by task, so the order of appearance is not always the sorted order; tasks with one label, an
annotator with one label, annotators missing from most tasks) and on one class, the same probas_, labels_, priors_,
errors_ and loss_history_, bit for bit."""
from __future__ import annotations

import warnings

import pandas as pd
import pytest
from crowdkit.aggregation import DawidSkene as CrowdKitDawidSkene

from annotation.dawid_skene import DawidSkene
from tests.annotation.test_glad import random_study
from tests.seed_sweep import seed_sweep

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning:crowdkit")  # crowd-kit 1.4.2 on pandas 3

# crowd-kit's iterations cost ~20 ms: the study's settings (first) converge within a second on the studies they get
# here; ten iterations, a large tol, one iteration and none cover the other ways out of the loop.
SETTINGS = [{"n_iter": 100, "tol": 1e-5}, {"n_iter": 10}, {"n_iter": 100, "tol": 1e-2}, {"n_iter": 1}, {"n_iter": 0}]


def fit_both(data: pd.DataFrame, **settings) -> tuple[CrowdKitDawidSkene, DawidSkene]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)  # crowd-kit's inplace= on pandas 3
        reference = CrowdKitDawidSkene(**settings).fit(data)
    return reference, DawidSkene(**settings).fit(data)


def assert_same_fit(reference: CrowdKitDawidSkene, port: DawidSkene) -> None:
    """Equal, not close: every groupby sum is pandas' on crowd-kit's group numbers (annotation.group_sums) and
    every other reduction adds in the order pandas' memory layout gives it (annotation.dawid_skene's docstring);
    the three row orders of random_study take both of pandas' paths."""
    pd.testing.assert_frame_equal(port.probas_, reference.probas_, check_exact=True)
    pd.testing.assert_series_equal(port.labels_, reference.labels_, check_exact=True)
    pd.testing.assert_series_equal(port.priors_, reference.priors_, check_exact=True)
    pd.testing.assert_frame_equal(port.errors_, reference.errors_, check_exact=True)
    assert port.loss_history_ == reference.loss_history_


@pytest.mark.parametrize("seed", seed_sweep(20, quick=6))
def test_the_port_fits_what_crowd_kits_dawid_skene_fits(seed):
    assert_same_fit(*fit_both(random_study(seed), **SETTINGS[seed % len(SETTINGS)]))


def test_the_port_fits_what_crowd_kit_fits_with_one_class():
    assert_same_fit(*fit_both(random_study(1).assign(label=1)))
