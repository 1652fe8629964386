"""Benchmark: how fast the counterfactual error browser answers (GET /api/audits/{id}/judged-pairs/, seed 002).

Builds a names audit over the default material (the paper's 39 tasks and 200 names, our vignettes; 30 pairs per
request) with ``--models`` models × ``--tasks`` tasks × ``--iterations`` iterations, every request answered: its
60 judgments written directly (a tenth of them missing with a reason, the rest a seeded 0/1), as a worker would
store them. Then times, through Django's test client (the whole view: scoping, the cell's two queries, the design
rebuilt from the corpus, the rows, filters and JSON), a page of 50 at the launch's defaults, the same with each
filter, and the whole cell as CSV; each the best of ``--runs``. The throwaway audit is deleted at the end.

    DATABASE_URL=sqlite:////tmp/pairs-bench.sqlite3 .venv/bin/python benchmarks/judged_pairs.py \\
        --models 19 --tasks 39 --iterations 100

The database is migrated first.
"""
from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings.local")

PAGE = {"page_size": 50}


def setup() -> None:
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)


def names_audit(*, n_models: int, n_tasks: int, iterations: int, user):
    """The audit, every request answered with its 60 judgments."""
    import numpy as np

    from auditapp.corpus_selectors import corpus_units
    from auditapp.engine import registry
    from auditapp.models import AuditJudgment, AuditRequest, LLMEndpoint
    from auditapp.paradigms.counterfactual.tasks import NAMES_TASKS
    from auditapp.paradigms.names.design import NamesDesign
    from teams.models import Membership, Team

    team = Team.objects.get_or_create(name="Benchmarks")[0]
    Membership.objects.create(team=team, user=user, role="owner")
    endpoint, _ = LLMEndpoint.objects.get_or_create(name="judged-pairs-benchmark",
                                                    defaults={"base_url": "http://127.0.0.1:9/v1", "team": team})
    tasks = [task.slug for task in NAMES_TASKS[:n_tasks]]
    audit = registry.get("names").launch({
        "name": f"judged pairs benchmark {time.time():.0f}", "iterations": iterations, "pairs_per_iteration": 30,
        "reference_group": "White", "corpus": None, "material": {"tasks": tasks}, "analysis": {},
        "models": [{"endpoint": endpoint, "model": f"model-{m:02d}", "label": "", "params": {}}
                   for m in range(n_models)]}, created_by=user)
    design = NamesDesign.from_audit(corpus_units(audit.corpus_id), seed=audit.seed, settings=audit.design)
    rng = np.random.default_rng(0)
    models = list(audit.models.order_by("position"))
    for task in tasks:
        units = {iteration: [text.unit for text in design.texts(iteration, task)] for iteration in range(iterations)}
        requests = AuditRequest.objects.bulk_create(
            [AuditRequest(audit=audit, audit_model=model, condition=task, unit=f"iteration:{iteration}", order=0,
                          key=f"{audit.id}:{model.id}:{task}:{iteration}", state=AuditRequest.State.ANSWERED,
                          outcome="label")
             for model in models for iteration in range(iterations)], batch_size=5000)
        judgments = []
        for request in requests:
            iteration = int(request.unit.removeprefix("iteration:"))
            labels = rng.integers(0, 2, size=60)
            missing = rng.random(60) < 0.1
            judgments += [AuditJudgment(audit=audit, request=request, unit=unit, outcome="unparseable",
                                        reason="index absent") if missing[n] else
                          AuditJudgment(audit=audit, request=request, unit=unit, outcome="label", label=int(labels[n]))
                          for n, unit in enumerate(units[iteration])]
        AuditJudgment.objects.bulk_create(judgments, batch_size=10000)
    return audit, models[0].id, tasks[0]


def best_of(runs: int, call) -> tuple[float, object]:
    times, answer = [], None
    for _ in range(runs):
        started = time.perf_counter()
        answer = call()
        times.append(time.perf_counter() - started)
    return min(times), answer


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", type=int, default=1)
    parser.add_argument("--tasks", type=int, default=39)
    parser.add_argument("--iterations", type=int, default=100)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    setup()
    from django.db import connection
    from django.test import Client

    from auditapp.models import AuditJudgment
    from auditapp.services import researcher_create
    from benchmarks.judgment_storage import delete_audit

    started = time.perf_counter()
    user, _, _ = researcher_create(username=f"pairs-benchmark-{time.time():.0f}")
    audit, model, task = names_audit(n_models=args.models, n_tasks=args.tasks, iterations=args.iterations, user=user)
    n_judgments = AuditJudgment.objects.filter(audit=audit).count()
    print(f"{connection.vendor}: names audit of {args.models} models × {args.tasks} tasks × {args.iterations} "
          f"iterations, {n_judgments:,} judgments, built in {time.perf_counter() - started:.0f} s")
    client = Client(HTTP_HOST="localhost")
    client.force_login(user)
    url = f"/api/audits/{audit.id}/judged-pairs/"
    cell = {"model": model, "task": task}
    try:
        cases = {"first page (launch defaults)": {}, "answers differ": {"differs": "true"},
                 "group Black": {"group": "Black"}, "a side missing": {"outcome": "missing"},
                 "search a name": {"q": "Darnell"}, "sorted by group, reversed": {"ordering": "-group"}}
        for name, params in cases.items():
            seconds, response = best_of(args.runs, lambda params=params: client.get(url, {**cell, **PAGE, **params}))
            assert response.status_code == 200, response.content[:300]
            print(f"  {name:28s} {seconds * 1000:7.0f} ms  ({response.json()['count']:,} rows match)")
        seconds, _ = best_of(args.runs, lambda: b"".join(client.get(url, {**cell, "format": "csv"}).streaming_content))
        print(f"  {'the whole cell as CSV':28s} {seconds * 1000:7.0f} ms  ({args.iterations * 30:,} rows)")
    finally:
        delete_audit(audit.id)
        user.delete()
    return 0


if __name__ == "__main__":
    sys.exit(main())
