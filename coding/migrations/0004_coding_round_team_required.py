# Every coding round has a team once teams.0002 has given the existing ones theirs (a codebook's stays optional).

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('coding', '0003_codebook_and_round_teams'),
        ('teams', '0002_everyone_before_teams'),
    ]

    operations = [
        migrations.AlterField(
            model_name='codinground',
            name='team',
            field=models.ForeignKey(help_text='The team whose members may see and change it (teams.scoping).', on_delete=django.db.models.deletion.PROTECT, related_name='coding_rounds', to='teams.team'),
        ),
    ]
