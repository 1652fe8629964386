"""Benchmark: how fast the audit engine stores judgments, and how fast the counterfactual reader reads them back.

The counterfactual audits (seed 002) need 50,000 judgments stored per second or more on PostgreSQL:
a names audit stores 60 judgments per reply (``auditapp.engine.judgments.judgments_create``, the path every reply
takes). ``store`` times that function on throwaway requests of a throwaway audit, in batches as a worker records
them (``--replies`` replies of ``--per-reply`` judgments per transaction), for each storage path the configured
database has (on PostgreSQL the COPY path and the executemany path, on SQLite executemany), several runs each.

``read`` creates ``--rows`` judgments of one audit directly with COPY (fast to set up; the stored rows look as the
counterfactual audits store them), then reads them with
``auditapp.paradigms.counterfactual.judgments.judgments_frame`` in a fresh process and prints its wall time and
peak memory (``resource.getrusage``'s ``ru_maxrss`` of that process). The throwaway audits are deleted at the end.

    DATABASE_URL=postgres://postgres@127.0.0.1:55432/auditapp_d \\
        .venv/bin/python benchmarks/judgment_storage.py store --judgments 200000 --runs 3
    DATABASE_URL=… .venv/bin/python benchmarks/judgment_storage.py read --rows 4000000

The database must exist; it is migrated first.
"""
from __future__ import annotations

import argparse
import io
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

TARGET_PER_SECOND = 50_000
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings.local")


def setup() -> None:
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)


def throwaway_audit(*, n_requests: int, n_models: int = 1, n_tasks: int = 1, name: str) -> tuple[int, list[int]]:
    """An audit with ``n_requests`` pending requests spread over models × tasks × iterations; (id, request ids)."""
    from auditapp.models import Audit, AuditModel, AuditRequest, LLMEndpoint
    from teams.models import Team

    team = Team.objects.get_or_create(name="Benchmarks")[0]
    endpoint, _ = LLMEndpoint.objects.get_or_create(name="judgment-storage-benchmark",
                                                    defaults={"base_url": "http://127.0.0.1:9/v1", "team": team})
    audit = Audit.objects.create(name=name, team=team)
    models = AuditModel.objects.bulk_create([AuditModel(audit=audit, endpoint=endpoint, model=f"annotator-{m}",
                                                        position=m) for m in range(n_models)])
    tasks = [f"task_{t}" for t in range(n_tasks)]
    per_cell = -(-n_requests // (n_models * n_tasks))
    rows = [AuditRequest(audit=audit, audit_model=models[(n // per_cell) % n_models],
                         condition=tasks[n // (per_cell * n_models)], unit=f"iteration:{n % per_cell}",
                         order=n, key=f"{audit.id}:{n}") for n in range(n_requests)]
    created = AuditRequest.objects.bulk_create(rows, batch_size=5000)
    return audit.id, [row.id for row in created]


def delete_audit(audit_id: int) -> None:
    from django.db import connection

    from auditapp.models import Audit, AuditJudgment, AuditModel, AuditRequest

    # Raw deletes: the ORM's cascade would load millions of rows to delete them.
    with connection.cursor() as cursor:
        for model in (AuditJudgment, AuditRequest, AuditModel):
            table = model._meta.db_table
            cursor.execute(f"DELETE FROM {table} WHERE audit_id = %s", [audit_id])  # noqa: S608 - a model's table
    Audit.objects.filter(pk=audit_id).delete()


def parsed_replies(request_ids: list[int], per_reply: int):
    """One names-audit reply per request: ``per_reply`` judgments, a tenth of them missing with a reason."""
    from auditapp.engine.protocol import Judgment, ParsedReply

    replies = []
    for request_id in request_ids:
        judgments = tuple(
            Judgment(unit=f"{i}:{(i - 1) // 2}:{('minority', 'reference')[i % 2]}", outcome="unparseable",
                     reason="index absent") if i % 10 == 0 else
            Judgment(unit=f"{i}:{(i - 1) // 2}:{('minority', 'reference')[i % 2]}", outcome="label",
                     label=(request_id + i) % 2)
            for i in range(1, per_reply + 1))
        replies.append((request_id, ParsedReply(outcome="label", judgments=judgments)))
    return replies


def store(args: argparse.Namespace) -> int:
    setup()
    from django.db import connection, transaction

    from auditapp.engine import judgments as engine_judgments

    paths = ["copy", "executemany"] if connection.vendor == "postgresql" else ["executemany"]
    n_requests = -(-args.judgments // args.per_reply)
    print(f"{connection.vendor}: {n_requests * args.per_reply:,} judgments, {args.per_reply} per reply, "
          f"{args.replies} replies ({args.replies * args.per_reply:,} judgments) per transaction")
    worst = {}
    for path in paths:
        rates = []
        for run in range(args.runs):
            audit_id, request_ids = throwaway_audit(n_requests=n_requests, name=f"judgment storage {path} {run}")
            try:
                replies = parsed_replies(request_ids, args.per_reply)
                batches = [replies[start:start + args.replies] for start in range(0, len(replies), args.replies)]
                engine_judgments.JUDGMENT_COPY_MIN_ROWS = 0 if path == "copy" else 10**12
                started = time.perf_counter()
                for batch in batches:
                    with transaction.atomic():
                        engine_judgments.judgments_create(audit_id, batch)
                seconds = time.perf_counter() - started
            finally:
                delete_audit(audit_id)
            rates.append(n_requests * args.per_reply / seconds)
            print(f"  {path:12s} run {run + 1}: {seconds:6.2f} s, {rates[-1]:>9,.0f} judgments/s")
        worst[path] = min(rates)
    best_path = max(worst, key=worst.get)
    ok = worst[best_path] >= TARGET_PER_SECOND
    print(f"slowest run of the {best_path} path: {worst[best_path]:,.0f} judgments/s "
          f"(target {TARGET_PER_SECOND:,}): {'ok' if ok else 'SHORT'}")
    return 0 if ok else 1


def read(args: argparse.Namespace) -> int:
    setup()
    from django.db import connection

    if connection.vendor != "postgresql":
        print("the read benchmark creates its rows with COPY: run it on PostgreSQL")
        return 2
    per_request = 60
    n_requests = -(-args.rows // per_request)
    started = time.perf_counter()
    audit_id, request_ids = throwaway_audit(n_requests=n_requests, n_models=19, n_tasks=39,
                                            name="judgment read benchmark")
    try:
        from auditapp.models import AuditJudgment

        columns = ("audit_id", "request_id", "unit", "outcome", "value", "label", "reason", "explanation")
        with (connection.cursor() as cursor,
              cursor.cursor.copy(f"COPY {AuditJudgment._meta.db_table} ({', '.join(columns)}) FROM STDIN") as copy):
            for start in range(0, len(request_ids), 2000):
                buffer = io.StringIO()
                for request_id in request_ids[start:start + 2000]:
                    for i in range(1, per_request + 1):
                        side = ("minority", "reference")[i % 2]
                        if i % 25 == 0:
                            buffer.write(f"{audit_id}\t{request_id}\t{i}:{(i - 1) // 2}:{side}\tunparseable\t"
                                         "\\N\t\\N\tindex absent\t\n")
                        else:
                            buffer.write(f"{audit_id}\t{request_id}\t{i}:{(i - 1) // 2}:{side}\tlabel\t\\N\t"
                                         f"{(request_id * 7 + i) % 2}\t\t\n")
                copy.write(buffer.getvalue())
        print(f"created {n_requests * per_request:,} judgments in {time.perf_counter() - started:.1f} s")
        for run in range(args.runs):
            # A fresh process, so its peak memory is the reader's and nothing of the set-up's.
            output = subprocess.run([sys.executable, __file__, "read-once", str(audit_id)], check=True,
                                    capture_output=True, text=True, env=os.environ).stdout
            result = json.loads(output.strip().splitlines()[-1])
            print(f"  run {run + 1}: {result['rows']:,} rows in {result['seconds']:.2f} s, "
                  f"peak memory {result['peak_mb']:.0f} MB (process), frame {result['frame_mb']:.0f} MB")
    finally:
        delete_audit(audit_id)
    return 0


def read_once(audit_id: int) -> int:
    import django

    django.setup()
    from auditapp.paradigms.counterfactual.judgments import judgments_frame

    started = time.perf_counter()
    frame = judgments_frame(audit_id)
    seconds = time.perf_counter() - started
    print(json.dumps({"rows": len(frame), "seconds": seconds,
                      "peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                      "frame_mb": frame.memory_usage(deep=True).sum() / 2**20}))
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    store_parser = commands.add_parser("store", help="judgments/s stored by _judgments_create")
    store_parser.add_argument("--judgments", type=int, default=200_000)
    store_parser.add_argument("--per-reply", type=int, default=60)
    store_parser.add_argument("--replies", type=int, default=50, help="replies recorded per transaction")
    store_parser.add_argument("--runs", type=int, default=3)
    read_parser = commands.add_parser("read", help="time and peak memory of judgments_frame")
    read_parser.add_argument("--rows", type=int, default=4_000_000)
    read_parser.add_argument("--runs", type=int, default=2)
    once = commands.add_parser("read-once")
    once.add_argument("audit_id", type=int)
    args = parser.parse_args(argv)
    if args.command == "store":
        return store(args)
    if args.command == "read":
        return read(args)
    return read_once(args.audit_id)


if __name__ == "__main__":
    sys.exit(main())
