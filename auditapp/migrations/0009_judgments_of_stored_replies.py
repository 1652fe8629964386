"""Judgment rows for the replies stored before judgments existed (0007): every answered request of an existing
audit is parsed again from its stored reply, as a re-parse does, so a self-report audit's answers and scores
(which now read judgments) keep what they showed. No model is asked."""
from django.db import migrations


def judge_stored_replies(apps, schema_editor):
    # The app's own parser is the only one that knows each paradigm's replies; it runs on today's models, which
    # is what this migration is for (a database that reaches it has these tables).
    from auditapp.audit_services import audit_reparse

    Audit = apps.get_model("auditapp", "Audit")
    AuditRequest = apps.get_model("auditapp", "AuditRequest")
    for audit_id in Audit.objects.values_list("id", flat=True):
        if AuditRequest.objects.filter(audit_id=audit_id, state="answered").exists():
            audit_reparse(audit_id=audit_id)


class Migration(migrations.Migration):
    dependencies = [("auditapp", "0008_registry_paradigms")]
    operations = [migrations.RunPython(judge_stored_replies, migrations.RunPython.noop)]
