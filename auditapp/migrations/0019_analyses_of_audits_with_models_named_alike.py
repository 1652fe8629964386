"""Stored analyses of audits with two models named alike, analysed again under one naming rule.

This migration used to analyse those audits again with the app's code of the day. The work is now an upgrade step
run after every ``migrate`` by ``manage.py upgrade`` (``auditapp.upgrade_steps``); this migration does nothing and
stays only so that databases that recorded it keep their history."""
from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [("auditapp", "0018_metric_notes_for_audits_analysed_before_them")]
    operations = []
