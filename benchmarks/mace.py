"""Benchmark (MACE): crowd-kit 1.4.2's MACE against annotation.mace (the same fit, vectorised) with the study's
settings (10 restarts, 50 iterations, variational Bayes, RandomState(0)), on a study of the demo's size (3
annotators × 24 items, every annotator labelling every item) and a larger one (50 annotators × 500 items, 5 labels
an item), 0/1 labels. Prints each run's times, the speed-up, and the largest difference between the two fits.

    .venv/bin/python benchmarks/mace.py [--repeat 3] [--seed 1] [--skip-crowd-kit-above 0]

crowd-kit's fit of the larger study takes minutes here; ``--skip-crowd-kit-above N`` times only the port on studies
of more than N labels (0: time crowd-kit everywhere).
"""
from __future__ import annotations

import argparse
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from annotation.mace import MACE  # noqa: E402

STUDIES = (("demo size", 3, 24, 3), ("larger", 50, 500, 5))  # name, annotators, items, labels an item


def study(seed: int, annotators: int, items: int, per_item: int) -> pd.DataFrame:
    """0/1 labels from annotators of random accuracy (0.55–0.95) on items of a random truth, in crowd-kit's input
    order (annotation.alternatives.crowdkit_input sorts by task, then worker)."""
    rng = np.random.default_rng(seed)
    accuracy = rng.uniform(0.55, 0.95, annotators)
    truth = rng.integers(0, 2, items)
    rows = []
    for item in range(items):
        for annotator in np.sort(rng.choice(annotators, per_item, replace=False)):
            right = rng.random() < accuracy[annotator]
            rows.append((f"A{annotator:03d}", f"i{item:05d}", int(truth[item] if right else 1 - truth[item])))
    return pd.DataFrame(rows, columns=["worker", "task", "label"])


def settings(seed: int) -> dict:
    return {"n_restarts": 10, "n_iter": 50, "default_noise": 0.5, "alpha": 0.5, "beta": 0.5,
            "random_state": np.random.RandomState(seed)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--skip-crowd-kit-above", type=int, default=0)
    args = parser.parse_args()
    from crowdkit.aggregation import MACE as CrowdKitMACE

    for name, annotators, items, per_item in STUDIES:
        data = study(args.seed, annotators, items, per_item)
        time_crowd_kit = not args.skip_crowd_kit_above or len(data) <= args.skip_crowd_kit_above
        print(f"{name}: {annotators} annotators × {items} items, {len(data):,} labels")
        for run in range(1, args.repeat + 1):
            started = time.perf_counter()
            port = MACE(**settings(0)).fit(data)
            port_s = time.perf_counter() - started
            if not time_crowd_kit:
                print(f"  run {run}: annotation.mace {port_s:.3f} s (crowd-kit skipped)")
                continue
            started = time.perf_counter()
            with warnings.catch_warnings():  # crowd-kit 1.4.2's inplace= on pandas 3
                warnings.simplefilter("ignore", FutureWarning)
                warnings.simplefilter("ignore", DeprecationWarning)
                reference = CrowdKitMACE(method="vb", **settings(0)).fit(data)
            crowd_kit_s = time.perf_counter() - started
            difference = max(float(np.abs(port.probas_.to_numpy() - reference.probas_.to_numpy()).max()),
                             float(np.abs(port.spamming_ - reference.spamming_).max()),
                             float(np.abs(port.thetas_ - reference.thetas_).max()))
            same_labels = bool(port.labels_.equals(reference.labels_))
            print(f"  run {run}: crowd-kit {crowd_kit_s:.2f} s, annotation.mace {port_s:.3f} s "
                  f"({crowd_kit_s / port_s:.0f}× faster); largest difference {difference:.1e}, "
                  f"labels {'equal' if same_labels else 'DIFFERENT'}")


if __name__ == "__main__":
    main()
