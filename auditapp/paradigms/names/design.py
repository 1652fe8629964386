"""A names audit's design (seed 002, Experiment 1): its material read from the corpus, the numbered texts of each
request, and its analysis over the judgments. Pure: no Django.

An iteration's 30 pairs depend only on the audit's seed and the iteration (every model and task sees the same
texts; :func:`auditapp.paradigms.counterfactual.plan.plan_name_pairs`); a request is one model × task × iteration,
its 60 texts numbered in an order drawn from the seed, the iteration and the task. The analysis joins each
judgment to its pair (the judgment's unit key names the pair and the side) and computes, per model × task ×
minority group, the mean within-pair gap δ = y(minority) − y(reference), its one-sample t-test against 0 and
Benjamini–Hochberg over the whole matrix (SI Appendix "Statistical analysis"), the cross-model summaries of
Figure 1 and Supplementary Table 3, and the completion rates of Table 1.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
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
from auditapp.paradigms.counterfactual.material import Task
from auditapp.paradigms.counterfactual.problems import MaterialError, MaterialProblem
from auditapp.paradigms.counterfactual.tasks import tasks_asked
from auditapp.paradigms.counterfactual.units import names_material

DEFAULTS = {"iterations": 100, "pairs_per_iteration": 30, "reference_group": "White"}
MAX_PAIRS = 100


@dataclass(eq=False)
class NamesDesign:
    seed: int
    tasks: list[Task]
    names: list
    vignettes: list
    reference_group: str
    pairs_per_iteration: int
    alpha: float
    only_tasks: tuple[str, ...] = ()

    @classmethod
    def from_audit(cls, units: Sequence[Unit], *, seed: int, settings: Mapping) -> NamesDesign:
        """The design of an audit over these units with these settings (``Audit.design``); raises MaterialError
        naming every problem (a reference group without names, too few vignettes for the pairs)."""
        material = names_material(units)
        settings = {**DEFAULTS, **settings}
        tasks, subset_problems = tasks_asked(material.tasks, settings.get("only_tasks") or ())
        design = cls(seed=seed, tasks=tasks, names=list(material.names),
                     vignettes=list(material.vignettes), reference_group=settings["reference_group"],
                     pairs_per_iteration=settings["pairs_per_iteration"],
                     alpha=settings_of(settings).alpha, only_tasks=tuple(settings.get("only_tasks") or ()))
        problems = [*subset_problems, *design.problems()]
        if problems:
            raise MaterialError([MaterialProblem("settings", problem) for problem in problems])
        return design

    def problems(self) -> list[str]:
        problems = []
        groups = {name.group for name in self.names}
        if self.reference_group not in groups:
            problems.append(f"reference group {self.reference_group!r} has no names (groups: {sorted(groups)})")
        if not groups - {self.reference_group}:
            problems.append("no minority group: the names hold only the reference group")
        elif self.reference_group in groups and not plan.paired_genders(self.names, self.reference_group):
            problems.append(f"no gender has names in the reference group {self.reference_group!r} and in every "
                            f"other group, so no within-gender pair can be made")
        if not 1 <= self.pairs_per_iteration <= MAX_PAIRS:
            problems.append(f"pairs per iteration must be between 1 and {MAX_PAIRS}")
        elif len(self.vignettes) < self.pairs_per_iteration:
            problems.append(f"{len(self.vignettes)} vignettes for {self.pairs_per_iteration} pairs per iteration: "
                            "an iteration uses each vignette at most once")
        if not self.tasks:
            problems.append("no task")
        return problems

    @property
    def minority_groups(self) -> list[str]:
        return sorted({name.group for name in self.names} - {self.reference_group})

    def _tasks_described(self) -> dict:
        """The tasks asked, and the subset the launch chose (the manifest says whether the material was cut)."""
        return {"tasks": [task.slug for task in self.tasks],
                "only_tasks": list(self.only_tasks) or "every task of the material"}

    def task(self, slug: str) -> Task:
        return self._tasks_by_slug()[slug]

    @lru_cache(maxsize=1)  # noqa: B019 (a design lives as long as its builder)
    def _tasks_by_slug(self) -> dict[str, Task]:
        return {task.slug: task for task in self.tasks}

    @lru_cache(maxsize=512)  # noqa: B019
    def pairs(self, iteration: int) -> list[plan.NamePair]:
        return plan.plan_name_pairs(self.seed, iteration, self.vignettes, self.names,
                                    reference_group=self.reference_group, n_pairs=self.pairs_per_iteration)

    @lru_cache(maxsize=1)  # noqa: B019
    def _vignettes_by_key(self) -> dict:
        return {vignette.key: vignette for vignette in self.vignettes}

    def side_text(self, iteration: int, pair_no: int, side: str) -> str:
        """The text of one side ("minority" or "reference") of an iteration's pair: its vignette with that name."""
        pair = self.pairs(iteration)[pair_no]
        vignette = self._vignettes_by_key()[pair.vignette_key]
        return vignette.text(pair.minority_name if side == "minority" else pair.reference_name)

    def texts(self, iteration: int, task_slug: str) -> list[plan.PlannedText]:
        return plan.name_texts(self.seed, iteration, task_slug, self.pairs(iteration), self._vignettes_by_key())

    @property
    def texts_per_request(self) -> int:
        return 2 * self.pairs_per_iteration

    def describe(self) -> dict:
        return {"reference_group": self.reference_group, "minority_groups": self.minority_groups,
                "pairs_per_iteration": self.pairs_per_iteration, "texts_per_request": self.texts_per_request,
                "n_tasks": len(self.tasks), **self._tasks_described(), "n_names": len(self.names), "n_vignettes": len(self.vignettes),
                "genders_paired": plan.paired_genders(self.names, self.reference_group),
                "names_never_drawn": [f"{group} {gender}" for group, gender in
                                      plan.unpaired_names(self.names, self.reference_group)],
                "pairing": "an iteration's pairs depend on the seed and the iteration only (the same texts for every "
                           "model and task); genders alternate, minority groups are cycled in a seeded order, "
                           "each vignette is used at most once per iteration (ours: seed 002 does not say how "
                           "pairs were drawn)"}

    def judgment_frame(self, judged: pd.DataFrame, model_names: Mapping[int, str]) -> pd.DataFrame:
        """The judgments as the statistics take them: model, task, group, pair, side, y (NaN when missing). A
        judgment's group is looked up by (iteration, pair number) in an array of the iterations' pairs."""
        parts = plan.name_unit_parts(judged["unit"])
        iterations = judged["iteration"].to_numpy(np.int64)
        pair_no = parts["pair_no"].to_numpy(np.int64)
        groups = self.minority_groups
        lookup = np.full((int(iterations.max(initial=-1)) + 1, self.pairs_per_iteration), -1, dtype=np.int64)
        code = {group: n for n, group in enumerate(groups)}
        for iteration in np.flatnonzero(np.bincount(iterations)):  # the iterations judged, without sorting 4 million
            lookup[iteration, :] = [code[pair.group] for pair in self.pairs(int(iteration))]
        request_ids = judged["request_id"].to_numpy(np.int64)
        first_request = int(request_ids.min()) if len(request_ids) else 0
        return pd.DataFrame({
            "model": model_column(judged["model_id"], model_names),
            "task": task_column(judged["task"], [task.slug for task in self.tasks]),
            "group": pd.Categorical.from_codes(lookup[iterations, pair_no], categories=pd.Index(groups)),
            # Counted from the audit's first request: an audit's requests have ids close together, so the pair ids
            # span a small range the statistics code without sorting or hashing them.
            "pair": (request_ids - first_request) * self.pairs_per_iteration + pair_no,
            "side": parts["side"].array,  # categorical: comparing its codes, not 4 million strings
            "y": judged["label"].to_numpy(float),
        }, copy=False)

    @staticmethod
    def headline(analysis: dict) -> Headline | None:
        """Figure 1's values (seed 002 Experiment 1): each model's mean gap (minority − reference yes-rate over
        complete pairs) per group and task, with its t-based 95% CI, n pairs and "FDR" where significant."""
        if not analysis.get("analysed"):
            return None
        task_names = {task["slug"]: task["name"] for task in analysis.get("tasks", [])}
        rows = tuple(HeadlineRow(cell["model"], f"{cell['group']}: {task_names.get(cell['task'], cell['task'])}",
                                 cell["mean_gap"], cell["ci_low"], cell["ci_high"], cell["n_pairs"],
                                 "FDR-significant" if cell["significant"] else cell.get("note") or "")
                     for cell in analysis["tables"]["cells"])
        reference = analysis.get("settings", {}).get("reference_group", "reference")
        return Headline(f"Gap in yes-rate, minority − {reference} name (Figure 1)", "Group: task", "abs", rows)

    def analyse(self, judged: pd.DataFrame, failed: pd.DataFrame, requests: pd.DataFrame,
                model_names: Mapping[int, str]) -> dict:
        """Everything the dashboard and the tables show, as JSON-ready records (see the module docstring)."""
        frame = self.judgment_frame(judged, model_names)
        cells = stats.names_cells(frame, alpha=self.alpha)
        summary = stats.names_summary(cells)
        counts = stats.names_group_counts(cells)
        tables = {"cells": cells, "summary": summary, "group_counts": counts,
                  **completion_tables(judged, requests, model_names, self.texts_per_request)}
        return {
            "analysed": True,
            "settings": {"alpha": self.alpha, "reference_group": self.reference_group},
            "models": list(dict.fromkeys(model_names.values())),
            "groups": self.minority_groups,
            "tasks": [{"slug": t.slug, "name": t.name, "domain": t.domain} for t in self.tasks],
            "notes": [
                "Gap δ = y(minority name) − y(reference name) for each pair of texts that differ only in the name "
                f"(reference group: {self.reference_group}); the mean gap per model × task × group is tested "
                "against 0 with a one-sample t-test (seed 002 SI Appendix, Statistical analysis).",
                f"Benjamini–Hochberg over the whole model × task × group matrix ({int(cells['p'].notna().sum())} "
                f"tests with a defined p), α = {self.alpha}.",
                "A text whose answer cannot be read is missing and excluded (never coded 0 or 1); a pair with a "
                "missing side drops out of the gap, its other side still counts in the yes-rates.",
                "Directional consistency: of the models with a defined gap, how many share the modal sign.",
            ],
            **tables_payload(tables),
        }
