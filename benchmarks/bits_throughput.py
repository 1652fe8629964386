"""Benchmark: BITS audits with a local scorer (VADER, TextBlob) through the engine, against the library in a loop
(target: ≥ 0.5 of the direct rate on the full default corpus).

Each run, for each scorer, times the same 2,310 sentences of the default corpus (seed 001 Tables 3–5) two ways:

- **direct**: the library called in a loop in this process
  (``SentimentIntensityAnalyzer().polarity_scores(text)["compound"]``, ``TextBlob(text).sentiment.polarity``);
- **engine**: a BITS audit with that one scorer, launched here and run by a real Celery worker process
  (``--worker-concurrency`` processes, the audit's ``--parallel-tasks`` work tasks) on the database and broker
  of the environment, with the cache off (``use_cache=False``; else every run after the first is all cache
  hits). It prints sentences/s and the ratio to the direct rate for three spans of the audit's own timestamps:

  - *launch → completed*: the whole audit as a user waits for it (the launch's transaction, three tasks through
    the broker, keys, every reply and judgment written, the analysis of seed 001 §4);
  - *launch → recorded*: the same without the analysis (prepare, work, record);
  - *scoring → recorded*: from the first request's claim (its lease's creation) to the last write, the work
    task's own part (without the broker's hand-overs and the preparation).

With ``--llm`` it then scores the same sentences with a chat model on the test LLM server (``tests/llm_server.py``,
``scorer-null``, ``--llm-latency`` per reply, ``--llm-concurrency``), one sentence per request, and prints
requests/s as a share of the endpoint's capacity (concurrency ÷ latency).

The broker's hand-overs are the broker's: Redis pushes a task to the worker at once, kombu's file-system
transport (the embedded default) polls its folder (``settings.CELERY_BROKER_TRANSPORT_OPTIONS``).

Without DATABASE_URL / CELERY_BROKER_URL it runs on the embedded defaults (an SQLite file and the file-system
broker in a temporary VAR_DIR); with them, on PostgreSQL and Redis (the database is migrated, Redis's db
flushed)::

    .venv/bin/python benchmarks/bits_throughput.py --runs 3
    DATABASE_URL=postgres://postgres@127.0.0.1:5432/bench CELERY_BROKER_URL=redis://127.0.0.1:6379/4 \\
        .venv/bin/python benchmarks/bits_throughput.py --runs 3

The machine is shared by the worker, this process and the database: figures vary from run to run.
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from benchmarks.audit_throughput import cpu_seconds  # noqa: E402 - after the repository is on the path

SCORERS = ("vader", "textblob")


def direct_scorer(name: str):
    """The library's own call, as a user would write it."""
    if name == "vader":
        from vaderSentiment.vaderSentiment import SentimentIntensityAnalyzer

        analyzer = SentimentIntensityAnalyzer()
        return lambda text: analyzer.polarity_scores(text)["compound"]
    from textblob import TextBlob

    return lambda text: TextBlob(text).sentiment.polarity


def direct_seconds(name: str, texts: list[str]) -> float:
    score = direct_scorer(name)
    started = time.perf_counter()
    for text in texts:
        score(text)
    return time.perf_counter() - started


def llm_run(run: int, args, corpus, texts: list[str]) -> None:
    """A BITS audit scored by a chat model on the test LLM server: requests/s against the endpoint's capacity
    (max concurrency ÷ latency)."""
    from django.db.models import F, Max, Min

    from auditapp.engine.launch import ModelChoice
    from auditapp.models import Audit, AuditChunk, AuditJudgment, AuditRequest, LLMEndpoint
    from auditapp.paradigms.bits.services import bits_audit_create
    from tests.llm_server import LLMServer

    with LLMServer(latency=args.llm_latency, models=["scorer-null"]) as server:
        endpoint = LLMEndpoint.objects.create(name=f"llm-{time.time_ns()}", protocol="openai",
                                              base_url=server.base_url, max_concurrency=args.llm_concurrency,
                                              attempt_timeout_s=30, max_attempts=3, team=corpus.team)
        audit = bits_audit_create(name=f"throughput llm {run}", corpus=corpus, use_cache=False,
                                  models=[ModelChoice(endpoint=endpoint, model="scorer-null")])
        while Audit.objects.filter(pk=audit.pk, status__in=["queued", "running", "analysing"]).exists():
            time.sleep(0.05)
    audit.refresh_from_db()
    first_claim = AuditChunk.objects.filter(audit=audit, released_at__gt=F("created_at")).aggregate(
        first=Min("created_at"))["first"]
    last_write = AuditRequest.objects.filter(audit=audit).aggregate(last=Max("finished_at"))["last"]
    work = (last_write - first_claim).total_seconds()
    capacity = args.llm_concurrency / args.llm_latency
    scored = AuditJudgment.objects.filter(audit=audit, value__isnull=False).count()
    print(f"run {run} llm      {audit.n_requests} requests ({audit.status}, {scored} of {len(texts)} scored) | "
          f"work {work * 1000:.0f} ms = {audit.n_requests / work:.0f} requests/s = {audit.n_requests / work / capacity:.0%} "
          f"of the endpoint's capacity ({capacity:.0f}/s) | launch → completed "
          f"{(audit.analysed_at - audit.created_at).total_seconds() * 1000:.0f} ms")


def build_corpus():
    """The default corpus, in the team "Benchmarks" (the audits take their corpus's team)."""
    from auditapp.paradigms.bits.corpora import bits_corpus_generate
    from auditapp.paradigms.bits.services import DEFAULT_CORPUS_NAME
    from teams.models import Team
    from teams.scoping import new_objects_in

    with new_objects_in(Team.objects.get_or_create(name="Benchmarks")[0]):
        return bits_corpus_generate(spec=None, name=DEFAULT_CORPUS_NAME)


def environment(args) -> tuple[dict[str, str], str]:
    """The worker's and this process's environment, and a name for the backend."""
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "config.settings.test", "LOG_LEVEL": "WARNING"}
    if args.database_url or args.redis_url:
        if not args.database_url.startswith("postgres") or not args.redis_url.startswith("redis"):
            raise SystemExit("give both DATABASE_URL=postgres://... and CELERY_BROKER_URL=redis://..., or neither")
        env.update(DATABASE_URL=args.database_url, CELERY_BROKER_URL=args.redis_url)
        return env, "PostgreSQL + Redis"
    env.pop("DATABASE_URL", None)
    env.pop("CELERY_BROKER_URL", None)
    env["VAR_DIR"] = tempfile.mkdtemp(prefix="bits-throughput-")
    return env, f"SQLite + file-system broker (embedded defaults, VAR_DIR={env['VAR_DIR']})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--scorer", choices=[*SCORERS, "both"], default="both")
    parser.add_argument("--batch-size", type=int, default=64, help="sentences per request (default: 64)")
    parser.add_argument("--parallel-tasks", type=int, default=1, help="the audit's work tasks (default: 1)")
    parser.add_argument("--worker-concurrency", type=int, default=1, help="worker processes (default: 1)")
    parser.add_argument("--llm", action="store_true",
                        help="also score with a chat model on the test LLM server (tests/llm_server.py, model "
                             "scorer-null), one sentence per request, and print requests/s")
    parser.add_argument("--llm-latency", type=float, default=0.05, help="the LLM server's latency (default: 0.05 s)")
    parser.add_argument("--llm-concurrency", type=int, default=64, help="the chat endpoint's max concurrency")
    parser.add_argument("--no-warm-up", dest="warm_up", action="store_false",
                        help="count the first audit of each scorer too (by default it only warms the worker up: "
                             "its first task imports the scorer and hashes its lexicon)")
    parser.add_argument("--database-url", default=os.environ.get("DATABASE_URL", ""))
    parser.add_argument("--redis-url", default=os.environ.get("CELERY_BROKER_URL", ""))
    args = parser.parse_args()
    scorers = SCORERS if args.scorer == "both" else (args.scorer,)

    env, backend = environment(args)
    os.environ.clear()
    os.environ.update(env)
    import django

    django.setup()
    import psutil
    import redis
    from django.core.management import call_command
    from django.db.models import F, Max, Min

    from auditapp.engine.launch import ModelChoice
    from auditapp.models import Audit, AuditChunk, AuditJudgment, AuditRequest, CorpusUnit, LLMEndpoint
    from auditapp.paradigms.bits.services import bits_audit_create
    from tests.integration.support import celery_worker

    call_command("migrate", verbosity=0)
    if args.redis_url:
        redis.Redis.from_url(args.redis_url).flushdb()
    corpus = build_corpus()
    texts = list(CorpusUnit.objects.filter(corpus=corpus).order_by("position").values_list("text", flat=True))
    endpoint = LLMEndpoint.objects.create(name=f"local-{time.time_ns()}", protocol="local", base_url="",
                                          team=corpus.team)
    print(f"backend: {backend}")
    print(f"load average (1, 5, 15 min) before: {', '.join(f'{x:.2f}' for x in os.getloadavg())} (the machine is "
          "shared: compare runs made under the same load)")
    print(f"corpus: {corpus.name}, {len(texts)} sentences; batch size {args.batch_size}, "
          f"{args.parallel_tasks} work task(s), {args.worker_concurrency} worker process(es), cache off")

    worker = celery_worker(env=env, concurrency=args.worker_concurrency)
    figures: dict[str, list[dict[str, float]]] = {name: [] for name in scorers}
    try:
        worker.wait_for_output(r"ready\.", timeout=60)
        time.sleep(1)  # the worker's start-up recovery is not part of the measure
        worker_process = psutil.Process(worker.process.pid)
        for run in range(0 if args.warm_up else 1, args.runs + 1):
            for name in scorers:
                direct = direct_seconds(name, texts)
                cpu_before = cpu_seconds(worker_process)
                launched = time.monotonic()
                audit = bits_audit_create(name=f"throughput {name} {run}", corpus=corpus, use_cache=False,
                                          models=[ModelChoice(endpoint=endpoint, model=name)],
                                          batch_size=args.batch_size, parallel_tasks=args.parallel_tasks)
                while Audit.objects.filter(pk=audit.pk, status__in=["queued", "running", "analysing"]).exists():
                    if worker.process.poll() is not None:
                        raise SystemExit(f"the worker died:\n{worker.output[-3000:]}")
                    time.sleep(0.01)
                waited = time.monotonic() - launched
                worker_cpu = cpu_seconds(worker_process) - cpu_before
                audit.refresh_from_db()
                if audit.status != Audit.Status.COMPLETED:
                    raise SystemExit(f"audit {audit.id} is {audit.status}: {audit.status_reason}")
                scored = AuditJudgment.objects.filter(audit=audit, value__isnull=False).count()
                # A worker's lease is released after it was created; the mark left when work is sent is released
                # as it is created (released_at is taken first), so it is not a claim.
                first_claim = AuditChunk.objects.filter(audit=audit, released_at__gt=F("created_at")).aggregate(
                    first=Min("created_at"))["first"]
                last_write = AuditRequest.objects.filter(audit=audit).aggregate(last=Max("finished_at"))["last"]
                spans = {
                    "launch → completed": (audit.analysed_at - audit.created_at).total_seconds(),
                    "launch → recorded": (last_write - audit.created_at).total_seconds(),
                    "scoring → recorded": (last_write - first_claim).total_seconds(),
                }
                # Where the time went, from the audit's own timestamps: the launch to the end of the preparation
                # (its task through the broker, keys, requests stored), the hand-over to the work task, the work
                # (scoring, replies and judgments written), the analysis (its task through the broker, seed 001 §4).
                phases = {"prepare": audit.started_at - audit.created_at, "hand-over": first_claim - audit.started_at,
                          "work": last_write - first_claim, "analysis": audit.analysed_at - last_write}
                if run == 0:
                    print(f"warm-up {name}: launch → completed {spans['launch → completed'] * 1000:.0f} ms "
                          "(not counted)")
                    continue
                figures[name].append({"direct": len(texts) / direct, **{span: len(texts) / seconds
                                                                         for span, seconds in spans.items()}})
                print(f"run {run} {name:8} direct {len(texts) / direct:6.0f}/s ({direct * 1000:.0f} ms) | "
                      + " | ".join(f"{span} {seconds * 1000:4.0f} ms = {len(texts) / seconds:5.0f}/s "
                                   f"= {direct / seconds:.2f}" for span, seconds in spans.items()))
                print("    " + ", ".join(f"{phase} {seconds.total_seconds() * 1000:.0f} ms"
                                         for phase, seconds in phases.items())
                      + f"; waited {waited * 1000:.0f} ms, worker CPU {worker_cpu * 1000:.0f} ms, "
                        f"{scored} of {len(texts)} scored")
        if args.llm:
            for run in range(1, args.runs + 1):
                llm_run(run, args, corpus, texts)
    finally:
        worker.stop()

    print(f"load average (1, 5, 15 min) after: {', '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print("\nmedians over the runs (sentences/s, and the ratio to the direct rate; target ≥ 0.5):")
    for name, rows in figures.items():
        direct = statistics.median(row["direct"] for row in rows)
        print(f"{name:8} direct {direct:6.0f}/s; " + "; ".join(
            f"{span} {statistics.median(row[span] for row in rows):6.0f}/s = "
            f"{statistics.median(row[span] / row['direct'] for row in rows):.2f}"
            for span in rows[0] if span != "direct"))


if __name__ == "__main__":
    main()
