"""Benchmark (alternative ground truths): every alternative ground truth of a simulated study of 50 annotators and 2,121
items, then the re-scoring of a 56-cell (8 models × 7 conditions) × 2,121-item classification audit against all of them
with 9,999-resample paired bootstrap CIs. Target on this 2-core machine: under 30 s for both together.

    .venv/bin/python benchmarks/robustness.py [--participants 50] [--items 2121] [--labels-per-item 5]
                                              [--models 8] [--conditions 7] [--resamples 9999] [--repeat 3]

Pure computation (no database): the time of the stored study analysis and audit analysis adds their reads and
writes. Prints the time of each part of each run.
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from annotation import simulation  # noqa: E402
from annotation.alternatives import alternative_ground_truths, crowdkit_input, crowdkit_models  # noqa: E402
from auditapp.paradigms.classification.robustness import robustness  # noqa: E402


def simulated_study(seed: int, participants: int, items: int, per_item: int) -> tuple[pd.DataFrame, pd.DataFrame]:
    people = simulation.draw_participants(seed, participants, teams=2)
    drawn = simulation.draw_items(seed, items)
    rng = np.random.default_rng(seed)
    rows = []
    for annotator in range(participants):
        labels = simulation.participant_labels(people, annotator, drawn, seed=seed)
        rows.append(pd.DataFrame({"participant": f"A{annotator:03d}", "item": [f"i{i:05d}" for i in range(items)],
                                  "value": labels}))
    labels = pd.concat(rows, ignore_index=True)
    chosen = np.concatenate([rng.choice(participants, per_item, replace=False) + i * participants
                             for i in range(items)])
    order = labels.assign(slot=labels.index % items * participants + labels.index // items)
    labels = order.set_index("slot").loc[chosen, ["participant", "item", "value"]].reset_index(drop=True)
    scores = pd.DataFrame({"participant": [f"A{i:03d}" for i in range(participants)], "team": people.team,
                           "aq": 20 + 7 * people.trait, "sata": 70 + 10 * people.attitude,
                           "iat_d": people.implicit_bias})
    return scores, labels


def simulated_replies(seed: int, items: pd.Series, models: int, conditions: int) -> pd.DataFrame:
    rng = np.random.default_rng([seed, 99])
    truth = items.to_numpy(dtype=float)
    frames = []
    for model in range(models):
        for condition in range(conditions):
            accuracy = 0.55 + 0.04 * model + 0.01 * condition
            label = np.where(rng.random(len(truth)) < accuracy, truth, 1 - truth)
            label = np.where(np.isnan(truth) | (rng.random(len(truth)) < 0.03), np.nan, label)
            frames.append(pd.DataFrame({"model": model, "condition": f"c{condition}", "item": items.index,
                                        "replicate": 0, "label": label}))
    return pd.concat(frames, ignore_index=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--participants", type=int, default=50)
    parser.add_argument("--items", type=int, default=2121)
    parser.add_argument("--labels-per-item", type=int, default=5)
    parser.add_argument("--models", type=int, default=8)
    parser.add_argument("--conditions", type=int, default=7)
    parser.add_argument("--resamples", type=int, default=9999)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()

    scores, labels = simulated_study(args.seed, args.participants, args.items, args.labels_per_item)
    print(f"{args.participants} annotators, {args.items} items, {len(labels)} labels; audit of "
          f"{args.models * args.conditions} cells × {args.items} items, {args.resamples} resamples")
    data = crowdkit_input(labels)
    for name, model in crowdkit_models().items():
        started = time.perf_counter()
        model.fit(data)
        print(f"  {name}: {(time.perf_counter() - started) * 1000:.0f} ms")
    for run in range(1, args.repeat + 1):
        started = time.perf_counter()
        result = alternative_ground_truths(scores, labels)
        alternatives_s = time.perf_counter() - started
        references = result.labels.set_index("item")
        replies = simulated_replies(args.seed, references["weighted"], args.models, args.conditions)
        names = list(references.columns)
        started = time.perf_counter()
        tables = robustness(replies, references.reset_index(), alternatives=names, models=list(range(args.models)),
                            conditions=[f"c{c}" for c in range(args.conditions)], n_resamples=args.resamples, seed=0)
        rescoring_s = time.perf_counter() - started
        total = alternatives_s + rescoring_s
        print(f"run {run}: alternatives {alternatives_s:.1f} s, re-scoring {len(tables['cells'])} cell × alternative "
              f"rows {rescoring_s:.1f} s, total {total:.1f} s ({'within' if total < 30 else 'over'} the 30 s target)")


if __name__ == "__main__":
    main()
