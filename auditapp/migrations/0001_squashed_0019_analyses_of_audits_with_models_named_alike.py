"""The auditapp app's migrations up to 0019_analyses_of_audits_with_models_named_alike, squashed: the tables as those migrations left them, made
in one step for a new database (no data step: a new database has no data). A database that applied some of the
replaced migrations goes on with them (they stay until no database needs them); recomputations of stored results
that an upgrade needs are upgrade steps (auditapp/upgrade_steps.py), never migrations."""

import auditapp.models
import auditapp.engine.registry
import django.core.validators
import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models


class Migration(migrations.Migration):

    replaces = [('auditapp', '0001_initial'), ('auditapp', '0002_parallel_tasks_default_one'), ('auditapp', '0003_self_report_audits'), ('auditapp', '0004_self_report_audit_admin'), ('auditapp', '0005_item_variants'), ('auditapp', '0006_endpoint_limits_and_addresses'), ('auditapp', '0007_corpora_judgments_scorer_kinds'), ('auditapp', '0008_registry_paradigms'), ('auditapp', '0009_judgments_of_stored_replies'), ('auditapp', '0010_structured_output'), ('auditapp', '0011_judgment_request_index_from_the_unique_one'), ('auditapp', '0012_audit_extractions'), ('auditapp', '0013_audit_model_structured_output_form_at_preparation'), ('auditapp', '0014_extraction_lease_and_stored_metrics'), ('auditapp', '0015_audit_condition_example_snapshot'), ('auditapp', '0016_audit_request_turns_of_a_conversation'), ('auditapp', '0017_judgments_without_database_foreign_keys'), ('auditapp', '0018_metric_notes_for_audits_analysed_before_them'), ('auditapp', '0019_analyses_of_audits_with_models_named_alike')]

    initial = True

    dependencies = [
        ('annotation', '0002_analysis'),
        ('annotation', '0005_analysis_state_outcome'),
        ('annotation', '0008_analysisrun_alternatives_computed_by_own_task'),
        ('psychometrics', '0005_iat_input_modality'),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.CreateModel(
            name='LLMReply',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('key', models.CharField(max_length=64, unique=True)),
                ('text', models.TextField()),
                ('finish_reason', models.CharField(blank=True, max_length=40)),
                ('prompt_tokens', models.PositiveIntegerField(null=True)),
                ('completion_tokens', models.PositiveIntegerField(null=True)),
                ('model_reported', models.CharField(blank=True, max_length=200)),
                ('fingerprint', models.CharField(blank=True, max_length=200)),
                ('latency_ms', models.FloatField()),
                ('attempts', models.PositiveSmallIntegerField()),
                ('created_at', models.DateTimeField(auto_now_add=True)),
            ],
            options={
                'verbose_name': 'LLM reply',
                'verbose_name_plural': 'LLM replies',
            },
        ),
        migrations.CreateModel(
            name='Audit',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('name', models.CharField(max_length=200)),
                ('paradigm', models.CharField(choices=auditapp.engine.registry.choices, default='classification', help_text="The audit's paradigm (auditapp.engine.registry).", max_length=40)),
                ('design', models.JSONField(blank=True, default=dict, editable=False, help_text="The paradigm's own settings (self-report: instruments, forms, mode, validity rules and each administration's questionnaire).")),
                ('replicates', models.PositiveSmallIntegerField(default=1)),
                ('seed', models.BigIntegerField(default=0, help_text="Seeds example and item order (with each item's id).")),
                ('use_cache', models.BooleanField(default=True, help_text='Reuse stored replies to identical requests.')),
                ('structured_output', models.BooleanField(default=False, help_text="Constrain chat models' replies to the paradigm's answer schema (JSON), sent the way each endpoint's server takes it. Off: the paper's free-text prompts, parsed as they come. On changes what is measured: the manifest and dashboard say so.")),
                ('error_budget', models.FloatField(default=0.2, help_text="Stop when more than this share of the audit's requests has failed (0–1).")),
                ('unparsed', models.CharField(choices=[('exclude', 'Excluded from the metrics'), ('wrong', 'Counted as wrong')], default='exclude', help_text='How refusals, unparseable replies and failures enter the metrics.', max_length=10)),
                ('n_resamples', models.PositiveIntegerField(default=2000, help_text='Bootstrap resamples for the CIs.')),
                ('parallel_tasks', models.PositiveSmallIntegerField(default=1, help_text="Worker tasks that send this audit's requests at the same time, each with its share of the endpoint's concurrency. One is enough for LLMs that take a second or more; raise it (up to the worker processes free) for fast endpoints.")),
                ('status', models.CharField(choices=[('queued', 'Queued'), ('running', 'Running'), ('paused', 'Paused'), ('stopped', 'Stopped (error budget exceeded)'), ('cancelled', 'Cancelled'), ('analysing', 'Computing metrics'), ('completed', 'Completed'), ('failed', 'Failed')], default='queued', max_length=16)),
                ('status_reason', models.TextField(blank=True)),
                ('manifest', models.JSONField(blank=True, default=dict, editable=False)),
                ('analysis', models.JSONField(blank=True, default=dict, editable=False, help_text='Δκ t-test and bootstrap, per-model and per-condition means.')),
                ('n_requests', models.PositiveIntegerField(default=0, editable=False)),
                ('created_at', models.DateTimeField(auto_now_add=True)),
                ('started_at', models.DateTimeField(blank=True, null=True)),
                ('finished_at', models.DateTimeField(blank=True, null=True)),
                ('analysed_at', models.DateTimeField(blank=True, null=True)),
                ('created_by', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='+', to=settings.AUTH_USER_MODEL)),
                ('study', models.ForeignKey(blank=True, help_text='The study whose ground truth a classification audit is measured against.', null=True, on_delete=django.db.models.deletion.PROTECT, related_name='audits', to='annotation.study')),
            ],
            options={
                'ordering': ['-created_at', '-id'],
            },
        ),
        migrations.CreateModel(
            name='AuditChunk',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('leased_until', models.DateTimeField()),
                ('created_at', models.DateTimeField(auto_now_add=True)),
                ('released_at', models.DateTimeField(blank=True, null=True)),
                ('retry_state', models.JSONField(blank=True, default=dict, help_text='Requests waiting to retry now, per model × condition, and the last reason.')),
                ('audit', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='chunks', to='auditapp.audit')),
            ],
        ),
        migrations.CreateModel(
            name='AuditModel',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('model', models.CharField(help_text="The model's name at the endpoint.", max_length=200)),
                ('label', models.CharField(blank=True, help_text='Name in tables (default: the model name).', max_length=200)),
                ('params', models.JSONField(blank=True, default=dict, help_text="Generation parameters; empty = the endpoint's own defaults.")),
                ('digest', models.CharField(blank=True, editable=False, help_text='The model version/digest the endpoint reported when the audit started.', max_length=200)),
                ('structured_output', models.CharField(blank=True, default='', editable=False, help_text='The endpoint\'s structured-output form when the audit was prepared, for an audit with structured output ("" otherwise): the form its requests are sent in, as the manifest says, whatever the endpoint says later.', max_length=32)),
                ('position', models.PositiveSmallIntegerField(default=0)),
                ('audit', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='models', to='auditapp.audit')),
            ],
            options={
                'ordering': ['audit', 'position', 'id'],
            },
        ),
        migrations.CreateModel(
            name='AuditRequest',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('condition', models.CharField(help_text='Classification: the prompting condition. Self-report: the form (original:<instrument> or masked).', max_length=40)),
                ('unit', models.CharField(blank=True, help_text='Self-report: item:<position> or batch; corpus audits: a unit key or batch:<n>.', max_length=300)),
                ('replicate', models.PositiveSmallIntegerField(default=0)),
                ('order', models.BigIntegerField(help_text='Dispatch order, seeded from the audit seed and the item id.')),
                ('key', models.CharField(db_index=True, help_text='Blank only for a later turn whose earlier turn is not answered yet.', max_length=64)),
                ('turn', models.PositiveSmallIntegerField(default=0, help_text='0, or n for the (n+1)th turn of a conversation.')),
                ('state', models.CharField(choices=[('pending', 'Waiting'), ('answered', 'Answered'), ('failed', 'Failed')], default='pending', max_length=10)),
                ('from_cache', models.BooleanField(default=False)),
                ('attempts', models.PositiveSmallIntegerField(default=0)),
                ('error', models.TextField(blank=True)),
                ('finished_at', models.DateTimeField(blank=True, null=True)),
                ('outcome', models.CharField(blank=True, choices=[('label', 'Parsed label'), ('score', 'Parsed score'), ('refusal', 'Refusal'), ('unparseable', 'Unparseable reply'), ('error', 'API error')], max_length=12)),
                ('label', models.SmallIntegerField(null=True)),
                ('explanation', models.TextField(blank=True)),
                ('parse_reason', models.CharField(blank=True, max_length=200)),
                ('audit', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='requests', to='auditapp.audit')),
                ('audit_model', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='requests', to='auditapp.auditmodel')),
                ('chunk', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='requests', to='auditapp.auditchunk')),
                ('item', models.ForeignKey(blank=True, help_text='The sentence a classification request asks about.', null=True, on_delete=django.db.models.deletion.PROTECT, related_name='+', to='annotation.item')),
                ('previous', models.ForeignKey(blank=True, help_text="The conversation's turn before this one (none for turn 0).", null=True, on_delete=django.db.models.deletion.CASCADE, related_name='next_turns', to='auditapp.auditrequest')),
                ('reply', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.PROTECT, related_name='+', to='auditapp.llmreply')),
            ],
        ),
        migrations.CreateModel(
            name='Corpus',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('paradigm', models.CharField(max_length=40)),
                ('name', models.CharField(max_length=200)),
                ('content_hash', models.CharField(editable=False, max_length=64)),
                ('provenance', models.JSONField(blank=True, default=dict, editable=False)),
                ('n_units', models.PositiveIntegerField(default=0, editable=False)),
                ('created_at', models.DateTimeField(auto_now_add=True)),
                ('created_by', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='+', to=settings.AUTH_USER_MODEL)),
            ],
            options={
                'verbose_name_plural': 'corpora',
                'ordering': ['-created_at', '-id'],
            },
        ),
        migrations.AddField(
            model_name='audit',
            name='corpus',
            field=models.ForeignKey(blank=True, help_text='The units a corpus-based audit judges.', null=True, on_delete=django.db.models.deletion.PROTECT, related_name='audits', to='auditapp.corpus'),
        ),
        migrations.CreateModel(
            name='CorpusUnit',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('key', models.CharField(max_length=300)),
                ('text', models.TextField()),
                ('factors', models.JSONField(blank=True, default=dict)),
                ('fields', models.JSONField(blank=True, default=dict)),
                ('pair', models.CharField(blank=True, max_length=300)),
                ('position', models.PositiveIntegerField()),
                ('corpus', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='units', to='auditapp.corpus')),
            ],
            options={
                'ordering': ['corpus', 'position'],
            },
        ),
        migrations.CreateModel(
            name='ItemVariant',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('source', models.SlugField(max_length=100)),
                ('number', models.PositiveIntegerField()),
                ('text', models.TextField()),
                ('note', models.TextField(blank=True, help_text='Why and how the wording was changed.')),
                ('active', models.BooleanField(default=True, help_text='Used by audits launched from now on.')),
                ('created_at', models.DateTimeField(auto_now_add=True)),
                ('created_by', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='+', to=settings.AUTH_USER_MODEL)),
            ],
            options={
                'ordering': ['source', 'number', 'id'],
            },
        ),
        migrations.CreateModel(
            name='LLMEndpoint',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('name', models.CharField(max_length=100, unique=True)),
                ('protocol', models.CharField(choices=[('openai', 'OpenAI-compatible (/v1/chat/completions: vLLM, llama.cpp, OpenAI, routers)'), ('ollama', 'Ollama (/api/chat)'), ('http_json', 'HTTP JSON scoring service (a JSON POST whose reply holds a score)'), ('local', 'Local scorers in the worker (VADER, TextBlob; no server)')], default='openai', max_length=16)),
                ('base_url', models.URLField(help_text='e.g. http://127.0.0.1:8000 (vLLM), https://api.openai.com, http://127.0.0.1:11434 (Ollama). For OpenAI-compatible servers /v1/chat/completions is appended unless the URL ends in /v1.', max_length=500, validators=[auditapp.models.validate_endpoint_address])),
                ('api_key_env', models.CharField(blank=True, help_text='Name of the environment variable (of the web and worker processes) that holds the API key. The key itself is never stored in the database.', max_length=100)),
                ('max_concurrency', models.PositiveIntegerField(default=8, help_text='Most requests in flight at once, across all workers.', validators=[django.core.validators.MinValueValidator(1), django.core.validators.MaxValueValidator(512)])),
                ('requests_per_minute', models.PositiveIntegerField(blank=True, help_text='Optional rate limit, across all workers.', null=True, validators=[django.core.validators.MinValueValidator(1)])),
                ('attempt_timeout_s', models.FloatField(default=120, help_text='Time-out of one attempt (seconds).', validators=[auditapp.models.validate_seconds])),
                ('deadline_s', models.FloatField(default=600, help_text='Total time for one request, all retries included.', validators=[auditapp.models.validate_seconds])),
                ('max_attempts', models.PositiveSmallIntegerField(default=5, help_text='Attempts per request (1 = no retry).', validators=[django.core.validators.MinValueValidator(1), django.core.validators.MaxValueValidator(100)])),
                ('structured_output', models.CharField(blank=True, choices=[('', 'None (free text only)'), ('openai_json_schema', 'OpenAI response_format json_schema (OpenAI, recent vLLM/llama.cpp)'), ('llamacpp_json_object', 'llama.cpp response_format json_object with schema'), ('vllm_guided_json', 'vLLM guided_json'), ('ollama_format', 'Ollama format (JSON schema)')], default='', help_text='Chat endpoints: how the server takes a JSON schema that constrains replies, for audits with structured output (auditapp.llm_clients, "Structured output").', max_length=32)),
                ('request_template', models.JSONField(blank=True, help_text='HTTP JSON scorers: the request body, with the string "{{text}}" once where the text goes, e.g. {"inputs": "{{text}}"}.', null=True)),
                ('score_path', models.CharField(blank=True, help_text="HTTP JSON scorers: the JMESPath of the score in the reply, e.g. attributeScores.TOXICITY.summaryScore.value or [0][?label=='POSITIVE'].score | [0].", max_length=300)),
                ('score_min', models.FloatField(default=-1.0, help_text='HTTP JSON scorers: the lowest valid score.')),
                ('score_max', models.FloatField(default=1.0, help_text='HTTP JSON scorers: the highest valid score.')),
                ('listed_models', models.JSONField(blank=True, default=list, editable=False, help_text='The models the endpoint reported at the last listing.')),
                ('listed_at', models.DateTimeField(blank=True, editable=False, null=True)),
                ('created_at', models.DateTimeField(auto_now_add=True)),
            ],
            options={
                'verbose_name': 'LLM endpoint',
                'ordering': ['name'],
                'constraints': [models.CheckConstraint(condition=models.Q(('max_concurrency__gte', 1)), name='endpoint_max_concurrency_positive'), models.CheckConstraint(condition=models.Q(('requests_per_minute__isnull', True), ('requests_per_minute__gte', 1), _connector='OR'), name='endpoint_requests_per_minute_positive'), models.CheckConstraint(condition=models.Q(('attempt_timeout_s__gt', 0)), name='endpoint_attempt_timeout_positive'), models.CheckConstraint(condition=models.Q(('deadline_s__gt', 0)), name='endpoint_deadline_positive'), models.CheckConstraint(condition=models.Q(('max_attempts__gte', 1)), name='endpoint_max_attempts_positive')],
            },
        ),
        migrations.AddField(
            model_name='auditmodel',
            name='endpoint',
            field=models.ForeignKey(on_delete=django.db.models.deletion.PROTECT, related_name='+', to='auditapp.llmendpoint'),
        ),
        migrations.CreateModel(
            name='AuditExtraction',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('mode', models.CharField(choices=[('rules', 'Verbal rules'), ('model', 'A model asked which label the reply gives')], max_length=10)),
                ('model', models.CharField(blank=True, help_text="The extractor model's name at the endpoint.", max_length=200)),
                ('params', models.JSONField(blank=True, default=dict, help_text="The extractor model's generation parameters.")),
                ('digest', models.CharField(blank=True, editable=False, help_text="The extractor model's version/digest the endpoint reported.", max_length=200)),
                ('version', models.CharField(help_text="The rules' version, or the extraction template's.", max_length=20)),
                ('extractor', models.CharField(help_text='Who extracted, in words (rules and version, or model, endpoint and template version).', max_length=300)),
                ('identity', models.CharField(editable=False, max_length=64)),
                ('status', models.CharField(choices=[('queued', 'Queued'), ('running', 'Running'), ('completed', 'Completed'), ('failed', 'Failed')], default='queued', max_length=10)),
                ('status_reason', models.TextField(blank=True)),
                ('leased_until', models.DateTimeField(blank=True, editable=False, help_text="Running: the worker's lease, renewed while it runs; another may take it over once it has passed. Queued: when the workers' recovery sends its task again if none has started it.", null=True)),
                ('results', models.JSONField(blank=True, editable=False, help_text='The metrics with this extraction, computed when it completes and when the audit is analysed again: {"cells": [{model, condition, reference, values}], "analysis": {…}}.', null=True)),
                ('created_at', models.DateTimeField(auto_now_add=True)),
                ('finished_at', models.DateTimeField(blank=True, null=True)),
                ('audit', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='extractions', to='auditapp.audit')),
                ('created_by', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='+', to=settings.AUTH_USER_MODEL)),
                ('endpoint', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.PROTECT, related_name='+', to='auditapp.llmendpoint')),
            ],
            options={
                'ordering': ['audit', 'id'],
            },
        ),
        migrations.CreateModel(
            name='AuditExtractionLabel',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('outcome', models.CharField(max_length=12)),
                ('label', models.SmallIntegerField(null=True)),
                ('reason', models.CharField(blank=True, max_length=300)),
                ('key', models.CharField(blank=True, max_length=64)),
                ('created_at', models.DateTimeField(auto_now_add=True)),
                ('extraction', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='labels', to='auditapp.auditextraction')),
                ('request', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='+', to='auditapp.auditrequest')),
                ('reply', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.PROTECT, related_name='+', to='auditapp.llmreply')),
            ],
        ),
        migrations.CreateModel(
            name='PromptTemplate',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('paradigm', models.CharField(default='classification', max_length=40)),
                ('condition', models.CharField(max_length=40)),
                ('name', models.CharField(max_length=200)),
                ('text', models.TextField()),
                ('note', models.TextField(blank=True, help_text='What was changed from the source, and why.')),
                ('source', models.CharField(blank=True, max_length=300)),
                ('content_hash', models.CharField(editable=False, max_length=64)),
                ('created_at', models.DateTimeField(auto_now_add=True)),
            ],
            options={
                'ordering': ['paradigm', 'condition', '-created_at', '-id'],
                'constraints': [models.UniqueConstraint(fields=('paradigm', 'condition', 'content_hash'), name='template_version_unique')],
            },
        ),
        migrations.CreateModel(
            name='AuditCondition',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('condition', models.CharField(max_length=40)),
                ('example_set', models.CharField(blank=True, help_text='Item set whose items are the examples.', max_length=20)),
                ('examples', models.JSONField(blank=True, help_text="The example set's [item id, label] pairs at launch, which the prompts show (a recompute of the study redraws its ICL sets); null for audits created before the snapshot, which read the set live.", null=True)),
                ('position', models.PositiveSmallIntegerField(default=0)),
                ('audit', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='conditions', to='auditapp.audit')),
                ('template', models.ForeignKey(on_delete=django.db.models.deletion.PROTECT, related_name='+', to='auditapp.prompttemplate')),
            ],
            options={
                'ordering': ['audit', 'position', 'id'],
            },
        ),
        migrations.CreateModel(
            name='RecordedScorer',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('name', models.CharField(max_length=200)),
                ('provenance', models.JSONField(blank=True, default=dict, editable=False)),
                ('created_at', models.DateTimeField(auto_now_add=True)),
                ('corpus', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='recorded_scorers', to='auditapp.corpus')),
            ],
            options={
                'ordering': ['corpus', 'name'],
            },
        ),
        migrations.CreateModel(
            name='RecordedScore',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('value', models.FloatField(null=True)),
                ('reason', models.CharField(blank=True, max_length=200)),
                ('unit', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='+', to='auditapp.corpusunit')),
                ('scorer', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='scores', to='auditapp.recordedscorer')),
            ],
        ),
        migrations.CreateModel(
            name='AuditItem',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('majority_label', models.SmallIntegerField(null=True)),
                ('weighted_label', models.SmallIntegerField(null=True)),
                ('audit', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='items', to='auditapp.audit')),
                ('item', models.ForeignKey(on_delete=django.db.models.deletion.PROTECT, related_name='+', to='annotation.item')),
            ],
            options={
                'constraints': [models.UniqueConstraint(fields=('audit', 'item'), name='audit_item_once')],
            },
        ),
        migrations.CreateModel(
            name='AuditMetric',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('condition', models.CharField(max_length=40)),
                ('reference', models.CharField(choices=[('weighted', 'Weighted ground truth (eq. 6)'), ('majority', 'Majority vote')], max_length=10)),
                ('unparsed', models.CharField(max_length=10)),
                ('values', models.JSONField(help_text='kappa, f1, precision, recall, accuracy with *_low/*_high, n, coverage, …')),
                ('audit', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='metrics', to='auditapp.audit')),
                ('audit_model', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='+', to='auditapp.auditmodel')),
            ],
            options={
                'constraints': [models.UniqueConstraint(fields=('audit', 'audit_model', 'condition', 'reference'), name='audit_metric_once')],
            },
        ),
        migrations.CreateModel(
            name='AuditJudgment',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('unit', models.CharField(max_length=300)),
                ('outcome', models.CharField(max_length=12)),
                ('value', models.FloatField(null=True)),
                ('label', models.SmallIntegerField(null=True)),
                ('reason', models.CharField(blank=True, max_length=200)),
                ('explanation', models.TextField(blank=True)),
                ('audit', models.ForeignKey(db_constraint=False, on_delete=django.db.models.deletion.CASCADE, related_name='judgments', to='auditapp.audit')),
                ('request', models.ForeignKey(db_constraint=False, db_index=False, on_delete=django.db.models.deletion.CASCADE, related_name='judgments', to='auditapp.auditrequest')),
            ],
            options={
                'constraints': [models.UniqueConstraint(fields=('request', 'unit'), name='judgment_once')],
            },
        ),
        migrations.AddConstraint(
            model_name='corpus',
            constraint=models.UniqueConstraint(fields=('paradigm', 'content_hash'), name='corpus_content_once'),
        ),
        migrations.AddConstraint(
            model_name='corpusunit',
            constraint=models.UniqueConstraint(fields=('corpus', 'key'), name='corpus_unit_once'),
        ),
        migrations.AddConstraint(
            model_name='itemvariant',
            constraint=models.UniqueConstraint(fields=('source', 'number', 'text'), name='item_variant_once'),
        ),
        migrations.AddConstraint(
            model_name='auditmodel',
            constraint=models.UniqueConstraint(fields=('audit', 'endpoint', 'model', 'params'), name='audit_model_once'),
        ),
        migrations.AddConstraint(
            model_name='auditextraction',
            constraint=models.UniqueConstraint(fields=('audit', 'identity'), name='audit_extraction_once'),
        ),
        migrations.AddIndex(
            model_name='auditrequest',
            index=models.Index(fields=['audit', 'state', 'order'], name='auditapp_au_audit_i_80a602_idx'),
        ),
        migrations.AddIndex(
            model_name='auditrequest',
            index=models.Index(fields=['audit', 'finished_at'], name='auditapp_au_audit_i_f7d813_idx'),
        ),
        migrations.AddConstraint(
            model_name='auditrequest',
            constraint=models.UniqueConstraint(condition=models.Q(('item__isnull', False)), fields=('audit', 'audit_model', 'condition', 'item', 'replicate', 'turn'), name='audit_request_once'),
        ),
        migrations.AddConstraint(
            model_name='auditrequest',
            constraint=models.UniqueConstraint(condition=models.Q(('item__isnull', True)), fields=('audit', 'audit_model', 'condition', 'unit', 'replicate', 'turn'), name='audit_request_unit_once'),
        ),
        migrations.AddConstraint(
            model_name='auditextractionlabel',
            constraint=models.UniqueConstraint(fields=('extraction', 'request'), name='audit_extraction_label_once'),
        ),
        migrations.AddConstraint(
            model_name='auditcondition',
            constraint=models.UniqueConstraint(fields=('audit', 'condition'), name='audit_condition_once'),
        ),
        migrations.AddConstraint(
            model_name='recordedscorer',
            constraint=models.UniqueConstraint(fields=('corpus', 'name'), name='recorded_scorer_once'),
        ),
        migrations.AddConstraint(
            model_name='recordedscore',
            constraint=models.UniqueConstraint(fields=('scorer', 'unit'), name='recorded_score_once'),
        ),
    ]
