"""The README's first command (bin/run) on the embedded defaults, used as a researcher would.

It starts from an empty var/ folder: the web server answers, the worker reports ready, the demo
study is listed, a researcher logs in to the admin with the printed password and uploads a file,
the worker (through the file-system broker) imports it into SQLite, and Ctrl-C stops everything.
"""
from __future__ import annotations

import os
import re
import signal
import time

import httpx
import psutil
import pytest

from tests.factories import autalic_like_csv
from tests.integration.support import (
    REPO,
    WatchedProcess,
    admin_upload_as_researcher,
    free_port,
    http_answers,
    wait_for,
    wait_for_study_counts,
)

pytestmark = [pytest.mark.integration, pytest.mark.slow, pytest.mark.embedded]


@pytest.fixture(scope="module")
def running_app(tmp_path_factory):
    """One bin/run for the module's tests (setting up its demo study and audit takes a minute): they run in the
    file's order, each leaving it running but the last, which stops it with Ctrl-C."""
    port = free_port()
    env = {k: v for k, v in os.environ.items()
           if k not in {"DATABASE_URL", "CELERY_BROKER_URL", "DJANGO_SETTINGS_MODULE"}}
    env.update(VAR_DIR=str(tmp_path_factory.mktemp("run") / "var"), PORT=str(port), WORKER_CONCURRENCY="1")
    app = WatchedProcess(["bash", str(REPO / "bin" / "run")], env=env)
    base = f"http://127.0.0.1:{port}"
    try:
        app.wait_for_output(r"Starting development server|Quit the server", timeout=180)
        wait_for(lambda: http_answers(f"{base}/healthz"), timeout=60, what="the web server")
        yield app, base
    finally:
        app.stop(signal.SIGINT)


def test_run_command_serves_the_app_and_the_worker_imports(running_app):
    app, base = running_app
    app.wait_for_output(r"celery@\S+ ready", timeout=60)
    password = re.search(r"user: researcher\s+password: (\S+)", app.output).group(1)
    token = re.search(r"API token: (\w+)", app.output).group(1)

    assert "auditapp" in httpx.get(f"{base}/").text
    assert httpx.get(f"{base}/admin/", follow_redirects=True).url.path == "/admin/login/"
    schema = httpx.get(f"{base}/api/schema/")
    assert schema.status_code == 200 and "openapi:" in schema.text
    docs = httpx.get(f"{base}/api/docs/").text
    asset = re.search(r'src="(/static/[^"]+swagger-ui[^"]*\.js)"', docs).group(1)
    served = httpx.get(f"{base}{asset}", headers={"Accept-Encoding": "gzip"})
    assert served.status_code == 200  # served by us, not a CDN
    # As in production: a content hash in its name, gzip, and a year's cache (tests/test_static_serving.py).
    assert re.search(r"\.[0-9a-f]{12}\.js$", asset) and served.headers["Content-Encoding"] == "gzip"
    assert "max-age=315360000" in served.headers["Cache-Control"]

    headers = {"Authorization": f"Token {token}"}
    studies = httpx.get(f"{base}/api/studies/", headers=headers).json()["results"]
    demo = next(s for s in studies if s["slug"] == "demo")
    # 3 imported, 12 simulated (8 sentences and the attention check each), 3 invited.
    assert (demo["n_items"], demo["n_participants"], demo["n_labels"]) == (24, 18, 72 + 12 * 9)

    def simulated_weights() -> bool:
        rows = httpx.get(f"{base}/api/studies/{demo['id']}/participants/", headers=headers,
                         params={"page_size": 100}).json()["results"]
        return sum(row["team"] == "simulated" and row["weight"] is not None for row in rows) == 12
    wait_for(simulated_weights, timeout=60, what="the worker's analysis of the demo: the simulated annotators' weights")

    landed = admin_upload_as_researcher(base, username="researcher", password=password, study_id=demo["id"],
                                        filename="more.csv", content=autalic_like_csv(100))
    assert "/admin/annotation/itemimport/" in landed
    wait_for_study_counts(base, token=token, study_id=demo["id"], n_items=124, n_labels=180 + 300)
    assert app.count(r"Task annotation.item_import_run\[\S+\] succeeded") == 1

    labels = httpx.get(f"{base}/api/studies/{demo['id']}/labels/?format=csv", headers=headers)
    assert labels.text.splitlines()[0] == "participant,item,value,rationale,created_at,updated_at,n_changes,first_value"
    assert len(labels.text.splitlines()) == 1 + 180 + 300

    # A script does the same through the API: create a study, upload, poll the import.
    study = httpx.post(f"{base}/api/studies/", headers=headers, json={"name": "Scripted", "slug": "scripted"}).json()
    upload = httpx.post(f"{base}/api/studies/{study['id']}/imports/", headers=headers,
                        files={"file": ("s.csv", autalic_like_csv(10), "text/csv")})
    assert upload.status_code == 202, upload.text

    def finished():
        state = httpx.get(f"{base}/api/imports/{upload.json()['id']}/", headers=headers).json()
        return state if state["status"] != "pending" else None
    state = wait_for(finished, timeout=60, what="the scripted import")
    assert (state["status"], state["n_items"], state["n_labels"]) == ("succeeded", 10, 30)


def test_a_killed_worker_is_started_again_and_the_web_server_stays_up(running_app):
    app, base = running_app
    app.wait_for_output(r"celery@\S+ ready", timeout=60)
    worker = next(p for p in psutil.Process(app.process.pid).children(recursive=True)
                  if "worker" in p.cmdline() and "celery" in " ".join(p.cmdline()) and p.ppid() == app.process.pid)
    ready_before = app.count(r"celery@\S+ ready")
    worker.kill()
    killed_at = time.monotonic()
    app.wait_for_output(r"the worker stopped \(killed by SIGKILL\); starting it again in 1 s", timeout=10)
    assert http_answers(f"{base}/healthz"), "the web server did not go down with the worker"
    wait_for(lambda: app.count(r"celery@\S+ ready") == ready_before + 1, timeout=30,
             what="the new worker to be ready")
    assert time.monotonic() - killed_at < 15
    assert http_answers(f"{base}/healthz")


def test_ctrl_c_stops_the_server_and_the_worker(running_app):
    app, base = running_app
    app.wait_for_output(r"celery@\S+ ready", timeout=60)
    children = psutil.Process(app.process.pid).children(recursive=True)
    assert len(children) >= 2
    assert app.stop(signal.SIGINT) is not None
    wait_for(lambda: not any(c.is_running() and c.status() != psutil.STATUS_ZOMBIE for c in children),
             timeout=30, what="every child process to exit")
    assert not http_answers(f"{base}/healthz")
