"""Benchmark: export a study of 1,000,000 labels as CSV through the REST API of a real server.

Builds a throwaway study (SQLite in a temporary VAR_DIR by default, or --database-url for PostgreSQL),
serves it with gunicorn (one sync worker, production settings) on 127.0.0.1, streams
``/api/studies/{id}/labels/?format=csv`` with httpx, and prints the rows, time, rows per second, and the
serving process's resident memory before and at its peak (VmHWM). Targets (2-core machine): more than
50,000 rows/s, peak RSS under 300 MB, and a peak that does not grow with the number of rows.

    .venv/bin/python benchmarks/export_labels.py [--labels 1000000] [--database-url postgres://...]
"""
from __future__ import annotations

import argparse
import os
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))


def build_study(n_labels: int, annotators: int) -> tuple[int, str]:
    """Create a study of n_labels labels (annotators x items) in bulk; return (study id, token)."""
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)
    from annotation.models import Item, Label, Participant, Study
    from auditapp.services import researcher_create
    from teams import roles
    from teams.models import Membership, Team

    n_items = n_labels // annotators
    team = Team.objects.get_or_create(name="Benchmarks")[0]
    study = Study.objects.create(name="Export benchmark", slug=f"export-benchmark-{time.time_ns()}", team=team)
    participants = Participant.objects.bulk_create(
        [Participant(study=study, pseudonym=f"A{k + 1}", status=Participant.Status.IMPORTED) for k in range(annotators)])
    batch = 20_000
    for start in range(0, n_items, batch):
        items = Item.objects.bulk_create(
            [Item(study=study, external_id=f"item-{i:07d}", target=f"Sentence {i}, with a comma.", position=i)
             for i in range(start, min(start + batch, n_items))], batch_size=5000)
        Label.objects.bulk_create(
            [Label(participant=p, item=item, value=(item.position + k) % 2,
                   rationale="a short reason" if (item.position + k) % 7 == 0 else "")
             for item in items for k, p in enumerate(participants)], batch_size=5000)
    user, _, token = researcher_create(username=f"bench-{time.time_ns()}")
    Membership.objects.create(team=team, user=user, role=roles.VIEWER)
    return study.id, token


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def memory_mb(pid: int, field: str) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) / 1024
    raise KeyError(field)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--labels", type=int, default=1_000_000)
    parser.add_argument("--annotators", type=int, default=10)
    parser.add_argument("--database-url", help="Default: SQLite in a temporary folder.")
    args = parser.parse_args()

    import httpx
    import psutil

    var_dir = tempfile.mkdtemp(prefix="auditapp-bench-")
    env = {**os.environ, "VAR_DIR": var_dir, "DJANGO_SETTINGS_MODULE": "config.settings.production",
           "SECRET_KEY": "benchmark-only", "SECURE_COOKIES": "0", "SECURE_SSL_REDIRECT": "0", "LOG_LEVEL": "WARNING"}
    env.pop("CELERY_BROKER_URL", None)
    if args.database_url:
        env["DATABASE_URL"] = args.database_url
    else:
        env.pop("DATABASE_URL", None)
    os.environ.update({k: env[k] for k in ("VAR_DIR", "DJANGO_SETTINGS_MODULE", "SECRET_KEY", "LOG_LEVEL")})
    if "DATABASE_URL" in env:
        os.environ["DATABASE_URL"] = env["DATABASE_URL"]

    started = time.perf_counter()
    study_id, token = build_study(args.labels, args.annotators)
    print(f"built a study of {args.labels:,} labels in {time.perf_counter() - started:.1f} s "
          f"({'PostgreSQL' if args.database_url else 'SQLite'})")

    port = free_port()
    server = subprocess.Popen(
        [str(Path(sys.executable).parent / "gunicorn"), "config.wsgi", "--workers", "1", "--timeout", "600",
         "--bind", f"127.0.0.1:{port}"], cwd=REPO, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        base = f"http://127.0.0.1:{port}"
        headers = {"Authorization": f"Token {token}"}
        for _ in range(100):
            try:
                httpx.get(f"{base}/healthz", timeout=1)
                break
            except httpx.TransportError:
                time.sleep(0.1)
        httpx.get(f"{base}/api/studies/{study_id}/labels/?page_size=10", headers=headers).raise_for_status()
        worker_pid = psutil.Process(server.pid).children()[0].pid
        rss_before = memory_mb(worker_pid, "VmRSS")

        started = time.perf_counter()
        rows, size = -1, 0
        with httpx.stream("GET", f"{base}/api/studies/{study_id}/labels/?format=csv", headers=headers,
                          timeout=600) as response:
            response.raise_for_status()
            for chunk in response.iter_bytes():
                rows += chunk.count(b"\n")
                size += len(chunk)
        seconds = time.perf_counter() - started
        peak = memory_mb(worker_pid, "VmHWM")
    finally:
        server.terminate()
        server.wait(30)

    print(f"exported {rows:,} rows ({size / 1e6:.1f} MB of CSV) in {seconds:.2f} s: {rows / seconds:,.0f} rows/s")
    print(f"serving process RSS: {rss_before:.0f} MB before the export, peak {peak:.0f} MB")
    ok = rows == args.labels and rows / seconds > 50_000 and peak < 300
    print("targets (rows/s > 50,000, peak RSS < 300 MB):", "met" if ok else "NOT met")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
