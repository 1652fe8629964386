"""Small answered counterfactual audits as the analysis receives them (the reader's judged frame, the failed
requests, the requests per state, the model names), built without a database over the default material, for
the tests that pin the whole analysis's output (``tests/auditapp/data/*_analysis.json``).

Each holds what the analysis must handle: missing answers with their reasons, texts never recorded, failed
requests, a model answering yes to everything (gaps without variance), a model × task with a single iteration
(fewer than two pairs or texts), ties, judgments in no particular order and request ids with gaps."""
from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pandas as pd

from auditapp.paradigms.counterfactual import judgments as reader
from auditapp.paradigms.dialect import adapter as dialect_adapter
from auditapp.paradigms.dialect.design import DialectDesign
from auditapp.paradigms.names import adapter as names_adapter
from auditapp.paradigms.names.design import NamesDesign

DATA = Path(__file__).parent / "data"
MODEL_NAMES = {31: "model-a", 17: "model-b", 44: "always-yes"}
ITERATIONS = 5
REASONS = ("refused, \"as a policy\"", "index absent", "")


def names_case(seed: int = 3) -> tuple[NamesDesign, pd.DataFrame, pd.DataFrame, pd.DataFrame, dict]:
    settings = {"iterations": ITERATIONS, "pairs_per_iteration": 12, "reference_group": "White"}
    units, _ = names_adapter.units_of(None, settings)
    settings["only_tasks"] = _first_tasks(NamesDesign, units, 12)
    design = NamesDesign.from_audit(units, seed=seed, settings=settings)
    return (design, *_answered(design, seed), MODEL_NAMES)


def dialect_case(seed: int = 5) -> tuple[DialectDesign, pd.DataFrame, pd.DataFrame, pd.DataFrame, dict]:
    settings = {"iterations": ITERATIONS, "batch_size": 20}
    units, _ = dialect_adapter.units_of(None, settings)
    settings["only_tasks"] = _first_tasks(DialectDesign, units, 8)
    design = DialectDesign.from_audit(units, seed=seed, settings=settings)
    return (design, *_answered(design, seed), MODEL_NAMES)


def _first_tasks(design_class, units, n: int) -> list[str]:
    """The slugs of the material's first ``n`` tasks: a smaller stored expectation, every path still taken."""
    return [task.slug for task in design_class.from_audit(units, seed=0, settings={}).tasks[:n]]


def _answered(design, seed: int) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """Every model × task × iteration a request (ids with gaps); a few failed, the rest answered: yes with a rate
    of its model × task (always for ``always-yes``), 6% missing with a reason, 3% of the texts not recorded. The
    first task of ``model-b`` has its first iteration only, most of its texts not recorded or missing."""
    rng = np.random.default_rng(seed)
    rows, failed, states = [], [], []
    request_id = 1000
    for model_id, model_name in MODEL_NAMES.items():
        for task_no, task in enumerate(design.tasks):
            rate = 1.0 if model_name == "always-yes" else rng.uniform(0.2, 0.8)
            for iteration in range(ITERATIONS):
                request_id += int(rng.integers(1, 4))
                if model_name == "model-b" and task_no == 0 and iteration > 0:
                    states.append((model_id, task.slug, "pending"))
                    continue
                if rng.random() < 0.03:
                    failed.append((request_id, model_id, task.slug, iteration, "HTTP 500: boom"))
                    states.append((model_id, task.slug, "failed"))
                    continue
                states.append((model_id, task.slug, "answered"))
                scarce = model_name == "model-b" and task_no == 0
                for text in design.texts(iteration, task.slug):
                    draw = rng.random()
                    if draw < (0.7 if scarce else 0.03):
                        continue
                    if draw < (0.85 if scarce else 0.09):
                        reason = REASONS[int(rng.integers(len(REASONS)))]
                        rows.append((request_id, model_id, task.slug, iteration, text.unit, np.nan, reason))
                    else:
                        rows.append((request_id, model_id, task.slug, iteration, text.unit,
                                     float(rng.random() < rate), ""))
    judged = pd.DataFrame.from_records(rows, columns=list(reader.JUDGMENT_COLUMNS))
    judged = judged.iloc[rng.permutation(len(judged))].reset_index(drop=True)
    for column in reader.CATEGORY_COLUMNS:
        judged[column] = pd.Categorical(judged[column], categories=sorted(set(judged[column])))
    failed_frame = pd.DataFrame.from_records(failed, columns=list(reader.FAILED_COLUMNS))
    requests = (pd.DataFrame.from_records(states, columns=["model_id", "task", "state"])
                .groupby(["model_id", "task", "state"], sort=False).size().rename("n").reset_index())
    return judged, failed_frame, requests


def assert_same_analysis(found, expected, *, where: str = "analysis") -> None:
    """Equal JSON-ready analyses, floats to 1e-12 (relative, or absolute near 0)."""
    if isinstance(expected, dict):
        assert isinstance(found, dict) and list(found) == list(expected), where
        for key in expected:
            assert_same_analysis(found[key], expected[key], where=f"{where}.{key}")
    elif isinstance(expected, list):
        assert isinstance(found, list) and len(found) == len(expected), where
        for n, (each_found, each_expected) in enumerate(zip(found, expected, strict=True)):
            assert_same_analysis(each_found, each_expected, where=f"{where}[{n}]")
    elif isinstance(expected, float):
        assert isinstance(found, float) and math.isclose(found, expected, rel_tol=1e-12, abs_tol=1e-12), f"{where}: {found!r} != {expected!r}"
    else:
        assert found == expected and type(found) is type(expected), f"{where}: {found!r} != {expected!r}"


def as_stored(analysis: dict) -> dict:
    """The analysis as the audit stores it (JSON)."""
    return json.loads(json.dumps(analysis))
