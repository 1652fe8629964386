"""Benchmark: simulate a study of 50 annotators and 2,121 items, then time a full recomputation of its
analysis (scores → trust weights → weighted and majority ground truth → agreement → groups, test sets,
ICL sets → stored). Target on this 2-core machine: under 2 s for the recomputation. The alternative ground
truths (crowd-kit's models) are computed after it by their own task (``annotation.study_alternatives``): timed
apart, after the last recomputation, without a target.

    .venv/bin/python benchmarks/ground_truth.py [--participants 50] [--items 2121] [--seed 1] [--repeat 3]

Runs on SQLite in a temporary VAR_DIR (or DATABASE_URL if set) and prints its figures. Several sizes
(``--participants 10,50,200,400,1000``) run one after another, each in its own process and database, so that each
size's peak memory (the process's maximum resident set) is its own; a table of every size ends the output.
"""
from __future__ import annotations

import argparse
import os
import re
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--participants", default="50", help="a size, or sizes separated by commas")
    parser.add_argument("--items", type=int, default=2121)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    sizes = [int(size) for size in args.participants.split(",")]
    if len(sizes) > 1:
        sizes_table(sizes, args)
        return
    args.participants = sizes[0]

    os.environ.setdefault("VAR_DIR", tempfile.mkdtemp(prefix="auditapp-bench-"))
    os.environ["DJANGO_SETTINGS_MODULE"] = "config.settings.local"
    os.environ["LOG_LEVEL"] = "WARNING"
    import django

    django.setup()
    from django.conf import settings
    from django.core.management import call_command

    settings.ANALYSIS_AUTO_RECOMPUTE = False  # time the recomputation alone, below
    call_command("migrate", verbosity=0)
    from annotation.analysis import analyse
    from annotation.models import ItemGroundTruth, Label, Study
    from annotation.selectors import study_labels_frame, study_scores_frame
    from annotation.study_alternatives import study_alternatives_compute
    from annotation.study_analysis import analysis_settings_for, study_analysis_compute

    slug = f"bench-{time.time_ns()}"
    started = time.perf_counter()
    call_command("simulate_study", participants=args.participants, items=args.items, seed=args.seed, slug=slug,
                 owner_team="Benchmarks", verbosity=0)
    study = Study.objects.get(slug=slug)
    print(f"simulated {args.participants} annotators × {args.items} items "
          f"({Label.objects.filter(item__study=study).count():,} labels) in {time.perf_counter() - started:.1f} s")

    timings = []
    for _ in range(args.repeat):
        started = time.perf_counter()
        run = study_analysis_compute(study_id=study.id)
        timings.append(time.perf_counter() - started)
    started = time.perf_counter()
    outcome = study_alternatives_compute(run_id=run.id)
    alternatives = time.perf_counter() - started
    started = time.perf_counter()
    scores, labels = study_scores_frame(study=study), study_labels_frame(study=study)
    read = time.perf_counter() - started
    started = time.perf_counter()
    result = analyse(scores, labels, analysis_settings_for(study))
    pure = time.perf_counter() - started
    truth = ItemGroundTruth.objects.filter(item__study=study)
    differ = sum(1 for m, w in truth.values_list("majority_label", "weighted_label") if m is not None and w is not None
                 and m != w)
    print(f"full recomputation: best {min(timings):.3f} s, runs {', '.join(f'{t:.3f}' for t in timings)} "
          f"(reading {read:.3f} s, pure analysis {pure:.3f} s, the rest storing)")
    print(f"items with a ground truth: {truth.count():,}; weighted and majority differ on {differ}; "
          f"notes: {len(result.notes)}")
    print(f"alternative ground truths, their own task after the last recomputation: {alternatives:.3f} s "
          f"({outcome.message})")
    print("target (full recomputation < 2 s):", "met" if min(timings) < 2 else "NOT met")
    print(f"peak memory (max RSS): {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MB")


def sizes_table(sizes: list[int], args: argparse.Namespace) -> None:
    """Each size in a process of its own (its own temporary database and memory), then one line per size."""
    figures = []
    for size in sizes:
        command = [sys.executable, __file__, "--participants", str(size), "--items", str(args.items),
                   "--seed", str(args.seed), "--repeat", str(args.repeat)]
        environment = {**os.environ, "VAR_DIR": tempfile.mkdtemp(prefix="auditapp-bench-")}
        output = subprocess.run(command, env=environment, capture_output=True, text=True, check=True).stdout
        print(output, end="", flush=True)
        full = re.search(r"full recomputation: best ([0-9.]+) s", output)[1]
        pure = re.search(r"pure analysis ([0-9.]+) s", output)[1]
        memory = re.search(r"peak memory \(max RSS\): ([0-9]+) MB", output)[1]
        figures.append((size, full, pure, memory))
    print(f"\n{'annotators':>10}  {'full (s)':>8}  {'pure (s)':>8}  {'peak MB':>7}   ({args.items} items)")
    for size, full, pure, memory in figures:
        print(f"{size:>10}  {full:>8}  {pure:>8}  {memory:>7}")


if __name__ == "__main__":
    main()
