"""The coding app's migrations up to 0002_excerpt_coding_revision, squashed: the tables as those migrations left them, made
in one step for a new database (no data step: a new database has no data). A database that applied some of the
replaced migrations goes on with them (they stay until no database needs them); recomputations of stored results
that an upgrade needs are upgrade steps (auditapp/upgrade_steps.py), never migrations."""

import annotation.models
import django.db.models.deletion
import uuid
from django.conf import settings
from django.db import migrations, models


class Migration(migrations.Migration):

    replaces = [('coding', '0001_coding_rounds'), ('coding', '0002_excerpt_coding_revision')]

    initial = True

    dependencies = [
        ('auditapp', '0017_judgments_without_database_foreign_keys'),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.CreateModel(
            name='Codebook',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('lineage', models.UUIDField(default=uuid.uuid4, editable=False, help_text='Shared by every version.')),
                ('version', models.PositiveIntegerField(default=1, editable=False)),
                ('name', models.CharField(help_text='The lens, e.g. “Thematic content and error type”.', max_length=200)),
                ('description', models.TextField(blank=True, help_text='What the lens looks at, for coders.')),
                ('source', models.TextField(blank=True, help_text='Where the codes and their definitions come from.')),
                ('shipped', models.BooleanField(default=False, editable=False, help_text='One of the defaults this app ships (seed 000 §3.4, §4.3).')),
                ('created_at', models.DateTimeField(auto_now_add=True)),
                ('created_by', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='+', to=settings.AUTH_USER_MODEL)),
            ],
            options={
                'ordering': ['name', '-version'],
            },
        ),
        migrations.CreateModel(
            name='Code',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('name', models.CharField(max_length=100)),
                ('definition', models.TextField(blank=True)),
                ('examples', models.JSONField(blank=True, default=list, help_text='Example phrases or excerpts (strings).')),
                ('definition_is_ours', models.BooleanField(default=False, help_text='The definition was written by this project: the paper names the code only.')),
                ('shortcut', models.CharField(blank=True, help_text='The key that toggles the code while coding.', max_length=1)),
                ('position', models.PositiveSmallIntegerField(default=0)),
                ('codebook', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='codes', to='coding.codebook')),
            ],
            options={
                'ordering': ['codebook', 'position', 'id'],
            },
        ),
        migrations.CreateModel(
            name='CodingRound',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('name', models.CharField(max_length=200)),
                ('sample_size', models.PositiveIntegerField(default=99)),
                ('allocation', models.CharField(choices=[('proportional', "Proportional to each model × condition stratum's size"), ('equal', 'Equal across model × condition strata')], default='proportional', max_length=16)),
                ('eligible', models.CharField(choices=[('parsed', 'Every parsed reply (a label and an explanation)'), ('disagree', 'Parsed replies whose label differs from the weighted ground truth')], default='parsed', max_length=16)),
                ('models_included', models.JSONField(blank=True, default=list, help_text='AuditModel ids to sample from; empty: every model.')),
                ('conditions_included', models.JSONField(blank=True, default=list, help_text='Conditions to sample from; empty: every condition.')),
                ('seed', models.BigIntegerField(default=annotation.models.new_seed)),
                ('show_model', models.BooleanField(default=False, help_text='Coders see which model answered.')),
                ('show_condition', models.BooleanField(default=False, help_text='Coders see the prompting condition.')),
                ('show_reference', models.BooleanField(default=False, help_text='Coders see the weighted ground truth.')),
                ('draw', models.JSONField(blank=True, default=dict, editable=False, help_text='The eligible strata, the allocation and the drawn requests, to rebuild it.')),
                ('created_at', models.DateTimeField(auto_now_add=True)),
                ('closed_at', models.DateTimeField(blank=True, help_text='No more coding is accepted.', null=True)),
                ('audit', models.ForeignKey(on_delete=django.db.models.deletion.PROTECT, related_name='coding_rounds', to='auditapp.audit')),
                ('created_by', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='+', to=settings.AUTH_USER_MODEL)),
            ],
            options={
                'ordering': ['-created_at'],
            },
        ),
        migrations.CreateModel(
            name='Coder',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('name', models.CharField(help_text='The only name under which the coder appears in exports.', max_length=100)),
                ('invite_token', models.CharField(default=annotation.models.new_invite_token, editable=False, max_length=64, unique=True)),
                ('created_at', models.DateTimeField(auto_now_add=True)),
                ('started_at', models.DateTimeField(blank=True, null=True)),
                ('completed_at', models.DateTimeField(blank=True, null=True)),
                ('user', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='coding_assignments', to=settings.AUTH_USER_MODEL)),
                ('round', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='coders', to='coding.codinground')),
            ],
            options={
                'ordering': ['round', 'lens', 'name'],
            },
        ),
        migrations.CreateModel(
            name='CodeMapping',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('name', models.CharField(max_length=200)),
                ('codes', models.ManyToManyField(related_name='+', to='coding.code')),
                ('round', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='mappings', to='coding.codinground')),
            ],
            options={
                'ordering': ['round', 'name'],
            },
        ),
        migrations.CreateModel(
            name='Excerpt',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('position', models.PositiveIntegerField(help_text='The order coders see the sample in.')),
                ('model_name', models.CharField(max_length=200)),
                ('condition', models.CharField(max_length=40)),
                ('target', models.TextField()),
                ('preceding', models.TextField(blank=True)),
                ('following', models.TextField(blank=True)),
                ('label', models.SmallIntegerField(help_text="The model's label.")),
                ('explanation', models.TextField(blank=True)),
                ('reference_label', models.SmallIntegerField(help_text='The weighted ground truth.', null=True)),
                ('majority_label', models.SmallIntegerField(null=True)),
                ('request', models.ForeignKey(on_delete=django.db.models.deletion.PROTECT, related_name='+', to='auditapp.auditrequest')),
                ('round', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='excerpts', to='coding.codinground')),
            ],
            options={
                'ordering': ['round', 'position'],
            },
        ),
        migrations.CreateModel(
            name='ExcerptCoding',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('memo', models.TextField(blank=True)),
                ('confirmed_at', models.DateTimeField(blank=True, null=True)),
                ('revision', models.PositiveIntegerField(default=0, help_text='Counts the saves; a save based on an older revision is refused (another device saved).')),
                ('writer', models.CharField(blank=True, help_text='The page (one load of it) that saved last.', max_length=64)),
                ('writer_seq', models.PositiveIntegerField(default=0, help_text="That page's count of its saves, at the last one.")),
                ('updated_at', models.DateTimeField(auto_now=True)),
                ('coder', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='codings', to='coding.coder')),
                ('codes', models.ManyToManyField(blank=True, related_name='+', to='coding.code')),
                ('excerpt', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='codings', to='coding.excerpt')),
            ],
            options={
                'ordering': ['coder', 'excerpt'],
            },
        ),
        migrations.CreateModel(
            name='RoundLens',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('position', models.PositiveSmallIntegerField(default=0)),
                ('codebook', models.ForeignKey(on_delete=django.db.models.deletion.PROTECT, related_name='+', to='coding.codebook')),
                ('round', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='lenses', to='coding.codinground')),
            ],
            options={
                'ordering': ['round', 'position'],
            },
        ),
        migrations.AddField(
            model_name='coder',
            name='lens',
            field=models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='coders', to='coding.roundlens'),
        ),
        migrations.AddConstraint(
            model_name='codebook',
            constraint=models.UniqueConstraint(fields=('lineage', 'version'), name='codebook_version_unique'),
        ),
        migrations.AddConstraint(
            model_name='code',
            constraint=models.UniqueConstraint(fields=('codebook', 'name'), name='code_name_unique_in_codebook'),
        ),
        migrations.AddConstraint(
            model_name='code',
            constraint=models.UniqueConstraint(condition=models.Q(('shortcut', ''), _negated=True), fields=('codebook', 'shortcut'), name='code_shortcut_unique_in_codebook'),
        ),
        migrations.AddConstraint(
            model_name='codemapping',
            constraint=models.UniqueConstraint(fields=('round', 'name'), name='mapping_name_unique_in_round'),
        ),
        migrations.AddConstraint(
            model_name='excerpt',
            constraint=models.UniqueConstraint(fields=('round', 'position'), name='excerpt_position_unique_in_round'),
        ),
        migrations.AddConstraint(
            model_name='excerpt',
            constraint=models.UniqueConstraint(fields=('round', 'request'), name='excerpt_request_once_per_round'),
        ),
        migrations.AddConstraint(
            model_name='excerptcoding',
            constraint=models.UniqueConstraint(fields=('coder', 'excerpt'), name='coding_once_per_coder_excerpt'),
        ),
        migrations.AddConstraint(
            model_name='roundlens',
            constraint=models.UniqueConstraint(fields=('round', 'codebook'), name='lens_codebook_once_per_round'),
        ),
        migrations.AddConstraint(
            model_name='coder',
            constraint=models.UniqueConstraint(fields=('round', 'name'), name='coder_name_unique_in_round'),
        ),
        migrations.AddConstraint(
            model_name='coder',
            constraint=models.UniqueConstraint(condition=models.Q(('user__isnull', False)), fields=('round', 'user'), name='coder_account_once_per_round'),
        ),
    ]
