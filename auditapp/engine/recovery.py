"""Audits the workers pick up again by themselves: running audits no worker holds (their worker died, a
transient fault stopped their work), audits whose preparation was never sent, and the note a running audit
shows while it waits for a service."""
from __future__ import annotations

import logging
from datetime import timedelta

from django.core.cache import cache
from django.db import connection, transaction
from django.db.models import Exists, OuterRef
from django.utils import timezone

from auditapp.engine.errors import WAITING_NOTE
from auditapp.engine.sending import PREPARE, enqueue_work
from auditapp.models import (
    Audit,
    AuditChunk,
)
from tasks.sending import task_named

logger = logging.getLogger(__name__)


def audit_wait_for_service(*, audit_id: int, error: BaseException) -> None:
    """A running audit met a transient fault (``TRANSIENT_ERRORS``): it stays running with a note saying so while its
    work task waits for the service (or, the task lost, the workers' recovery queues its work again once no lease
    has been held for a while). The note goes at the next renewal of a lease."""
    Audit.objects.filter(pk=audit_id, status=Audit.Status.RUNNING).update(status_reason=(
        f"{WAITING_NOTE} {timezone.now():%Y-%m-%d %H:%M:%S %Z}: {type(error).__name__}: {error}; the audit "
        "resumes by itself when the service is back"))


def audits_resume_stalled(*, stalled_after: timedelta) -> list[int]:
    """Queue work again for the running audits no worker has held a lease on for ``stalled_after``, and whose
    work was not sent within settings.WORK_QUEUED_GRACE_SECONDS (their worker died, a transient fault stopped
    their work, or the next task could not be sent). Sending marks the audit (``work_sent_marker``) inside
    this transaction, so a second recovery at the same time or soon after skips it. Returns the audit ids."""
    now = timezone.now()
    live = AuditChunk.objects.filter(audit=OuterRef("pk"), leased_until__gte=now - stalled_after)
    with transaction.atomic():
        stalled = Audit.objects.filter(status=Audit.Status.RUNNING, started_at__lt=now - stalled_after).exclude(
            Exists(live))
        if connection.features.has_select_for_update_skip_locked:
            stalled = stalled.select_for_update(skip_locked=True)
        audits = list(stalled.only("id", "parallel_tasks"))
        for audit in audits:
            logger.warning("Audit %s: no worker has worked on it since %s; queueing its work again", audit.id,
                           (now - stalled_after).isoformat())
            enqueue_work(audit.id, audit.parallel_tasks)
    return [audit.id for audit in audits]


def audits_prepare_unsent(*, stalled_after: timedelta) -> list[int]:
    """Send the preparation again for audits still queued ``stalled_after`` after their launch (its task could
    not be sent, or was lost). A second preparation is harmless (it finds the audit no longer queued); a
    cache entry sends at most one per audit per ``stalled_after``, so a long queue is not flooded. Returns
    the audit ids."""
    queued = Audit.objects.filter(status=Audit.Status.QUEUED, created_at__lt=timezone.now() - stalled_after)
    sent = [audit_id for audit_id in queued.values_list("id", flat=True)
            if cache.add(f"audit-prepare-resent:{audit_id}", 1, timeout=stalled_after.total_seconds())]
    for audit_id in sent:
        logger.warning("Audit %s: still queued after %s; sending its preparation again", audit_id, stalled_after)
        task_named(PREPARE).delay(audit_id)
    return sent
