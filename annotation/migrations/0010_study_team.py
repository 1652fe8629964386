# A study's team, added empty: teams.0002 gives every existing study one, and 0011 then requires it.

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('annotation', '0009_analysis_run_inputs_kept_for_alternatives'),
        ('teams', '0001_teams_memberships_access_log'),
    ]

    operations = [
        migrations.AddField(
            model_name='study',
            name='team',
            field=models.ForeignKey(help_text='The team whose members may see and change it (teams.scoping).', null=True, on_delete=django.db.models.deletion.PROTECT, related_name='studies', to='teams.team'),
        ),
    ]
