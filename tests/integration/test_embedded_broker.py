"""The embedded broker (auditapp/embedded_broker.py) under real processes: producers publishing (three processes,
and a thread of the worker itself) while a Celery worker consumes, the machine's CPUs kept busy meanwhile, and a
worker killed with SIGKILL mid-stream.

kombu's own file-system transport crashed its worker here within seconds (a message file read before it was
written: ``Unrecoverable error: JSONDecodeError``); this one must lose nothing and deliver nothing twice unless a
worker died holding it (at least once).
"""
from __future__ import annotations

import multiprocessing
import os
import re
import signal
import sys
import time
from collections import Counter
from pathlib import Path

import pytest

from tests.integration.support import REPO, WatchedProcess, wait_for

pytestmark = [pytest.mark.integration, pytest.mark.slow, pytest.mark.embedded]

PRODUCERS = 4  # three processes and the worker's own thread
PER_PRODUCER = 750
PAUSE = 0.04  # 4 producers × 25 messages/s for 30 s (kombu's own transport crashed within seconds)


def _burn(stop_at: float) -> None:
    while time.monotonic() < stop_at:
        sum(i * i for i in range(10_000))


def _environment(tmp_path: Path) -> dict[str, str]:
    return {**os.environ, "BROKER_FOLDER": str(tmp_path / "broker"), "RECEIVED_FILE": str(tmp_path / "received"),
            "PYTHONPATH": str(REPO), "WORKER_PRODUCES": f"{(PRODUCERS - 1) * PER_PRODUCER} {PER_PRODUCER} {PAUSE}"}


def _worker(env: dict[str, str]) -> WatchedProcess:
    worker = WatchedProcess([sys.executable, "-m", "celery", "-A", "tests.integration.broker_stress_app", "worker",
                             "--loglevel=INFO", "--concurrency=2"], env=env)
    worker.wait_for_output(r"celery@\S+ ready", timeout=60)
    return worker


def _producers(env: dict[str, str], per_producer: int = PER_PRODUCER) -> list[WatchedProcess]:
    return [WatchedProcess([sys.executable, "-m", "tests.integration.broker_stress_app", str(i * per_producer),
                            str(per_producer), str(PAUSE)], env=env) for i in range(PRODUCERS - 1)]


def _received(tmp_path: Path) -> Counter:
    path = tmp_path / "received"
    return Counter(int(line) for line in path.read_text().split()) if path.exists() else Counter()


def _wait_all(tmp_path: Path, worker: WatchedProcess, expected: int) -> Counter:
    def complete():
        assert worker.process.poll() is None, f"the worker died:\n{worker.output[-3000:]}"
        return len(_received(tmp_path)) == expected

    wait_for(complete, timeout=120, interval=0.5, what="every message to be received")
    return _received(tmp_path)


def test_producers_and_a_worker_under_cpu_load_lose_nothing_and_duplicate_nothing(tmp_path):
    env = _environment(tmp_path)
    worker = _worker(env)
    load = [multiprocessing.Process(target=_burn, args=(time.monotonic() + 40,)) for _ in range(os.cpu_count() or 2)]
    for process in load:
        process.start()
    try:
        producers = _producers(env)
        for producer in producers:
            assert producer.process.wait(timeout=180) == 0, producer.output
        received = _wait_all(tmp_path, worker, PRODUCERS * PER_PRODUCER)
    finally:
        for process in load:
            process.terminate()
        worker.stop()
    assert set(received) == set(range(PRODUCERS * PER_PRODUCER)), "every message delivered"
    assert max(received.values()) == 1, "no message delivered twice"
    assert "Unrecoverable error" not in worker.output and "could not read" not in worker.output
    assert not any((tmp_path / "broker" / "queue").iterdir()), "the queue is empty"


def test_a_killed_workers_messages_are_delivered_by_the_next_worker(tmp_path):
    # The first worker's tasks take long enough for it to be holding messages when it is killed; no producing thread
    # in the workers (a killed worker's would stop half-way).
    env = {**_environment(tmp_path), "WORKER_PRODUCES": ""}
    per_producer = 200
    first = _worker({**env, "RECORD_SECONDS": "0.5"})
    producers = _producers(env, per_producer)
    wait_for(lambda: len(_received(tmp_path)) > 10, timeout=60, what="the first worker to be busy")
    os.killpg(first.process.pid, signal.SIGKILL)
    first.process.wait(10)
    held = list((tmp_path / "broker" / "claimed").rglob("*.msg"))
    assert held, "the killed worker was holding messages"
    second = _worker(env)
    try:
        for producer in producers:
            assert producer.process.wait(timeout=180) == 0, producer.output
        received = _wait_all(tmp_path, second, (PRODUCERS - 1) * per_producer)
    finally:
        second.stop()
    assert set(received) == set(range((PRODUCERS - 1) * per_producer)), "nothing lost with the killed worker"
    twice = [number for number, times in received.items() if times > 1]
    assert len(twice) <= len(held), f"only what the killed worker held may run twice (at least once): {twice}"
    assert re.search(rf"put back {len(held)} message\(s\) taken by a worker that stopped", second.output)


def test_an_unreadable_message_is_kept_aside_and_the_worker_goes_on(tmp_path):
    env = _environment(tmp_path)
    queue = tmp_path / "broker" / "queue"
    queue.mkdir(parents=True)
    (queue / f"{0:020d}_{'0' * 32}.celery.msg").write_bytes(b"")
    (queue / f"{1:020d}_{'1' * 32}.celery.msg").write_bytes(b"{not json")
    worker = _worker({**env, "WORKER_PRODUCES": ""})
    try:
        producer = WatchedProcess([sys.executable, "-m", "tests.integration.broker_stress_app", "7", "1", "0"], env=env)
        assert producer.process.wait(timeout=60) == 0, producer.output
        wait_for(lambda: _received(tmp_path) == Counter({7: 1}), timeout=30, what="the good message")
    finally:
        worker.stop()
    assert worker.count("could not read message") == 2
    assert sorted(p.name for p in (tmp_path / "broker" / "unreadable").iterdir()) == [
        f"{0:020d}_{'0' * 32}.celery.msg", f"{1:020d}_{'1' * 32}.celery.msg"]
