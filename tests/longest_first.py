"""Longest tests first: each pass runs its tests in the order of their measured durations, longest first, so that
the two pytest-xdist processes of a pass end together.

With ``--dist worksteal`` a process that runs out of tests takes half of what the other has not started, but a test
that has started is not shared: a 3-minute test that starts last (tests/test_upgrades.py sorts last by name) keeps one
process busy while the other idles. Started longest first, the last tests to start are the short ones (longest
processing time first, the classic bound for scheduling on identical machines). Only the order changes, never what
runs; a test's duration is the sum of its setup, call and teardown in the last stored run of its pass
(``tests/durations/<pass>.json``), and a test not measured yet counts as :data:`UNMEASURED_SLOW` seconds when marked
slow, 0 otherwise. Refresh the files with ``bin/test --store-durations`` on a quiet machine; a stale file only costs
time.
"""
from __future__ import annotations

import json
import os
from collections import defaultdict
from pathlib import Path

import pytest

DURATIONS = Path(__file__).parent / "durations"
UNMEASURED_SLOW = 30.0
"""Seconds assumed for a slow test without a measurement: most integration and browser tests take 20 to 90 s."""
KEPT_FROM = 1.0
"""Tests shorter than this (seconds) are not stored: their order does not change when a pass ends."""


def durations_file() -> Path:
    pass_name = "postgres" if os.environ.get("AUDITAPP_DATABASE_PASS") == "1" else "sqlite"
    return DURATIONS / f"{pass_name}.json"


def stored_durations(path: Path) -> dict[str, float]:
    try:
        return json.loads(path.read_text())
    except FileNotFoundError:
        return {}


def pytest_addoption(parser) -> None:
    parser.addoption("--store-durations", action="store_true",
                     help="write each test's duration (of this pass) to tests/durations/ for the longest-first order")


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config, items) -> None:
    measured = stored_durations(durations_file())

    def expected(item) -> float:
        return measured.get(item.nodeid, UNMEASURED_SLOW if item.get_closest_marker("slow") else 0.0)

    items.sort(key=expected, reverse=True)


class DurationRecorder:
    """Adds up each test's phases as the reports reach the controlling process (under xdist, from its workers), and
    at the end updates the stored durations of the tests that ran (a partial run keeps the others')."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = defaultdict(float)

    def pytest_runtest_logreport(self, report) -> None:
        self.seconds[report.nodeid] += report.duration

    def pytest_sessionfinish(self, session) -> None:
        path = durations_file()
        kept = stored_durations(path)
        for nodeid, seconds in self.seconds.items():
            kept.pop(nodeid, None)
            if seconds >= KEPT_FROM:
                kept[nodeid] = round(seconds, 1)
        path.parent.mkdir(exist_ok=True)
        path.write_text(json.dumps(kept, indent=0, sort_keys=True) + "\n")


def pytest_configure(config) -> None:
    if config.getoption("store_durations") and not hasattr(config, "workerinput"):
        config.pluginmanager.register(DurationRecorder(), "auditapp-duration-recorder")
