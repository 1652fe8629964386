"""The psychometrics app's migrations up to 0006_answer_writer_of_autosaves, squashed: the tables as those migrations left them, made
in one step for a new database (no data step: a new database has no data). A database that applied some of the
replaced migrations goes on with them (they stay until no database needs them); recomputations of stored results
that an upgrade needs are upgrade steps (auditapp/upgrade_steps.py), never migrations."""

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models


class Migration(migrations.Migration):

    replaces = [('psychometrics', '0001_initial'), ('psychometrics', '0002_annotator_imports'), ('psychometrics', '0003_annotator_import_team_changes'), ('psychometrics', '0004_iat_trial_first_latency_unknown'), ('psychometrics', '0005_iat_input_modality'), ('psychometrics', '0006_answer_writer_of_autosaves')]

    initial = True

    dependencies = [
        ('annotation', '0001_initial'),
        ('annotation', '0004_item_import_queued_at'),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.CreateModel(
            name='AnnotatorImport',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('kind', models.CharField(choices=[('scores', 'Per-annotator scores (AQ, SATA, IAT D)'), ('answers', 'Raw questionnaire answers'), ('iat', 'Raw IAT trials')], max_length=8)),
                ('filename', models.CharField(max_length=255)),
                ('file_format', models.CharField(max_length=8)),
                ('content', models.BinaryField()),
                ('sha256', models.CharField(max_length=64)),
                ('options', models.JSONField(blank=True, default=dict, help_text='Column mapping and parse options.')),
                ('columns', models.JSONField(blank=True, default=dict, help_text='Which file column was read as what.')),
                ('encoding', models.CharField(blank=True, max_length=32)),
                ('warnings', models.JSONField(blank=True, default=list)),
                ('n_rows', models.PositiveIntegerField(default=0)),
                ('n_annotators', models.PositiveIntegerField(default=0)),
                ('counts', models.JSONField(blank=True, default=dict, help_text="What was written, e.g. {'aq': 3, 'iat': 3}.")),
                ('team_changes', models.JSONField(blank=True, default=dict, help_text="Annotators whose team the import changed: pseudonym → {'from': team before, 'to': team set}; deleting the import puts back each team it still holds.")),
                ('created_at', models.DateTimeField(auto_now_add=True)),
                ('study', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='annotator_imports', to='annotation.study')),
                ('uploaded_by', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, to=settings.AUTH_USER_MODEL)),
            ],
            options={
                'ordering': ['-created_at', '-id'],
            },
        ),
        migrations.CreateModel(
            name='IATSession',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('condition_index', models.PositiveSmallIntegerField(blank=True, help_text='Empty for an IAT imported from a file.', null=True)),
                ('seed', models.BigIntegerField()),
                ('stimuli', models.JSONField()),
                ('design', models.JSONField(help_text='The seven blocks with their trials, as shown.')),
                ('blocks_done', models.PositiveSmallIntegerField(default=0)),
                ('block_modalities', models.JSONField(blank=True, default=list, help_text='Input modality of each stored block, in block order.')),
                ('input_modality', models.CharField(blank=True, choices=[('keyboard', 'Keyboard'), ('touch', 'Touch'), ('mixed', 'Keyboard and touch')], help_text='Keyboard, touch, or mixed (both) over the stored blocks; empty for an imported IAT. Touch latencies are not comparable with key latencies.', max_length=8)),
                ('started_at', models.DateTimeField(auto_now_add=True)),
                ('completed_at', models.DateTimeField(blank=True, null=True)),
                ('d_score', models.FloatField(blank=True, help_text='Positive = more implicit bias.', null=True)),
                ('d_practice', models.FloatField(blank=True, null=True)),
                ('d_test', models.FloatField(blank=True, null=True)),
                ('d600_score', models.FloatField(blank=True, null=True)),
                ('error_rate', models.FloatField(blank=True, null=True)),
                ('fast_fraction', models.FloatField(blank=True, null=True)),
                ('flagged_fast', models.BooleanField(blank=True, help_text='Over 10% of trials under 300 ms.', null=True)),
                ('n_dropped_slow', models.PositiveIntegerField(blank=True, null=True)),
                ('participant', models.OneToOneField(on_delete=django.db.models.deletion.CASCADE, related_name='iat', to='annotation.participant')),
                ('source_import', models.ForeignKey(blank=True, help_text='Set when imported from a file, not taken in the app.', null=True, on_delete=django.db.models.deletion.CASCADE, related_name='iat_sessions', to='psychometrics.annotatorimport')),
            ],
        ),
        migrations.CreateModel(
            name='Instrument',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('slug', models.SlugField(max_length=100)),
                ('name', models.CharField(max_length=200)),
                ('version', models.CharField(blank=True, max_length=50)),
                ('partial', models.BooleanField(default=False, help_text='Not the full published scale.')),
                ('definition', models.JSONField()),
                ('content_hash', models.CharField(max_length=64, unique=True)),
                ('shipped', models.BooleanField(default=False, help_text='Ships with the product (not uploaded).')),
                ('created_at', models.DateTimeField(auto_now_add=True)),
                ('uploaded_by', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, to=settings.AUTH_USER_MODEL)),
            ],
            options={
                'ordering': ['slug', '-created_at'],
            },
        ),
        migrations.CreateModel(
            name='IATTrial',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('block', models.PositiveSmallIntegerField()),
                ('trial', models.PositiveSmallIntegerField()),
                ('stimulus', models.CharField(max_length=200)),
                ('stimulus_category', models.CharField(max_length=20)),
                ('pairing', models.CharField(blank=True, max_length=20)),
                ('correct_side', models.CharField(max_length=5)),
                ('first_key', models.CharField(help_text='e (left) or i (right); for a touch trial, the half tapped first, coded the same way.', max_length=5)),
                ('modality', models.CharField(blank=True, choices=[('keyboard', 'Keyboard'), ('touch', 'Touch')], help_text='How this trial was answered; empty for an imported trial.', max_length=8)),
                ('error', models.BooleanField()),
                ('latency_first_ms', models.FloatField(blank=True, help_text='Empty for an imported trial whose file had no first-key latency.', null=True)),
                ('latency_correct_ms', models.FloatField()),
                ('participant', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='iat_trials', to='annotation.participant')),
                ('source_import', models.ForeignKey(blank=True, help_text='Set when imported from a file, not taken in the app.', null=True, on_delete=django.db.models.deletion.CASCADE, related_name='iat_trials', to='psychometrics.annotatorimport')),
            ],
            options={
                'ordering': ['participant', 'block', 'trial'],
                'constraints': [models.UniqueConstraint(fields=('participant', 'block', 'trial'), name='one_row_per_trial')],
            },
        ),
        migrations.CreateModel(
            name='InstrumentResponse',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('item_number', models.PositiveSmallIntegerField()),
                ('response_index', models.PositiveSmallIntegerField()),
                ('position', models.PositiveSmallIntegerField(help_text='0-based position of the item on the page.')),
                ('rt_ms', models.PositiveIntegerField(blank=True, help_text='Time spent on this item.', null=True)),
                ('answered_at', models.DateTimeField(auto_now=True)),
                ('writer', models.CharField(blank=True, default='', editable=False, help_text='The questionnaire page that autosaved this answer (one load of it), or empty.', max_length=64)),
                ('writer_seq', models.PositiveIntegerField(default=0, editable=False, help_text='How many answers that page had given with this one.')),
                ('instrument', models.ForeignKey(on_delete=django.db.models.deletion.PROTECT, related_name='+', to='psychometrics.instrument')),
                ('participant', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='instrument_responses', to='annotation.participant')),
                ('source_import', models.ForeignKey(blank=True, help_text='Set when imported from a file, not taken in the app.', null=True, on_delete=django.db.models.deletion.CASCADE, related_name='responses', to='psychometrics.annotatorimport')),
            ],
            options={
                'ordering': ['participant', 'instrument', 'position'],
                'constraints': [models.UniqueConstraint(fields=('participant', 'instrument', 'item_number'), name='one_answer_per_item')],
            },
        ),
        migrations.CreateModel(
            name='InstrumentScore',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('total', models.FloatField()),
                ('subscales', models.JSONField(default=dict)),
                ('tier', models.CharField(blank=True, max_length=200)),
                ('computed_at', models.DateTimeField(auto_now=True)),
                ('instrument', models.ForeignKey(on_delete=django.db.models.deletion.PROTECT, related_name='+', to='psychometrics.instrument')),
                ('participant', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='instrument_scores', to='annotation.participant')),
                ('source_import', models.ForeignKey(blank=True, help_text='Set when imported from a file, not taken in the app.', null=True, on_delete=django.db.models.deletion.CASCADE, related_name='scores', to='psychometrics.annotatorimport')),
            ],
            options={
                'constraints': [models.UniqueConstraint(fields=('participant', 'instrument'), name='one_score_per_instrument')],
            },
        ),
        migrations.CreateModel(
            name='QuestionnaireSession',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('item_order', models.JSONField(help_text='Item numbers in the order shown.')),
                ('started_at', models.DateTimeField(auto_now_add=True)),
                ('completed_at', models.DateTimeField(blank=True, null=True)),
                ('instrument', models.ForeignKey(on_delete=django.db.models.deletion.PROTECT, related_name='+', to='psychometrics.instrument')),
                ('participant', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='questionnaires', to='annotation.participant')),
                ('source_import', models.ForeignKey(blank=True, help_text='Set when imported from a file, not taken in the app.', null=True, on_delete=django.db.models.deletion.CASCADE, related_name='questionnaire_sessions', to='psychometrics.annotatorimport')),
            ],
            options={
                'constraints': [models.UniqueConstraint(fields=('participant', 'instrument'), name='questionnaire_once_per_participant')],
            },
        ),
        migrations.CreateModel(
            name='StudyInstrument',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('position', models.PositiveSmallIntegerField(default=0)),
                ('randomise_items', models.BooleanField(default=False, help_text='A new item order for every participant.')),
                ('role', models.CharField(choices=[('aq', 'AQ (autistic traits)'), ('sata', 'SATA (attitudes towards autism)'), ('other', 'Other')], default='other', max_length=8)),
                ('instrument', models.ForeignKey(on_delete=django.db.models.deletion.PROTECT, related_name='+', to='psychometrics.instrument')),
                ('study', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='study_instruments', to='annotation.study')),
            ],
            options={
                'ordering': ['study', 'position', 'id'],
                'constraints': [models.UniqueConstraint(fields=('study', 'instrument'), name='instrument_once_per_study'), models.UniqueConstraint(condition=models.Q(('role', 'other'), _negated=True), fields=('study', 'role'), name='one_instrument_per_role')],
            },
        ),
    ]
