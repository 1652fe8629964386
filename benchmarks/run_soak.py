"""Soak test of the README's first command: ``bin/run`` on its embedded defaults for an hour under steady traffic.

Starts ``bin/run`` from a checkout (``--checkout``, default this one; give a fresh clone to test what a new user
gets) with a new VAR_DIR and port, then for ``--minutes`` keeps it busy as a small lab would:

- annotators: every ``--annotator-every`` seconds three invited annotators of a study made for the run open their
  link, consent, read the instructions and label their sentences (one label a second each);
- a BITS audit of seed 001's corpus with VADER (cache off, so the worker really scores) every ``--audit-every``
  seconds, followed to its end;
- a recomputation of the study's analysis every ``--recompute-every`` seconds;
- at ``--kill-at`` minutes, ``kill -9`` of the Celery worker: the time until a new worker is ready is measured.

At the end it prints the figures and checks them: the worker died only when killed (no "Unrecoverable error", no
other restart), it was ready again within 15 s, every audit completed, every acknowledged label is stored exactly
once, no request got a 5xx, and Ctrl-C stops everything. Exit status 1 when a check fails.

    .venv/bin/python benchmarks/run_soak.py --minutes 60 --checkout /tmp/fresh-clone
"""
from __future__ import annotations

import argparse
import asyncio
import os
import random
import re
import signal
import socket
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from benchmarks.annotator_load import Annotator  # noqa: E402


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class App:
    """bin/run in its own process group, its output in a file."""

    def __init__(self, checkout: Path, var_dir: Path, port: int):
        self.log_path = var_dir.parent / "bin-run.log"
        self.log = self.log_path.open("w")
        env = {k: v for k, v in os.environ.items()
               if k not in {"DATABASE_URL", "CELERY_BROKER_URL", "DJANGO_SETTINGS_MODULE", "VIRTUAL_ENV"}}
        env.update(VAR_DIR=str(var_dir), PORT=str(port), WORKER_CONCURRENCY="2")
        self.process = subprocess.Popen(["bash", str(checkout / "bin" / "run")], cwd=checkout, env=env,
                                        stdout=self.log, stderr=subprocess.STDOUT, start_new_session=True)
        self.base = f"http://127.0.0.1:{port}"

    @property
    def output(self) -> str:
        return self.log_path.read_text(errors="replace")

    def count(self, pattern: str) -> int:
        return len(re.findall(pattern, self.output))

    def wait_for(self, pattern: str, timeout: float, at_least: int = 1) -> float:
        started = time.monotonic()
        while time.monotonic() - started < timeout:
            if self.count(pattern) >= at_least:
                return time.monotonic() - started
            if self.process.poll() is not None:
                raise RuntimeError(f"bin/run exited ({self.process.returncode}):\n{self.output[-3000:]}")
            time.sleep(0.2)
        raise RuntimeError(f"timed out waiting for /{pattern}/:\n{self.output[-3000:]}")

    def worker_pid(self) -> int:
        children = subprocess.run(["pgrep", "-P", str(self.process.pid)], capture_output=True, text=True).stdout
        for pid in map(int, children.split()):
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
            if "celery" in cmdline and " worker" in cmdline:
                return pid
        raise RuntimeError("no worker process under bin/run's supervisor")

    def stop(self) -> float:
        started = time.monotonic()
        os.killpg(self.process.pid, signal.SIGINT)
        self.process.wait(60)
        return time.monotonic() - started


def make_study(var_dir: Path, n_invites: int) -> tuple[int, list[str]]:
    """A study without questionnaires or IAT, items enough for every annotator, ``n_invites`` invitations."""
    os.environ.update(VAR_DIR=str(var_dir), DJANGO_SETTINGS_MODULE="config.settings.local")
    import django

    django.setup()
    from annotation.models import Item, Study
    from annotation.participation import participants_invite
    from teams.scoping import demo_team

    # The team of bin/run's demo researcher, whose API token asks for the recomputations: in a team of its own the
    # study would be out of the token's sight, and each recomputation a silent 404.
    study = Study.objects.create(
        name="Soak", slug=f"soak-{time.time_ns()}", status=Study.Status.OPEN, iat_enabled=False,
        content_warning="Invented sentences.", consent_text="You agree.", items_per_annotator=8,
        annotators_per_item=3, team=demo_team())
    Item.objects.bulk_create([Item(study=study, external_id=f"s{n}", target=f"Soak sentence number {n}.", position=n)
                              for n in range(n_invites * 8 // 3 + 8)])
    participants = participants_invite(study=study, count=n_invites, team="soak")
    return study.id, [p.invite_token for p in participants]


def stored_labels(var_dir: Path, study_id: int) -> dict[tuple[str, int], int]:
    with sqlite3.connect(var_dir / "db.sqlite3", timeout=30) as db:
        rows = db.execute("SELECT p.invite_token, l.item_id, l.value FROM annotation_label l JOIN "
                          "annotation_participant p ON p.id = l.participant_id WHERE p.study_id = ?", (study_id,))
        return {(token, item): value for token, item, value in rows}


async def soak(app: App, args, token: str, study_id: int, invites: list[str], figures: dict) -> None:
    import httpx

    headers = {"Authorization": f"Token {token}"}
    api = httpx.AsyncClient(base_url=app.base, headers=headers, timeout=60)
    endpoints = (await api.get("/api/endpoints/")).json()["results"]
    local = next(e for e in endpoints if e["protocol"] == "local")
    timings: dict[str, list[float]] = defaultdict(list)
    rng = random.Random(7)
    started = time.monotonic()
    deadline = started + args.minutes * 60
    next_annotators = next_audit = next_recompute = started
    kill_at = started + args.kill_at * 60 if args.kill_at else None
    annotator_tasks, audit_tasks = [], []

    async def checked(response):
        if response.status_code >= 500:
            figures["server_errors"].append(f"{response.request.method} {response.request.url}: "
                                            f"{response.status_code}")
        return response

    async def one_audit(n: int) -> None:
        launched = time.monotonic()
        response = await checked(await api.post("/api/audits/", json={
            "paradigm": "bits", "name": f"soak {n}", "use_cache": False,
            "models": [{"endpoint": local["id"], "model": "vader"}]}))
        if response.status_code != 201:
            figures["audits_refused"].append(response.text[:300])
            return
        audit_id = response.json()["id"]
        while True:
            await asyncio.sleep(2)
            status = (await checked(await api.get(f"/api/audits/{audit_id}/"))).json()["status"]
            if status in ("completed", "failed", "cancelled", "stopped"):
                figures["audits"].append((audit_id, status, round(time.monotonic() - launched, 1)))
                return

    n_audits = 0
    async with httpx.AsyncClient(base_url=app.base, timeout=60) as browser:
        while time.monotonic() < deadline:
            now = time.monotonic()
            if now >= next_annotators and invites:
                for _ in range(3):
                    if invites:
                        client = httpx.AsyncClient(base_url=app.base, timeout=60)
                        annotator = Annotator(client, invites.pop(), timings, 1.0, random.Random(rng.random()))
                        figures["annotators"].append(annotator)
                        annotator_tasks.append(asyncio.create_task(annotator.run()))
                next_annotators = now + args.annotator_every
            if now >= next_audit:
                n_audits += 1
                audit_tasks.append(asyncio.create_task(one_audit(n_audits)))
                next_audit = now + args.audit_every
            if now >= next_recompute:
                await checked(await api.post(f"/api/studies/{study_id}/analysis/"))
                figures["recomputations"] += 1
                next_recompute = now + args.recompute_every
            if kill_at is not None and now >= kill_at:
                kill_at = None
                ready_before = app.count(r"celery@\S+ ready")
                os.kill(app.worker_pid(), signal.SIGKILL)
                killed = time.monotonic()
                await asyncio.to_thread(app.wait_for, r"celery@\S+ ready", 120, ready_before + 1)
                figures["worker_back_after_s"] = round(time.monotonic() - killed, 1)
            for page in ("/", "/admin/login/", "/healthz"):
                await checked(await browser.get(page))
            await asyncio.sleep(1)
        results = await asyncio.gather(*annotator_tasks, *audit_tasks, return_exceptions=True)
    figures["task_errors"] = [repr(r) for r in results if isinstance(r, BaseException)]
    figures["timings"] = timings
    await api.aclose()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--checkout", type=Path, default=REPO)
    parser.add_argument("--minutes", type=float, default=60)
    parser.add_argument("--annotator-every", type=float, default=20)
    parser.add_argument("--audit-every", type=float, default=180)
    parser.add_argument("--recompute-every", type=float, default=120)
    parser.add_argument("--kill-at", type=float, default=30, help="minute of the kill -9 of the worker (0: none)")
    args = parser.parse_args()

    var_dir = Path(tempfile.mkdtemp(prefix="auditapp-soak-")) / "var"
    app = App(args.checkout.resolve(), var_dir, free_port())
    figures = {"server_errors": [], "audits": [], "audits_refused": [], "annotators": [], "recomputations": 0}
    problems = []
    try:
        app.wait_for(r"celery@\S+ ready", timeout=900)
        app.wait_for(r"Starting development server|Quit the server", timeout=120)
        token = re.search(r"API token: (\w+)", app.output).group(1)
        n_invites = int(args.minutes * 60 / args.annotator_every * 3) + 3
        study_id, invites = make_study(var_dir, n_invites)
        started = time.monotonic()
        asyncio.run(soak(app, args, token, study_id, invites, figures))
        figures["ran_min"] = round((time.monotonic() - started) / 60, 1)
        time.sleep(5)
        acknowledged = [label for annotator in figures["annotators"] for label in annotator.acknowledged]
        stored = stored_labels(var_dir, study_id)
        missing = [label for label in acknowledged if stored.get(label[:2]) != label[2]]
        print(f"ran {figures['ran_min']} min; log: {app.log_path}")
        print(f"annotators: {len(figures['annotators'])}, labels acknowledged {len(acknowledged)}, stored "
              f"{len(stored)}, acknowledged but not stored as sent: {len(missing)}")
        statuses = [status for _, status, _ in figures["audits"]]
        print(f"audits: {len(figures['audits'])} finished ({statuses.count('completed')} completed), durations "
              f"{[seconds for _, _, seconds in figures['audits']]} s; refused: {len(figures['audits_refused'])}")
        print(f"recomputations asked: {figures['recomputations']}")
        print(f"worker ready again {figures.get('worker_back_after_s')} s after kill -9")
        restarts = app.count(r"supervise: the worker stopped")
        crashes = app.count(r"Unrecoverable error|CRITICAL")
        print(f"worker stops seen by the supervisor: {restarts} (kills: {1 if args.kill_at else 0}); "
              f"'Unrecoverable error'/CRITICAL lines: {crashes}; web server stops: "
              f"{app.count(r'supervise: the web server stopped')}")
        print(f"5xx answers: {len(figures['server_errors'])} {figures['server_errors'][:5]}")
        print(f"errors in annotators or audits: {figures['task_errors'][:5]}")
        if missing or figures["server_errors"] or figures["task_errors"] or figures["audits_refused"]:
            problems.append("a label, a request, an annotator or an audit went wrong")
        if statuses.count("completed") != len(statuses) or not statuses:
            problems.append("an audit did not complete")
        if crashes or restarts != (1 if args.kill_at else 0):
            problems.append("the worker stopped when it was not killed")
        if args.kill_at and not figures.get("worker_back_after_s", 99) < 15:
            problems.append("the worker was not ready again within 15 s")
    finally:
        if app.process.poll() is None:
            print(f"Ctrl-C stopped bin/run in {app.stop():.1f} s")
    print("OK" if not problems else f"FAILED: {'; '.join(problems)}")
    sys.exit(1 if problems else 0)


if __name__ == "__main__":
    main()
