"""Benchmark: LLM audit throughput of real Celery workers against the test LLM server.

Builds an audit of about ``--requests`` requests (2 models × 7 conditions × enough items), starts the test
LLM server (``tests/llm_server.py``) with ``--latency`` per reply, one endpoint with max concurrency
``--concurrency``, and a Celery worker (``--worker-concurrency`` processes, default 3, each running one of
the audit's parallel tasks) on the real broker and database, then prints:

- achieved requests/s while sending, as a fraction of the endpoint's capacity (concurrency ÷ latency), as the
  endpoint saw it (its first request to its last reply); target ≥ 90% at 20,000 requests, 50 ms latency,
  concurrency 64 on a 2-core machine. Beside it the audit's view, which adds the worker's start (picking up
  the task, loading the audit) and the last write, and the steady state (10th to 90th percentile of writes);
- where each sender's time goes: the reply latency the worker measured (median, percentiles) and the
  turnaround between a reply and the next request;
- the worker's CPU time per request (all its processes, user + system), and the server's;
- the most requests the server saw in flight (must not exceed the concurrency).

Every request is sent: the audit does not use the reply cache (a cached reply is not sent, and a run that took
some from the cache would report more than the endpoint's capacity), and a run in which any request still came
from the cache stops without figures. The load average before and after is printed: the machine is shared by the
worker, the server, PostgreSQL and Redis, and its figures vary by a few percent from run to run: run it several
times.

Needs PostgreSQL and Redis; with bin/test's throwaway servers, for example::

    . bin/lib/venv.sh; . bin/lib/services.sh; start_test_services
    .venv/bin/python benchmarks/audit_throughput.py --database-url "$TEST_DATABASE_URL" --redis-url "$TEST_REDIS_URL"
    stop_test_services
"""
from __future__ import annotations

import argparse
import math
import os
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

CONDITIONS = ["zs", "cot", "icl_a", "icl_b", "persona_sic", "persona_ifl", "persona_pfl"]
MODELS = ["model-a", "model-b"]


def cpu_seconds(process) -> float:
    """User + system CPU of a process and all its descendants (alive ones)."""
    total = 0.0
    for p in [process, *process.children(recursive=True)]:
        try:
            times = p.cpu_times()
        except Exception:  # noqa: BLE001 - a child that exited in between has no times left to count
            continue
        total += times.user + times.system
    return total


def build_study(n_items: int):
    """The study the audit reads (its audit and endpoint take its team, "Benchmarks")."""
    from teams.models import Team
    from tests.factories import make_audit_study

    return make_audit_study(n_items, n_examples=10, slug=f"throughput-{time.time_ns()}",
                            team=Team.objects.get_or_create(name="Benchmarks")[0])


def launch(study, endpoint, parallel_tasks: int):
    """The audit of every model × condition, in the study's team with the corpus of its ground truth."""
    from auditapp.engine import launch as engine_launch
    from auditapp.paradigms.classification import services as classification_services
    from teams.scoping import new_objects_in

    with new_objects_in(study.team):
        return classification_services.audit_create(
            study=study, name="throughput", conditions=CONDITIONS, n_resamples=200, parallel_tasks=parallel_tasks,
            use_cache=False, models=[engine_launch.ModelChoice(endpoint=endpoint, model=m) for m in MODELS])


def old_requests_insert(n: int, endpoint) -> None:
    """``n`` finished requests of an earlier audit, as a deployment with history holds (one INSERT … SELECT)."""
    from django.db import connection

    from auditapp.models import Audit, AuditModel, AuditRequest

    old = Audit.objects.create(name="history", status=Audit.Status.COMPLETED, team=endpoint.team)
    model = AuditModel.objects.create(audit=old, endpoint=endpoint, model="old-model", position=0)
    with connection.cursor() as cursor:
        cursor.execute(
            f"INSERT INTO {AuditRequest._meta.db_table} (audit_id, audit_model_id, condition, unit, replicate, "  # noqa: S608 - the model's own table
            '"order", key, turn, state, attempts, error, outcome, explanation, parse_reason, from_cache, finished_at) '
            "SELECT %s, %s, 'zs', 'old:' || g, 0, g, md5('old:' || g), 0, 'answered', 1, '', 'label', '', '', false, "
            "now() FROM generate_series(1, %s) g", [old.id, model.id, n])


def statistics_gather() -> None:
    """What autovacuum does once an audit's writes settle: the planner's statistics, gathered with nothing
    pending (the state that gave the recording path a bad plan)."""
    from django.db import connection

    from auditapp.models import AuditRequest

    with connection.cursor() as cursor:
        cursor.execute(f"ANALYZE {AuditRequest._meta.db_table}")


def postgres_cpu_seconds() -> float:
    """User + system CPU of the PostgreSQL servers of this machine: each server process, its live backends, and
    the backends that ended (a connection closes after each task), which the server counts as its children's."""
    import psutil

    total = 0.0
    for process in psutil.process_iter(["name", "ppid"]):
        if process.info["name"] not in ("postgres", "postmaster"):
            continue
        try:
            times = process.cpu_times()
            server = psutil.Process(process.info["ppid"]).name() not in ("postgres", "postmaster")
        except Exception:  # noqa: BLE001 - a backend that exited in between was counted by its server
            continue
        total += times.user + times.system + (times.children_user + times.children_system if server else 0.0)
    return total


def one_audit(args, study, endpoint, server, env) -> None:
    """Launch the audit with a fresh worker, wait for every request, print its figures."""
    import numpy as np
    import psutil

    from auditapp.models import Audit, AuditRequest

    worker = subprocess.Popen(
        [str(REPO / ".venv/bin/celery"), "-A", "config", "worker", "--loglevel=WARNING",
         f"--concurrency={args.worker_concurrency}", "--without-mingle", "--without-gossip"],
        cwd=REPO, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        time.sleep(5)  # the worker's start-up is not part of the measure
        worker_process = psutil.Process(worker.pid)
        server_process = psutil.Process(server.process.pid)
        worker_cpu_before, server_cpu_before = cpu_seconds(worker_process), cpu_seconds(server_process)
        postgres_cpu_before = postgres_cpu_seconds()
        server.reset_stats()
        load_before = os.getloadavg()
        wall_start = time.monotonic()
        audit = launch(study, endpoint, args.worker_concurrency)
        while Audit.objects.filter(pk=audit.pk, status__in=["queued", "running"]).exists():
            if worker.poll() is not None:
                raise SystemExit(f"the worker died:\n{worker.stderr.read()[-3000:]}")
            time.sleep(0.2)
        sending_done = time.monotonic()
        worker_cpu = cpu_seconds(worker_process) - worker_cpu_before
        server_cpu = cpu_seconds(server_process) - server_cpu_before
        postgres_cpu = postgres_cpu_seconds() - postgres_cpu_before
        stats = server.stats()
    finally:
        worker.terminate()
        worker.wait(30)

    load_after = os.getloadavg()
    audit = Audit.objects.get(pk=audit.pk)
    requests = AuditRequest.objects.filter(audit=audit)
    cached = requests.filter(from_cache=True).count()
    if cached:
        raise SystemExit(f"{cached} requests came from the reply cache: they were not sent, so no figure is printed")
    n = requests.count()
    answered = requests.filter(state="answered").count()
    capacity = args.concurrency / args.latency
    # The endpoint's view: from the first request it received to the last reply it sent.
    sending_s = stats["last_reply_at"] - stats["first_request_at"]
    rate = n / sending_s
    # The audit's view adds the worker's start (task pick-up, loading the audit) and the last write (replies are
    # written every 0.25 s, and a request's finished_at is the time of its write).
    last_finish = requests.order_by("-finished_at").values_list("finished_at", flat=True).first()
    audit_s = (last_finish - audit.started_at).total_seconds()
    start_s = stats["first_request_at"] - audit.started_at.timestamp()
    print(f"load average (1, 5, 15 min) before: {', '.join(f'{x:.2f}' for x in load_before)}; after: "
          f"{', '.join(f'{x:.2f}' for x in load_after)}")
    print(f"requests: {n} ({answered} answered, {n - answered} failed, none from the cache); status after sending: "
          f"{audit.status}")
    print(f"endpoint: latency {args.latency * 1000:.0f} ms, concurrency {args.concurrency} "
          f"→ capacity {capacity:.0f} requests/s")
    print(f"sending: {sending_s:.2f} s (the endpoint's first request → its last reply) → {rate:.0f} requests/s "
          f"= {rate / capacity:.1%} of capacity (target ≥ 90%)")
    print(f"audit running → last reply written: {audit_s:.2f} s → {n / audit_s:.0f} requests/s = "
          f"{n / audit_s / capacity:.1%} of capacity (first request {start_s * 1000:.0f} ms after the audit started)")
    finished = sorted(requests.values_list("finished_at", flat=True))
    p10, p90 = finished[len(finished) // 10], finished[9 * len(finished) // 10]
    steady = 0.8 * n / max((p90 - p10).total_seconds(), 1e-9)
    print(f"steady state (10th to 90th percentile of replies): {steady:.0f} requests/s = {steady / capacity:.1%}")
    # Each sender's cycle is the reply's latency plus its own turnaround (claiming, building, asking for a slot).
    latencies = np.array(requests.values_list("reply__latency_ms", flat=True), dtype=float)
    cycle_ms = args.concurrency / steady * 1000
    print(f"per sender: {cycle_ms:.1f} ms per request in steady state = reply latency measured by the worker "
          f"{latencies.mean():.1f} ms (the server's: {args.latency * 1000:.0f} ms) + turnaround "
          f"{cycle_ms - latencies.mean():.1f} ms")
    p50, p90, p99 = np.percentile(latencies, [50, 90, 99])
    print(f"reply latency measured by the worker: median {p50:.1f} ms, 90th percentile {p90:.1f} ms, "
          f"99th {p99:.1f} ms, max {latencies.max():.1f} ms")
    print(f"wall time from launch to all requests finished (incl. building {n} keys): "
          f"{sending_done - wall_start:.2f} s")
    print(f"worker CPU: {worker_cpu:.2f} s = {worker_cpu / n * 1000:.3f} ms per request "
          f"({args.worker_concurrency} processes)")
    print(f"PostgreSQL CPU (every process of this machine): {postgres_cpu / n * 1000:.3f} ms per request")
    print(f"server CPU: {server_cpu / n * 1000:.3f} ms per request; max in flight at the server: "
          f"{stats['max_in_flight']} (limit {args.concurrency})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--requests", type=int, default=20_000)
    parser.add_argument("--latency", type=float, default=0.05)
    parser.add_argument("--concurrency", type=int, default=64)
    # Three processes on two cores: the worker waits on the network, and each process's event loop then holds a
    # third of the requests in flight, so a stall of one loop delays fewer replies. Measured with 20,006
    # requests: 2 processes 85-89% of capacity, 3 processes 93%, 4 processes 91-92%.
    parser.add_argument("--worker-concurrency", type=int, default=3,
                        help="worker processes, and the audit's parallel tasks (default: 3)")
    parser.add_argument("--history", type=int, default=1,
                        help="audits run one after the other on the same database, the planner's statistics "
                             "gathered after each (as autovacuum does): the first on the database as it is, the "
                             "later ones on a database with history (default: 1)")
    parser.add_argument("--old-requests", type=int, default=0,
                        help="finished requests of an earlier audit inserted first, and the statistics gathered "
                             "(e.g. 1000000: a deployment's history)")
    parser.add_argument("--database-url", default=os.environ.get("DATABASE_URL", ""))
    parser.add_argument("--redis-url", default=os.environ.get("CELERY_BROKER_URL", ""))
    args = parser.parse_args()
    if not args.database_url.startswith("postgres") or not args.redis_url.startswith("redis"):
        parser.error("give --database-url postgres://... and --redis-url redis://... (see the docstring)")
    if args.history < 1 or args.old_requests < 0:
        parser.error("--history is at least 1 and --old-requests at least 0")

    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "config.settings.test", "DATABASE_URL": args.database_url,
           "CELERY_BROKER_URL": args.redis_url, "LOG_LEVEL": "WARNING"}
    os.environ.update(env)
    import django

    django.setup()
    import redis
    from django.core.management import call_command

    from auditapp.models import AuditRequest, LLMEndpoint
    from tests.factories import AUDIT_POSITIVE_WORDS
    from tests.llm_server import LLMServer

    call_command("migrate", verbosity=0)
    redis.Redis.from_url(args.redis_url).flushdb()
    n_items = math.ceil(args.requests / (len(MODELS) * len(CONDITIONS)))

    with LLMServer(latency=args.latency, positive_words=AUDIT_POSITIVE_WORDS) as server:
        for run in range(1, args.history + 1):
            study = build_study(n_items)
            endpoint = LLMEndpoint.objects.create(name=f"bench-{time.time_ns()}", protocol="openai",
                                                  base_url=server.base_url, max_concurrency=args.concurrency,
                                                  attempt_timeout_s=30, max_attempts=3, team=study.team)
            if run == 1 and args.old_requests:
                old_requests_insert(args.old_requests, endpoint)
                statistics_gather()
            print(f"== audit {run} of {args.history}: the database holds {AuditRequest.objects.count():,} requests, "
                  "statistics gathered with none pending" if run > 1 or args.old_requests else
                  f"== audit {run} of {args.history}: on the database as it is", flush=True)
            one_audit(args, study, endpoint, server, env)
            statistics_gather()


if __name__ == "__main__":
    main()
