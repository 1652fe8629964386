"""Stored analyses of audits with two models named alike, analysed again under one naming rule.

Launch refuses two models that tables would name alike (one label or model name) since issue 18's second session;
an audit launched before may have such a pair. Analyses stored for it named both by that one name, so implicit bias
merged them into one row, and self-report named them "name #id"; every paradigm now names them
"name (audit model N)" (``auditapp.models.distinct_model_names``). Each such audit with a stored analysis that no
worker will analyse again by itself (completed, cancelled, stopped or failed) is analysed again from its stored
replies, one audit per transaction (the paradigm's own; a status stays as it is); no model is asked. An audit
still queued, running, paused or analysing is left to its own coming analysis, which names its models by the rule
(and is not raced by a worker started beside this migration). An analysis that cannot be
computed again is reported and the audit keeps its stored one, so that no upgrade stops on one audit's data; a
database or broker fault stops the migration instead, to be run again. (An audit whose analysis failed on such a
pair, as counterfactual ones did, has no stored analysis: resuming it analyses it.)
"""
from django.db import migrations
from django.db.models import Count, Value
from django.db.models.functions import Coalesce, NullIf

WORKED_ON = ("queued", "running", "paused", "analysing")  # statuses whose audit a worker analyses by itself


def audits_with_models_named_alike(apps) -> list[int]:
    """The analysed audits two of whose models have one name in tables (their label, or model name without one)."""
    AuditModel = apps.get_model("auditapp", "AuditModel")
    shared = (AuditModel.objects.annotate(name=Coalesce(NullIf("label", Value("")), "model"))
              .values("audit_id", "name").annotate(n=Count("id")).filter(n__gt=1).values("audit_id"))
    Audit = apps.get_model("auditapp", "Audit")
    return list(Audit.objects.filter(pk__in=shared, analysed_at__isnull=False)
                .exclude(status__in=WORKED_ON).order_by("id").values_list("id", flat=True))


def analyse_audits_with_models_named_alike(apps, schema_editor):
    # Today's analysis, as in 0018: the paradigm's analysis lives in the app, not in the historical models, so this
    # stays after every migration that changes the tables it reads (renumbered after such a change, with 0018).
    from auditapp.audit_services import TRANSIENT_ERRORS
    from auditapp.models import Audit
    from auditapp.paradigms import registry

    for audit_id in audits_with_models_named_alike(apps):
        audit = Audit.objects.get(pk=audit_id)
        try:
            registry.get(audit.paradigm).analyse(audit)
        except TRANSIENT_ERRORS:
            raise
        except Exception as error:  # noqa: BLE001 - one audit's data must not stop the upgrade
            print(f"\n  audit {audit_id}: its stored analysis is kept; analysing it again failed: "
                  f"{type(error).__name__}: {error}")


class Migration(migrations.Migration):
    atomic = False  # one transaction per audit (each paradigm's analysis has its own)
    dependencies = [("auditapp", "0018_metric_notes_for_audits_analysed_before_them")]
    operations = [migrations.RunPython(analyse_audits_with_models_named_alike, migrations.RunPython.noop)]
