"""Benchmark: the counterfactual statistics (seed 002) on a synthetic names audit of 4,001,400 judgments
(19 models × 39 tasks × 90 iterations × 60 texts, four minority groups; the target: the whole analysis,
every t-test and the FDR included, in under 10 seconds and 2 GB).

The frame is built in memory (:func:`tests.auditapp.counterfactual_frames.names_frame`, 2% of the values missing)
and is not timed; reading it from PostgreSQL is the judgment reader's part (``counterfactual/judgments.py``).
Each run times, in this process:

- ``names_cells`` (2,964 cells: gaps, t-tests, BH over the matrix), ``names_summary`` and ``names_group_counts``;
- ``completion`` on the same frame (Table 1's rates and the reasons);

and prints wall seconds and CPU seconds. A last run under ``tracemalloc`` prints the peak of the memory the
analysis allocates beyond the frame (numpy and pandas report their buffers to tracemalloc), and the process's
peak resident size (``ru_maxrss``: the frame, the interpreter and the analysis together).

``--pair`` chooses the type of the ``pair`` column: ``int`` (a request number × 30 + pair number), ``str`` (the
"<request>:<pair>" text the design suggests; hashing 4,000,000 strings adds under a second) or
``category``::

    .venv/bin/python benchmarks/counterfactual_stats.py --runs 5
    .venv/bin/python benchmarks/counterfactual_stats.py --runs 3 --pair str

The machine is shared: figures vary from run to run.
"""
from __future__ import annotations

import argparse
import resource
import statistics
import sys
import time
import tracemalloc
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

import pandas as pd  # noqa: E402 - after the repository is on the path

from auditapp.paradigms.counterfactual.stats import (  # noqa: E402
    completion,
    names_cells,
    names_group_counts,
    names_summary,
)
from tests.auditapp.counterfactual_frames import PAIRS_PER_REQUEST, names_frame  # noqa: E402


def synthetic_frame(*, iterations: int, pair: str, seed: int) -> tuple[pd.DataFrame, pd.DataFrame]:
    frame = names_frame(iterations=iterations, missing=0.02, effects={(5, "Black"): 0.10}, seed=seed)
    if pair != "int":
        request, pair_no = divmod(frame["pair"].to_numpy(), PAIRS_PER_REQUEST)
        text = pd.Series(request).astype(str) + ":" + pd.Series(pair_no).astype(str)
        frame["pair"] = text.astype("category") if pair == "category" else text
    frame["reason"] = frame["y"].isna().map({True: "refused", False: ""}).astype("category")
    targets = frame.groupby(["model", "task"], observed=True).size().rename("n_texts_asked").reset_index()
    targets["n_texts_failed_requests"] = 0
    return frame, targets


def analyse(frame: pd.DataFrame, targets: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    cells = names_cells(frame)
    names_summary(cells)
    counts = names_group_counts(cells)
    completion(frame[["model", "task", "y", "reason"]], targets)
    return cells, counts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--iterations", type=int, default=90, help="per model × task (90 → 4,001,400 rows)")
    parser.add_argument("--pair", choices=("int", "str", "category"), default="int")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    started = time.perf_counter()
    frame, targets = synthetic_frame(iterations=args.iterations, pair=args.pair, seed=args.seed)
    print(f"frame: {len(frame):,} rows, pair column {frame['pair'].dtype}, built in "
          f"{time.perf_counter() - started:.1f} s (not timed below)")

    walls = []
    for run in range(1, args.runs + 1):
        wall, cpu = time.perf_counter(), time.process_time()
        cells, counts = analyse(frame, targets)
        walls.append(time.perf_counter() - wall)
        print(f"run {run}: analysis {walls[-1]:.2f} s wall, {time.process_time() - cpu:.2f} s CPU "
              f"({len(cells):,} cells, {int(counts['n_significant'].iloc[-1])} FDR-significant)")
    print(f"analysis seconds: median {statistics.median(walls):.2f}, min {min(walls):.2f}, max {max(walls):.2f}")

    tracemalloc.start()
    analyse(frame, targets)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    max_rss_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print(f"peak memory allocated by one analysis (tracemalloc): {peak / 2**20:,.0f} MiB")
    print(f"peak resident size of the process, frame included (ru_maxrss): {max_rss_kib / 2**10:,.0f} MiB")


if __name__ == "__main__":
    main()
