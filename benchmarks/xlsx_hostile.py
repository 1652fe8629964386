"""Benchmark: what a hostile XLSX upload costs the web process and the worker.

Builds two workbooks with ``tests.xlsx_files`` and reads each, ``--runs`` times, in a fresh process as an item
upload is read: first the check made while the uploader waits (``annotation.item_files.precheck_item_file``), then
the worker's validation (``parse_item_file``, which annotator and corpus uploads share through
``read_table_records``). It prints each step's wall and CPU time, the process's peak resident size
(``ru_maxrss``, the workbook's bytes and the interpreter included) and the answer:

- ``probe``: the file of the report, no ``<dimension>`` and 50 million ``<row/>`` (300 MB of XML in ~300 KB),
  which took 88.6 s and 4.5 GB in a gunicorn worker, then 125 s in the Celery worker;
- ``lying``: a ``<dimension>`` of A1:B2 over ``--rows`` numbered empty rows (inflating 16 times, so not refused as
  a zip bomb), which the worker reads until the row limit.

Targets: the web process's check under 0.5 s of CPU for both; every run's peak under 150 MB; the ``lying`` file read
in bounded time (under 20 s on the 2-core reference machine) and refused at the row limit. Exit status 1 otherwise.

    .venv/bin/python benchmarks/xlsx_hostile.py [--runs 3] [--rows 1100000]
"""
from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

TARGET_CHECK_CPU_S = 0.5
TARGET_PEAK_MB = 150
TARGET_LYING_READ_S = 20


def read_once(path: str) -> None:
    """In this (fresh) process: the upload's check, then the worker's read; prints one JSON line."""
    import openpyxl.reader.excel  # noqa: F401 - imported once by a web or worker process, not per upload

    from annotation.item_files import ItemFileError, parse_item_file, precheck_item_file

    content = Path(path).read_bytes()
    result = {}
    for step, read in (("check", precheck_item_file), ("read", parse_item_file)):
        wall, cpu = time.perf_counter(), time.process_time()
        try:
            read(content, file_format="xlsx")
            answer = "accepted"
        except ItemFileError as error:
            answer = str(error.problems[0])
        result[step] = {"wall_s": time.perf_counter() - wall, "cpu_s": time.process_time() - cpu, "answer": answer}
    result["peak_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps(result))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--rows", type=int, default=1_100_000, help="empty rows of the 'lying' file")
    parser.add_argument("--read-once", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.read_once:
        read_once(args.read_once)
        return 0

    from tests.xlsx_files import empty_rows_xlsx

    files = {"probe": lambda: empty_rows_xlsx(50_000_000),
             "lying": lambda: empty_rows_xlsx(args.rows, numbered=True, dimension="A1:B2")}
    failed = []
    with tempfile.TemporaryDirectory() as directory:
        for name, build in files.items():
            path = Path(directory) / f"{name}.xlsx"
            path.write_bytes(build())
            print(f"{name}: {path.stat().st_size:,} bytes")
            for run in range(1, args.runs + 1):
                out = subprocess.run([sys.executable, __file__, "--read-once", str(path)], check=True,
                                     capture_output=True, text=True).stdout
                result = json.loads(out.splitlines()[-1])
                check, read = result["check"], result["read"]
                print(f"  run {run}: check {check['wall_s']:.3f} s ({check['cpu_s']:.3f} s CPU), "
                      f"read {read['wall_s']:.3f} s ({read['cpu_s']:.3f} s CPU), peak {result['peak_mb']:.0f} MB")
                if run == 1:
                    print(f"    check: {check['answer'][:160]}\n    read:  {read['answer'][:160]}")
                if check["cpu_s"] > TARGET_CHECK_CPU_S:
                    failed.append(f"{name} run {run}: the upload's check took {check['cpu_s']:.2f} s of CPU")
                if result["peak_mb"] > TARGET_PEAK_MB:
                    failed.append(f"{name} run {run}: peak {result['peak_mb']:.0f} MB")
                if name == "lying" and (read["wall_s"] > TARGET_LYING_READ_S or "at most" not in read["answer"]):
                    failed.append(f"{name} run {run}: read in {read['wall_s']:.1f} s: {read['answer'][:80]}")
    for failure in failed:
        print(f"TARGET MISSED: {failure}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
