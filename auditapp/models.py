"""Models of the audit domain: LLM endpoints, prompt templates, audits, their requests and the stored replies.

The engine (ARCHITECTURE.md, "The audit engine"):

- An :class:`Audit` is a paradigm + data (a study and a snapshot of its ground truth, :class:`AuditItem`)
  + models (:class:`AuditModel`, each an endpoint and a model name with its parameters and digest)
  + conditions (:class:`AuditCondition`, each a versioned :class:`PromptTemplate`) + replicates.
- Every request (:class:`AuditRequest`) has a ``key``: a hash of the endpoint model (base URL, name,
  digest), the generation parameters, the messages and the replicate index. A successful reply is stored
  once per key in :class:`LLMReply` (``key`` is unique), so a retried or re-run task sends only the keys
  still missing, a duplicate completion cannot be counted twice, and a later audit with the same request
  reuses the reply (the cache). Failures are recorded on the request, never in :class:`LLMReply`, so
  errors are never cached.
- Messages are not stored: they are rebuilt from the audit's templates, items, example sets and seed
  whenever they are needed (an ICL prompt with 284 examples is ~85 kB; storing one per request would cost
  gigabytes). The key proves the rebuilt messages are the ones that were sent.
- Workers claim pending requests in :class:`AuditChunk` leases; a lease that is not renewed (a killed
  worker) expires and its requests are claimed again.
"""
from __future__ import annotations

import hashlib
import math
import urllib.parse
from collections import Counter
from collections.abc import Iterable

from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.validators import MaxValueValidator, MinValueValidator
from django.db import models
from django.db.models import Q

from annotation.models import Item, Study
from auditapp.endpoint_addresses import AddressPolicy, EndpointAddressRefused, check_endpoint_url
from auditapp.endpoint_keys import KEY_VARIABLE_PREFIX, key_variable_problem, read_key
from auditapp.engine import registry

MAX_ENDPOINT_SECONDS = 7 * 24 * 3600
MAX_ENDPOINT_CONCURRENCY = 512
MAX_ENDPOINT_ATTEMPTS = 100


def validate_seconds(value: float) -> None:
    """A time-out or deadline: finite, more than 0 and at most a week (0 or less would fail every request
    before it is sent; NaN passes every comparison, so it is refused by name)."""
    if not math.isfinite(value) or not 0 < value <= MAX_ENDPOINT_SECONDS:
        raise ValidationError(f"must be more than 0 and at most {MAX_ENDPOINT_SECONDS} seconds, not {value}",
                              code="seconds")


def validate_key_variable(name: str) -> None:
    """Refuse a key variable outside the allowed names (:mod:`auditapp.endpoint_keys`)."""
    problem = key_variable_problem(name)
    if problem:
        raise ValidationError(problem, code="key_variable")


def endpoint_address_policy() -> AddressPolicy:
    """The address policy of the settings LLM_ENDPOINTS_ALLOW_PRIVATE and LLM_ENDPOINTS_ALLOW_LINK_LOCAL."""
    return AddressPolicy(allow_private=settings.LLM_ENDPOINTS_ALLOW_PRIVATE,
                         allow_link_local=settings.LLM_ENDPOINTS_ALLOW_LINK_LOCAL)


def validate_endpoint_address(url: str) -> None:
    """Refuse a base URL that is not http or https (a URL field takes ftp too, which no endpoint speaks), or that is
    on a link-local or metadata address (or a private one, when the settings say so)."""
    scheme = urllib.parse.urlsplit(url).scheme.lower() if "://" in url else ""
    if not scheme:
        raise ValidationError(f"{url!r} does not say how to reach it: begin it with http:// or https:// (for "
                              f"example http://{url})", code="scheme")
    if scheme not in ("http", "https"):
        raise ValidationError(f"an endpoint is reached over http:// or https://, not {scheme}://", code="scheme")
    try:
        check_endpoint_url(url, endpoint_address_policy())
    except EndpointAddressRefused as error:
        raise ValidationError(f"this address is refused: {error}", code="address") from error


class LLMEndpoint(models.Model):
    """A scorer's endpoint: a chat LLM server, an HTTP JSON scoring service, or the worker's own local scorers
    (``protocol`` is the endpoint's kind; :mod:`auditapp.scorer_kinds` sends to each)."""

    team_path = "team"
    team_shared_with = "shared_with"  # the teams it is shared with may use it

    class Protocol(models.TextChoices):
        OPENAI = "openai", "OpenAI-compatible (/v1/chat/completions: vLLM, llama.cpp, OpenAI, routers)"
        OLLAMA = "ollama", "Ollama (/api/chat)"
        HTTP_JSON = "http_json", "HTTP JSON scoring service (a JSON POST whose reply holds a score)"
        LOCAL = "local", "Local scorers in the worker (VADER, TextBlob; no server)"

    name = models.CharField(max_length=100, unique=True)
    protocol = models.CharField(max_length=16, choices=Protocol.choices, default=Protocol.OPENAI)
    base_url = models.URLField(
        max_length=500, validators=[validate_endpoint_address],
        help_text="e.g. http://127.0.0.1:8000 (vLLM), https://api.openai.com, http://127.0.0.1:11434 (Ollama). "
                  "For OpenAI-compatible servers /v1/chat/completions is appended unless the URL ends in /v1.",
    )
    api_key_env = models.CharField(
        max_length=100, blank=True, validators=[validate_key_variable],
        help_text=f"Name of the environment variable (of the web and worker processes) that holds the API key, "
                  f"starting with {KEY_VARIABLE_PREFIX} (e.g. {KEY_VARIABLE_PREFIX}OPENAI): no other variable of the "
                  f"server can be named. The key itself is never stored in the database.",
    )
    max_concurrency = models.PositiveIntegerField(
        default=8, validators=[MinValueValidator(1), MaxValueValidator(MAX_ENDPOINT_CONCURRENCY)],
        help_text="Most requests in flight at once, across all workers.")
    requests_per_minute = models.PositiveIntegerField(
        null=True, blank=True, validators=[MinValueValidator(1)],
        help_text="Optional rate limit, across all workers.")
    attempt_timeout_s = models.FloatField(default=120, validators=[validate_seconds],
                                          help_text="Time-out of one attempt (seconds).")
    deadline_s = models.FloatField(default=600, validators=[validate_seconds],
                                   help_text="Total time for one request, all retries included.")
    max_attempts = models.PositiveSmallIntegerField(
        default=5, validators=[MinValueValidator(1), MaxValueValidator(MAX_ENDPOINT_ATTEMPTS)],
        help_text="Attempts per request (1 = no retry).")
    class StructuredOutput(models.TextChoices):
        NONE = "", "None (free text only)"
        OPENAI_JSON_SCHEMA = "openai_json_schema", "OpenAI response_format json_schema (OpenAI, recent vLLM/llama.cpp)"
        LLAMACPP_JSON_OBJECT = "llamacpp_json_object", "llama.cpp response_format json_object with schema"
        VLLM_GUIDED_JSON = "vllm_guided_json", "vLLM guided_json"
        OLLAMA_FORMAT = "ollama_format", "Ollama format (JSON schema)"

    structured_output = models.CharField(
        max_length=32, blank=True, default="", choices=StructuredOutput.choices,
        help_text="Chat endpoints: how the server takes a JSON schema that constrains replies, for audits with "
                  "structured output (auditapp.llm_clients, \"Structured output\").")
    request_template = models.JSONField(
        null=True, blank=True,
        help_text='HTTP JSON scorers: the request body, with the string "{{text}}" once where the text goes, '
                  'e.g. {"inputs": "{{text}}"}.')
    score_path = models.CharField(
        max_length=300, blank=True,
        help_text="HTTP JSON scorers: the JMESPath of the score in the reply, e.g. "
                  "attributeScores.TOXICITY.summaryScore.value or [0][?label=='POSITIVE'].score | [0].")
    score_min = models.FloatField(default=-1.0, help_text="HTTP JSON scorers: the lowest valid score.")
    score_max = models.FloatField(default=1.0, help_text="HTTP JSON scorers: the highest valid score.")
    listed_models = models.JSONField(default=list, blank=True, editable=False,
                                     help_text="The models the endpoint reported at the last listing.")
    listed_at = models.DateTimeField(null=True, blank=True, editable=False)
    team = models.ForeignKey("teams.Team", on_delete=models.PROTECT, related_name="endpoints",
                             help_text="The team whose members may see and change it (teams.scoping).")
    shared_with = models.ManyToManyField(
        "teams.Team", blank=True, related_name="shared_endpoints",
        help_text="Other teams whose members may use it to launch audits (not change it).")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name"]
        verbose_name = "LLM endpoint"
        # The validators above guard the forms and the API; these guard every other write (shell, scripts).
        constraints = [
            models.CheckConstraint(condition=Q(max_concurrency__gte=1), name="endpoint_max_concurrency_positive"),
            models.CheckConstraint(condition=Q(requests_per_minute__isnull=True) | Q(requests_per_minute__gte=1),
                                   name="endpoint_requests_per_minute_positive"),
            models.CheckConstraint(condition=Q(attempt_timeout_s__gt=0), name="endpoint_attempt_timeout_positive"),
            models.CheckConstraint(condition=Q(deadline_s__gt=0), name="endpoint_deadline_positive"),
            models.CheckConstraint(condition=Q(max_attempts__gte=1), name="endpoint_max_attempts_positive"),
        ]

    def __str__(self) -> str:
        return self.name

    def api_key(self) -> str | None:
        """The key from the environment variable named by ``api_key_env``: None when unset or unnamed, and when the
        name is not one a key may be read from (stored before names were restricted; never looked up)."""
        return read_key(self.api_key_env)


class Corpus(models.Model):
    """A paradigm's units (sentences, vignettes, pairs…), generated or uploaded once per team and reused by any number
    of its audits. ``content_hash`` is the sha256 of the units (:func:`auditapp.corpora.units_hash`); ``provenance``
    says where they came from: a generator and its parameters, or the uploaded files' names and sha256."""

    team_path = "team"

    paradigm = models.CharField(max_length=40)
    name = models.CharField(max_length=200)
    content_hash = models.CharField(max_length=64, editable=False)
    provenance = models.JSONField(default=dict, blank=True, editable=False)
    n_units = models.PositiveIntegerField(default=0, editable=False)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL,
                                   related_name="+")
    team = models.ForeignKey("teams.Team", on_delete=models.PROTECT, related_name="corpora",
                             help_text="The team whose members may see and change it (teams.scoping).")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        verbose_name_plural = "corpora"
        # Once per team: a team uploading or generating what another team holds gets its own corpus, never theirs.
        constraints = [models.UniqueConstraint(fields=["team", "paradigm", "content_hash"],
                                               name="corpus_content_once_per_team")]

    def __str__(self) -> str:
        return f"{self.name} ({self.n_units} units)"


class CorpusUnit(models.Model):
    """One unit of a corpus (:class:`auditapp.engine.protocol.Unit`)."""

    team_path = "corpus__team"

    corpus = models.ForeignKey(Corpus, on_delete=models.CASCADE, related_name="units")
    key = models.CharField(max_length=300)
    text = models.TextField()
    factors = models.JSONField(default=dict, blank=True)
    fields = models.JSONField(default=dict, blank=True)
    pair = models.CharField(max_length=300, blank=True)
    position = models.PositiveIntegerField()

    class Meta:
        ordering = ["corpus", "position"]
        constraints = [models.UniqueConstraint(fields=["corpus", "key"], name="corpus_unit_once")]

    def __str__(self) -> str:
        return f"{self.key}: {self.text[:60]}"


class RecordedScorer(models.Model):
    """Scores a tool gave a corpus's units elsewhere, imported from a file (the public BITS corpus carries about
    twenty tools' scores; nobody can re-run most of them here). Analysed like any scorer, always marked as
    imported; ``provenance`` names the file, its sha256 and the column."""

    team_path = "corpus__team"

    corpus = models.ForeignKey(Corpus, on_delete=models.CASCADE, related_name="recorded_scorers")
    name = models.CharField(max_length=200)
    provenance = models.JSONField(default=dict, blank=True, editable=False)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["corpus", "name"]
        constraints = [models.UniqueConstraint(fields=["corpus", "name"], name="recorded_scorer_once")]

    def __str__(self) -> str:
        return f"{self.name} (recorded)"


class RecordedScore(models.Model):
    """A recorded scorer's score of one unit (``value`` null, with the ``reason``, where the file had none)."""

    team_path = "scorer__corpus__team"

    scorer = models.ForeignKey(RecordedScorer, on_delete=models.CASCADE, related_name="scores")
    unit = models.ForeignKey(CorpusUnit, on_delete=models.CASCADE, related_name="+")
    value = models.FloatField(null=True)
    reason = models.CharField(max_length=200, blank=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["scorer", "unit"], name="recorded_score_once")]

    def __str__(self) -> str:
        return f"Recorded scorer {self.scorer_id}, unit {self.unit_id}: {self.value}"


class PromptTemplate(models.Model):
    """One version of a condition's prompt. Versions are identified by the sha256 of their text and are
    never changed once saved: editing a template in the admin saves a new version."""

    paradigm = models.CharField(max_length=40, default=registry.DEFAULT)
    condition = models.CharField(max_length=40)
    name = models.CharField(max_length=200)
    text = models.TextField()
    note = models.TextField(blank=True, help_text="What was changed from the source, and why.")
    source = models.CharField(max_length=300, blank=True)
    content_hash = models.CharField(max_length=64, editable=False)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["paradigm", "condition", "-created_at", "-id"]
        constraints = [models.UniqueConstraint(fields=["paradigm", "condition", "content_hash"],
                                               name="template_version_unique")]

    def __str__(self) -> str:
        return f"{self.condition} ({self.content_hash[:10]})"

    def save(self, *args, **kwargs):
        self.content_hash = hashlib.sha256(self.text.encode("utf-8")).hexdigest()
        super().save(*args, **kwargs)


class ItemVariant(models.Model):
    """A rewording of an item for the masked self-report form (seed 000 Appendix A, "phrasing variation").

    ``source`` is an instrument's slug, the filler pool's (``ipip_big_five_50``) or the dummy set's
    (``dummy_items``); ``number`` the item's number there. A masked administration shows, for an item with
    active variants, one of them (drawn with the administration's seed) and records which. Rewording a
    published instrument's items may need its authors' permission: the instrument's licence note is shown
    with every rewritten item.
    """

    source = models.SlugField(max_length=100)
    number = models.PositiveIntegerField()
    text = models.TextField()
    note = models.TextField(blank=True, help_text="Why and how the wording was changed.")
    active = models.BooleanField(default=True, help_text="Used by audits launched from now on.")
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL,
                                   related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["source", "number", "id"]
        constraints = [models.UniqueConstraint(fields=["source", "number", "text"], name="item_variant_once")]

    def __str__(self) -> str:
        return f"{self.source} {self.number}: {self.text[:60]}"


class Audit(models.Model):
    team_path = "team"

    class Status(models.TextChoices):
        QUEUED = "queued", "Queued"
        RUNNING = "running", "Running"
        PAUSED = "paused", "Paused"
        STOPPED = "stopped", "Stopped (error budget exceeded)"
        CANCELLED = "cancelled", "Cancelled"
        ANALYSING = "analysing", "Computing metrics"
        COMPLETED = "completed", "Completed"
        FAILED = "failed", "Failed"

    class Unparsed(models.TextChoices):
        EXCLUDE = "exclude", "Excluded from the metrics"
        WRONG = "wrong", "Counted as wrong"

    name = models.CharField(max_length=200)
    paradigm = models.CharField(max_length=40, choices=registry.choices, default=registry.DEFAULT,
                                help_text="The audit's paradigm (auditapp.engine.registry).")
    study = models.ForeignKey(Study, null=True, blank=True, on_delete=models.PROTECT, related_name="audits",
                              help_text="The study whose ground truth a classification audit is measured against.")
    corpus = models.ForeignKey(Corpus, null=True, blank=True, on_delete=models.PROTECT, related_name="audits",
                               help_text="The units a corpus-based audit judges.")
    design = models.JSONField(default=dict, blank=True, editable=False,
                              help_text="The paradigm's own settings (self-report: instruments, forms, mode, "
                                        "validity rules and each administration's questionnaire).")
    replicates = models.PositiveSmallIntegerField(default=1)
    seed = models.BigIntegerField(default=0, help_text="Seeds example and item order (with each item's id).")
    use_cache = models.BooleanField(default=True, help_text="Reuse stored replies to identical requests.")
    structured_output = models.BooleanField(
        default=False, help_text="Constrain chat models' replies to the paradigm's answer schema (JSON), sent the "
                                 "way each endpoint's server takes it. Off: the paper's free-text prompts, parsed "
                                 "as they come. On changes what is measured: the manifest and dashboard say so.")
    error_budget = models.FloatField(
        default=0.2, help_text="Stop when more than this share of the audit's requests has failed (0–1).")
    unparsed = models.CharField(max_length=10, choices=Unparsed.choices, default=Unparsed.EXCLUDE,
                                help_text="How refusals, unparseable replies and failures enter the metrics.")
    n_resamples = models.PositiveIntegerField(default=2000, help_text="Bootstrap resamples for the CIs.")
    parallel_tasks = models.PositiveSmallIntegerField(
        default=1, help_text="Worker tasks that send this audit's requests at the same time, each with its share "
                             "of the endpoint's concurrency. One is enough for LLMs that take a second or more; "
                             "raise it (up to the worker processes free) for fast endpoints.")
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.QUEUED)
    status_reason = models.TextField(blank=True)
    preparation_waiting = models.JSONField(
        default=dict, blank=True, editable=False,
        help_text="While the preparation waits for an endpoint it could not reach: the endpoint's name and id, "
                  "since when (ISO 8601) and the last error; empty otherwise.")
    manifest = models.JSONField(default=dict, blank=True, editable=False)
    analysis = models.JSONField(default=dict, blank=True, editable=False,
                                help_text="Δκ t-test and bootstrap, per-model and per-condition means.")
    n_requests = models.PositiveIntegerField(default=0, editable=False)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL,
                                   related_name="+")
    team = models.ForeignKey("teams.Team", on_delete=models.PROTECT, related_name="audits",
                             help_text="The team whose members may see and change it (teams.scoping).")
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    resumed_at = models.DateTimeField(
        null=True, blank=True, help_text="When sending last began again after a pause, a stop or a failure (resumed, "
                                         "or its failed requests sent again); the progress rate counts from then.")
    finished_at = models.DateTimeField(null=True, blank=True)
    analysed_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return self.name

    def model_names(self) -> dict[int, str]:
        """Each audited model's name in analyses, tables and exports, by id in position order
        (:func:`distinct_model_names`). Sorted here rather than in the query, so that a page of many audits that
        prefetched their models asks nothing more."""
        return distinct_model_names(sorted(self.models.all(), key=lambda model: (model.position, model.id)))

    def models_listing(self) -> list[dict]:
        """The ``models`` of every paradigm's dashboard data, in position order: id, name in tables
        (:meth:`model_names`), and the model's name at its endpoint."""
        audit_models = list(self.models.order_by("position", "id"))
        names = distinct_model_names(audit_models)
        return [{"id": m.id, "label": names[m.id], "model": m.model} for m in audit_models]


class AuditModel(models.Model):
    team_path = "audit__team"

    audit = models.ForeignKey(Audit, on_delete=models.CASCADE, related_name="models")
    endpoint = models.ForeignKey(LLMEndpoint, on_delete=models.PROTECT, related_name="+")
    model = models.CharField(max_length=200, help_text="The model's name at the endpoint.")
    label = models.CharField(max_length=200, blank=True, help_text="Name in tables (default: the model name).")
    params = models.JSONField(default=dict, blank=True,
                              help_text="Generation parameters; empty = the endpoint's own defaults.")
    digest = models.CharField(max_length=200, blank=True, editable=False,
                              help_text="The model version/digest the endpoint reported when the audit started.")
    structured_output = models.CharField(
        max_length=32, blank=True, default="", editable=False,
        help_text="The endpoint's structured-output form when the audit was prepared, for an audit with structured "
                  "output (\"\" otherwise): the form its requests are sent in, as the manifest says, whatever the "
                  "endpoint says later.")
    position = models.PositiveSmallIntegerField(default=0)

    class Meta:
        ordering = ["audit", "position", "id"]
        constraints = [models.UniqueConstraint(fields=["audit", "endpoint", "model", "params"],
                                               name="audit_model_once")]

    def __str__(self) -> str:
        return self.display_name

    @property
    def display_name(self) -> str:
        return self.label or self.model


def distinct_names(named: Iterable[tuple[int, str]]) -> dict[int, str]:
    """Each audit model's name in analyses, tables and exports, from (audit model id, label or model name) pairs,
    by id in the order given: the name, with the id added where two models would share it. Launch refuses such a
    pair now (``launch.launch_problems``), but an audit launched before may have one, and its two models
    must never be merged into one row. (A label typed to look like such a name, "x (audit model 5)", could still
    meet one.)"""
    by_id = dict(named)
    counts = Counter(by_id.values())
    return {model_id: name if counts[name] == 1 else f"{name} (audit model {model_id})"
            for model_id, name in by_id.items()}


def distinct_model_names(audit_models: Iterable[AuditModel]) -> dict[int, str]:
    """:func:`distinct_names` of audit models, by their display names."""
    return distinct_names((m.id, m.display_name) for m in audit_models)


class AuditCondition(models.Model):
    team_path = "audit__team"

    audit = models.ForeignKey(Audit, on_delete=models.CASCADE, related_name="conditions")
    condition = models.CharField(max_length=40)
    template = models.ForeignKey(PromptTemplate, on_delete=models.PROTECT, related_name="+")
    example_set = models.CharField(max_length=20, blank=True, help_text="Item set whose items are the examples.")
    examples = models.JSONField(
        null=True, blank=True,
        help_text="The example set's [item id, label] pairs at launch, which the prompts show (a recompute of the "
                  "study redraws its ICL sets); null for audits created before the snapshot, which read the set live.")
    position = models.PositiveSmallIntegerField(default=0)

    class Meta:
        ordering = ["audit", "position", "id"]
        constraints = [models.UniqueConstraint(fields=["audit", "condition"], name="audit_condition_once")]

    def __str__(self) -> str:
        return f"{self.condition} (audit {self.audit_id})"


class AuditItem(models.Model):
    """An evaluated item and its references, copied from the study's ground truth when the audit was made,
    so the audit's metrics do not change when annotators are added later."""

    team_path = "audit__team"

    audit = models.ForeignKey(Audit, on_delete=models.CASCADE, related_name="items")
    item = models.ForeignKey(Item, on_delete=models.PROTECT, related_name="+")
    majority_label = models.SmallIntegerField(null=True)
    weighted_label = models.SmallIntegerField(null=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["audit", "item"], name="audit_item_once")]

    def __str__(self) -> str:
        return f"Item {self.item_id} of audit {self.audit_id}"


class LLMReply(models.Model):
    """A successful reply, stored once per request key."""

    key = models.CharField(max_length=64, unique=True)
    text = models.TextField()
    finish_reason = models.CharField(max_length=40, blank=True)
    prompt_tokens = models.PositiveIntegerField(null=True)
    completion_tokens = models.PositiveIntegerField(null=True)
    model_reported = models.CharField(max_length=200, blank=True)
    fingerprint = models.CharField(max_length=200, blank=True)
    latency_ms = models.FloatField()
    attempts = models.PositiveSmallIntegerField()
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        verbose_name = "LLM reply"
        verbose_name_plural = "LLM replies"

    def __str__(self) -> str:
        return f"Reply {self.key[:12]}: {self.text[:60]}"


class AuditChunk(models.Model):
    """A worker's lease on the requests it is sending; renewed while the worker lives."""

    team_path = "audit__team"

    audit = models.ForeignKey(Audit, on_delete=models.CASCADE, related_name="chunks")
    leased_until = models.DateTimeField()
    created_at = models.DateTimeField(auto_now_add=True)
    released_at = models.DateTimeField(null=True, blank=True)
    retry_state = models.JSONField(default=dict, blank=True,
                                   help_text="Requests waiting to retry now, per model × condition, and the last reason.")

    def __str__(self) -> str:
        return f"Chunk {self.pk} of audit {self.audit_id}"


class AuditRequest(models.Model):
    team_path = "audit__team"

    class State(models.TextChoices):
        PENDING = "pending", "Waiting"
        ANSWERED = "answered", "Answered"
        FAILED = "failed", "Failed"

    class Outcome(models.TextChoices):
        LABEL = "label", "Parsed label"
        SCORE = "score", "Parsed score"
        REFUSAL = "refusal", "Refusal"
        UNPARSEABLE = "unparseable", "Unparseable reply"
        ERROR = "error", "API error"

    audit = models.ForeignKey(Audit, on_delete=models.CASCADE, related_name="requests")
    audit_model = models.ForeignKey(AuditModel, on_delete=models.CASCADE, related_name="requests")
    condition = models.CharField(max_length=40, help_text="Classification: the prompting condition. Self-report: "
                                                          "the form (original:<instrument> or masked).")
    item = models.ForeignKey(Item, null=True, blank=True, on_delete=models.PROTECT, related_name="+",
                             help_text="The sentence a classification request asks about.")
    unit = models.CharField(max_length=300, blank=True,
                            help_text="Self-report: item:<position> or batch; corpus audits: a unit key or batch:<n>.")
    replicate = models.PositiveSmallIntegerField(default=0)
    order = models.BigIntegerField(help_text="Dispatch order, seeded from the audit seed and the item id.")
    key = models.CharField(max_length=64, db_index=True,
                           help_text="Blank only for a later turn whose earlier turn is not answered yet.")
    turn = models.PositiveSmallIntegerField(default=0, help_text="0, or n for the (n+1)th turn of a conversation.")
    previous = models.ForeignKey("self", null=True, blank=True, on_delete=models.CASCADE, related_name="next_turns",
                                 help_text="The conversation's turn before this one (none for turn 0).")
    state = models.CharField(max_length=10, choices=State.choices, default=State.PENDING)
    chunk = models.ForeignKey(AuditChunk, null=True, blank=True, on_delete=models.SET_NULL, related_name="requests")
    reply = models.ForeignKey(LLMReply, null=True, blank=True, on_delete=models.PROTECT, related_name="+")
    from_cache = models.BooleanField(default=False)
    attempts = models.PositiveSmallIntegerField(default=0)
    error = models.TextField(blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    outcome = models.CharField(max_length=12, choices=Outcome.choices, blank=True)
    label = models.SmallIntegerField(null=True)
    explanation = models.TextField(blank=True)
    parse_reason = models.CharField(max_length=200, blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["audit", "audit_model", "condition", "item", "replicate", "turn"],
                                    condition=Q(item__isnull=False), name="audit_request_once"),
            models.UniqueConstraint(fields=["audit", "audit_model", "condition", "unit", "replicate", "turn"],
                                    condition=Q(item__isnull=True), name="audit_request_unit_once"),
        ]
        indexes = [models.Index(fields=["audit", "state", "order"]),
                   models.Index(fields=["audit", "finished_at"]),
                   # The work queue: an audit's pending requests in dispatch order (a claim reads the first of
                   # them off it; ``engine.recording.chunk_claim``).
                   models.Index(fields=["audit", "order", "id"], condition=Q(state="pending"),
                                name="audit_request_pending")]

    def __str__(self) -> str:
        return f"Request {self.pk} of audit {self.audit_id} ({self.state})"


class AuditJudgment(models.Model):
    """One judged unit's answer in a request's reply (:class:`auditapp.engine.protocol.Judgment`): written in bulk
    with the reply, rewritten by a re-parse. ``unit`` is the unit's key (a corpus unit's, or the paradigm's own
    for units that are not in a corpus, e.g. a self-report item's position)."""

    team_path = "audit__team"

    # Neither foreign key is a database constraint (db_constraint=False): PostgreSQL checks a constraint row by row
    # at commit, and these checks were most of the cost of recording judgments (a 50-reply batch of 3,000
    # judgments: about 50 ms of a 100 ms commit, benchmarks/counterfactual_scale.py). So nothing in the database
    # stops a judgment from outliving its request; what does: every writer writes judgments only for request rows
    # it holds locked in its transaction (the recorder's UPDATE … RETURNING, the re-parse's and the cache's
    # SELECT … FOR UPDATE; on SQLite each transaction holds the database's write lock), so a request deleted first
    # gets none. Django's cascade (on_delete=CASCADE is Django's, never the database's) deletes judgments before
    # their requests, and a writer already holding a request's lock commits its judgments in between; once the
    # deletion of an audit or of its model commits, its judgments without a request are swept
    # (judgments.audit_judgments_sweep, from auditapp.signals). `manage.py judgments_orphans` counts any left.
    audit = models.ForeignKey(Audit, on_delete=models.CASCADE, related_name="judgments", db_constraint=False)
    # No index of its own: the unique (request, unit) index serves every lookup by request, and one index fewer
    # to maintain for every judgment written (a names audit writes millions).
    request = models.ForeignKey(AuditRequest, on_delete=models.CASCADE, related_name="judgments", db_index=False,
                                db_constraint=False)
    unit = models.CharField(max_length=300)
    outcome = models.CharField(max_length=12)
    value = models.FloatField(null=True)
    label = models.SmallIntegerField(null=True)
    reason = models.CharField(max_length=200, blank=True)
    explanation = models.TextField(blank=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["request", "unit"], name="judgment_once")]

    def __str__(self) -> str:
        return f"{self.unit} of request {self.request_id}: {self.outcome}"


class AuditMetric(models.Model):
    """One model × condition × reference: every metric with its bootstrap 95% CI (seed 000 Tables 1–2)."""

    team_path = "audit__team"

    class Reference(models.TextChoices):
        WEIGHTED = "weighted", "Weighted ground truth (eq. 6)"
        MAJORITY = "majority", "Majority vote"

    audit = models.ForeignKey(Audit, on_delete=models.CASCADE, related_name="metrics")
    audit_model = models.ForeignKey(AuditModel, on_delete=models.CASCADE, related_name="+")
    condition = models.CharField(max_length=40)
    reference = models.CharField(max_length=10, choices=Reference.choices)
    unparsed = models.CharField(max_length=10)
    values = models.JSONField(help_text="kappa, f1, precision, recall, accuracy with *_low/*_high, n, coverage, …")

    class Meta:
        constraints = [models.UniqueConstraint(fields=["audit", "audit_model", "condition", "reference"],
                                               name="audit_metric_once")]

    def __str__(self) -> str:
        return f"Model {self.audit_model_id}, {self.condition}, {self.reference} (audit {self.audit_id})"


class AuditExtraction(models.Model):
    """A second pass over the replies an audit's strict parser left unparseable (issue 16): each reply read again
    by verbal rules (``mode`` "rules") or by a chosen chat model asked a versioned question (``mode`` "model").
    Its outcomes (:class:`AuditExtractionLabel`) are stored beside the strict ones, never instead of them.
    ``identity`` is the sha256 of mode, version, endpoint, model and parameters: the same extraction is stored
    once per audit, and asked for again it is not redone."""

    team_path = "audit__team"

    class Mode(models.TextChoices):
        RULES = "rules", "Verbal rules"
        MODEL = "model", "A model asked which label the reply gives"

    class Status(models.TextChoices):
        QUEUED = "queued", "Queued"
        RUNNING = "running", "Running"
        COMPLETED = "completed", "Completed"
        FAILED = "failed", "Failed"

    audit = models.ForeignKey(Audit, on_delete=models.CASCADE, related_name="extractions")
    mode = models.CharField(max_length=10, choices=Mode.choices)
    endpoint = models.ForeignKey(LLMEndpoint, null=True, blank=True, on_delete=models.PROTECT, related_name="+")
    model = models.CharField(max_length=200, blank=True, help_text="The extractor model's name at the endpoint.")
    params = models.JSONField(default=dict, blank=True, help_text="The extractor model's generation parameters.")
    digest = models.CharField(max_length=200, blank=True, editable=False,
                              help_text="The extractor model's version/digest the endpoint reported.")
    version = models.CharField(max_length=20, help_text="The rules' version, or the extraction template's.")
    extractor = models.CharField(max_length=300, help_text="Who extracted, in words (rules and version, or model, "
                                                           "endpoint and template version).")
    identity = models.CharField(max_length=64, editable=False)
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.QUEUED)
    status_reason = models.TextField(blank=True)
    leased_until = models.DateTimeField(
        null=True, blank=True, editable=False,
        help_text="Running: the worker's lease, renewed while it runs; another may take it over once it has passed. "
                  "Queued: when the workers' recovery sends its task again if none has started it.")
    results = models.JSONField(
        null=True, blank=True, editable=False,
        help_text="The metrics with this extraction, computed when it completes and when the audit is analysed "
                  "again: {\"cells\": [{model, condition, reference, values}], \"analysis\": {…}}.")
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL,
                                   related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["audit", "id"]
        constraints = [models.UniqueConstraint(fields=["audit", "identity"], name="audit_extraction_once")]

    def __str__(self) -> str:
        return f"extraction {self.pk} of audit {self.audit_id}: {self.extractor}"


class AuditExtractionLabel(models.Model):
    """One reply's outcome in an extraction: ``label`` (0/1), ``none``, ``unparseable`` (the extractor's own answer
    was not 0, 1 or none) or ``error`` (the extractor's request failed, ``reason`` says why). In model mode the
    extractor's request has its own ``key`` and its reply is stored once per key in :class:`LLMReply`."""

    team_path = "extraction__audit__team"

    extraction = models.ForeignKey(AuditExtraction, on_delete=models.CASCADE, related_name="labels")
    request = models.ForeignKey(AuditRequest, on_delete=models.CASCADE, related_name="+")
    outcome = models.CharField(max_length=12)
    label = models.SmallIntegerField(null=True)
    reason = models.CharField(max_length=300, blank=True)
    key = models.CharField(max_length=64, blank=True)
    reply = models.ForeignKey(LLMReply, null=True, blank=True, on_delete=models.PROTECT, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["extraction", "request"], name="audit_extraction_label_once")]

    def __str__(self) -> str:
        return f"Request {self.request_id} in extraction {self.extraction_id}: {self.outcome}"


class UpgradeStep(models.Model):
    """An upgrade step (:mod:`auditapp.upgrade_steps`) that ``manage.py upgrade`` has run to its end on this
    database; a step not recorded here runs at the next upgrade."""

    name = models.CharField(max_length=100, unique=True)
    finished_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["finished_at", "id"]

    def __str__(self) -> str:
        return self.name


class WorkerHeartbeat(models.Model):
    """When each Celery worker was last seen alive: its main process writes it when it is ready and then every
    WORK_RECOVERY_SECONDS, from the thread that sends the workers' recovery (tasks/recovery.py). It shows the process
    is alive, not that its pool takes tasks. Researchers' pages read the newest (auditapp/worker_status.py)."""

    hostname = models.CharField(max_length=255, unique=True)
    started_at = models.DateTimeField()
    seen_at = models.DateTimeField()

    class Meta:
        ordering = ["-seen_at"]

    def __str__(self) -> str:
        return f"{self.hostname} (seen {self.seen_at:%Y-%m-%d %H:%M:%S})"
