"""An audit deployment of its own, to break on purpose: a throwaway PostgreSQL and Redis (which may be stopped and
started again, unlike the servers other tests share), the test LLM server on a fixed port, and a Celery worker.
Each fault is injected in the middle of an audit, and :meth:`FaultRig.resume_seconds` measures how soon the audit
sends again once the fault is over: the time from then to the first request the LLM server receives.

The rig supervises its worker as bin/run and Docker's restart policy do: a worker that exits is started again
(counted in ``worker_restarts``). Celery 5.7's worker does exit after losing its Redis broker while it runs a task
("Unrecoverable error: AttributeError ... 'hostname'", once that task ends).

Used by tests/integration/test_worker_faults.py (loose bounds) and benchmarks/fault_recovery.py (the figures).
The caller's own Django database is not used: the rig's is reached with psycopg and ``manage.py``.
"""
from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time

import psycopg

from tests.integration.support import (
    REPO,
    ThrowawayPostgres,
    ThrowawayRedis,
    free_port,
    started_celery_worker,
    wait_for,
)
from tests.llm_server import LLMServer

POSITIVE_WORDS = ("cure", "disease", "tragedy", "suffer", "burden")
LAUNCH = """
from tests import team_defaults
team_defaults.connect()  # this process's objects go to the suite's team, as the test's own do
from auditapp.engine import launch as engine_launch
from auditapp.models import LLMEndpoint
from auditapp.paradigms.classification import services as classification_services
from tests.factories import make_audit_study
study = make_audit_study({n_items}, n_examples=2, slug="{name}")
endpoint = LLMEndpoint.objects.create(name="{name}", protocol="openai", base_url="{base_url}",
                                      max_concurrency={concurrency}, attempt_timeout_s={attempt_timeout},
                                      deadline_s=600, max_attempts=5)
audit = classification_services.audit_create(
    study=study, name="{name}", conditions=["zs", "persona_pfl"], n_resamples=100, use_cache=False,
    models=[engine_launch.ModelChoice(endpoint=endpoint, model="model-a")])
print("AUDIT", audit.id)
"""


class FaultRig:
    """The deployment (module docstring); ``worker_settings``: environment variables of the worker (settings)."""

    def __init__(self, *, latency: float = 0.2, concurrency: int = 4, attempt_timeout: float = 120,
                 worker_settings: dict[str, str] | None = None):
        self.latency, self.concurrency, self.attempt_timeout = latency, concurrency, attempt_timeout
        self.database = ThrowawayPostgres()
        self.redis = ThrowawayRedis()
        self.env = {**os.environ, "DJANGO_SETTINGS_MODULE": "config.settings.test", "DATABASE_URL": self.database.url,
                    "CELERY_BROKER_URL": self.redis.url, "PYTHONPATH": str(REPO),
                    "VAR_DIR": str(self.database.directory / "var"), **(worker_settings or {})}
        self._manage("migrate", "--noinput", "-v0")
        self.port = free_port()
        self.server = self._server()
        self.worker = started_celery_worker(self.env)
        self.worker_restarts = 0
        self._audits = 0

    def _supervise(self) -> None:
        if self.worker.process.poll() is not None:
            self.worker_restarts += 1
            self.worker = started_celery_worker(self.env)

    def _server(self) -> LLMServer:
        return LLMServer(port=self.port, latency=self.latency, models=("model-a",),
                         positive_words=POSITIVE_WORDS).start()

    def _manage(self, *args: str) -> str:
        return subprocess.run([sys.executable, "manage.py", *args], cwd=REPO, env=self.env, check=True,
                              capture_output=True, text=True).stdout

    def _query(self, sql: str, *params) -> tuple | None:
        """One row from the rig's database; None while it cannot be reached."""
        try:
            with psycopg.connect(self.database.url, connect_timeout=2) as connection:
                return connection.execute(sql, params).fetchone()
        except psycopg.OperationalError:
            return None

    # ------------------------------------------------------------------------------------------------ an audit

    def launch(self, n_items: int = 300) -> int:
        """A classification audit of ``2 × n_items`` requests, launched (the worker prepares and sends it)."""
        self._audits += 1
        output = self._manage("shell", "-c", LAUNCH.format(
            n_items=n_items, name=f"faults-{self._audits}", base_url=f"http://127.0.0.1:{self.port}",
            concurrency=self.concurrency, attempt_timeout=self.attempt_timeout))
        return int(output.split("AUDIT")[-1])

    def answered(self, audit_id: int) -> int:
        row = self._query("SELECT count(*) FROM auditapp_auditrequest WHERE audit_id = %s AND state = 'answered'",
                          audit_id)
        return row[0] if row else -1

    def status(self, audit_id: int) -> str | None:
        row = self._query("SELECT status FROM auditapp_audit WHERE id = %s", audit_id)
        return row[0] if row else None

    def one_reply_per_key(self, audit_id: int) -> bool:
        row = self._query("SELECT count(*), count(DISTINCT r.key), count(p.id), count(*) FILTER (WHERE state = "
                          "'answered') FROM auditapp_auditrequest r LEFT JOIN auditapp_llmreply p ON p.key = r.key "
                          "WHERE r.audit_id = %s", audit_id)
        return row is not None and len(set(row)) == 1

    def wait_answered(self, audit_id: int, n: int, *, timeout: float = 120) -> None:
        wait_for(lambda: self.answered(audit_id) >= n, timeout=timeout, what=f"{n} answered requests")

    def wait_completed(self, audit_id: int, *, timeout: float = 300) -> str:
        def finished():
            self._supervise()
            return (status := self.status(audit_id)) in ("completed", "failed", "stopped") and status

        return wait_for(finished, timeout=timeout, what="the audit to finish")

    # ------------------------------------------------------------------------------------------------- faults

    def requests_seen(self) -> int:
        return self.server.stats()["requests"]

    def resume_seconds(self, since: float, seen: int, *, timeout: float = 180) -> float:
        """Seconds from ``since`` (a monotonic time) to the first request the LLM server got after ``seen``."""
        def sent():
            self._supervise()
            return self.requests_seen() > seen

        wait_for(sent, timeout=timeout, interval=0.05, what="a request to the LLM server after the fault")
        return time.monotonic() - since

    def kill_worker(self) -> tuple[float, int]:
        """SIGKILL the worker (all its processes) and start another at once; returns (the kill's time, requests
        seen by then)."""
        self.worker.stop(signal.SIGKILL)
        killed_at, seen = time.monotonic(), self.requests_seen()
        self.worker = started_celery_worker(self.env)
        return killed_at, seen

    def redis_outage(self, seconds: float) -> tuple[float, int]:
        return self._outage(self.redis, seconds)

    def database_outage(self, seconds: float) -> tuple[float, int]:
        return self._outage(self.database, seconds)

    def endpoint_outage(self, seconds: float) -> tuple[float, int]:
        """The LLM server stopped for ``seconds`` and started again on its port (its counters start over)."""
        self.server.stop()
        time.sleep(seconds)
        self.server = self._server()
        return time.monotonic(), 0

    def _outage(self, service, seconds: float) -> tuple[float, int]:
        service.stop()
        time.sleep(seconds)
        service.start()
        return time.monotonic(), self.requests_seen()

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.worker.stop()
        with contextlib.suppress(Exception):
            self.server.stop()
        self.redis.close()
        self.database.close()

