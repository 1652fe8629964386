"""Run bin/run's processes (the web server and the Celery worker) and keep them running.

Usage: supervise.py NAME=COMMAND [NAME=COMMAND ...]   (each COMMAND is split like a shell line, without a shell)

Each process is started in its own process group. One that exits is started again after a backoff (1 s, doubling
up to 60 s; back to 1 s once it has run for 5 minutes), with a line saying which one stopped and how, once what is
left of its group is killed (a killed Celery worker's pool processes); the others go on, so a dying worker never
takes the web server with it. One that cannot be started (a missing program) is tried again the same way. SIGINT
(Ctrl-C) or SIGTERM stops every process group (SIGTERM, then SIGKILL after 20 s) and exits. Standard library only: it runs before anything is imported.
"""
from __future__ import annotations

import contextlib
import os
import shlex
import signal
import subprocess
import sys
import time
from dataclasses import dataclass

FIRST_BACKOFF = 1.0
MAX_BACKOFF = 60.0
HEALTHY_AFTER = 300.0
STOP_GRACE = 20.0


@dataclass
class Supervised:
    name: str
    argv: list[str]
    process: subprocess.Popen | None = None
    started_at: float = 0.0
    backoff: float = FIRST_BACKOFF
    restart_at: float | None = None

    def start(self) -> bool:
        """Start the process; False (with a line saying why) when it cannot be started, to be tried again."""
        self.kill_leftovers()
        self.restart_at = None
        self.started_at = time.monotonic()
        try:
            self.process = subprocess.Popen(self.argv, start_new_session=True)
        except OSError as error:
            self.process = None
            say(f"the {self.name} could not be started ({error})")
            return False
        return True

    def kill_leftovers(self) -> None:
        """Kill what is left of the previous run's process group (a killed Celery worker's pool processes)."""
        if self.process is not None and self.process.poll() is not None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.process.pid, signal.SIGKILL)

    def signal_group(self, signum: int) -> None:
        if self.process is not None and self.process.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.process.pid, signum)


def say(message: str) -> None:
    print(f"{time.strftime('%Y-%m-%d %H:%M:%S')} supervise: {message}", file=sys.stderr, flush=True)


def exit_description(code: int) -> str:
    if code < 0:
        try:
            return f"killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"killed by signal {-code}"
    return f"exit status {code}"


def supervise(processes: list[Supervised]) -> int:
    stopping: list[int] = []

    def on_signal(signum, frame) -> None:
        stopping.append(signum)

    signal.signal(signal.SIGINT, on_signal)
    signal.signal(signal.SIGTERM, on_signal)
    try:
        for supervised in processes:
            if not supervised.start():
                schedule_restart(supervised, time.monotonic())
        while not stopping:
            now = time.monotonic()
            for supervised in processes:
                if supervised.restart_at is not None:
                    if now >= supervised.restart_at:
                        say(f"starting the {supervised.name} again")
                        if not supervised.start():
                            schedule_restart(supervised, now)
                    continue
                code = supervised.process.poll()
                if code is None:
                    continue
                schedule_restart(supervised, now)
                say(f"the {supervised.name} stopped ({exit_description(code)}); starting it again in "
                    f"{supervised.restart_at - now:.0f} s")
            time.sleep(0.2)
    finally:
        stop_all(processes)
    return 0


def schedule_restart(supervised: Supervised, now: float) -> None:
    """Start it again after its backoff (1 s again once it had run for HEALTHY_AFTER), doubling the next one."""
    if now - supervised.started_at >= HEALTHY_AFTER:
        supervised.backoff = FIRST_BACKOFF
    supervised.restart_at = now + supervised.backoff
    supervised.backoff = min(MAX_BACKOFF, supervised.backoff * 2)


def stop_all(processes: list[Supervised]) -> None:
    """SIGTERM to every process group, SIGKILL to those still there after STOP_GRACE; also on the supervisor's own
    failure, so that no process is left running without it."""
    say("stopping")
    for supervised in processes:
        supervised.signal_group(signal.SIGTERM)
    deadline = time.monotonic() + STOP_GRACE
    for supervised in processes:
        if supervised.process is None:
            continue
        try:
            supervised.process.wait(max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            say(f"the {supervised.name} did not stop within {STOP_GRACE:.0f} s: killing it")
            supervised.signal_group(signal.SIGKILL)
            supervised.process.wait()
        supervised.kill_leftovers()


def main(arguments: list[str]) -> int:
    processes = []
    for argument in arguments:
        name, separator, command = argument.partition("=")
        if not separator or not command:
            print(__doc__, file=sys.stderr)
            return 2
        processes.append(Supervised(name=name, argv=shlex.split(command)))
    if not processes:
        print(__doc__, file=sys.stderr)
        return 2
    return supervise(processes)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
