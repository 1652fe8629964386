"""A Celery app with one task on the embedded broker, for stress-testing the transport with real processes.

Environment: ``BROKER_FOLDER`` (the broker's folders), ``RECEIVED_FILE`` (each run appends its message's number as
one line), ``BROKER_TRANSPORT`` (``auditapp.embedded_broker:Transport``, or kombu's ``filesystem`` to compare),
``WORKER_PRODUCES`` ("first count pause": a thread of the worker's main process sends these once it is ready, as
the app's recovery thread does; publishing from a thread while the same process reads is where kombu's transport
read half-written messages), ``RECORD_SECONDS`` (how long each task works).
"""
from __future__ import annotations

import os
from pathlib import Path

from celery import Celery
from celery.signals import worker_ready

folder = Path(os.environ["BROKER_FOLDER"])
for name in ("queue", "control"):
    (folder / name).mkdir(parents=True, exist_ok=True)

app = Celery("broker_stress")
app.conf.update(
    broker_url="filesystem://",
    broker_transport=os.environ.get("BROKER_TRANSPORT", "auditapp.embedded_broker:Transport"),
    broker_transport_options={"data_folder_in": str(folder / "queue"), "data_folder_out": str(folder / "queue"),
                              "control_folder": str(folder / "control"), "store_processed": False,
                              "polling_interval": 0.1},
    task_acks_late=True, task_reject_on_worker_lost=True, worker_prefetch_multiplier=1,
    task_ignore_result=True, broker_connection_retry_on_startup=True,
)


@app.task(name="stress.record")
def record(number: int) -> None:
    """Append the message's number to the received file (one write of one line: atomic with O_APPEND), after
    ``RECORD_SECONDS`` of work (so a worker killed mid-stream is holding messages)."""
    import time

    time.sleep(float(os.environ.get("RECORD_SECONDS", "0")))
    descriptor = os.open(os.environ["RECEIVED_FILE"], os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(descriptor, f"{number}\n".encode())
    finally:
        os.close(descriptor)


def produce(first: int, count: int, pause: float) -> None:
    """Send ``count`` messages numbered from ``first``, ``pause`` seconds apart."""
    import time

    for number in range(first, first + count):
        record.delay(number)
        time.sleep(pause)


@worker_ready.connect
def _produce_from_the_worker(sender=None, **kwargs) -> None:
    import threading

    if os.environ.get("WORKER_PRODUCES"):
        first, count, pause = os.environ["WORKER_PRODUCES"].split()
        threading.Thread(target=produce, args=(int(first), int(count), float(pause)), daemon=True).start()


if __name__ == "__main__":
    import sys

    produce(int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3]))
