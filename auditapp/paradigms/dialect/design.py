"""A dialect audit's design (seed 002, Experiment 2): its material read from the corpus, the numbered texts of each
request, and its analysis over the judgments. Pure: no Django.

A request is one model × task × iteration: a batch of texts (10 in the paper) each drawn independently, SAE or
AAVE with equal probability and a pair uniformly from the task's text set (introduction texts for the 14 tasks
shared with Experiment 1, message texts for toxic and angry), numbered, without dialect labels
(:func:`auditapp.paradigms.counterfactual.plan.dialect_texts`). The batch depends on the seed, the iteration and
the task, so every model is asked the same batches. The analysis gives per model × task the gap
Δ = ȳ(AAVE) − ȳ(SAE), Welch's t-test, the paired t-test over per-pair mean yes-rates, Cohen's h, an approximate
95% CI and Benjamini–Hochberg within each model across its tasks (SI Appendix "Statistical analysis"), the
cross-model summaries of Figure 2 and the completion rates of Table 1.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache

import pandas as pd

from auditapp.engine.headlines import Headline, HeadlineRow
from auditapp.engine.protocol import Unit
from auditapp.paradigms.counterfactual import plan, stats
from auditapp.paradigms.counterfactual.analysis import (
    completion_tables,
    model_column,
    settings_of,
    tables_payload,
    task_column,
)
from auditapp.paradigms.counterfactual.dialect_texts import strip_features
from auditapp.paradigms.counterfactual.material import Task
from auditapp.paradigms.counterfactual.problems import MaterialError, MaterialProblem
from auditapp.paradigms.counterfactual.tasks import tasks_asked
from auditapp.paradigms.counterfactual.units import dialect_material

DEFAULTS = {"iterations": 50, "batch_size": 10}
MAX_BATCH_SIZE = 100


@dataclass(eq=False)
class DialectDesign:
    seed: int
    tasks: list[Task]
    pairs: list
    batch_size: int
    alpha: float
    primary: str
    only_tasks: tuple[str, ...] = ()

    @classmethod
    def from_audit(cls, units: Sequence[Unit], *, seed: int, settings: Mapping) -> DialectDesign:
        """The design of an audit over these units with these settings (``Audit.design``); raises MaterialError
        naming every problem (a task whose text set has no pair)."""
        material = dialect_material(units)
        settings = {**DEFAULTS, **settings}
        analysis = settings_of(settings)
        tasks, subset_problems = tasks_asked(material.tasks, settings.get("only_tasks") or ())
        design = cls(seed=seed, tasks=tasks, pairs=list(material.pairs), batch_size=settings["batch_size"],
                     alpha=analysis.alpha, primary=analysis.primary, only_tasks=tuple(settings.get("only_tasks") or ()))
        problems = [*subset_problems, *design.problems()]
        if problems:
            raise MaterialError([MaterialProblem("settings", problem) for problem in problems])
        return design

    def problems(self) -> list[str]:
        problems = []
        if not 1 <= self.batch_size <= MAX_BATCH_SIZE:
            problems.append(f"the batch size must be between 1 and {MAX_BATCH_SIZE}")
        sets = {pair.text_set for pair in self.pairs}
        problems.extend(f"task {task.slug!r} is asked about {task.text_set} texts and the material has none"
                        for task in self.tasks if task.text_set not in sets)
        if not self.tasks:
            problems.append("no task")
        return problems

    def _tasks_described(self) -> dict:
        """The tasks asked, and the subset the launch chose (the manifest says whether the material was cut)."""
        return {"tasks": [task.slug for task in self.tasks],
                "only_tasks": list(self.only_tasks) or "every task of the material"}

    def task(self, slug: str) -> Task:
        return self._tasks_by_slug()[slug]

    @lru_cache(maxsize=1)  # noqa: B019 (a design lives as long as its builder)
    def _tasks_by_slug(self) -> dict[str, Task]:
        return {task.slug: task for task in self.tasks}

    @lru_cache(maxsize=8)  # noqa: B019
    def _texts_of_set(self, text_set: str) -> dict[str, dict[str, str]]:
        """Each pair of the text set: the texts sent in SAE and in AAVE (its feature tags stripped)."""
        return {pair.key: {"SAE": pair.sae, "AAVE": strip_features(pair.aave_annotated)}
                for pair in self.pairs if pair.text_set == text_set}

    def side_text(self, task_slug: str, pair_key: str, dialect: str) -> str:
        """The text one side of a pair is sent as, in the task's text set (the AAVE without its feature tags)."""
        return self._texts_of_set(self.task(task_slug).text_set)[pair_key][dialect]

    def texts(self, iteration: int, task_slug: str) -> list[plan.PlannedText]:
        return plan.dialect_texts(self.seed, iteration, task_slug, self._texts_of_set(self.task(task_slug).text_set),
                                  batch_size=self.batch_size)

    @property
    def texts_per_request(self) -> int:
        return self.batch_size

    def describe(self) -> dict:
        return {"batch_size": self.batch_size, "n_tasks": len(self.tasks), **self._tasks_described(),
                "n_pairs": {text_set: sum(p.text_set == text_set for p in self.pairs)
                            for text_set in sorted({p.text_set for p in self.pairs})},
                "sampling": "each text of a batch independently: SAE or AAVE with p = 0.5, a pair uniformly from "
                            "the task's text set (seed 002 SI Appendix, Experimental procedure); the batch depends "
                            "on the seed, the iteration and the task"}

    def judgment_frame(self, judged: pd.DataFrame, model_names: Mapping[int, str]) -> pd.DataFrame:
        """The judgments as the statistics take them: model, task, pair, dialect, y (NaN when missing)."""
        parts = plan.dialect_unit_parts(judged["unit"])
        return pd.DataFrame({
            "model": model_column(judged["model_id"], model_names),
            "task": task_column(judged["task"], [task.slug for task in self.tasks]),
            "pair": parts["pair_key"].to_numpy(),
            "dialect": parts["dialect"].to_numpy(),
            "y": judged["label"].to_numpy(float),
        })

    @staticmethod
    def headline(analysis: dict) -> Headline | None:
        """Figure 2's values (seed 002 Experiment 2): each model's AAVE − SAE gap per task with its approximate
        95% CI, n the AAVE texts judged, and "FDR-significant" where it is."""
        if not analysis.get("analysed"):
            return None
        task_names = {task["slug"]: task["name"] for task in analysis.get("tasks", [])}
        rows = tuple(HeadlineRow(cell["model"], task_names.get(cell["task"], cell["task"]), cell["gap"],
                                 cell["ci_low"], cell["ci_high"], cell["n_aave"],
                                 "FDR-significant" if cell["significant"] else "")
                     for cell in analysis["tables"]["cells"])
        return Headline("Gap in yes-rate, AAVE − SAE (Figure 2)", "Task", "abs", rows)

    def analyse(self, judged: pd.DataFrame, failed: pd.DataFrame, requests: pd.DataFrame,
                model_names: Mapping[int, str]) -> dict:
        """Everything the dashboard and the tables show, as JSON-ready records (see the module docstring)."""
        frame = self.judgment_frame(judged, model_names)
        cells = stats.dialect_cells(frame, alpha=self.alpha, primary=self.primary)
        summary = stats.dialect_summary(cells)
        tables = {"cells": cells, "summary": summary,
                  **completion_tables(judged, requests, model_names, self.texts_per_request)}
        return {
            "analysed": True,
            "settings": {"alpha": self.alpha, "primary": self.primary},
            "models": list(dict.fromkeys(model_names.values())),
            "tasks": [{"slug": t.slug, "name": t.name, "domain": t.domain, "text_set": t.text_set}
                      for t in self.tasks],
            "notes": [
                "Gap Δ = ȳ(AAVE) − ȳ(SAE) per model × task, yes-rates over every judged text of every iteration "
                "(seed 002 SI Appendix, Statistical analysis); approximate 95% CI from the normal approximation of "
                "a difference of proportions; Cohen's h = 2·asin √ȳ(AAVE) − 2·asin √ȳ(SAE).",
                "Paired t-test over text pairs (each pair's mean yes-rate in AAVE and in SAE across iterations; a "
                "pair seen in one dialect only drops out) and Welch's two-sample t-test on the 0/1 answers.",
                f"Benjamini–Hochberg within each model across its tasks on the {self.primary} test's p, "
                f"α = {self.alpha}.",
                "A text whose answer cannot be read is missing and excluded (never coded 0 or 1).",
            ],
            **tables_payload(tables),
        }
