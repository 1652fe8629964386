"""Notes for the metrics of classification audits analysed before undefined metrics had them (issue 16).

Those audits stored 0.0 where a metric is undefined (no items, no predicted or reference positives, one class
only), with no ``<metric>_note`` key, and their confusion counts were not stored, so an undefined value cannot be
told from a measured 0 by reading them. Each such audit (metric rows and not one ``_note`` key among them) is
analysed again from its stored replies and references, one audit per transaction: its metrics and Δκ then say
"undefined" with the reason. The analysis is seeded, so a re-analysed audit whose metrics were all defined keeps
its values. No model is asked; a stopped migration is run again and takes the audits still without notes.
"""
from django.db import migrations

BATCH = 2000


def audits_without_notes(apps) -> list[int]:
    """The classification audits whose stored metrics hold no ``_note`` key at all (the shape before notes)."""
    AuditMetric = apps.get_model("auditapp", "AuditMetric")
    with_metrics, with_notes = set(), set()
    rows = AuditMetric.objects.filter(audit__paradigm="classification").values_list("audit_id", "values")
    for audit_id, values in rows.iterator(chunk_size=BATCH):
        with_metrics.add(audit_id)
        if any(key.endswith("_note") for key in values or {}):
            with_notes.add(audit_id)
    return sorted(with_metrics - with_notes)


def analyse_audits_without_notes(apps, schema_editor):
    # The analysis lives in the app, not in the historical models: this runs today's service on the tables as the
    # migrations before it leave them (as 0009 does), so it and 0019 stay the app's last migrations. A later change
    # to those tables renumbers them after that change (it was 0016 before issue 14's 0016 and 0017); a database that ran it
    # under an earlier number runs it again and finds no audit left to analyse.
    from auditapp.models import Audit
    from auditapp.paradigms.classification.services import classification_analyse

    for audit_id in audits_without_notes(apps):
        classification_analyse(Audit.objects.get(pk=audit_id))


class Migration(migrations.Migration):
    # One transaction per audit (classification_analyse's own), not one around them all.
    atomic = False
    # Today's analysis reads the other apps' tables too (the study's analysis runs, the participants' IATs): after
    # their latest migrations as well.
    dependencies = [("auditapp", "0017_judgments_without_database_foreign_keys"),
                    ("annotation", "0008_analysisrun_alternatives_computed_by_own_task"),
                    ("psychometrics", "0005_iat_input_modality")]
    operations = [migrations.RunPython(analyse_audits_without_notes, migrations.RunPython.noop)]
