"""Benchmark: N simulated annotators take a study at once through the real pages of a production-shaped server.

Builds a throwaway study (no questionnaires, no IAT) with N invited participants on PostgreSQL, collects the
static files, starts gunicorn (production settings, ``--workers 3`` as in docker-compose.yml) and one Celery
worker on Redis (an annotator who finishes queues the study's analysis, as in production), then runs N
annotators concurrently from one asyncio loop with httpx, each with its own cookies and CSRF token: open the
invite link, consent, read the instructions, and label every assigned sentence (GET the page, POST the label),
pausing a random think time (uniform between 0.5 and 1.5 × ``--think``) before each POST. With ``--ramp R``
the annotators arrive at random over the first R seconds (as a panel's participants do) instead of all in the
same instant. It prints requests/s,
p50/p95/p99 per page, the load generator's own CPU time (``resource.getrusage``), and checks that every label
the server acknowledged (a 302 after the POST) is stored exactly once with its value, and gunicorn's CPU time per
request. Target on the 2-core reference machine: p95 of the label POST under 50 ms at 100 annotators with a 3 s
think time, load generator included (``benchmarks/label_breakdown.py`` shows where a label's time goes).

    .venv/bin/python benchmarks/annotator_load.py --annotators 100 \\
        --database-url postgres://postgres@127.0.0.1:55432/auditapp \\
        --broker-url redis://127.0.0.1:6379/0

The database must exist (it is migrated); the study is deleted at the end. The run stops by itself after
``--time-limit`` seconds (default 300) whatever happens; exit status 1 if a check or the target fails.
"""
from __future__ import annotations

import argparse
import asyncio
import atexit
import os
import random
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

CSRF = re.compile(r'name="csrfmiddlewaretoken" value="([^"]+)"')
ITEM = re.compile(r'name="item" value="(\d+)"')
TARGET_P95_MS = 50.0


def build_study(*, annotators: int, items_per_annotator: int, annotators_per_item: int) -> tuple[int, list[str]]:
    """A study open for annotators, with enough items and ``annotators`` invited participants; (id, tokens)."""
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)
    from annotation.models import Item, Study
    from annotation.participation import participants_invite
    from teams.models import Team

    n_items = -(-annotators * items_per_annotator // annotators_per_item)
    study = Study.objects.create(
        name="Annotator load benchmark", slug=f"annotator-load-{time.time_ns()}", status=Study.Status.OPEN,
        iat_enabled=False, content_warning="Benchmark sentences.", consent_text="You agree to take part.",
        items_per_annotator=items_per_annotator, annotators_per_item=annotators_per_item,
        team=Team.objects.get_or_create(name="Benchmarks")[0])
    Item.objects.bulk_create([Item(study=study, external_id=f"load-{i:06d}", target=f"Benchmark sentence {i}.",
                                   preceding=f"Before {i}.", following=f"After {i}.", position=i)
                              for i in range(n_items)], batch_size=5000)
    participants = participants_invite(study=study, count=annotators)
    return study.id, [p.invite_token for p in participants]


class Annotator:
    """One simulated annotator: its own client (cookies, CSRF token) and what the server acknowledged."""

    def __init__(self, client, token: str, timings: dict[str, list[float]], think: float, rng: random.Random,
                 arrival: float = 0.0):
        self.client, self.base = client, f"/p/{token}/"
        self.timings, self.think, self.rng, self.arrival = timings, think, rng, arrival
        self.acknowledged: list[tuple[str, int, int]] = []
        self.token = token

    async def request(self, page: str, method: str, path: str, **kwargs):
        started = time.perf_counter()
        response = await self.client.request(method, path, **kwargs)
        self.timings[page].append((time.perf_counter() - started) * 1000)
        if response.status_code >= 400:
            raise RuntimeError(f"{method} {path}: HTTP {response.status_code}")
        return response

    def form(self, html: str, **fields) -> dict:
        return {"csrfmiddlewaretoken": CSRF.search(html).group(1), **fields}

    async def run(self) -> None:
        await asyncio.sleep(self.arrival)
        await self.request("invite link", "GET", self.base)
        page = await self.request("consent GET", "GET", self.base + "consent/")
        await self.request("consent POST", "POST", self.base + "consent/", data=self.form(page.text, consent="yes"))
        page = await self.request("instructions GET", "GET", self.base + "instructions/")
        await self.request("instructions POST", "POST", self.base + "instructions/", data=self.form(page.text))
        while True:
            page = await self.request("label GET", "GET", self.base + "label/")
            if page.status_code != 200:
                break
            item = int(ITEM.search(page.text).group(1))
            value = self.rng.choice((0, 1))
            await asyncio.sleep(self.think * self.rng.uniform(0.5, 1.5))
            posted = await self.request("label POST", "POST", self.base + "label/",
                                        data=self.form(page.text, item=item, value=value, rationale=""))
            if posted.status_code != 302:
                raise RuntimeError(f"label POST of item {item} was not acknowledged: HTTP {posted.status_code}")
            self.acknowledged.append((self.token, item, value))
        await self.request("done GET", "GET", self.base + "done/")


async def run_annotators(base_url: str, tokens: list[str], think: float, ramp: float, seed: int,
                         time_limit: float) -> tuple[list[Annotator], dict[str, list[float]], float, list[str]]:
    import httpx

    timings: dict[str, list[float]] = defaultdict(list)
    limits = httpx.Limits(max_connections=2, max_keepalive_connections=2)
    clients = [httpx.AsyncClient(base_url=base_url, timeout=30, limits=limits) for _ in tokens]
    arrivals = random.Random(seed)
    annotators = [Annotator(client, token, timings, think, random.Random(seed + k), arrivals.uniform(0, ramp))
                  for k, (client, token) in enumerate(zip(clients, tokens, strict=True))]
    started = time.perf_counter()
    try:
        results = await asyncio.wait_for(asyncio.gather(*(a.run() for a in annotators), return_exceptions=True),
                                         timeout=time_limit)
    finally:
        await asyncio.gather(*(client.aclose() for client in clients))
    errors = [f"{a.token[:8]}…: {r}" for a, r in zip(annotators, results, strict=True) if isinstance(r, BaseException)]
    return annotators, timings, time.perf_counter() - started, errors


def check_stored(study_id: int, acknowledged: list[tuple[str, int, int]]) -> list[str]:
    """Problems with the stored labels: an acknowledged label missing, stored twice or with another value."""
    from django.db.models import Count

    from annotation.models import Label

    stored = list(Label.objects.filter(participant__study_id=study_id)
                  .values_list("participant__invite_token", "item_id", "value"))
    problems = []
    duplicates = (Label.objects.filter(participant__study_id=study_id).values("participant_id", "item_id")
                  .annotate(n=Count("id")).filter(n__gt=1).count())
    if duplicates:
        problems.append(f"{duplicates} (participant, item) pairs stored more than once")
    missing = set(acknowledged) - set(stored)
    if missing:
        problems.append(f"{len(missing)} acknowledged labels not stored as acknowledged, e.g. {sorted(missing)[:3]}")
    if len(stored) != len(acknowledged):
        problems.append(f"{len(stored)} labels stored for {len(acknowledged)} acknowledged")
    return problems


def percentile_table(timings: dict[str, list[float]]) -> list[str]:
    import numpy as np

    lines = [f"{'page':<18}{'requests':>9}{'p50 ms':>9}{'p95 ms':>9}{'p99 ms':>9}{'max ms':>9}"]
    for page, values in timings.items():
        p50, p95, p99 = np.percentile(values, [50, 95, 99])
        lines.append(f"{page:<18}{len(values):>9}{p50:>9.1f}{p95:>9.1f}{p99:>9.1f}{max(values):>9.1f}")
    return lines


def wait_until_answering(url: str, deadline: float) -> None:
    import httpx

    while time.monotonic() < deadline:
        try:
            if httpx.get(url, timeout=1).status_code == 200:
                return
        except httpx.TransportError:
            pass
        time.sleep(0.2)
    raise RuntimeError(f"{url} did not answer in time")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--annotators", type=int, default=100)
    parser.add_argument("--items-per-annotator", type=int, default=20)
    parser.add_argument("--annotators-per-item", type=int, default=3)
    parser.add_argument("--think", type=float, default=1.0, help="Mean seconds before each label POST.")
    parser.add_argument("--ramp", type=float, default=0.0,
                        help="Annotators arrive at random over this many seconds (0: all at once).")
    parser.add_argument("--gunicorn-workers", type=int, default=3)
    parser.add_argument("--database-url", default=os.environ.get("DATABASE_URL"), required="DATABASE_URL"
                        not in os.environ, help="A PostgreSQL database (default: $DATABASE_URL).")
    parser.add_argument("--broker-url", default=os.environ.get("CELERY_BROKER_URL"), required="CELERY_BROKER_URL"
                        not in os.environ, help="A Redis URL for Celery (default: $CELERY_BROKER_URL).")
    parser.add_argument("--time-limit", type=float, default=300.0, help="Seconds for the whole run, at most.")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    deadline = time.monotonic() + args.time_limit

    import psutil

    var_dir = tempfile.mkdtemp(prefix="auditapp-load-")
    # The collected static files and the server's var folder are the run's alone, whichever way it ends.
    atexit.register(shutil.rmtree, var_dir, ignore_errors=True)
    # Plain HTTP on 127.0.0.1 with no TLS proxy in front: no HTTPS redirect, no secure cookies.
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "config.settings.production", "SECRET_KEY": "benchmark-only",
           "SECURE_COOKIES": "0", "SECURE_SSL_REDIRECT": "0", "LOG_LEVEL": "WARNING", "VAR_DIR": var_dir,
           "STATIC_ROOT": f"{var_dir}/static", "DATABASE_URL": args.database_url, "CELERY_BROKER_URL": args.broker_url}
    os.environ.update({k: env[k] for k in ("DJANGO_SETTINGS_MODULE", "SECRET_KEY", "SECURE_COOKIES",
                                           "SECURE_SSL_REDIRECT", "LOG_LEVEL", "VAR_DIR", "STATIC_ROOT",
                                           "DATABASE_URL", "CELERY_BROKER_URL")})
    subprocess.run([sys.executable, "manage.py", "collectstatic", "--noinput", "-v0"], cwd=REPO, env=env, check=True)
    study_id, tokens = build_study(annotators=args.annotators, items_per_annotator=args.items_per_annotator,
                                   annotators_per_item=args.annotators_per_item)
    print(f"study {study_id}: {args.annotators} annotators × {args.items_per_annotator} items, think time "
          f"{args.think:g} s, arrivals over {args.ramp:g} s, gunicorn --workers {args.gunicorn_workers}, PostgreSQL, Celery on Redis")
    print(f"load average (1, 5, 15 min) before: {', '.join(f'{x:.2f}' for x in os.getloadavg())} (the machine is "
          "shared: compare runs made under the same load)")

    from tests.integration.support import free_port

    port = free_port()
    bin_dir = Path(sys.executable).parent
    processes = [
        subprocess.Popen([str(bin_dir / "gunicorn"), "config.wsgi", "--workers", str(args.gunicorn_workers),
                          "--bind", f"127.0.0.1:{port}"], cwd=REPO, env=env,
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL),
        subprocess.Popen([str(bin_dir / "celery"), "-A", "config", "worker", "--concurrency=1", "--loglevel=WARNING",
                          "--without-mingle", "--without-gossip"], cwd=REPO, env=env,
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL),
    ]
    ok = False
    try:
        base_url = f"http://127.0.0.1:{port}"
        wait_until_answering(f"{base_url}/healthz", deadline)
        served = [psutil.Process(processes[0].pid), *psutil.Process(processes[0].pid).children()]
        server_cpu_before = sum(sum(p.cpu_times()[:2]) for p in served)
        cpu_before = resource.getrusage(resource.RUSAGE_SELF)
        annotators, timings, seconds, errors = asyncio.run(run_annotators(
            base_url, tokens, args.think, args.ramp, args.seed, max(1.0, deadline - time.monotonic())))
        cpu_after = resource.getrusage(resource.RUSAGE_SELF)
        server_cpu = sum(sum(p.cpu_times()[:2]) for p in served) - server_cpu_before
        generator_cpu = (cpu_after.ru_utime - cpu_before.ru_utime) + (cpu_after.ru_stime - cpu_before.ru_stime)

        requests = sum(len(v) for v in timings.values())
        print(f"{requests:,} requests in {seconds:.1f} s: {requests / seconds:,.1f} requests/s; load average (1, 5, "
              f"15 min) after: {', '.join(f'{x:.2f}' for x in os.getloadavg())}")
        print("\n".join(percentile_table(timings)))
        print(f"load generator CPU: {generator_cpu:.1f} s ({100 * generator_cpu / seconds:.0f}% of one core); "
              f"gunicorn (master and workers) CPU: {server_cpu:.1f} s ({100 * server_cpu / seconds:.0f}% of one core, "
              f"{1000 * server_cpu / requests:.1f} ms per request)")
        acknowledged = [label for annotator in annotators for label in annotator.acknowledged]
        problems = errors + check_stored(study_id, acknowledged)
        print(f"acknowledged labels: {len(acknowledged):,}; stored once each with their value: "
              f"{'yes' if not problems else 'NO'}")
        for problem in problems[:10]:
            print("  problem:", problem)
        import numpy as np

        p95 = float(np.percentile(timings["label POST"], 95)) if timings["label POST"] else float("inf")
        ok = not problems and p95 < TARGET_P95_MS
        print(f"target (label POST p95 < {TARGET_P95_MS:.0f} ms): {'met' if p95 < TARGET_P95_MS else 'NOT met'} "
              f"({p95:.1f} ms)")
    finally:
        for process in processes:
            process.terminate()
        for process in processes:
            try:
                process.wait(30)
            except subprocess.TimeoutExpired:
                process.kill()
        from annotation.models import Study

        Study.objects.filter(pk=study_id).delete()
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
