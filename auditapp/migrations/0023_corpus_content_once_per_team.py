# A corpus is stored once per team, not once for everyone: a team that uploads or generates what another team holds
# gets its own copy, so it neither reuses nor learns of the other's. The old constraint held globally, so no team has
# two identical corpora and the new one holds at once.

from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('auditapp', '0022_audit_corpus_endpoint_team_required'),
    ]

    operations = [
        migrations.RemoveConstraint(
            model_name='corpus',
            name='corpus_content_once',
        ),
        migrations.AddConstraint(
            model_name='corpus',
            constraint=models.UniqueConstraint(fields=('team', 'paradigm', 'content_hash'),
                                               name='corpus_content_once_per_team'),
        ),
    ]
