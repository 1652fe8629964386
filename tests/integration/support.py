"""Starting and watching real processes (Celery workers, the run command) and finding real services."""
from __future__ import annotations

import contextlib
import os
import queue
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import pytest
import redis

REPO = Path(__file__).resolve().parents[2]
VENV_BIN = Path(sys.executable).parent


def wait_for(condition: Callable[[], object], *, timeout: float, interval: float = 0.2, what: str = "condition"):
    """Poll ``condition`` until it returns something truthy; fail the test after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        result = condition()
        if result:
            return result
        time.sleep(interval)
    raise AssertionError(f"timed out after {timeout:.0f}s waiting for {what}")


class WatchedProcess:
    """A child process in its own session whose combined output is collected line by line."""

    def __init__(self, args: list[str], *, env: dict[str, str], cwd: Path = REPO):
        self.process = subprocess.Popen(args, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                        stdin=subprocess.DEVNULL, text=True, start_new_session=True)
        self.lines: list[str] = []
        self._queue: queue.Queue[str] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        for line in self.process.stdout:
            self.lines.append(line.rstrip("\n"))

    @property
    def output(self) -> str:
        return "\n".join(self.lines)

    def wait_for_output(self, pattern: str, *, timeout: float) -> re.Match:
        regex = re.compile(pattern)

        def found():
            if self.process.poll() is not None and not regex.search(self.output):
                raise AssertionError(f"process exited ({self.process.returncode}) before /{pattern}/:\n{self.output}")
            return regex.search(self.output)

        try:
            return wait_for(found, timeout=timeout, what=f"/{pattern}/ in the output")
        except AssertionError as error:
            raise AssertionError(f"{error}\n--- output ---\n{self.output[-5000:]}") from None

    def count(self, pattern: str) -> int:
        return len(re.findall(pattern, self.output))

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 30) -> int:
        """Signal the whole process group and wait; kill it if it does not stop in time."""
        if self.process.poll() is None:
            os.killpg(self.process.pid, sig)
            try:
                self.process.wait(timeout)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait(10)
        return self.process.returncode


def celery_worker(*, env: dict[str, str], concurrency: int = 1) -> WatchedProcess:
    """A real Celery worker (``concurrency`` prefork children) on the project's app, started with ``env``."""
    return WatchedProcess([str(VENV_BIN / "celery"), "-A", "config", "worker", "--loglevel=INFO",
                           f"--concurrency={concurrency}", "--without-mingle", "--without-gossip"], env=env)


def started_celery_worker(env: dict[str, str], concurrency: int = 2) -> WatchedProcess:
    """A Celery worker that has said it is ready."""
    process = celery_worker(env=env, concurrency=concurrency)
    process.wait_for_output(r"celery@\S+ ready", timeout=60)
    return process


def database_url(settings_dict: dict) -> str:
    """The DATABASE_URL of a PostgreSQL connection's settings (the test database, when called in a test)."""
    user, password = settings_dict["USER"], settings_dict["PASSWORD"]
    credentials = f"{user}:{password}@" if password else f"{user}@"
    return f"postgres://{credentials}{settings_dict['HOST']}:{settings_dict['PORT']}/{settings_dict['NAME']}"


def require_service(name: str, available: bool) -> None:
    """Skip a test whose service is missing, except under CI, where a missing service is a failure."""
    if available:
        return
    message = f"{name} is not available (bin/test starts it from Debian's packages)"
    if os.environ.get("CI") == "true":
        pytest.fail(f"CI=true: {message}")
    pytest.skip(message)


def redis_broker_url() -> str:
    """The Redis that is this run's Celery broker (bin/test's PostgreSQL pass sets it)."""
    url = os.environ.get("CELERY_BROKER_URL", "")
    require_service("Redis (CELERY_BROKER_URL=redis://...)", url.startswith("redis://"))
    return url


def worker_environment(**extra: str) -> dict[str, str]:
    """The environment of a worker on this test's PostgreSQL database and on Redis (flushed first); skips the
    test on SQLite, where bin/test's second pass runs it."""
    from django.db import connection

    if connection.vendor != "postgresql":
        pytest.skip("runs in bin/test's PostgreSQL + Redis pass")
    redis_url = redis_broker_url()
    redis.Redis.from_url(redis_url).flushdb()
    return {**os.environ, "DJANGO_SETTINGS_MODULE": "config.settings.test",
            "DATABASE_URL": database_url(connection.settings_dict), "CELERY_BROKER_URL": redis_url, **extra}


def embedded_worker_environment(**extra: str) -> dict[str, str]:
    """The environment of a worker on the embedded defaults: this test's SQLite database file and the file-system
    broker in this process's VAR_DIR (inherited, as are the endpoints' lock files there); skips the test on
    PostgreSQL, where the same paths run through Redis."""
    from django.db import connection

    if connection.vendor != "sqlite":
        pytest.skip("runs in bin/test's SQLite pass (the embedded defaults)")
    environment = {**os.environ, "DJANGO_SETTINGS_MODULE": "config.settings.test",
                   "DATABASE_URL": f"sqlite:///{connection.settings_dict['NAME']}", **extra}
    environment.pop("CELERY_BROKER_URL", None)
    environment.pop("LLM_LIMITS_REDIS_URL", None)
    return environment


def production_environment(var_dir: Path, **extra: str) -> dict[str, str]:
    """The environment of the production shape (production settings over plain HTTP) on this test's PostgreSQL
    database and on Redis (flushed first), with static files collected under ``var_dir``; skips the test on
    SQLite, where bin/test's second pass runs it."""
    from django.db import connection

    if connection.vendor != "postgresql":
        pytest.skip("runs in bin/test's PostgreSQL + Redis pass")
    broker = redis_broker_url()
    redis.Redis.from_url(broker).flushdb()
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "config.settings.production", "SECRET_KEY": "x" * 50,
           "SECURE_COOKIES": "0", "SECURE_SSL_REDIRECT": "0", "DATABASE_URL": database_url(connection.settings_dict),
           "CELERY_BROKER_URL": broker, "VAR_DIR": str(var_dir / "var"), "STATIC_ROOT": str(var_dir / "static"),
           **extra}
    subprocess.run([sys.executable, "manage.py", "collectstatic", "--noinput", "-v0"], cwd=REPO, env=env, check=True)
    return env


def gunicorn(*, env: dict[str, str], workers: int = 2, threads: int = 1) -> tuple[WatchedProcess, str]:
    """gunicorn serving the project with ``env`` on a free port, answering /healthz; returns it and its base URL."""
    port = free_port()
    web = WatchedProcess([str(VENV_BIN / "gunicorn"), "config.wsgi", "--workers", str(workers), "--threads",
                          str(threads), "--bind", f"127.0.0.1:{port}"], env=env)
    base = f"http://127.0.0.1:{port}"
    try:
        wait_for(lambda: http_answers(f"{base}/healthz"), timeout=60, what="gunicorn")
    except AssertionError:
        web.stop()
        raise AssertionError(f"gunicorn did not answer:\n{web.output[-5000:]}") from None
    return web, base


class ThrowawayPostgres:
    """A PostgreSQL server of its own in a temporary folder (Debian's binaries, as bin/lib/services.sh starts
    one), which a test may stop and start again; skips the test when the binaries are missing. ``close()``
    stops it and removes the folder."""

    def __init__(self):
        binaries = sorted(Path("/usr/lib/postgresql").glob("*/bin"))
        require_service("PostgreSQL's binaries (/usr/lib/postgresql/*/bin)", bool(binaries))
        self.bin = binaries[-1]
        # Not under pytest's tmp_path: its parents are private to root, and the server runs as postgres.
        directory = self.directory = Path(tempfile.mkdtemp(prefix="auditapp-throwaway-pg-"))
        directory.chmod(0o755)
        self.port = free_port()
        self.url = f"postgres://postgres@127.0.0.1:{self.port}/auditapp"
        self._as_postgres: list[str] = []
        if os.geteuid() == 0:  # initdb refuses to run as root
            shutil.chown(directory, "postgres")
            self._as_postgres = ["runuser", "-u", "postgres", "--"]
        self._run("initdb", "-D", str(directory / "data"), "-U", "postgres", "-A", "trust", "-E", "UTF8", "--no-sync")
        self.start()
        subprocess.run([str(self.bin / "createdb"), "-h", "127.0.0.1", "-p", str(self.port), "-U", "postgres",
                        "auditapp"], check=True, capture_output=True)

    def _run(self, program: str, *args: str) -> None:
        subprocess.run([*self._as_postgres, str(self.bin / program), *args], check=True, capture_output=True)

    def start(self) -> None:
        self._run("pg_ctl", "-D", str(self.directory / "data"), "-l", str(self.directory / "log"), "-w", "-o",
                  f"-p {self.port} -k {self.directory} -c listen_addresses=127.0.0.1 -c fsync=off "
                  "-c synchronous_commit=off -c full_page_writes=off", "start")

    def stop(self) -> None:
        self._run("pg_ctl", "-D", str(self.directory / "data"), "-m", "fast", "-w", "stop")

    def close(self) -> None:
        with contextlib.suppress(subprocess.CalledProcessError):
            self.stop()
        shutil.rmtree(self.directory, ignore_errors=True)


class ThrowawayRedis:
    """A Redis server of its own on a free port (Debian's ``redis-server``, nothing saved to disk), which a test may
    stop and start again on the same port; skips the test when the binary is missing. ``close()`` stops it."""

    def __init__(self):
        binary = shutil.which("redis-server")
        require_service("redis-server", binary is not None)
        self.binary = binary
        self.port = free_port()
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self.process: subprocess.Popen | None = None
        self.start()

    def start(self) -> None:
        self.process = subprocess.Popen([self.binary, "--port", str(self.port), "--bind", "127.0.0.1", "--save", "",
                                         "--appendonly", "no"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                        start_new_session=True)
        wait_for(lambda: _answers_ping(self.url), timeout=20, interval=0.05, what="redis-server")

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            self.process.wait(20)

    def close(self) -> None:
        self.stop()


def _answers_ping(url: str) -> bool:
    try:
        with redis.Redis.from_url(url, socket_connect_timeout=1) as client:
            return bool(client.ping())
    except redis.ConnectionError:
        return False


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def canned_http_server(reply: bytes) -> Iterator[int]:
    """A server on 127.0.0.1 that reads each connection's request and answers it with ``reply``, raw bytes (a status
    the test server never gives, or plain HTTP to a TLS hello); yields its port, and stops listening on exit."""
    listener = socket.create_server(("127.0.0.1", 0))

    def answer_every_connection():
        while True:
            try:
                connection, _ = listener.accept()
            except OSError:
                return
            with connection:
                connection.recv(65536)
                connection.sendall(reply)

    threading.Thread(target=answer_every_connection, daemon=True).start()
    try:
        yield listener.getsockname()[1]
    finally:
        listener.close()


def http_answers(url: str) -> bool:
    try:
        return httpx.get(url, timeout=2).status_code == 200
    except httpx.TransportError:
        return False


def admin_upload_as_researcher(base: str, *, username: str, password: str, study_id: int, filename: str,
                               content: bytes) -> str:
    """Log in to the admin like a browser (session and CSRF cookies) and upload an item file.

    Returns the URL the upload redirected to (the import's admin page).
    """
    with httpx.Client(base_url=base, follow_redirects=True) as browser:
        browser.get("/admin/login/")
        browser.post("/admin/login/?next=/admin/", data={
            "username": username, "password": password, "next": "/admin/",
            "csrfmiddlewaretoken": browser.cookies["csrftoken"]})
        assert "sessionid" in browser.cookies, "admin login failed"
        import_page = f"/admin/annotation/study/{study_id}/import-items/"
        browser.get(import_page)
        response = browser.post(import_page, data={"csrfmiddlewaretoken": browser.cookies["csrftoken"]},
                                files={"file": (filename, content, "text/csv")})
        response.raise_for_status()
        return str(response.url)


def wait_for_study_counts(base: str, *, token: str, study_id: int, n_items: int, n_labels: int,
                          timeout: float = 60) -> None:
    """Poll the API until the study has the expected numbers of items and labels."""
    headers = {"Authorization": f"Token {token}"}

    def counts_match():
        study = httpx.get(f"{base}/api/studies/{study_id}/", headers=headers).json()
        return study["n_items"] == n_items and study["n_labels"] == n_labels
    wait_for(counts_match, timeout=timeout, what=f"{n_items} items and {n_labels} labels in study {study_id}")
