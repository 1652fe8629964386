"""Benchmark: a counterfactual names audit at the scale of seed 002 (4,009,521 judgments from 19 models), stored and
analysed on this machine.

A synthetic names audit of 19 models × 39 tasks × ``--iterations`` (90 by default: 66,690 requests of 60 texts,
4,001,400 judgments) over the default material is planned by the paradigm's own request builder, as a worker's
preparation does. Replies are made by a rule (JSON Lines, yes-rate 0.5, 0.10 less for Black names on
"self-disciplined", every 50th text left out) and recorded by the engine's own path,
``auditapp.engine.recording.chunk_record`` (replies stored, parsed by the paradigm's parser, judgments written in
bulk), 50 replies per transaction as a worker records them, each request built first as the worker builds it
before sending; only the recording calls are timed ("judgments/s stored").
The analysis (``counterfactual_analyse``: the judgments read back, every t-test, Benjamini–Hochberg over the
whole matrix, the summaries and completion) then runs ``--runs`` times, each in a fresh process, printing its wall
time and the process's peak memory (``ru_maxrss``). Targets (seed 002's scale): 50,000 judgments/s or more stored, the
analysis under 5 s and 1 GB on PostgreSQL on the 2-core machine (``--analyse-only AUDIT_ID`` runs one analysis of an
audit kept with ``--keep``).

    DATABASE_URL=postgres://postgres@127.0.0.1:55432/auditapp_bench .venv/bin/python benchmarks/counterfactual_scale.py
    .venv/bin/python benchmarks/counterfactual_scale.py --models 3 --iterations 5   # a quick look, any database

The database must exist; it is migrated first. The audit is deleted at the end (``--keep`` keeps it).
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings.local")

STORED_TARGET, ANALYSIS_SECONDS_TARGET, ANALYSIS_MEMORY_TARGET_MB = 50_000, 5.0, 1024
REPLIES_PER_TRANSACTION = 50
"""Replies recorded per transaction by default: the worker records what finished every 0.25 s
(``audit_runner.FLUSH_SECONDS``), 50 replies at 200 requests/s, more when the endpoints answer faster."""


def setup() -> None:
    import django
    from django.core.management import call_command

    django.setup()
    call_command("migrate", verbosity=0)


def reply_text(texts, pairs, task: str, rng) -> str:
    """The rule's reply: one JSON line per text, every 50th left out."""
    lines = []
    for text in texts:
        if text.index % 50 == 0:
            continue
        _, pair_no, side = text.unit.split(":")
        planted = task == "self_disciplined" and side == "minority" and pairs[int(pair_no)].group == "Black"
        p = 0.5 - (0.10 if planted else 0.0)
        lines.append(json.dumps({"i": text.index, "y": int(rng.random() < p)}))
    return "\n".join(lines)


def create(models: int, iterations: int, per_transaction: int = REPLIES_PER_TRANSACTION) -> int:
    import numpy as np
    from django.utils import timezone

    from auditapp.engine import conversations, launch, registry
    from auditapp.engine import recording as engine_recording
    from auditapp.llm_clients import Completion
    from auditapp.models import Audit, AuditChunk, AuditRequest, LLMEndpoint
    from auditapp.paradigms.counterfactual import services as counterfactual_services
    from auditapp.paradigms.counterfactual.prompt import DEFAULT_TEMPLATE
    from auditapp.paradigms.names.adapter import FLAVOUR
    from teams.models import Team
    from teams.scoping import new_objects_in

    counterfactual_services.enqueue_prepare = lambda audit_id: None  # no worker: this script plays its part
    with new_objects_in(Team.objects.get_or_create(name="Benchmarks")[0]):
        endpoint, _ = LLMEndpoint.objects.get_or_create(name="benchmark (never asked)", defaults={
            "protocol": "openai", "base_url": "http://127.0.0.1:9/v1"})
        choices = [launch.ModelChoice(endpoint=endpoint, model=f"model-{n:02d}") for n in range(models)]
        audit = counterfactual_services.counterfactual_audit_create(
            paradigm="names", design_class=FLAVOUR.design_class, name="benchmark: names at scale", models=choices,
            corpus=None, material=None, settings={"iterations": iterations, "pairs_per_iteration": 30,
                                                  "reference_group": "White", "analysis": {}},
            prompt_text=DEFAULT_TEMPLATE, default_corpus_name="benchmark: default names material",
            units_of=FLAVOUR.units_of)
    started = time.perf_counter()
    builder = registry.get("names").builder(audit)
    rows = [AuditRequest(audit=audit, audit_model=p.audit_model, condition=p.condition, unit=p.unit,
                         replicate=p.replicate, order=p.order, key=p.key) for p in builder.requests()]
    AuditRequest.objects.bulk_create(rows, batch_size=5000)
    Audit.objects.filter(pk=audit.pk).update(status=Audit.Status.RUNNING, n_requests=len(rows),
                                             manifest=builder.manifest(), started_at=timezone.now())
    print(f"planned {len(rows):,} requests in {time.perf_counter() - started:.1f} s")

    chunk = AuditChunk.objects.create(audit=audit, leased_until=timezone.now() + timezone.timedelta(days=1))
    claimed = [conversations.ClaimedRequest(r.id, r.audit_model_id, r.condition, None, r.unit, 0, r.key)
               for r in AuditRequest.objects.filter(audit=audit).order_by("order").only(
                   "id", "audit_model_id", "condition", "unit", "key")]
    rng = np.random.default_rng(0)
    stored_seconds, judgments = 0.0, 0
    for start in range(0, len(claimed), per_transaction):
        batch = claimed[start:start + per_transaction]
        results = []
        for request in batch:
            builder.payload(request)  # as the worker builds each request before sending it
            iteration = int(request.unit.removeprefix("iteration:"))
            texts = builder.design.texts(iteration, request.condition)
            text = reply_text(texts, builder.design.pairs(iteration), request.condition, rng)
            results.append(engine_recording.RequestResult(request, Completion(text, "stop", None, None, None), "", 1,
                                                        1.0))
            judgments += len(texts)
        began = time.perf_counter()
        engine_recording.chunk_record(chunk_id=chunk.id, results=results, parse=builder.parse)
        stored_seconds += time.perf_counter() - began
    rate = judgments / stored_seconds
    print(f"stored {judgments:,} judgments, {per_transaction} replies per transaction, in {stored_seconds:.1f} s of "
          f"recording: {rate:,.0f} judgments/s "
          f"(target ≥ {STORED_TARGET:,}: {'met' if rate >= STORED_TARGET else 'NOT met'})")
    Audit.objects.filter(pk=audit.pk).update(status=Audit.Status.ANALYSING)
    return audit.id


def analyse(audit_id: int) -> None:
    """Run in a fresh process: the analysis alone, its wall time and the process's peak memory."""
    from auditapp.models import Audit
    from auditapp.paradigms.counterfactual.services import counterfactual_analyse
    from auditapp.paradigms.names.design import NamesDesign

    audit = Audit.objects.get(pk=audit_id)
    began = time.perf_counter()
    counterfactual_analyse(audit, NamesDesign)
    seconds = time.perf_counter() - began
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    cells = Audit.objects.get(pk=audit_id).analysis["tables"]["cells"]
    planted = [c for c in cells if c["task"] == "self_disciplined" and c["group"] == "Black"]
    found = sum(bool(c["significant"]) for c in planted)
    print(json.dumps({"seconds": seconds, "peak_mb": peak_mb, "cells": len(cells),
                      "planted_found": f"{found} of {len(planted)}"}))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", type=int, default=19)
    parser.add_argument("--iterations", type=int, default=90)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--replies-per-transaction", type=int, default=REPLIES_PER_TRANSACTION)
    parser.add_argument("--keep", action="store_true")
    parser.add_argument("--analyse-only", type=int, metavar="AUDIT_ID",
                        help="analyse this stored audit once (kept by an earlier --keep) and print its figures")
    args = parser.parse_args()
    setup()
    if args.analyse_only:
        analyse(args.analyse_only)
        return
    from django.db import connection

    from auditapp.models import Audit

    print(f"database: {connection.vendor}")
    audit_id = create(args.models, args.iterations, args.replies_per_transaction)
    try:
        for run in range(args.runs):
            output = subprocess.run([sys.executable, __file__, "--analyse-only", str(audit_id)], check=True,
                                    capture_output=True, text=True, env=os.environ).stdout.strip().splitlines()[-1]
            figures = json.loads(output)
            print(f"analysis run {run + 1}: {figures['seconds']:.2f} s, peak {figures['peak_mb']:,.0f} MB "
                  f"(targets < {ANALYSIS_SECONDS_TARGET:.0f} s, < {ANALYSIS_MEMORY_TARGET_MB:,} MB); "
                  f"{figures['cells']:,} cells, the planted gap FDR-significant in {figures['planted_found']} models")
    finally:
        if not args.keep:
            Audit.objects.filter(pk=audit_id).delete()


if __name__ == "__main__":
    main()
