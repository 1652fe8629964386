# The team of audits, corpora and endpoints, added empty (teams.0002 fills it, 0022 requires it), and the teams an
# endpoint is shared with.

import django.db.models.deletion
from django.db import migrations, models

HELP = 'The team whose members may see and change it (teams.scoping).'


class Migration(migrations.Migration):

    dependencies = [
        ('auditapp', '0020_upgrade_steps_worker_heartbeats_endpoint_key_names'),
        ('teams', '0001_teams_memberships_access_log'),
    ]

    operations = [
        migrations.AddField(
            model_name='audit',
            name='team',
            field=models.ForeignKey(help_text=HELP, null=True, on_delete=django.db.models.deletion.PROTECT, related_name='audits', to='teams.team'),
        ),
        migrations.AddField(
            model_name='corpus',
            name='team',
            field=models.ForeignKey(help_text=HELP, null=True, on_delete=django.db.models.deletion.PROTECT, related_name='corpora', to='teams.team'),
        ),
        migrations.AddField(
            model_name='llmendpoint',
            name='team',
            field=models.ForeignKey(help_text=HELP, null=True, on_delete=django.db.models.deletion.PROTECT, related_name='endpoints', to='teams.team'),
        ),
        migrations.AddField(
            model_name='llmendpoint',
            name='shared_with',
            field=models.ManyToManyField(blank=True, help_text='Other teams whose members may use it to launch audits (not change it).', related_name='shared_endpoints', to='teams.team'),
        ),
    ]
