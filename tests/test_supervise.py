"""bin/lib/supervise.py with real processes: a child that exits is started again with a line and a backoff, a
program that cannot be started is tried again without the supervisor failing, what a killed child left in its group
is killed before it starts again, and SIGTERM stops everything."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.slow


def supervise(*commands: str, tmp_path: Path) -> subprocess.Popen:
    log = (tmp_path / "supervise.log").open("w")
    return subprocess.Popen([sys.executable, str(REPO / "bin" / "lib" / "supervise.py"), *commands],
                            stdout=log, stderr=subprocess.STDOUT, start_new_session=True, text=True)


def wait_for_text(path: Path, text: str, timeout: float = 20) -> str:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        content = path.read_text()
        if text in content:
            return content
        time.sleep(0.1)
    raise AssertionError(f"{text!r} not in:\n{path.read_text()}")


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z"


def test_an_exiting_child_is_started_again_and_a_missing_program_does_not_stop_the_others(tmp_path):
    marker = tmp_path / "starts"
    supervisor = supervise(f"short=sh -c 'echo x >> {marker}; exit 3'", "missing=/no/such/program",
                           tmp_path=tmp_path)
    try:
        log = wait_for_text(tmp_path / "supervise.log", "the short stopped (exit status 3); starting it again in 2 s")
        assert "the short stopped (exit status 3); starting it again in 1 s" in log
        assert "the missing could not be started" in log
        assert supervisor.poll() is None
        assert len(marker.read_text().split()) >= 2
    finally:
        supervisor.send_signal(signal.SIGTERM)
        assert supervisor.wait(30) == 0


def test_a_killed_childs_group_is_cleared_before_it_starts_again_and_sigterm_stops_all(tmp_path):
    pids = tmp_path / "pids"
    # The child starts a grandchild in its own group (as Celery's pool), then waits.
    command = f"sh -c 'sleep 300 & echo $! >> {pids}; echo $$ >> {pids}; wait'"
    supervisor = supervise(f"worker={command}", tmp_path=tmp_path)
    try:
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and (not pids.exists() or len(pids.read_text().split()) < 2):
            time.sleep(0.1)
        grandchild, child = map(int, pids.read_text().split()[:2])
        os.kill(child, signal.SIGKILL)
        wait_for_text(tmp_path / "supervise.log", "the worker stopped (killed by SIGKILL)")
        wait_for_text(tmp_path / "supervise.log", "starting the worker again")
        time.sleep(0.5)
        assert not alive(grandchild), "the killed child's grandchild is killed before the restart"
        while len(pids.read_text().split()) < 4:
            time.sleep(0.1)
        new_grandchild, new_child = map(int, pids.read_text().split()[2:4])
    finally:
        supervisor.send_signal(signal.SIGTERM)
        assert supervisor.wait(30) == 0
    assert not alive(new_child) and not alive(new_grandchild), "SIGTERM stopped the whole group"
