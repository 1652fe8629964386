"""Receivers of model signals in the audit domain: each only hands over to a service.

Deleting an audit, or a model of one, sweeps the judgments its requests leave behind once the deletion commits
(:func:`auditapp.engine.judgments.audit_judgments_sweep`; why they can be left: :class:`auditapp.models.AuditJudgment`).
Requests are deleted only with their audit or their audit's model, so these two senders are every way in, whoever
deletes (the admin, the shell, a cascade); no receiver is put on AuditRequest itself, where Django would send a
signal per request of a million-request audit.
"""
from __future__ import annotations

from django.db.models.signals import post_delete
from django.dispatch import receiver

from auditapp.engine.judgments import audit_judgments_sweep_on_commit
from auditapp.models import Audit, AuditModel


@receiver(post_delete, sender=Audit, dispatch_uid="audit-judgments-sweep")
def _audit_deleted(sender, instance: Audit, using: str, **kwargs) -> None:
    audit_judgments_sweep_on_commit(audit_id=instance.pk, using=using)


@receiver(post_delete, sender=AuditModel, dispatch_uid="audit-model-judgments-sweep")
def _audit_model_deleted(sender, instance: AuditModel, using: str, **kwargs) -> None:
    audit_judgments_sweep_on_commit(audit_id=instance.audit_id, using=using)
