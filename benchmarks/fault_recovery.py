"""Benchmark: how soon a running audit sends again after each fault, on a deployment of its own
(tests/integration/fault_rig.py: a throwaway PostgreSQL and Redis, the test LLM server, one Celery worker, all with
the settings' defaults unless given).

For each fault, in the middle of an audit of 600 requests (latency ``--latency``, max concurrency 4, attempt
time-out 120 s), prints the seconds from the end of the fault to the first request the LLM server receives after it:

- worker kill -9: every process of the worker killed, another started at once (from the kill);
- Redis outage: the broker and the endpoint limits' Redis stopped for ``--outage`` seconds (from its restart);
- PostgreSQL outage: the database stopped for ``--outage`` seconds (from its restart);
- endpoint outage: the LLM server stopped for ``--outage`` seconds (from its restart).

Each audit must then complete with one reply per request; a worker that exits is started again, as bin/run and
Docker's restart policy do, and the line says so. Needs Debian's postgresql and redis-server packages
(the servers are started here, on free ports, and removed afterwards)::

    .venv/bin/python benchmarks/fault_recovery.py
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from tests.integration.fault_rig import FaultRig  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--outage", type=float, default=20.0, help="seconds each service is away (default: 20)")
    parser.add_argument("--latency", type=float, default=0.2, help="the LLM server's reply latency (default: 0.2)")
    parser.add_argument("--faults", default="kill,redis,postgres,endpoint",
                        help="which faults, in order (default: kill,redis,postgres,endpoint)")
    args = parser.parse_args()
    rig = FaultRig(latency=args.latency)
    faults = {"kill": ("worker kill -9", rig.kill_worker),
              "redis": (f"Redis outage ({args.outage:.0f} s)", lambda: rig.redis_outage(args.outage)),
              "postgres": (f"PostgreSQL outage ({args.outage:.0f} s)", lambda: rig.database_outage(args.outage)),
              "endpoint": (f"endpoint outage ({args.outage:.0f} s)", lambda: rig.endpoint_outage(args.outage))}
    try:
        for name in args.faults.split(","):
            label, inject = faults[name]
            restarts = rig.worker_restarts
            audit_id = rig.launch()
            rig.wait_answered(audit_id, 60)
            back_at, seen = inject()
            resumed = rig.resume_seconds(back_at, seen)
            status = rig.wait_completed(audit_id)
            whole = "one reply per request" if rig.one_reply_per_key(audit_id) else "REPLIES MISSING OR DOUBLED"
            restarted = "; the worker exited, and was started again" if rig.worker_restarts > restarts else ""
            print(f"{label}: sends again {resumed:.1f} s after it ended; audit {status}, {whole}{restarted}",
                  flush=True)
    finally:
        rig.close()


if __name__ == "__main__":
    main()
