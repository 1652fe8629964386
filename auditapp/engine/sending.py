"""Sending an audit's tasks: its preparation, its work (marked as sent, so the recovery does not send it twice)
and its analysis. Tasks are sent by name (:func:`tasks.sending.task_named`), so no module of the engine imports
a task module, which imports the engine. They are sent after the commit with robust=True: a broker that is away
is logged, never a 500 after the audit was stored; the periodic recovery (:mod:`auditapp.engine.recovery`,
``tasks.recovery``) sends what was not sent."""
from __future__ import annotations

import logging
from datetime import timedelta

from django.conf import settings
from django.db import transaction
from django.db.models import F
from django.utils import timezone
from kombu.exceptions import OperationalError as BrokerError

from auditapp.models import AuditChunk
from tasks.sending import task_named

logger = logging.getLogger(__name__)

# The names of the audit tasks (tasks/audits.py), each taking an audit id.
PREPARE = "auditapp.audit_prepare"
WORK = "auditapp.audit_work"
ANALYSE = "auditapp.audit_analyse"


def enqueue_prepare(audit_id: int) -> None:
    transaction.on_commit(lambda: task_named(PREPARE).delay(audit_id), robust=True)


def work_sent_marker(audit_id: int) -> int:
    """A released chunk whose lease covers the time sent work may wait in a busy queue
    (settings.WORK_QUEUED_GRACE_SECONDS), so the recovery does not take work that is only queued for lost
    work and start a second chain of tasks."""
    now = timezone.now()
    return AuditChunk.objects.create(audit_id=audit_id, released_at=now, leased_until=now + timedelta(
        seconds=settings.WORK_QUEUED_GRACE_SECONDS)).pk


def audit_work_send(audit_id: int, n_tasks: int = 1, *, marker: int | None = None) -> bool:
    """Send ``n_tasks`` work tasks for the audit, marked as sent; False when the broker is away (the mark is
    taken back, so the recovery sends the work once the broker is back)."""
    marker = marker or work_sent_marker(audit_id)
    try:
        for _ in range(max(1, n_tasks)):
            task_named(WORK).delay(audit_id)
    except BrokerError as error:
        logger.warning("Audit %s: could not queue its work (%s); the recovery will", audit_id, error)
        AuditChunk.objects.filter(pk=marker).update(leased_until=F("released_at"))
        return False
    return True


def enqueue_work(audit_id: int, n_tasks: int) -> None:
    marker = work_sent_marker(audit_id)
    transaction.on_commit(lambda: audit_work_send(audit_id, n_tasks, marker=marker), robust=True)


def enqueue_analysis(audit_id: int) -> None:
    transaction.on_commit(lambda: task_named(ANALYSE).delay(audit_id), robust=True)
