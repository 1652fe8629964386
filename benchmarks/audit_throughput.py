"""Benchmark: LLM audit throughput of real Celery workers against the test LLM server.

Builds an audit of about ``--requests`` requests (2 models × 7 conditions × enough items), starts the test
LLM server (``tests/llm_server.py``) with ``--latency`` per reply, one endpoint with max concurrency
``--concurrency``, and a Celery worker (``--worker-concurrency`` processes, default 3, each running one of
the audit's parallel tasks) on the real broker and database, then prints:

- achieved requests/s while sending, as a fraction of the endpoint's capacity (concurrency ÷ latency), as the
  endpoint saw it (its first request to its last reply); target ≥ 95% at 20,000 requests, 50 ms latency,
  concurrency 64 on a 2-core machine. Beside it the audit's view, which adds the worker's start (picking up
  the task, loading the audit) and the last write, and the steady state (10th to 90th percentile of writes);
- where each sender's time goes: the reply latency the worker measured (median, percentiles) and the
  turnaround between a reply and the next request;
- CPU time per request (user + system): the worker's (all its processes), PostgreSQL's and Redis's (the servers of
  the URLs, when they run on this machine: other servers of a shared machine are not counted) and their sum, the
  engine's (target ≤ 1.1 ms); and the test server's;
- the most requests the server saw in flight (must not exceed the concurrency).

Every request is sent: the audit does not use the reply cache (a cached reply is not sent, and a run that took
some from the cache would report more than the endpoint's capacity), and a run in which any request still came
from the cache stops without figures. The load average before and after is printed: the machine is shared by the
worker, the server, PostgreSQL and Redis, and its figures vary by a few percent from run to run: run it several
times.

``--vs lm-eval`` runs lm-evaluation-harness's ``local-chat-completions`` model (``benchmarks/lm_eval_peer.py``) on
the same requests (the first audit's prompts, written as a task of our own in a temporary folder) against the same
server, alternately with the engine, ``--rounds`` times in one invocation, and prints both side by side: share of
capacity, CPU per request (the engine: worker + PostgreSQL + Redis; lm-eval: its process while it sends, and with
its start-up), the load average, lm-eval's version, and how many of lm-eval's replies equal the engine's (all of
them: the server's reply depends only on the model and the prompt). lm-eval runs from its own virtual environment,
never the app's (``--lm-eval-python``)::

    python3 -m venv /work/venvs/lmeval && /work/venvs/lmeval/bin/pip install "lm_eval[api]==0.4.13"
    .venv/bin/python benchmarks/audit_throughput.py ... --vs lm-eval --lm-eval-python /work/venvs/lmeval/bin/python

``--vs direct`` runs the direct loop (``benchmarks/direct_peer.py``) the same way: the engine's own HTTP session and
request bodies from as many processes as the worker has, and nothing else (no database, no Redis, nothing stored).
Capacity is an ideal no client reaches on a machine whose cores the server shares; the direct loop's share is what
this machine allows any client, and the engine's share is printed as a part of it, round by round. ``--vs`` may be
given twice (``--vs direct --vs lm-eval``).

Before each run it waits while the 1-minute load average is above ``--max-load`` (1.5), at most ``--load-waits``
times 30 s.

Needs PostgreSQL and Redis; with bin/test's throwaway servers, for example::

    . bin/lib/venv.sh; . bin/lib/services.sh; start_test_services
    .venv/bin/python benchmarks/audit_throughput.py --database-url "$TEST_DATABASE_URL" --redis-url "$TEST_REDIS_URL"
    stop_test_services
"""
from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

CONDITIONS = ["zs", "cot", "icl_a", "icl_b", "persona_sic", "persona_ifl", "persona_pfl"]
MODELS = ["model-a", "model-b"]
# A wait for the machine to quieten down before a measured run (--max-load, --load-waits).
LOAD_PAUSE_SECONDS = 30


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


def process_tree_cpu_seconds(process) -> float | None:
    """:func:`cpu_seconds` plus the process's children that ended and were waited for (a peer's worker processes
    end before its last sample; their CPU then shows in the parent's children times); None once the process is
    gone (reaped: its times with it)."""
    import psutil

    try:
        times = process.cpu_times()
    except psutil.NoSuchProcess:
        return None
    return cpu_seconds(process) + times.children_user + times.children_system


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


def listener(url: str):
    """The process listening on the port of ``url`` on this machine (PostgreSQL's postmaster, redis-server), or
    None when the URL's host is elsewhere or no process of this machine listens there (reading other users'
    sockets needs root). Only that server is counted: other servers of a shared machine are other people's."""
    import socket
    from urllib.parse import urlsplit

    import psutil

    parts = urlsplit(url)
    try:
        local = parts.hostname in ("localhost", "::1") or socket.gethostbyname(parts.hostname or "").startswith("127.")
    except OSError:
        return None
    if not local or parts.port is None:
        return None
    for connection in psutil.net_connections(kind="tcp"):
        if connection.status == psutil.CONN_LISTEN and connection.laddr.port == parts.port and connection.pid:
            return psutil.Process(connection.pid)
    return None


def server_cpu_seconds(server) -> float:
    """User + system CPU of a server process (None: 0), its live children (PostgreSQL's backends) and the children
    that ended (a connection closes after each task), which the server counts as its children's."""
    if server is None:
        return 0.0
    times = server.cpu_times()
    return times.user + times.system + times.children_user + times.children_system + sum(
        child_times.user + child_times.system for child_times in _children_times(server))


def _children_times(process):
    for child in process.children(recursive=True):
        try:
            yield child.cpu_times()
        except Exception:  # noqa: BLE001 - a backend that exited in between was counted by its server
            continue


@dataclass(frozen=True)
class Figures:
    """What a side-by-side round compares: the share of capacity as the endpoint saw it (its first request to its
    last reply), CPU per request, the load average before the run."""

    share: float
    cpu_ms: float
    load: float
    note: str = ""


def one_audit(args, study, endpoint, server, env, servers) -> tuple[Figures, int]:
    """Launch the audit with a fresh worker, wait for every request, print its figures; return them and the
    audit's id."""
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
        postgres_cpu_before, redis_cpu_before = (server_cpu_seconds(servers["postgres"]),
                                                 server_cpu_seconds(servers["redis"]))
        server.reset_stats()
        load_before = os.getloadavg()
        wall_start = time.monotonic()
        audit = launch(study, endpoint, args.worker_concurrency)
        while Audit.objects.filter(pk=audit.pk, status__in=["queued", "running"]).exists():
            if worker.poll() is not None:
                raise SystemExit(f"the worker died:\n{worker.stderr.read()[-3000:]}")
            # Soon after the last request is recorded: the analysis that follows is not counted.
            time.sleep(0.05)
        sending_done = time.monotonic()
        worker_cpu = cpu_seconds(worker_process) - worker_cpu_before
        server_cpu = cpu_seconds(server_process) - server_cpu_before
        postgres_cpu = server_cpu_seconds(servers["postgres"]) - postgres_cpu_before
        redis_cpu = server_cpu_seconds(servers["redis"]) - redis_cpu_before
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
          f"= {rate / capacity:.1%} of capacity (target ≥ 95%)")
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
    measured = [name for name, process in servers.items() if process is not None]
    print(f"PostgreSQL CPU (its server and backends): {_per_request(postgres_cpu, n, servers['postgres'])}; "
          f"Redis CPU: {_per_request(redis_cpu, n, servers['redis'])}")
    engine_cpu = worker_cpu + postgres_cpu + redis_cpu
    print(f"engine CPU (worker + {' + '.join(measured) or 'no server of this machine'}): "
          f"{engine_cpu / n * 1000:.3f} ms per request (target ≤ 1.1 ms)")
    print(f"server CPU: {server_cpu / n * 1000:.3f} ms per request; max in flight at the server: "
          f"{stats['max_in_flight']} (limit {args.concurrency})")
    return Figures(share=rate / capacity, cpu_ms=engine_cpu / n * 1000, load=load_before[0]), audit.pk


def _per_request(cpu: float, n: int, process) -> str:
    return f"{cpu / n * 1000:.3f} ms per request" if process is not None else "not measured (not on this machine)"


def peer_requests(audit_id: int):
    """The audit's requests as lm-eval sends them: each one's model, messages (rebuilt, as the worker does) and the
    reply the engine stored."""
    from auditapp.engine import planning
    from auditapp.models import Audit, AuditRequest
    from benchmarks.lm_eval_peer import PeerRequest

    builder = planning.request_builder(Audit.objects.get(pk=audit_id))
    models = {audit_model.id: audit_model.model for audit_model in builder.models.values()}
    for request in AuditRequest.objects.filter(audit_id=audit_id).select_related("reply").order_by("order", "id"):
        yield PeerRequest(model=models[request.audit_model_id], messages=builder.payload(request),
                          reply=request.reply.text if request.reply else "")


def peer_process(argv: list[str], *, env: dict[str, str], cwd: Path, server, n: int, who: str):
    """Run a peer's process against the server and sample its CPU; stop without figures unless the server
    answered every one of its ``n`` requests with 200 (none left out by a cache, none failed). Return its output,
    the CPU sampler, the server's stats, the load before and the wall time."""
    import psutil

    from benchmarks import lm_eval_peer

    server.reset_stats()
    load_before = os.getloadavg()
    started = time.monotonic()
    peer = subprocess.Popen(argv, env=env, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    with lm_eval_peer.CpuSampler(psutil.Process(peer.pid), process_tree_cpu_seconds) as sampler:
        out, _ = peer.communicate(timeout=30 * 60)
    wall = time.monotonic() - started
    if peer.returncode:
        raise SystemExit(f"{who} failed (exit {peer.returncode}):\n{out[-3000:]}")
    stats = server.stats()
    if stats["requests"] != n or stats["by_status"].get("200") != n:
        raise SystemExit(f"the server answered {stats['requests']} requests of {who}'s {n} (by status: "
                         f"{stats['by_status']}): some were not sent (a cache?) or failed, so no figure is printed")
    return out, sampler, stats, load_before, wall


def peer_figures(args, who: str, n: int, sampler, stats, load_before, wall: float, matches: str, *,
                 besides_sending: str) -> Figures:
    """Print a peer's run as the engine's is printed (share of capacity as the endpoint saw it, CPU per request
    while sending and over its whole process) and return its figures."""
    capacity = args.concurrency / args.latency
    sending_s = stats["last_reply_at"] - stats["first_request_at"]
    rate = n / sending_s
    total_cpu = sampler.samples[-1][1]
    sending_cpu = sampler.at(stats["last_reply_at"]) - sampler.at(stats["first_request_at"])
    print(f"load average (1, 5, 15 min) before: {', '.join(f'{x:.2f}' for x in load_before)}; after: "
          f"{', '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print(f"requests: {n}, each answered by the server (none from a cache); {who}'s replies equal to the engine's "
          f"(exact match): {matches}")
    print(f"sending: {sending_s:.2f} s (the endpoint's first request → its last reply) → {rate:.0f} requests/s "
          f"= {rate / capacity:.1%} of capacity; the whole process {wall:.2f} s")
    print(f"{who} CPU: while sending {sending_cpu / n * 1000:.3f} ms per request; the whole process ("
          f"{besides_sending}) {total_cpu:.2f} s = "
          f"{total_cpu / n * 1000:.3f} ms per request; max in flight at the server: {stats['max_in_flight']} "
          f"(limit {args.concurrency})")
    return Figures(share=rate / capacity, cpu_ms=sending_cpu / n * 1000, load=load_before[0],
                   note=f"{who} {total_cpu / n * 1000:.3f} ms")


class LmEvalPeer:
    """lm-evaluation-harness's ``local-chat-completions`` on the audit's requests (``benchmarks/lm_eval_peer.py``),
    from its own virtual environment."""

    def __init__(self, args):
        from benchmarks import lm_eval_peer

        self.args = args
        self.label = f"lm-eval {lm_eval_peer.version(args.lm_eval_python)}"
        self.directory = Path()
        self.tasks: dict[str, int] = {}

    def prepare(self, directory: Path, requests: list) -> None:
        from benchmarks import lm_eval_peer

        self.directory = directory / "lm-eval"
        self.directory.mkdir()
        self.tasks = lm_eval_peer.task_write(self.directory, requests)

    def run(self, server) -> Figures:
        from benchmarks import lm_eval_peer

        n = sum(self.tasks.values())
        output = Path(tempfile.mkdtemp(dir=self.directory, prefix="results-"))
        argv = lm_eval_peer.command(self.args.lm_eval_python, base_url=server.base_url, first_model=MODELS[0],
                                    tasks=self.tasks, directory=self.directory, output=output,
                                    concurrency=self.args.concurrency)
        _, sampler, stats, load_before, wall = peer_process(
            argv, env=lm_eval_peer.environment(self.directory), cwd=self.directory, server=server, n=n,
            who=self.label)
        matches = ", ".join(f"{task} {score:.1%}" for task, score in lm_eval_peer.exact_matches(output).items())
        return peer_figures(self.args, self.label, n, sampler, stats, load_before, wall, matches,
                            besides_sending="start-up, reading the tasks, scoring")


class DirectPeer:
    """The direct loop (``benchmarks/direct_peer.py``): the engine's HTTP session and request bodies, as many
    processes as the worker, and nothing else; the most this machine lets a client send."""

    label = "direct loop"

    def __init__(self, args):
        self.args = args
        self.requests_file = Path()
        self.n = 0

    def prepare(self, directory: Path, requests: list) -> None:
        from benchmarks import direct_peer

        self.requests_file = directory / "direct-requests.jsonl"
        self.n = direct_peer.requests_write(self.requests_file, requests)

    def run(self, server) -> Figures:
        argv = [sys.executable, "-m", "benchmarks.direct_peer", "--requests", str(self.requests_file),
                "--base-url", server.base_url, "--concurrency", str(self.args.concurrency),
                "--processes", str(self.args.worker_concurrency)]
        out, sampler, stats, load_before, wall = peer_process(argv, env=os.environ.copy(), cwd=REPO, server=server,
                                                              n=self.n, who=self.label)
        counts = json.loads(out.strip().splitlines()[-1])
        return peer_figures(self.args, self.label, self.n, sampler, stats, load_before, wall,
                            f"{counts['equal']:,} of {counts['sent']:,}",
                            besides_sending="start-up, reading the requests")


PEERS = {"lm-eval": LmEvalPeer, "direct": DirectPeer}


def wait_for_quiet(args) -> None:
    """Wait while the 1-minute load average is above --max-load (other work on a shared machine), up to
    --load-waits pauses; then go on whatever it is (the load is printed with every figure)."""
    for _ in range(args.load_waits):
        load = os.getloadavg()[0]
        if load <= args.max_load:
            return
        print(f"load average {load:.2f} > {args.max_load}: waiting {LOAD_PAUSE_SECONDS} s", flush=True)
        time.sleep(LOAD_PAUSE_SECONDS)


def side_by_side(args, study, endpoint, server, env, servers) -> None:
    """--vs: the engine and each peer on the same requests, alternately, --rounds times; then a table."""
    peers = [PEERS[name](args) for name in dict.fromkeys(args.vs)]
    rows: list[list[Figures]] = []
    with tempfile.TemporaryDirectory(prefix="audit-throughput-peers-") as directory:
        for round_number in range(1, args.rounds + 1):
            wait_for_quiet(args)
            print(f"== round {round_number} of {args.rounds}: the engine", flush=True)
            engine, audit_id = one_audit(args, study, endpoint, server, env, servers)
            statistics_gather()
            if round_number == 1:
                requests = list(peer_requests(audit_id))
                for peer in peers:
                    peer.prepare(Path(directory), requests)
            row = [engine]
            for peer in peers:
                wait_for_quiet(args)
                print(f"== round {round_number} of {args.rounds}: {peer.label}", flush=True)
                row.append(peer.run(server))
            rows.append(row)
    names = ["engine", *(peer.label for peer in peers)]
    print(f"\n== side by side: {len(requests)} requests, latency {args.latency * 1000:.0f} ms, concurrency "
          f"{args.concurrency}; the engine's CPU is worker + PostgreSQL + Redis, a peer's its process while sending "
          "(its whole run, start-up included, in the last column)")
    print(f"{'round':>5}  " + "  ".join(f"{name:>14} {'CPU/req':>9} {'load':>5}" for name in names)
          + "  a peer's CPU/req with start-up")
    for number, row in enumerate(rows, 1):
        print(f"{number:>5}  " + "  ".join(f"{figures.share:>14.1%} {figures.cpu_ms:>7.3f}ms {figures.load:>5.2f}"
                                          for figures in row)
              + "  " + ", ".join(figures.note for figures in row[1:]))
    for index, name in enumerate(names):
        figures = [row[index] for row in rows]
        print(f"{name}: {min(f.share for f in figures):.1%}–{max(f.share for f in figures):.1%} of capacity, "
              f"{min(f.cpu_ms for f in figures):.3f}–{max(f.cpu_ms for f in figures):.3f} ms CPU per request, "
              f"load average {min(f.load for f in figures):.2f}–{max(f.load for f in figures):.2f}")
    if "direct" in args.vs:
        direct = names.index(DirectPeer.label)
        ratios = [row[0].share / row[direct].share for row in rows]
        print(f"the engine's share as a part of the direct loop's in the same round: "
              f"{', '.join(f'{ratio:.1%}' for ratio in ratios)}")


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
    parser.add_argument("--vs", choices=sorted(PEERS), action="append", default=[],
                        help="also run a peer on the same requests, alternately with the engine: lm-eval "
                             "(lm-evaluation-harness) or direct (the least any client does); may be given twice")
    parser.add_argument("--lm-eval-python", default=os.environ.get("LM_EVAL_PYTHON", ""),
                        help="the Python of a virtual environment with lm_eval[api] installed (never the app's); "
                             "default: $LM_EVAL_PYTHON")
    parser.add_argument("--rounds", type=int, default=3,
                        help="with --vs: rounds of the engine then each peer (default: 3)")
    parser.add_argument("--max-load", type=float, default=1.5,
                        help="with --vs: before each run, wait while the 1-minute load average is above this")
    parser.add_argument("--load-waits", type=int, default=4,
                        help=f"with --vs: at most this many waits of {LOAD_PAUSE_SECONDS} s for the load to fall "
                             "(then run anyway: the load is printed with each figure)")
    args = parser.parse_args()
    if not args.database_url.startswith("postgres") or not args.redis_url.startswith("redis"):
        parser.error("give --database-url postgres://... and --redis-url redis://... (see the docstring)")
    if args.history < 1 or args.old_requests < 0:
        parser.error("--history is at least 1 and --old-requests at least 0")
    if args.vs and (args.history > 1 or args.old_requests):
        parser.error("--vs runs its own rounds on one database: leave out --history and --old-requests")
    if args.vs and args.rounds < 1:
        parser.error("--rounds is at least 1")
    if "lm-eval" in args.vs and not (os.path.isfile(args.lm_eval_python) and os.access(args.lm_eval_python, os.X_OK)):
        parser.error("--vs lm-eval needs --lm-eval-python: the python of a venv with lm_eval[api] installed "
                     "(see the docstring)")

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

    servers = {"postgres": listener(args.database_url), "redis": listener(args.redis_url)}

    with LLMServer(latency=args.latency, positive_words=AUDIT_POSITIVE_WORDS) as server:
        if args.vs:
            study = build_study(n_items)
            endpoint = LLMEndpoint.objects.create(name=f"bench-{time.time_ns()}", protocol="openai",
                                                  base_url=server.base_url, max_concurrency=args.concurrency,
                                                  attempt_timeout_s=30, max_attempts=3, team=study.team)
            side_by_side(args, study, endpoint, server, env, servers)
            return
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
            one_audit(args, study, endpoint, server, env, servers)
            statistics_gather()


if __name__ == "__main__":
    main()
