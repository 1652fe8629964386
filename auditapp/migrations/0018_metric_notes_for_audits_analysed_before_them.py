"""Notes for the metrics of classification audits analysed before undefined metrics had them.

This migration used to analyse those audits again with the app's code of the day. The work is now an upgrade step
run after every ``migrate`` by ``manage.py upgrade`` (``auditapp.upgrade_steps``); this migration does nothing and
stays only so that databases that recorded it keep their history."""
from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [("auditapp", "0017_judgments_without_database_foreign_keys"),
                    ("annotation", "0008_analysisrun_alternatives_computed_by_own_task"),
                    ("psychometrics", "0005_iat_input_modality")]
    operations = []
