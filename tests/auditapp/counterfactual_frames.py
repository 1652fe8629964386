"""Synthetic judgment frames for the counterfactual statistics' tests and benchmark (the shape of
/work/notes/cf-design.md "Analysis input frames"), built with numpy in bulk: every text a Bernoulli draw of its
model × task yes-rate plus any planted effect, a share of them missing at random."""
from __future__ import annotations

import numpy as np
import pandas as pd

GROUPS = ("Arab", "Asian", "Black", "Hispanic")
PAIRS_PER_REQUEST = 30


def names_frame(*, models: int = 19, tasks: int = 39, iterations: int = 90, effects: dict | None = None,
                missing: float = 0.0, seed: int = 0) -> pd.DataFrame:
    """One request per model × task × iteration with 30 pairs, their minority groups cycled through
    :data:`GROUPS` (8, 8, 7, 7 pairs); ``effects`` maps (task index, group) to a yes-rate added to the minority
    side; each model × task has its own reference yes-rate in [0.2, 0.8]. ``pair`` is an int64 unique in the whole
    frame (request number × 30 + pair number); model, task, group and side are categoricals. 19 × 39 × 90 × 60 =
    4,001,400 rows by default."""
    rng = np.random.default_rng(seed)
    n_requests = models * tasks * iterations
    request = np.repeat(np.arange(n_requests), PAIRS_PER_REQUEST * 2)
    pair_no = np.tile(np.repeat(np.arange(PAIRS_PER_REQUEST), 2), n_requests)
    is_minority = np.tile(np.array([True, False]), n_requests * PAIRS_PER_REQUEST)
    model = request // (tasks * iterations)
    task = (request // iterations) % tasks
    group = pair_no % len(GROUPS)
    rate = rng.uniform(0.2, 0.8, size=(models, tasks))[model, task]
    shift = np.zeros((tasks, len(GROUPS)))
    for (task_index, group_name), delta in (effects or {}).items():
        shift[task_index, GROUPS.index(group_name)] = delta
    rate = rate + np.where(is_minority, shift[task, group], 0.0)
    y = (rng.random(len(request)) < rate).astype(float)
    if missing:
        y[rng.random(len(y)) < missing] = np.nan
    return pd.DataFrame({
        "model": pd.Categorical.from_codes(model, categories=[f"model-{i:02d}" for i in range(models)]),
        "task": pd.Categorical.from_codes(task, categories=[f"task-{i:02d}" for i in range(tasks)]),
        "group": pd.Categorical.from_codes(group, categories=list(GROUPS)),
        "pair": request * PAIRS_PER_REQUEST + pair_no,
        "side": pd.Categorical.from_codes(np.where(is_minority, 0, 1), categories=["minority", "reference"]),
        "y": y})


def dialect_frame(*, models: int = 4, tasks: int = 3, iterations: int = 50, pairs: int = 15,
                  effects: dict | None = None, missing: float = 0.0, seed: int = 0) -> pd.DataFrame:
    """One request per model × task × iteration with 10 texts, each SAE or AAVE with p = 0.5 and a pair drawn
    uniformly from ``pairs``; ``effects`` maps a task index to a yes-rate added to AAVE texts; each model × task has
    its own SAE yes-rate in [0.3, 0.7] (pairs add ±0.1 so that pairs differ)."""
    rng = np.random.default_rng(seed)
    n = models * tasks * iterations * 10
    request = np.arange(n) // 10
    model = request // (tasks * iterations)
    task = (request // iterations) % tasks
    pair = rng.integers(0, pairs, size=n)
    aave = rng.random(n) < 0.5
    shift = np.zeros(tasks)
    for task_index, delta in (effects or {}).items():
        shift[task_index] = delta
    rate = (rng.uniform(0.3, 0.7, size=(models, tasks))[model, task] + rng.uniform(-0.1, 0.1, size=pairs)[pair]
            + np.where(aave, shift[task], 0.0))
    y = (rng.random(n) < rate).astype(float)
    if missing:
        y[rng.random(n) < missing] = np.nan
    return pd.DataFrame({
        "model": pd.Categorical.from_codes(model, categories=[f"model-{i:02d}" for i in range(models)]),
        "task": pd.Categorical.from_codes(task, categories=[f"task-{i:02d}" for i in range(tasks)]),
        "pair": pd.Categorical.from_codes(pair, categories=[f"intro-{i:02d}" for i in range(pairs)]),
        "dialect": pd.Categorical.from_codes(aave.astype(int), categories=["SAE", "AAVE"]), "y": y})
