"""Tasks that run LLM audits: prepare an audit, send its requests (in slices), compute its metrics, and pick
running audits up again when a worker starts (after a crash, their leases expire and are claimed again).

Every task takes an audit id and is idempotent: the services it calls change state only through
conditional updates, and replies are stored once per request key.
"""
from celery import shared_task
from celery.signals import worker_ready
from django.db import OperationalError

from auditapp.engine import runner as audit_runner
from auditapp.engine.analysis import audit_analyse
from auditapp.engine.preparation import audit_prepare
from auditapp.engine.sending import audit_work_send
from auditapp.models import Audit


@shared_task(name="auditapp.audit_prepare", autoretry_for=(OperationalError,), retry_backoff=True, max_retries=5)
def audit_prepare_task(audit_id: int) -> None:
    audit_prepare(audit_id=audit_id)


@shared_task(name="auditapp.audit_work", autoretry_for=(OperationalError,), retry_backoff=True, max_retries=5)
def audit_work_task(audit_id: int) -> str:
    outcome = audit_runner.audit_work(audit_id)  # "held": a duplicate of a live task, which goes on alone
    if outcome == "continue" and not audit_work_send(audit_id):
        return "waiting for the broker"  # still running: the recovery (tasks.recovery) queues its work
    return outcome


@shared_task(name="auditapp.audit_analyse", autoretry_for=(OperationalError,), retry_backoff=True, max_retries=5)
def audit_analyse_task(audit_id: int) -> None:
    audit_analyse(audit_id=audit_id)


@shared_task(name="auditapp.audits_recover")
def audits_recover_task() -> list[int]:
    """Queue work for every running audit and analysis for every audit left analysing."""
    running = list(Audit.objects.filter(status=Audit.Status.RUNNING).values_list("id", flat=True))
    for audit_id in running:
        audit_work_task.delay(audit_id)
    for audit_id in Audit.objects.filter(status=Audit.Status.ANALYSING).values_list("id", flat=True):
        audit_analyse_task.delay(audit_id)
    return running


@worker_ready.connect
def _recover_on_start(sender=None, **kwargs) -> None:
    audits_recover_task.delay()
