"""A researcher's control of an audit (pause, resume, cancel, retry failed), and failing an audit that cannot go
on, with its reason."""
from __future__ import annotations

from django.db import transaction
from django.utils import timezone

from auditapp.engine.conversations import turns_unblock
from auditapp.engine.endpoints import request_identity
from auditapp.engine.errors import AuditStateError
from auditapp.engine.planning import request_builder
from auditapp.engine.sending import enqueue_prepare, enqueue_work
from auditapp.models import (
    Audit,
    AuditJudgment,
    AuditRequest,
    LLMEndpoint,
)


def audit_fail(*, audit_id: int, reason: str, status: str = Audit.Status.RUNNING) -> None:
    """An audit in ``status`` that cannot go on: failed, with the reason (resume continues it)."""
    Audit.objects.filter(pk=audit_id, status=status).update(
        status=Audit.Status.FAILED, status_reason=reason, finished_at=timezone.now())


def audit_pause(*, audit: Audit) -> None:
    if not Audit.objects.filter(pk=audit.pk, status__in=[Audit.Status.QUEUED, Audit.Status.RUNNING]).update(
            status=Audit.Status.PAUSED, status_reason="paused by a researcher"):
        raise AuditStateError(f"a {audit.get_status_display().lower()} audit cannot be paused")


@transaction.atomic
def audit_resume(*, audit: Audit) -> None:
    """Continue a paused, stopped or failed audit: only the requests still pending are sent (after an error-budget
    stop, the failed ones too)."""
    audit = Audit.objects.select_for_update().get(pk=audit.pk)
    if audit.status not in (Audit.Status.PAUSED, Audit.Status.STOPPED, Audit.Status.FAILED):
        raise AuditStateError(f"a {audit.get_status_display().lower()} audit cannot be resumed")
    if audit.n_requests == 0:
        # A wait for an unreachable endpoint starts again: its deadline counts from the next failure.
        audit.status, audit.status_reason, audit.finished_at, audit.preparation_waiting = (
            Audit.Status.QUEUED, "", None, {})
        audit.save(update_fields=["status", "status_reason", "finished_at", "preparation_waiting"])
        enqueue_prepare(audit.id)
        return
    _refuse_stale_keys(audit)
    if audit.status == Audit.Status.STOPPED:
        # The failures that spent the error budget are sent again; otherwise the audit would stop at once.
        requeue_failed(audit)
    _sending_again(audit)


def _refuse_stale_keys(audit: Audit) -> None:
    """Refuse to send the audit's requests again when what their keys hold of an endpoint (its kind, base URL,
    scoring settings, or a local scorer's version) is no longer what the preparation recorded in the manifest: each
    would fail as changed (the worker keys a request again before it sends it, :mod:`auditapp.engine.runner`), and
    its reply would come from another server than the audit's others. The endpoints are locked until the commit,
    so a change asked meanwhile then finds the requests to send
    (:func:`auditapp.engine.endpoints.endpoint_change_refusal`). An audit prepared before the manifest recorded
    them is not checked here (its worker still refuses each request)."""
    recorded = audit.manifest.get("endpoint_identities")
    if not recorded:
        return
    models = list(audit.models.order_by("position", "id"))
    endpoints = {endpoint.pk: endpoint for endpoint in LLMEndpoint.objects.select_for_update()
                 .filter(pk__in={m.endpoint_id for m in models}).order_by("pk")}
    changed = [f"{m.display_name} at {endpoints[m.endpoint_id]}" for m in models
               if request_identity(endpoints[m.endpoint_id], m.model) != recorded.get(str(m.id))]
    if changed:
        raise AuditStateError(
            f"what its requests' keys hold of the endpoint (its kind, base URL, scoring settings or a local scorer's "
            f"version) changed since the audit was prepared, for {', '.join(changed)}: its requests would go to "
            "another server than its replies came from, and fail as changed; launch a new audit for the new settings")


def requeue_failed(audit: Audit) -> int:
    """Make the failed requests pending again. A later turn re-opened with its earlier turn waits for it again
    (its key blank: the earlier reply will be a new one); one whose earlier turn is answered keeps its key, or is
    keyed or closed again now when it was closed unsent (:func:`turns_unblock`)."""
    failed = AuditRequest.objects.filter(audit=audit, state=AuditRequest.State.FAILED)
    # Locked first, in id order as turns_advance locks earlier turns: a worker closing a later turn on a failed one
    # finishes before they are re-opened, and the statements below then see the turn it closed.
    list(failed.select_for_update().order_by("id").values_list("id", flat=True))
    AuditJudgment.objects.filter(audit=audit, request__state=AuditRequest.State.FAILED).delete()
    failed.filter(previous__state=AuditRequest.State.FAILED).update(key="")
    n = failed.update(state=AuditRequest.State.PENDING, error="", outcome="", attempts=0, finished_at=None,
                      chunk=None)
    if n and AuditRequest.objects.filter(audit=audit, turn__gt=0).exists():
        turns_unblock(audit=audit, builder=request_builder(audit))
    return n


def audit_cancel(*, audit: Audit) -> None:
    active = [Audit.Status.QUEUED, Audit.Status.RUNNING, Audit.Status.PAUSED, Audit.Status.STOPPED,
              Audit.Status.FAILED]
    if not Audit.objects.filter(pk=audit.pk, status__in=active).update(
            status=Audit.Status.CANCELLED, status_reason="cancelled by a researcher", finished_at=timezone.now()):
        raise AuditStateError(f"a {audit.get_status_display().lower()} audit cannot be cancelled")


@transaction.atomic
def audit_retry_failed(*, audit: Audit) -> int:
    """Send the failed requests of a stopped, paused or finished audit again; returns how many."""
    audit = Audit.objects.select_for_update().get(pk=audit.pk)
    if audit.status in (Audit.Status.QUEUED, Audit.Status.RUNNING, Audit.Status.ANALYSING, Audit.Status.CANCELLED):
        raise AuditStateError(f"the failed requests of a {audit.get_status_display().lower()} audit cannot be retried")
    _refuse_stale_keys(audit)
    n = requeue_failed(audit)
    if n:
        _sending_again(audit)
    return n


def _sending_again(audit: Audit) -> None:
    """Running again, its work sent; the progress rate counts from now (``resumed_at``), not over the pause."""
    audit.status, audit.status_reason, audit.finished_at, audit.resumed_at = (
        Audit.Status.RUNNING, "", None, timezone.now())
    audit.save(update_fields=["status", "status_reason", "finished_at", "resumed_at"])
    enqueue_work(audit.id, audit.parallel_tasks)
