# Nobody loses access on the upgrade: when the database holds a staff user or an owned row (a study, audit, corpus,
# endpoint, coding round or a researcher's codebook), the team "Everyone before teams" ("Lab" with ONE_LAB) is
# created with every existing staff user as an owner, and every owned row without a team is given it. Shipped
# codebooks keep no team. Historical models only: no application code.

from django.conf import settings
from django.db import migrations

UPGRADE_TEAM = 'Everyone before teams'
ONE_LAB_TEAM = 'Lab'
OWNED = [('annotation', 'Study'), ('auditapp', 'Audit'), ('auditapp', 'Corpus'), ('auditapp', 'LLMEndpoint'),
         ('coding', 'CodingRound')]


def everyone_before_teams(apps, schema_editor):
    db = schema_editor.connection.alias
    user_model = apps.get_model(settings.AUTH_USER_MODEL)
    team_model = apps.get_model('teams', 'Team')
    membership_model = apps.get_model('teams', 'Membership')
    codebook_model = apps.get_model('coding', 'Codebook')
    owned = [apps.get_model(app, name)._default_manager.using(db).filter(team__isnull=True) for app, name in OWNED]
    owned.append(codebook_model._default_manager.using(db).filter(team__isnull=True, shipped=False))
    staff = user_model._default_manager.using(db).filter(is_staff=True)
    if not staff.exists() and not any(rows.exists() for rows in owned):
        return
    name = ONE_LAB_TEAM if getattr(settings, 'AUDITAPP_ONE_LAB', False) else UPGRADE_TEAM
    team, _ = team_model._default_manager.using(db).get_or_create(name=name)
    membership_model._default_manager.using(db).bulk_create(
        [membership_model(team=team, user_id=user_id, role='owner')
         for user_id in staff.exclude(team_memberships__team=team).values_list('pk', flat=True)])
    for rows in owned:
        rows.update(team=team)


class Migration(migrations.Migration):

    dependencies = [
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
        ('teams', '0001_teams_memberships_access_log'),
        ('annotation', '0010_study_team'),
        ('auditapp', '0021_audit_corpus_endpoint_teams'),
        ('coding', '0003_codebook_and_round_teams'),
    ]

    operations = [
        migrations.RunPython(everyone_before_teams, migrations.RunPython.noop),
    ]
