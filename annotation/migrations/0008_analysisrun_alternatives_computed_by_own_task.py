"""The alternative ground truths move out of the study analysis into their own task: when a run asked for them, when
their task was sent, when they were stored, or why they failed. Runs that already have them count as computed
with the run."""
from django.db import migrations, models
from django.db.models import F


def mark_stored_alternatives_computed(apps, schema_editor):
    AnalysisRun = apps.get_model("annotation", "AnalysisRun")
    AnalysisRun.objects.exclude(alternatives={}).update(alternatives_requested_at=F("computed_at"),
                                                        alternatives_computed_at=F("computed_at"))


class Migration(migrations.Migration):

    dependencies = [
        ("annotation", "0007_analysisrun_ground_truth_alternatives"),
    ]

    operations = [
        migrations.AlterField(
            model_name="analysisrun",
            name="alternatives",
            field=models.JSONField(blank=True, default=dict, help_text="The alternative ground truths (annotation.alternatives): settings, per-item labels, summary, agreement matrix, flipped items, crowd-kit outputs as returned. Computed after the run by its own task (annotation.study_alternatives): empty until then."),
        ),
        migrations.AddField(
            model_name="analysisrun",
            name="alternatives_inputs_digest",
            field=models.CharField(blank=True, default="", help_text="A hash of the scores, labels and settings this run used: the alternatives task computes from the same inputs or not at all.", max_length=64),
        ),
        migrations.AddField(
            model_name="analysisrun",
            name="alternatives_requested_at",
            field=models.DateTimeField(blank=True, help_text="When this run asked for its alternatives (it names the request).", null=True),
        ),
        migrations.AddField(
            model_name="analysisrun",
            name="alternatives_sent_at",
            field=models.DateTimeField(blank=True, help_text="When their task was last sent (None: the broker was away; the recovery sends it).", null=True),
        ),
        migrations.AddField(
            model_name="analysisrun",
            name="alternatives_computed_at",
            field=models.DateTimeField(blank=True, null=True),
        ),
        migrations.AddField(
            model_name="analysisrun",
            name="alternatives_error",
            field=models.TextField(blank=True, default="", help_text="Why the alternatives could not be computed for this run."),
        ),
        migrations.RunPython(mark_stored_alternatives_computed, migrations.RunPython.noop),
    ]
