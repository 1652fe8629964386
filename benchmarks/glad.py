"""Benchmark (GLAD): crowd-kit 1.4.2's GLAD against annotation.glad (the same fit, vectorised) with the study's
settings (100 iterations, tol 1e-5), on four studies as annotation.alternatives.crowdkit_input gives them to the
models: the worked example's labels (4 annotators × 3 items, 7 labels: the test study), MACE's benchmark studies (3
annotators × 24 items, every annotator labelling every item; 50 annotators × 500 items, 5 labels an item) and the
simulated study of benchmarks/robustness.py (50 annotators × 2,121 items, 5 labels an item, as simulate_study
draws them). Prints each run's times, the speed-up, and whether the two fits are equal bit for bit (else their
largest difference).

    .venv/bin/python benchmarks/glad.py [--repeat 3] [--seed 1]
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

from annotation.alternatives import crowdkit_input  # noqa: E402
from annotation.glad import GLAD  # noqa: E402
from benchmarks.mace import STUDIES, study  # noqa: E402
from benchmarks.robustness import simulated_study  # noqa: E402

# tests.factories.WORKED_EXAMPLE_LABELS (without the -1) in crowdkit_input's order
WORKED_EXAMPLE = pd.DataFrame([("P1", "x", 1), ("P2", "x", 0), ("P3", "x", 1), ("P2", "y", 1), ("P4", "y", 0),
                               ("P3", "z", 0), ("P4", "z", 1)], columns=["worker", "task", "label"])


def studies(seed: int) -> list[tuple[str, pd.DataFrame]]:
    simulated = crowdkit_input(simulated_study(seed, 50, 2121, 5)[1])
    return [("worked example", WORKED_EXAMPLE)] + [
        (f"{name} ({annotators} annotators × {items} items)", study(seed, annotators, items, per_item))
        for name, annotators, items, per_item in STUDIES] + [
        ("simulated (50 annotators × 2,121 items)", simulated)]


def comparison(port, reference, outputs: tuple[str, ...]) -> str:
    """"equal bit for bit", or the largest difference between the two fits' outputs and whether the labels agree."""
    if all(getattr(port, name).equals(getattr(reference, name)) for name in (*outputs, "labels_")):
        return "equal bit for bit"
    difference = max(float(np.abs(getattr(port, name).to_numpy() - getattr(reference, name).to_numpy()).max())
                     for name in outputs)
    return (f"largest difference {difference:.1e}, labels "
            f"{'equal' if port.labels_.equals(reference.labels_) else 'DIFFERENT'}")


def timed(model, data: pd.DataFrame) -> tuple[object, float]:
    started = time.perf_counter()
    with warnings.catch_warnings():  # crowd-kit 1.4.2's inplace= on pandas 3
        warnings.simplefilter("ignore", FutureWarning)
        warnings.simplefilter("ignore", DeprecationWarning)
        model.fit(data)
    return model, time.perf_counter() - started


def compare(description: str, port_name: str, port, reference, attributes: tuple[str, ...]) -> None:
    """Fit ``port()`` and ``reference()`` (model factories) on each study, ``--repeat`` times, and print the times
    and whether ``attributes`` are equal: the main of this benchmark and of benchmarks/dawid_skene.py."""
    parser = argparse.ArgumentParser(description=description, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    for name, data in studies(args.seed):
        print(f"{name}: {len(data):,} labels")
        for run in range(1, args.repeat + 1):
            fitted, port_s = timed(port(), data)
            expected, crowd_kit_s = timed(reference(), data)
            print(f"  run {run}: crowd-kit {crowd_kit_s:.2f} s, {port_name} {port_s * 1000:.1f} ms "
                  f"({crowd_kit_s / port_s:.0f}× faster), {len(fitted.loss_history_)} iterations; "
                  f"{comparison(fitted, expected, attributes)}")


def main() -> None:
    from crowdkit.aggregation import GLAD as CrowdKitGLAD

    compare(__doc__, "annotation.glad", lambda: GLAD(n_iter=100, tol=1e-5),
            lambda: CrowdKitGLAD(n_iter=100, tol=1e-5), ("probas_", "alphas_", "betas_"))


if __name__ == "__main__":
    main()
