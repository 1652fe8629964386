"""Recovery: work whose worker died or whose task was lost resumes by itself, once; and the workers' heartbeats.

Every worker sends ``work_recover_task`` when it starts and then every settings.WORK_RECOVERY_SECONDS from a
thread of its main process, so no separate scheduler needs deploying; recoveries from several workers overlap
harmlessly, since each claims what it sends again (a row lock or a lease) and every task is idempotent. A
recovery sends again:

- item imports still pending that no worker is running (``annotation.services.item_imports_recover``);
- study analyses queued but never sent, or whose run's lease expired (``study_analyses_recover``);
- study analyses' alternative ground truths asked for but never sent, or sent long ago and still unanswered
  (``study_alternatives_recover``);
- running audits no worker has held a lease on for settings.WORK_STALLED_SECONDS, e.g. after a transient
  fault stopped their work (``auditapp.engine.recovery.audits_resume_stalled``);
- audits still queued that long after their launch, whose preparation was never sent (the broker was away
  at launch) or was lost (``auditapp.engine.recovery.audits_prepare_unsent``);
- each paradigm's own background work that is stuck (``Paradigm.recover``: a classification audit's second-pass
  extractions queued whose task was lost, or running whose lease expired).

The same thread writes the worker's heartbeat before each recovery it sends (and the worker writes one when it is
ready), from the worker's main process: researchers' pages say when no worker has been seen for a while
(``auditapp.worker_status``).
"""
from __future__ import annotations

import logging
import socket
import threading
import time
from datetime import timedelta

from celery import shared_task
from celery.signals import worker_ready
from django.conf import settings
from django.db import connections

from annotation.services import item_imports_recover
from annotation.study_alternatives import study_alternatives_recover
from annotation.study_analysis import study_analyses_recover
from auditapp.engine import registry
from auditapp.engine.recovery import audits_prepare_unsent, audits_resume_stalled
from auditapp.worker_status import worker_heartbeat

logger = logging.getLogger(__name__)


@shared_task(name="tasks.work_recover")
def work_recover_task(at_start: bool = False, ready_at: float | None = None) -> dict[str, list[int]]:
    """Send again what is stuck (module docstring). ``at_start``: a worker has just started (at ``ready_at``, a
    Unix time), so a pending import no worker holds is sent at once rather than after WORK_STALLED_SECONDS, if it
    was queued before then: one queued since is in the broker for the new worker, and sending it again would only
    run it twice."""
    stalled = timedelta(seconds=settings.WORK_STALLED_SECONDS)
    if at_start:
        imports_after = timedelta(seconds=max(0.0, time.time() - ready_at)) if ready_at else timedelta(0)
    else:
        imports_after = stalled
    return {"imports": item_imports_recover(resend_after=imports_after),
            "analyses": study_analyses_recover(),
            "alternatives": study_alternatives_recover(),
            "audits": audits_resume_stalled(stalled_after=stalled),
            "audits_prepared": audits_prepare_unsent(stalled_after=stalled),
            **{f"{paradigm.name}_work": paradigm.recover(stalled_after=stalled) for paradigm in registry.every()}}


def _beat(hostname: str, *, starting: bool = False) -> None:
    """Write this worker's heartbeat (auditapp/worker_status.py); a database outage is logged, never fatal. The
    connection is closed after each (one write every WORK_RECOVERY_SECONDS): a pool child forked later must not
    inherit the main process's connection."""
    try:
        worker_heartbeat(hostname=hostname, starting=starting)
    except Exception as error:  # noqa: BLE001 - the database is away: this thread must live to try again
        logger.warning("Could not write the worker's heartbeat (%s)", error)
    finally:
        connections.close_all()


def _send_recoveries(interval: float, hostname: str) -> None:
    while True:
        time.sleep(interval)
        _beat(hostname)
        try:
            # A recovery still queued when the next is due is dropped: a backlog never piles them up.
            work_recover_task.apply_async(expires=interval)
        except Exception as error:  # noqa: BLE001 - the broker is away: this thread must live to try again
            logger.warning("Could not queue the work recovery (%s); trying again in %.0f s", error, interval)


@worker_ready.connect
def _recover_from_now_on(sender=None, **kwargs) -> None:
    hostname = getattr(sender, "hostname", None) or socket.gethostname()
    _beat(hostname, starting=True)
    work_recover_task.delay(at_start=True, ready_at=time.time())
    threading.Thread(target=_send_recoveries, args=(settings.WORK_RECOVERY_SECONDS, hostname),
                     name="work-recovery", daemon=True).start()
