"""Judgment rows for the replies stored before judgments existed (0007): every answered request of an existing
audit that has no judgment is parsed again from its stored reply, in batches, so a self-report audit's answers and
scores (which now read judgments) keep what they showed. Nothing else changes and no model is asked.

Stop the workers before migrating: a reply an old worker records after this migration has no judgment
(a re-parse of the audit writes them)."""
from django.db import migrations


def judge_stored_replies(apps, schema_editor):
    # Each paradigm's parser lives in the app, not in the historical models: this runs today's services on the
    # tables as 0008 leaves them. A later change to those tables must squash this migration.
    from auditapp.audit_services import audit_judge_unjudged

    Audit = apps.get_model("auditapp", "Audit")
    AuditRequest = apps.get_model("auditapp", "AuditRequest")
    for audit_id in Audit.objects.values_list("id", flat=True):
        if AuditRequest.objects.filter(audit_id=audit_id, state="answered").exists():
            audit_judge_unjudged(audit_id=audit_id)


class Migration(migrations.Migration):
    dependencies = [("auditapp", "0008_registry_paradigms")]
    operations = [migrations.RunPython(judge_stored_replies, migrations.RunPython.noop)]
