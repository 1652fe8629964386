# The team of codebooks (empty for the shipped ones, for good) and of coding rounds (teams.0002 fills it, 0004
# requires it).

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('coding', '0002_excerpt_coding_revision'),
        ('teams', '0001_teams_memberships_access_log'),
    ]

    operations = [
        migrations.AddField(
            model_name='codebook',
            name='team',
            field=models.ForeignKey(blank=True, help_text='The team whose members may see and change it; empty: shipped with the app, read by every researcher and changed by superusers only.', null=True, on_delete=django.db.models.deletion.PROTECT, related_name='codebooks', to='teams.team'),
        ),
        migrations.AddField(
            model_name='codinground',
            name='team',
            field=models.ForeignKey(help_text='The team whose members may see and change it (teams.scoping).', null=True, on_delete=django.db.models.deletion.PROTECT, related_name='coding_rounds', to='teams.team'),
        ),
    ]
