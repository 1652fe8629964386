"""Judgment rows for the replies stored before judgments existed (0007).

This migration used to parse the stored replies with the app's code of the day, which breaks once the tables
change after it (it ran today's code on yesterday's tables). The work is now an upgrade step run after every
``migrate`` by ``manage.py upgrade`` (``auditapp.upgrade_steps``), on today's tables; this migration does nothing
and stays only so that databases that recorded it keep their history."""
from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [("auditapp", "0008_registry_paradigms")]
    operations = []
