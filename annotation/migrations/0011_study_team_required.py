# Every study has a team once teams.0002 has given the existing ones theirs.

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('annotation', '0010_study_team'),
        ('teams', '0002_everyone_before_teams'),
    ]

    operations = [
        migrations.AlterField(
            model_name='study',
            name='team',
            field=models.ForeignKey(help_text='The team whose members may see and change it (teams.scoping).', on_delete=django.db.models.deletion.PROTECT, related_name='studies', to='teams.team'),
        ),
    ]
