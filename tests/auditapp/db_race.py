"""Playing a race between two database connections in a test: each side in a thread with its own connection, the
test waiting until one side is blocked on the other's row lock (PostgreSQL; SQLite has no row locks)."""
from __future__ import annotations

import threading
import time

import pytest
from django.db import connection, connections

postgresql_only = pytest.mark.skipif(connection.vendor != "postgresql",
                                     reason="row locks between two connections are PostgreSQL's")


def in_thread(work) -> tuple[threading.Thread, list]:
    """Run ``work`` on its own database connection; its exception, if any, is kept for the test to raise."""
    errors: list = []

    def run():
        try:
            work()
        except BaseException as error:  # noqa: BLE001 - handed to the test
            errors.append(error)
        finally:
            connections.close_all()

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread, errors


def wait_until_blocked_on_a_lock(timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    with connection.cursor() as cursor:
        while time.monotonic() < deadline:
            cursor.execute("SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
                           "AND wait_event_type = 'Lock'")
            if cursor.fetchone()[0]:
                return
            time.sleep(0.02)
    raise AssertionError("no connection came to wait on a lock")


def finish(*threads) -> None:
    for thread, errors in threads:
        thread.join(30)
        assert not thread.is_alive()
        if errors:
            raise errors[0]
