"""Benchmark (Dawid–Skene): crowd-kit 1.4.2's DawidSkene against annotation.dawid_skene (the same fit, vectorised)
with the study's settings (100 iterations, tol 1e-5), on the four studies of benchmarks/glad.py (the worked
example's 7 labels up to 50 annotators × 2,121 items). Prints each run's times, the speed-up, and whether the two
fits are equal bit for bit (else their largest difference).

    .venv/bin/python benchmarks/dawid_skene.py [--repeat 3] [--seed 1]
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from annotation.dawid_skene import DawidSkene  # noqa: E402
from benchmarks.glad import comparison, studies, timed  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    from crowdkit.aggregation import DawidSkene as CrowdKitDawidSkene

    for name, data in studies(args.seed):
        print(f"{name}: {len(data):,} labels")
        for run in range(1, args.repeat + 1):
            port, port_s = timed(DawidSkene(n_iter=100, tol=1e-5), data)
            reference, crowd_kit_s = timed(CrowdKitDawidSkene(n_iter=100, tol=1e-5), data)
            print(f"  run {run}: crowd-kit {crowd_kit_s:.2f} s, annotation.dawid_skene {port_s * 1000:.1f} ms "
                  f"({crowd_kit_s / port_s:.0f}× faster), {len(port.loss_history_)} iterations; "
                  f"{comparison(port, reference, ('probas_', 'priors_', 'errors_'))}")


if __name__ == "__main__":
    main()
