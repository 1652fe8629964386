"""The annotation app's migrations up to 0009_analysis_run_inputs_kept_for_alternatives, squashed: the tables as those migrations left them, made
in one step for a new database (no data step: a new database has no data). A database that applied some of the
replaced migrations goes on with them (they stay until no database needs them); recomputations of stored results
that an upgrade needs are upgrade steps (auditapp/upgrade_steps.py), never migrations."""

import annotation.models
import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models


class Migration(migrations.Migration):

    replaces = [('annotation', '0001_initial'), ('annotation', '0002_analysis'), ('annotation', '0003_analysis_state'), ('annotation', '0004_item_import_queued_at'), ('annotation', '0005_analysis_state_outcome'), ('annotation', '0006_study_keyboard_required_touch_iat_in_weights'), ('annotation', '0007_analysisrun_ground_truth_alternatives'), ('annotation', '0008_analysisrun_alternatives_computed_by_own_task'), ('annotation', '0009_analysis_run_inputs_kept_for_alternatives')]

    initial = True

    dependencies = [
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.CreateModel(
            name='AnalysisRun',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('computed_at', models.DateTimeField()),
                ('duration_ms', models.PositiveIntegerField(default=0)),
                ('settings', models.JSONField(default=dict)),
                ('notes', models.JSONField(default=list)),
                ('agreement', models.JSONField(default=list)),
                ('cohen_kappa', models.JSONField(default=dict, help_text='{annotators: [...], kappa: [[...]]}')),
                ('alternatives', models.JSONField(blank=True, default=dict, help_text='The alternative ground truths (annotation.alternatives): settings, per-item labels, summary, agreement matrix, flipped items, crowd-kit outputs as returned. Computed after the run by its own task (annotation.study_alternatives): empty until then.')),
                ('alternatives_inputs_digest', models.CharField(blank=True, default='', help_text='A hash of the scores, labels and settings this run used: the alternatives task computes from the same inputs or not at all.', max_length=64)),
                ('alternatives_requested_at', models.DateTimeField(blank=True, help_text='When this run asked for its alternatives (it names the request).', null=True)),
                ('alternatives_sent_at', models.DateTimeField(blank=True, help_text='When their task was last sent (None: the broker was away; the recovery sends it).', null=True)),
                ('alternatives_computed_at', models.DateTimeField(blank=True, null=True)),
                ('alternatives_error', models.TextField(blank=True, default='', help_text='Why the alternatives could not be computed for this run.')),
            ],
        ),
        migrations.CreateModel(
            name='Study',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('name', models.CharField(max_length=200)),
                ('slug', models.SlugField(max_length=100, unique=True)),
                ('description', models.TextField(blank=True)),
                ('content_warning', models.TextField(blank=True, help_text='Shown to annotators before consent and before any sentence.')),
                ('consent_text', models.TextField(blank=True)),
                ('label_scheme', models.CharField(choices=[('binary', '0 / 1'), ('binary_unrelated', '0 / 1, or unrelated / needs more context (-1)')], default='binary_unrelated', max_length=32)),
                ('annotators_per_item', models.PositiveSmallIntegerField(default=3)),
                ('items_per_annotator', models.PositiveIntegerField(default=0, help_text='Items each annotator labels (attention checks come on top); 0 = as many as needed.')),
                ('labelling_instructions', models.TextField(blank=True)),
                ('iat_enabled', models.BooleanField(default=True, help_text='Run the IAT after the questionnaires.')),
                ('keyboard_required', models.BooleanField(default=False, help_text='Participants must have a physical keyboard for the IAT: they are told so before consent, and a touch-only device cannot start. Off: the IAT also runs by taps on touch screens.')),
                ('iat_stimuli', models.JSONField(blank=True, default=dict, help_text='IAT categories and words; empty = the defaults (seed 000 Appendix A.3 categories).')),
                ('attention_check_pass_threshold', models.FloatField(default=1.0, help_text='Share of attention-check items answered correctly needed to pass (0–1).')),
                ('assignment_timeout_minutes', models.PositiveIntegerField(default=120, help_text='Unlabelled items of an inactive annotator go back to others after this time.')),
                ('completion_code', models.CharField(default=annotation.models.new_completion_code, max_length=32)),
                ('completion_url', models.URLField(blank=True, help_text='Optional: where annotators go at the end (e.g. a Prolific completion URL).')),
                ('open_link_token', models.CharField(default=annotation.models.new_invite_token, editable=False, max_length=64, unique=True)),
                ('open_link_enabled', models.BooleanField(default=False, help_text='One shared link that creates a participant per visitor, up to the cap.')),
                ('open_link_cap', models.PositiveIntegerField(default=0, help_text='Most participants the open link creates.')),
                ('status', models.CharField(choices=[('draft', 'Draft'), ('open', 'Open for annotators'), ('closed', 'Closed'), ('archived', 'Archived')], default='draft', max_length=16)),
                ('created_at', models.DateTimeField(auto_now_add=True)),
                ('updated_at', models.DateTimeField(auto_now=True)),
            ],
            options={
                'verbose_name_plural': 'studies',
                'ordering': ['-created_at'],
            },
        ),
        migrations.CreateModel(
            name='AnalysisRunInputs',
            fields=[
                ('run', models.OneToOneField(on_delete=django.db.models.deletion.CASCADE, primary_key=True, related_name='inputs', serialize=False, to='annotation.analysisrun')),
                ('requested_at', models.DateTimeField(help_text='The alternatives request these inputs belong to.')),
                ('data', models.BinaryField(help_text='annotation.alternatives.alternatives_inputs_pack: compressed scores, labels and settings.')),
            ],
        ),
        migrations.CreateModel(
            name='AnalysisState',
            fields=[
                ('study', models.OneToOneField(on_delete=django.db.models.deletion.CASCADE, primary_key=True, related_name='analysis_state', serialize=False, to='annotation.study')),
                ('status', models.CharField(choices=[('idle', 'Up to date'), ('queued', 'Waiting for a worker'), ('running', 'Computing')], default='idle', max_length=16)),
                ('dirty', models.BooleanField(default=False, help_text='Requested again while running: run once more.')),
                ('queued_at', models.DateTimeField(blank=True, null=True)),
                ('started_at', models.DateTimeField(blank=True, null=True)),
                ('finished_at', models.DateTimeField(blank=True, null=True)),
                ('error', models.TextField(blank=True, help_text='Why the last run failed; empty when it succeeded.')),
            ],
        ),
        migrations.AddField(
            model_name='analysisrun',
            name='study',
            field=models.OneToOneField(on_delete=django.db.models.deletion.CASCADE, related_name='analysis_run', to='annotation.study'),
        ),
        migrations.CreateModel(
            name='Item',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('external_id', models.CharField(max_length=200)),
                ('target', models.TextField(help_text='The sentence to label.')),
                ('preceding', models.TextField(blank=True, help_text='The sentence before the target (context).')),
                ('following', models.TextField(blank=True, help_text='The sentence after the target (context).')),
                ('metadata', models.JSONField(blank=True, default=dict)),
                ('attention_check_answer', models.SmallIntegerField(blank=True, choices=[(1, '1 (positive: ableist)'), (0, '0 (negative: not ableist)'), (-1, '-1 (unrelated / needs more context)')], help_text='Set for attention-check items: the label an attentive annotator gives.', null=True)),
                ('position', models.PositiveIntegerField(default=0, help_text='Order within the study.')),
                ('created_at', models.DateTimeField(auto_now_add=True)),
                ('study', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='items', to='annotation.study')),
            ],
            options={
                'ordering': ['study', 'position', 'id'],
            },
        ),
        migrations.CreateModel(
            name='ItemGroundTruth',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('n_labels', models.PositiveIntegerField()),
                ('n_excluded', models.PositiveIntegerField()),
                ('majority_label', models.SmallIntegerField(null=True)),
                ('majority_tie', models.BooleanField()),
                ('n_weighted', models.PositiveIntegerField()),
                ('weighted_score', models.FloatField(null=True)),
                ('weighted_label', models.SmallIntegerField(null=True)),
                ('weighted_tie', models.BooleanField()),
                ('item', models.OneToOneField(on_delete=django.db.models.deletion.CASCADE, related_name='ground_truth', to='annotation.item')),
            ],
        ),
        migrations.CreateModel(
            name='ItemImport',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('filename', models.CharField(max_length=255)),
                ('file_format', models.CharField(max_length=8)),
                ('content', models.BinaryField()),
                ('sha256', models.CharField(max_length=64)),
                ('options', models.JSONField(blank=True, default=dict, help_text='Column mapping and parse options.')),
                ('status', models.CharField(choices=[('pending', 'Waiting for a worker'), ('succeeded', 'Imported'), ('failed', 'Failed: nothing imported')], default='pending', max_length=16)),
                ('errors', models.JSONField(blank=True, default=list)),
                ('warnings', models.JSONField(blank=True, default=list)),
                ('encoding', models.CharField(blank=True, max_length=32)),
                ('n_items', models.PositiveIntegerField(default=0)),
                ('n_labels', models.PositiveIntegerField(default=0)),
                ('n_participants', models.PositiveIntegerField(default=0)),
                ('created_at', models.DateTimeField(auto_now_add=True)),
                ('queued_at', models.DateTimeField(blank=True, help_text='When its task was last sent (empty: not sent; the recovery sends it).', null=True)),
                ('started_at', models.DateTimeField(blank=True, null=True)),
                ('finished_at', models.DateTimeField(blank=True, null=True)),
                ('study', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='imports', to='annotation.study')),
                ('uploaded_by', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, to=settings.AUTH_USER_MODEL)),
            ],
            options={
                'ordering': ['-created_at'],
            },
        ),
        migrations.AddField(
            model_name='item',
            name='source_import',
            field=models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='items', to='annotation.itemimport'),
        ),
        migrations.CreateModel(
            name='ItemSetMember',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('set_name', models.CharField(max_length=20)),
                ('label', models.SmallIntegerField()),
                ('item', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='+', to='annotation.item')),
                ('study', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='item_sets', to='annotation.study')),
            ],
        ),
        migrations.CreateModel(
            name='Participant',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('pseudonym', models.CharField(help_text='The only name under which the participant appears in exports.', max_length=100)),
                ('invite_token', models.CharField(default=annotation.models.new_invite_token, editable=False, max_length=64, unique=True)),
                ('team', models.CharField(default='default', help_text='Used for team-relative weights.', max_length=100)),
                ('status', models.CharField(choices=[('invited', 'Invited'), ('active', 'In progress'), ('completed', 'Completed'), ('withdrawn', 'Withdrawn'), ('imported', 'Imported with a data file')], default='invited', max_length=16)),
                ('via_open_link', models.BooleanField(default=False)),
                ('prolific_pid', models.CharField(blank=True, max_length=64)),
                ('prolific_study_id', models.CharField(blank=True, max_length=64)),
                ('prolific_session_id', models.CharField(blank=True, max_length=64)),
                ('seed', models.BigIntegerField(default=annotation.models.new_seed, help_text="Seeds this participant's item orders and IAT trials.")),
                ('read_instructions_at', models.DateTimeField(blank=True, null=True)),
                ('attention_checks_passed', models.BooleanField(blank=True, null=True)),
                ('attention_check_score', models.FloatField(blank=True, null=True)),
                ('created_at', models.DateTimeField(auto_now_add=True)),
                ('updated_at', models.DateTimeField(auto_now=True)),
                ('started_at', models.DateTimeField(blank=True, help_text='When consent was given.', null=True)),
                ('completed_at', models.DateTimeField(blank=True, null=True)),
                ('withdrawn_at', models.DateTimeField(blank=True, null=True)),
                ('source_import', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='participants', to='annotation.itemimport')),
                ('study', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='participants', to='annotation.study')),
            ],
            options={
                'ordering': ['study', 'pseudonym'],
            },
        ),
        migrations.CreateModel(
            name='Label',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('value', models.SmallIntegerField(choices=[(1, '1 (positive: ableist)'), (0, '0 (negative: not ableist)'), (-1, '-1 (unrelated / needs more context)')])),
                ('rationale', models.TextField(blank=True)),
                ('created_at', models.DateTimeField(auto_now_add=True)),
                ('updated_at', models.DateTimeField(auto_now=True)),
                ('item', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='labels', to='annotation.item')),
                ('participant', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='labels', to='annotation.participant')),
            ],
            options={
                'ordering': ['item', 'participant'],
            },
        ),
        migrations.CreateModel(
            name='Assignment',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('position', models.PositiveIntegerField()),
                ('assigned_at', models.DateTimeField(auto_now_add=True)),
                ('expires_at', models.DateTimeField()),
                ('item', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='assignments', to='annotation.item')),
                ('participant', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='assignments', to='annotation.participant')),
            ],
            options={
                'ordering': ['participant', 'position'],
            },
        ),
        migrations.CreateModel(
            name='ParticipantWeight',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('aq', models.FloatField(null=True)),
                ('sata', models.FloatField(null=True)),
                ('iat_d', models.FloatField(null=True)),
                ('aq_norm', models.FloatField(null=True)),
                ('sata_norm', models.FloatField(null=True)),
                ('iat_norm', models.FloatField(null=True)),
                ('trust_raw', models.FloatField(null=True)),
                ('weight', models.FloatField(null=True)),
                ('included', models.BooleanField()),
                ('bias_index', models.FloatField(null=True)),
                ('high_aq', models.BooleanField()),
                ('low_aq', models.BooleanField()),
                ('low_bias', models.BooleanField()),
                ('high_bias', models.BooleanField()),
                ('participant', models.OneToOneField(on_delete=django.db.models.deletion.CASCADE, related_name='weight', to='annotation.participant')),
            ],
        ),
        migrations.CreateModel(
            name='StudyAnalysisSettings',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('missing_instrument', models.CharField(choices=[('exclude', 'Give no weight to annotators missing an instrument'), ('average', 'Average the instruments an annotator has')], default='exclude', max_length=8)),
                ('threshold', models.FloatField(default=0.5, help_text='Weighted score at or above which the label is 1.')),
                ('weighted_tie_rule', models.CharField(choices=[('none', 'No label (listed as a tie)'), ('positive', '1'), ('negative', '0')], default='positive', help_text='Label when the weighted score equals the threshold.', max_length=8)),
                ('majority_tie_rule', models.CharField(choices=[('none', 'No label (listed as a tie)'), ('positive', '1'), ('negative', '0')], default='none', help_text='Label shown for a majority tie (always marked as a tie).', max_length=8)),
                ('aq_high', models.FloatField(default=32, help_text='High-AQ group: AQ ≥ this (ICL-A).')),
                ('aq_low', models.FloatField(default=26, help_text='Low-AQ group: AQ < this (ICL-B).')),
                ('bias_method', models.CharField(choices=[('quantile', 'Quantiles of the bias index'), ('threshold', 'Values of the bias index')], default='quantile', max_length=10)),
                ('bias_low_cut', models.FloatField(default=0.25)),
                ('bias_high_cut', models.FloatField(default=0.75)),
                ('min_group_labels', models.PositiveSmallIntegerField(default=2, help_text='Labels needed for a test-set item.')),
                ('icl_size', models.PositiveIntegerField(default=284)),
                ('icl_seed', models.IntegerField(default=0)),
                ('evaluation_set', models.CharField(blank=True, help_text="Test set the ICL examples must not overlap (e.g. 'all').", max_length=20)),
                ('touch_iat_in_weights', models.BooleanField(default=True, help_text="Let IAT D scores measured by touch (or partly by touch) enter the trust weights. Tap latencies are longer and differ from key latencies; D divides by each participant's own SD, which removes most of that, but touch and keyboard D are not known to be equivalent. Off: a touch D counts as missing, and the missing-instrument rule decides.")),
                ('updated_at', models.DateTimeField(auto_now=True)),
                ('study', models.OneToOneField(on_delete=django.db.models.deletion.CASCADE, related_name='analysis_settings', to='annotation.study')),
            ],
            options={
                'verbose_name_plural': 'study analysis settings',
            },
        ),
        migrations.AddConstraint(
            model_name='item',
            constraint=models.UniqueConstraint(fields=('study', 'external_id'), name='item_external_id_unique_in_study'),
        ),
        migrations.AddConstraint(
            model_name='itemsetmember',
            constraint=models.UniqueConstraint(fields=('set_name', 'item'), name='item_once_per_set'),
        ),
        migrations.AddConstraint(
            model_name='participant',
            constraint=models.UniqueConstraint(fields=('study', 'pseudonym'), name='participant_pseudonym_unique_in_study'),
        ),
        migrations.AddConstraint(
            model_name='label',
            constraint=models.UniqueConstraint(fields=('participant', 'item'), name='label_one_per_participant_and_item'),
        ),
        migrations.AddConstraint(
            model_name='label',
            constraint=models.CheckConstraint(condition=models.Q(('value__in', [-1, 0, 1])), name='label_value_known'),
        ),
        migrations.AddIndex(
            model_name='assignment',
            index=models.Index(fields=['item', 'expires_at'], name='annotation__item_id_8829f0_idx'),
        ),
        migrations.AddConstraint(
            model_name='assignment',
            constraint=models.UniqueConstraint(fields=('participant', 'item'), name='assignment_once_per_participant_item'),
        ),
    ]
