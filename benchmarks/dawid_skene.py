"""Benchmark (Dawid–Skene): crowd-kit 1.4.2's DawidSkene against annotation.dawid_skene (the same fit, vectorised)
with the study's settings (100 iterations, tol 1e-5), on the four studies of benchmarks/glad.py (the worked
example's 7 labels up to 50 annotators × 2,121 items). Prints each run's times, the speed-up, and whether the two
fits are equal bit for bit (else their largest difference).

    .venv/bin/python benchmarks/dawid_skene.py [--repeat 3] [--seed 1]
"""
from __future__ import annotations

import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from annotation.dawid_skene import DawidSkene  # noqa: E402
from benchmarks.glad import compare  # noqa: E402


def main() -> None:
    from crowdkit.aggregation import DawidSkene as CrowdKitDawidSkene

    compare(__doc__, "annotation.dawid_skene", lambda: DawidSkene(n_iter=100, tol=1e-5),
            lambda: CrowdKitDawidSkene(n_iter=100, tol=1e-5), ("probas_", "priors_", "errors_"))


if __name__ == "__main__":
    main()
