# Every audit, corpus and endpoint has a team once teams.0002 has given the existing ones theirs.

import django.db.models.deletion
from django.db import migrations, models

HELP = 'The team whose members may see and change it (teams.scoping).'


class Migration(migrations.Migration):

    dependencies = [
        ('auditapp', '0021_audit_corpus_endpoint_teams'),
        ('teams', '0002_everyone_before_teams'),
    ]

    operations = [
        migrations.AlterField(
            model_name='audit',
            name='team',
            field=models.ForeignKey(help_text=HELP, on_delete=django.db.models.deletion.PROTECT, related_name='audits', to='teams.team'),
        ),
        migrations.AlterField(
            model_name='corpus',
            name='team',
            field=models.ForeignKey(help_text=HELP, on_delete=django.db.models.deletion.PROTECT, related_name='corpora', to='teams.team'),
        ),
        migrations.AlterField(
            model_name='llmendpoint',
            name='team',
            field=models.ForeignKey(help_text=HELP, on_delete=django.db.models.deletion.PROTECT, related_name='endpoints', to='teams.team'),
        ),
    ]
