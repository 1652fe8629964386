"""Writes of the audit domain: templates, creating and preparing an audit, the workers' leases and bulk
writes of replies, control (pause, resume, cancel, retry failed), re-parsing and the metrics.

The engine is the same for every paradigm; what a paradigm's requests are, how their replies are parsed and
what the manifest says come from its request builder (:func:`request_builder`): the classification audits'
:class:`ClassificationRequests` here, the self-report audits' in :mod:`auditapp.self_report_services`.

The life of an audit (statuses of :class:`~auditapp.models.Audit`)::

    queued ──prepare──▶ running ──all requests answered or failed──▶ analysing ──▶ completed
              │            │  ▲
              │            ▼  │ resume
              │     paused / stopped (error budget) ──cancel──▶ cancelled
              └──▶ failed (an endpoint could not list its models, a model is not offered) ──resume──▶ queued

Every step is idempotent and guarded by a conditional status update, so tasks delivered twice, or run
by two workers, do the work once.
"""
from __future__ import annotations

import hashlib
import logging
import subprocess
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path

import numpy as np
import pandas as pd
import redis
from django.conf import settings
from django.core.cache import cache
from django.db import InterfaceError, connection, transaction
from django.db import OperationalError as DatabaseError
from django.db.models import Exists, F, Min, OuterRef, Q
from django.utils import timezone
from kombu.exceptions import OperationalError as BrokerError

from annotation.models import Item, ItemGroundTruth, ItemSetMember, Study
from auditapp import llm_clients, scorer_kinds
from auditapp.endpoint_addresses import EndpointAddressRefused, check_endpoint_url
from auditapp.models import (
    Audit,
    AuditChunk,
    AuditCondition,
    AuditItem,
    AuditMetric,
    AuditModel,
    AuditRequest,
    LLMEndpoint,
    LLMReply,
    PromptTemplate,
    endpoint_address_policy,
)
from auditapp.paradigms.classification import analysis as classification
from auditapp.paradigms.classification.prompts import CONDITIONS, DEFAULT_TEMPLATES
from auditapp.request_keys import request_key

logger = logging.getLogger(__name__)

# Faults that pass by themselves (the broker or the Redis holding the endpoint limits restarting, the database
# failing over): a running audit that meets one waits with a note and resumes by itself
# (``audits_resume_stalled``) instead of failing.
TRANSIENT_ERRORS = (redis.ConnectionError, redis.TimeoutError, BrokerError, DatabaseError, InterfaceError)
WAITING_NOTE = "waiting since"

PARADIGM = "classification"
EXAMPLE_SETS = {"icl_a": "icl_a", "icl_b": "icl_b"}
BULK_BATCH_SIZE = 1000
MAX_REPLICATES = 100
RECENT_MESSAGES = 2048
REPO = Path(__file__).resolve().parent.parent


class AuditError(ValueError):
    """An audit cannot be created or changed as asked; the message says why."""


# ---------------------------------------------------------------------------------------------- templates

def templates_sync_defaults() -> None:
    """The seven default templates of seed 000 Appendix A.4 exist as template versions."""
    for template in DEFAULT_TEMPLATES.values():
        if not PromptTemplate.objects.filter(paradigm=PARADIGM, condition=template.code,
                                             content_hash=template.content_hash).exists():
            PromptTemplate.objects.create(paradigm=PARADIGM, condition=template.code, name=template.name,
                                          text=template.text, note=template.note, source=template.source)


def template_current(condition: str) -> PromptTemplate:
    """The newest version of a condition's template."""
    template = PromptTemplate.objects.filter(paradigm=PARADIGM, condition=condition).order_by("-created_at",
                                                                                               "-id").first()
    if template is None:
        raise AuditError(f"no template for condition {condition!r}")
    return template


# ----------------------------------------------------------------------------------------------- creation

@dataclass(frozen=True)
class ModelChoice:
    endpoint: LLMEndpoint
    model: str
    params: dict = field(default_factory=dict)
    label: str = ""


def endpoint_config(endpoint: LLMEndpoint) -> llm_clients.EndpointConfig:
    return llm_clients.EndpointConfig(
        protocol=endpoint.protocol, base_url=endpoint.base_url, api_key=endpoint.api_key(),
        max_concurrency=endpoint.max_concurrency, requests_per_minute=endpoint.requests_per_minute,
        attempt_timeout=endpoint.attempt_timeout_s, deadline=endpoint.deadline_s, max_attempts=endpoint.max_attempts,
        request_template=endpoint.request_template, score_path=endpoint.score_path,
        scale=(endpoint.score_min, endpoint.score_max))


def endpoint_check_address(endpoint: LLMEndpoint) -> None:
    """Raise EndpointAddressRefused when the endpoint's host now is, or resolves to, a refused address
    (checked before every use: a name may point elsewhere than when it was registered). A local scorer has
    no address."""
    if scorer_kinds.scorer_kind(endpoint.protocol).networked:
        check_endpoint_url(endpoint.base_url, endpoint_address_policy())


def endpoint_list_models(endpoint: LLMEndpoint) -> list[llm_clients.ModelInfo]:
    """Ask the endpoint for its models (a local or HTTP JSON scorer knows them without asking) and remember
    the answer on the endpoint. Raises EndpointError, or EndpointAddressRefused (before asking anything) when
    its address is refused."""
    endpoint_check_address(endpoint)
    models = scorer_kinds.list_models(endpoint_config(endpoint))
    endpoint.listed_models = [{"name": m.name, "digest": m.digest, "details": m.details} for m in models]
    endpoint.listed_at = timezone.now()
    endpoint.save(update_fields=["listed_models", "listed_at"])
    return models


def _evaluated_items(study: Study) -> list[tuple[int, int | None, int | None]]:
    """(item id, majority, weighted) of the study's items with a ground truth, leaving out attention checks
    and the ICL example items (seed 000 §3.4: the examples are "not included in the … classification targets")."""
    examples = ItemSetMember.objects.filter(study=study, set_name__in=EXAMPLE_SETS.values()).values("item_id")
    truths = (ItemGroundTruth.objects.filter(item__study=study, item__attention_check_answer__isnull=True)
              .exclude(item_id__in=examples).order_by("item_id")
              .values_list("item_id", "majority_label", "weighted_label"))
    return [(item, _binary(majority), _binary(weighted)) for item, majority, weighted in truths]


def _binary(label: int | None) -> int | None:
    return label if label in (0, 1) else None


def launch_problems(*, models: list[ModelChoice], replicates: int, error_budget: float) -> list[str]:
    """What every paradigm's launch checks: at least one model, the replicates, the error budget."""
    problems = [] if models else ["choose at least one model"]
    if not 1 <= replicates <= MAX_REPLICATES:
        problems.append(f"replicates must be between 1 and {MAX_REPLICATES}")
    if not 0 <= error_budget <= 1:
        problems.append("the error budget is a share between 0 and 1")
    return problems


def audit_problems(*, study: Study, models: list[ModelChoice], conditions: list[str], replicates: int = 1,
                   error_budget: float = 0.2, unparsed: str = Audit.Unparsed.EXCLUDE) -> list[str]:
    """Everything that stops an audit of the study from being launched as asked (empty when it can be)."""
    problems = launch_problems(models=models, replicates=replicates, error_budget=error_budget)
    unknown = [c for c in conditions if c not in CONDITIONS]
    if unknown:
        problems.append(f"unknown conditions {unknown}; choose from {list(CONDITIONS)}")
    if not conditions or len(set(conditions)) != len(conditions):
        problems.append("choose each condition at most once, and at least one")
    if unparsed not in Audit.Unparsed.values:
        problems.append(f"unparsed must be one of {Audit.Unparsed.values}")
    if not _evaluated_items(study):
        problems.append(f"study {study} has no ground truth yet: compute its analysis first (study dashboard)")
    for condition in conditions:
        example_set = EXAMPLE_SETS.get(condition)
        if example_set and not ItemSetMember.objects.filter(study=study, set_name=example_set).exists():
            problems.append(f"condition {condition} needs the study's example set {example_set!r}, which is empty")
    return problems


@transaction.atomic
def audit_create(*, study: Study, name: str, models: list[ModelChoice], conditions: list[str],
                 replicates: int = 1, seed: int = 0, use_cache: bool = True, error_budget: float = 0.2,
                 unparsed: str = Audit.Unparsed.EXCLUDE, n_resamples: int = 2000, parallel_tasks: int = 1,
                 created_by=None) -> Audit:
    """Record an audit of a study's current ground truth and have a worker prepare and run it.

    Raises AuditError naming every problem (see :func:`audit_problems`)."""
    problems = audit_problems(study=study, models=models, conditions=conditions, replicates=replicates,
                              error_budget=error_budget, unparsed=unparsed)
    if problems:
        raise AuditError("; ".join(problems))
    truth = _evaluated_items(study)
    audit = Audit.objects.create(study=study, name=name, paradigm=PARADIGM, replicates=replicates, seed=seed,
                                 use_cache=use_cache, error_budget=error_budget, unparsed=unparsed,
                                 n_resamples=n_resamples, parallel_tasks=parallel_tasks, created_by=created_by)
    AuditModel.objects.bulk_create([
        AuditModel(audit=audit, endpoint=choice.endpoint, model=choice.model, params=choice.params,
                   label=choice.label, position=position) for position, choice in enumerate(models)])
    AuditCondition.objects.bulk_create([
        AuditCondition(audit=audit, condition=condition, template=template_current(condition),
                       example_set=EXAMPLE_SETS.get(condition, ""), position=position)
        for position, condition in enumerate(conditions)])
    AuditItem.objects.bulk_create([AuditItem(audit=audit, item_id=item, majority_label=majority,
                                             weighted_label=weighted) for item, majority, weighted in truth],
                                  batch_size=BULK_BATCH_SIZE)
    enqueue_prepare(audit.id)
    return audit


# Tasks are sent after the commit with robust=True: a broker that is away is logged, never a 500 after the
# audit was stored; the periodic recovery (tasks.recovery) sends what was not sent.

def enqueue_prepare(audit_id: int) -> None:
    from tasks.audits import audit_prepare_task

    transaction.on_commit(lambda: audit_prepare_task.delay(audit_id), robust=True)


def _work_sent_marker(audit_id: int) -> int:
    """A released chunk whose lease covers the time sent work may wait in a busy queue
    (settings.WORK_QUEUED_GRACE_SECONDS), so the recovery does not take work that is only queued for lost
    work and start a second chain of tasks."""
    now = timezone.now()
    return AuditChunk.objects.create(audit_id=audit_id, released_at=now, leased_until=now + timedelta(
        seconds=settings.WORK_QUEUED_GRACE_SECONDS)).pk


def audit_work_send(audit_id: int, n_tasks: int = 1, *, marker: int | None = None) -> bool:
    """Send ``n_tasks`` work tasks for the audit, marked as sent; False when the broker is away (the mark is
    taken back, so the recovery sends the work once the broker is back)."""
    from tasks.audits import audit_work_task

    marker = marker or _work_sent_marker(audit_id)
    try:
        for _ in range(max(1, n_tasks)):
            audit_work_task.delay(audit_id)
    except BrokerError as error:
        logger.warning("Audit %s: could not queue its work (%s); the recovery will", audit_id, error)
        AuditChunk.objects.filter(pk=marker).update(leased_until=F("released_at"))
        return False
    return True


def _enqueue_work(audit_id: int, n_tasks: int) -> None:
    marker = _work_sent_marker(audit_id)
    transaction.on_commit(lambda: audit_work_send(audit_id, n_tasks, marker=marker), robust=True)


def _enqueue_analysis(audit_id: int) -> None:
    from tasks.audits import audit_analyse_task

    transaction.on_commit(lambda: audit_analyse_task.delay(audit_id), robust=True)


# ------------------------------------------------------------------------------------------------ requests

def _sentence(item: Item | dict, label: int | None = None) -> classification.Sentence:
    return classification.Sentence(item_id=item["id"], target=item["target"], preceding=item["preceding"],
                                   following=item["following"], label=label)


@dataclass(frozen=True)
class PlannedRequest:
    """A request an audit will send (before it has an id)."""

    audit_model: AuditModel
    condition: str
    item_id: int | None
    unit: str
    replicate: int
    order: int
    key: str


# A parsed reply as the request stores it: outcome, label, explanation, reason.
Parsed = tuple[str, int | None, str, str]


def request_builder(audit: Audit):
    """The request builder of the audit's paradigm: ClassificationRequests or SelfReportRequests. Both give
    ``models`` (id → AuditModel), ``requests()`` (every PlannedRequest), ``messages(request)`` and ``key(...)``
    (a request is rebuilt, never stored), ``parse(request, text, finish_reason)`` and ``manifest()``."""
    if audit.paradigm == "self_report":
        from auditapp.self_report_services import SelfReportRequests

        return SelfReportRequests(audit)
    return ClassificationRequests(audit)


def audit_request_key(audit: Audit, audit_model: AuditModel, messages: list[dict], replicate: int) -> str:
    identity = scorer_kinds.identity(endpoint_config(audit_model.endpoint), audit_model.model)
    return request_key(protocol=audit_model.endpoint.protocol, base_url=audit_model.endpoint.base_url,
                       model=audit_model.model, digest=audit_model.digest, params=audit_model.params,
                       messages=messages, replicate=replicate, scope="" if audit.use_cache else f"audit:{audit.id}",
                       identity=identity)


class ClassificationRequests:
    """Rebuilds any request of a classification audit: its messages and its key (the messages are never stored)."""

    def __init__(self, audit: Audit):
        self.audit = audit
        self.models = {m.id: m for m in audit.models.select_related("endpoint")}
        self.conditions = list(audit.conditions.select_related("template"))
        self.templates = {c.condition: c.template.text for c in self.conditions}
        fields = ("id", "target", "preceding", "following")
        self.examples: dict[str, list[classification.Sentence]] = {}
        for condition in self.conditions:
            if condition.example_set:
                members = (ItemSetMember.objects.filter(study=audit.study_id, set_name=condition.example_set)
                           .values("label", *(f"item__{f}" for f in fields)))
                self.examples[condition.condition] = [
                    _sentence({f: m[f"item__{f}"] for f in fields}, m["label"]) for m in members]
        items = Item.objects.filter(pk__in=AuditItem.objects.filter(audit=audit).values("item_id")).values(*fields)
        self.items = {item["id"]: _sentence(item) for item in items}
        self._recent: dict[tuple[str, int], list[dict]] = {}

    def requests(self):
        for item_id in sorted(self.items):
            order = classification.dispatch_order(self.audit.seed, item_id)
            for condition in self.conditions:
                messages = self.item_messages(condition.condition, item_id)
                for audit_model in self.models.values():
                    for replicate in range(self.audit.replicates):
                        yield PlannedRequest(audit_model, condition.condition, item_id, "", replicate, order,
                                             self.key(audit_model, messages, replicate))

    def messages(self, request) -> list[dict]:
        return self.item_messages(request.condition, request.item_id)

    payload = messages  # bridge until the coordinator's rename of messages to payload

    def parse(self, request, text: str, finish_reason: str) -> Parsed:
        parsed = classification.parse(text, finish_reason or None)
        return parsed.outcome, parsed.label, parsed.explanation, parsed.reason

    def item_messages(self, condition: str, item_id: int) -> list[dict]:
        """The messages of an item under a condition (the same for every model and replicate, so the last
        few are kept: a worker sends an item's requests one after another)."""
        cache_key = (condition, item_id)
        messages = self._recent.get(cache_key)
        if messages is None:
            messages = classification.build_messages(self.templates[condition], self.items[item_id],
                                                     examples=self.examples.get(condition, ()), seed=self.audit.seed)
            if len(self._recent) >= RECENT_MESSAGES:
                self._recent.pop(next(iter(self._recent)))
            self._recent[cache_key] = messages
        return messages

    def key(self, audit_model: AuditModel, messages: list[dict], replicate: int) -> str:
        return audit_request_key(self.audit, audit_model, messages, replicate)

    def manifest(self) -> dict:
        return _classification_manifest(self.audit, self)


def audit_fail(*, audit_id: int, reason: str, status: str = Audit.Status.RUNNING) -> None:
    """An audit in ``status`` that cannot go on: failed, with the reason (resume continues it)."""
    Audit.objects.filter(pk=audit_id, status=status).update(
        status=Audit.Status.FAILED, status_reason=reason, finished_at=timezone.now())


def audit_wait_for_service(*, audit_id: int, error: BaseException) -> None:
    """A running audit met a transient fault (``TRANSIENT_ERRORS``): it stays running with a note saying so, and
    the workers' recovery queues its work again once no lease has been held for a while. The note goes at the
    next renewal of a lease."""
    Audit.objects.filter(pk=audit_id, status=Audit.Status.RUNNING).update(status_reason=(
        f"{WAITING_NOTE} {timezone.now():%Y-%m-%d %H:%M:%S %Z}: {type(error).__name__}: {error}; the audit "
        "resumes by itself when the service is back"))


def audits_resume_stalled(*, stalled_after: timedelta) -> list[int]:
    """Queue work again for the running audits no worker has held a lease on for ``stalled_after``, and whose
    work was not sent within settings.WORK_QUEUED_GRACE_SECONDS (their worker died, a transient fault stopped
    their work, or the next task could not be sent). Sending marks the audit (``_work_sent_marker``) inside
    this transaction, so a second recovery at the same time or soon after skips it. Returns the audit ids."""
    now = timezone.now()
    live = AuditChunk.objects.filter(audit=OuterRef("pk"), leased_until__gte=now - stalled_after)
    with transaction.atomic():
        stalled = Audit.objects.filter(status=Audit.Status.RUNNING, started_at__lt=now - stalled_after).exclude(
            Exists(live))
        if connection.features.has_select_for_update_skip_locked:
            stalled = stalled.select_for_update(skip_locked=True)
        audits = list(stalled.only("id", "parallel_tasks"))
        for audit in audits:
            logger.warning("Audit %s: no worker has worked on it since %s; queueing its work again", audit.id,
                           (now - stalled_after).isoformat())
            _enqueue_work(audit.id, audit.parallel_tasks)
    return [audit.id for audit in audits]


def audits_prepare_unsent(*, stalled_after: timedelta) -> list[int]:
    """Send the preparation again for audits still queued ``stalled_after`` after their launch (its task could
    not be sent, or was lost). A second preparation is harmless (it finds the audit no longer queued); a
    cache entry sends at most one per audit per ``stalled_after``, so a long queue is not flooded. Returns
    the audit ids."""
    from tasks.audits import audit_prepare_task

    queued = Audit.objects.filter(status=Audit.Status.QUEUED, created_at__lt=timezone.now() - stalled_after)
    sent = [audit_id for audit_id in queued.values_list("id", flat=True)
            if cache.add(f"audit-prepare-resent:{audit_id}", 1, timeout=stalled_after.total_seconds())]
    for audit_id in sent:
        logger.warning("Audit %s: still queued after %s; sending its preparation again", audit_id, stalled_after)
        audit_prepare_task.delay(audit_id)
    return sent


def audit_prepare(*, audit_id: int) -> None:
    """Resolve each model's digest, create every request with its key, take cached replies, start the work.

    Runs once per queued audit (a second delivery finds the audit no longer queued).
    """
    audit = Audit.objects.get(pk=audit_id)
    if audit.status != Audit.Status.QUEUED:
        return
    models = list(audit.models.select_related("endpoint"))
    for endpoint in {m.endpoint for m in models}:
        try:
            offered = {info.name: info for info in endpoint_list_models(endpoint)}
        except EndpointAddressRefused as error:
            audit_fail(audit_id=audit_id, status=Audit.Status.QUEUED,
                       reason=f"endpoint {endpoint} is not asked: {error}")
            return
        except llm_clients.EndpointError as error:
            audit_fail(audit_id=audit_id, status=Audit.Status.QUEUED,
                       reason=f"could not list the models of endpoint {endpoint}: {error}")
            return
        for audit_model in (m for m in models if m.endpoint_id == endpoint.id):
            info = offered.get(audit_model.model)
            if info is None:
                audit_fail(audit_id=audit_id, status=Audit.Status.QUEUED,
                           reason=f"endpoint {endpoint} does not offer model {audit_model.model!r} "
                                  f"(it offers: {', '.join(sorted(offered)) or 'nothing'})")
                return
            audit_model.digest = info.digest or ""
    AuditModel.objects.bulk_update(models, ["digest"])

    builder = request_builder(audit)
    rows = [AuditRequest(audit=audit, audit_model=planned.audit_model, condition=planned.condition,
                         item_id=planned.item_id, unit=planned.unit, replicate=planned.replicate, order=planned.order,
                         key=planned.key) for planned in builder.requests()]
    with transaction.atomic():
        AuditRequest.objects.bulk_create(rows, batch_size=BULK_BATCH_SIZE, ignore_conflicts=True)
        if audit.use_cache:
            _take_cached_replies(audit.id, builder)
        manifest = {**builder.manifest(), **app_version()}
        started = Audit.objects.filter(pk=audit.id, status=Audit.Status.QUEUED).update(
            status=Audit.Status.RUNNING, n_requests=len(rows), manifest=manifest, started_at=timezone.now(),
            status_reason="")
        if started:
            _enqueue_work(audit.id, audit.parallel_tasks)


def _take_cached_replies(audit_id: int, builder) -> None:
    """Pending requests whose key already has a stored reply take it (errors are never stored, so never reused)."""
    pending = AuditRequest.objects.filter(audit_id=audit_id, state=AuditRequest.State.PENDING)
    keys = set(pending.values_list("key", flat=True))
    replies = {}
    key_list = sorted(keys)
    for start in range(0, len(key_list), BULK_BATCH_SIZE):
        batch = key_list[start:start + BULK_BATCH_SIZE]
        replies.update({reply.key: reply for reply in LLMReply.objects.filter(key__in=batch)})
    if not replies:
        return
    now = timezone.now()
    rows = [row for row in pending.only("id", "key", "condition", "item_id", "unit", "replicate") if row.key in replies]
    for row in rows:
        reply = replies[row.key]
        row.state, row.reply_id, row.from_cache, row.finished_at = AuditRequest.State.ANSWERED, reply.id, True, now
        row.attempts = 0
        row.outcome, row.label, row.explanation, row.parse_reason = builder.parse(row, reply.text,
                                                                                  reply.finish_reason)
    AuditRequest.objects.bulk_update(rows, ["state", "reply", "from_cache", "finished_at", "attempts", "outcome",
                                            "label", "explanation", "parse_reason"], batch_size=BULK_BATCH_SIZE)


def app_version() -> dict:
    """The app's version and git commit (GIT_COMMIT in the environment, else asked of git)."""
    commit = getattr(settings, "GIT_COMMIT", "")
    if not commit:
        try:
            commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=REPO, capture_output=True, text=True,
                                    timeout=5, check=True).stdout.strip()
        except (OSError, subprocess.SubprocessError):
            commit = "unknown"
    return {"app_version": settings.APP_VERSION, "git_commit": commit}


def _classification_manifest(audit: Audit, builder: ClassificationRequests) -> dict:
    """Everything needed to know what was asked of which model (ARCHITECTURE.md: the manifest), but the app's
    version (the caller adds it)."""
    study = audit.study
    run = getattr(study, "analysis_run", None)
    evaluated = list(AuditItem.objects.filter(audit=audit).order_by("item_id")
                     .values_list("item__external_id", "majority_label", "weighted_label"))
    data_hash = hashlib.sha256(repr(evaluated).encode()).hexdigest()
    return {
        "paradigm": audit.paradigm,
        "seed": audit.seed,
        "replicates": audit.replicates,
        "use_cache": audit.use_cache,
        "error_budget": audit.error_budget,
        "unparsed": audit.unparsed,
        "n_resamples": audit.n_resamples,
        "messages": "one user message holding the condition's prompt; no system prompt",
        "templates": [{"condition": c.condition, "name": c.template.name, "content_hash": c.template.content_hash,
                       "text": c.template.text, "note": c.template.note, "source": c.template.source,
                       "example_set": c.example_set,
                       "example_items": sorted(str(e.item_id) for e in builder.examples.get(c.condition, ()))}
                      for c in builder.conditions],
        "models": manifest_models(builder.models.values()),
        "data": {"study": study.slug, "study_id": study.id, "n_items": len(evaluated),
                 "ground_truth_computed_at": run.computed_at.isoformat() if run else None,
                 "ground_truth_settings": run.settings if run else None,
                 "ground_truth_sha256": data_hash},
    }


def manifest_models(models) -> list[dict]:
    return [{"label": m.display_name, "model": m.model, "endpoint": m.endpoint.name, "protocol": m.endpoint.protocol,
             "base_url": m.endpoint.base_url, "params": m.params or "endpoint defaults", "digest": m.digest or None}
            for m in models]


# ------------------------------------------------------------------------------------- workers' leases

@dataclass(frozen=True)
class ClaimedRequest:
    id: int
    audit_model_id: int
    condition: str
    item_id: int | None
    unit: str
    replicate: int
    key: str


@dataclass(frozen=True)
class RequestResult:
    request: ClaimedRequest
    completion: llm_clients.Completion | None
    error: str
    attempts: int
    latency_ms: float


def _lease() -> timedelta:
    """How long a worker's claim on requests lasts without renewal (it renews every fraction of a second)."""
    return timedelta(seconds=settings.AUDIT_LEASE_SECONDS)


def chunk_open(*, audit_id: int) -> int | None:
    """A new lease for a worker on a running audit (None when the audit is not running)."""
    if not Audit.objects.filter(pk=audit_id, status=Audit.Status.RUNNING).exists():
        return None
    now = timezone.now()
    # The sent work has reached a worker: from now on this lease, not the sent marks, says the audit is alive,
    # so the audit is taken up again within WORK_STALLED_SECONDS if this worker dies.
    AuditChunk.objects.filter(audit_id=audit_id, released_at__isnull=False, leased_until__gt=now).update(
        leased_until=now)
    return AuditChunk.objects.create(audit_id=audit_id, leased_until=now + _lease()).id


def _free_requests(audit_id: int, now):
    return AuditRequest.objects.filter(audit_id=audit_id, state=AuditRequest.State.PENDING).filter(
        Q(chunk__isnull=True) | Q(chunk__leased_until__lt=now))


def chunk_claim(*, chunk_id: int, audit_id: int, limit: int) -> list[ClaimedRequest]:
    """Take up to ``limit`` pending requests no live lease holds, in dispatch order."""
    now = timezone.now()
    with transaction.atomic():
        free = _free_requests(audit_id, now).order_by("order", "id")
        if connection.features.has_select_for_update_skip_locked:
            free = free.select_for_update(skip_locked=True, of=("self",))
        ids = list(free.values_list("id", flat=True)[:limit])
        # Re-checked in the UPDATE itself: where row locks do not exist (SQLite) two workers may have read
        # the same ids, and only the first UPDATE still finds them free.
        _free_requests(audit_id, now).filter(id__in=ids).update(chunk_id=chunk_id)
    return [ClaimedRequest(*row) for row in AuditRequest.objects.filter(
        id__in=ids, chunk_id=chunk_id, state=AuditRequest.State.PENDING).order_by("order", "id").values_list(
        "id", "audit_model_id", "condition", "item_id", "unit", "replicate", "key")]


_RECORDED_FIELDS = ("state", "reply", "error", "attempts", "finished_at", "outcome", "label", "explanation",
                    "parse_reason")


def _record_statement() -> str:
    """One UPDATE per finished request, run with executemany (a pipeline on psycopg 3): far cheaper than
    bulk_update's CASE expressions, and it only touches a request still pending, so a duplicate completion
    (a lease that expired while its worker still lived) is not recorded twice."""
    meta = AuditRequest._meta
    columns = ", ".join(f"{connection.ops.quote_name(meta.get_field(name).column)} = %s" for name in _RECORDED_FIELDS)
    return (f"UPDATE {connection.ops.quote_name(meta.db_table)} SET {columns} "
            f"WHERE {connection.ops.quote_name('id')} = %s AND {connection.ops.quote_name('state')} = %s")


def chunk_record(*, chunk_id: int, results: list[RequestResult], parse) -> None:
    """Store a batch of finished requests in bulk: each reply once per key, each request once. ``parse`` is the
    request builder's (the reply stored for a key is parsed, which is this one unless the key was answered
    before)."""
    if not results:
        return
    now = connection.ops.adapt_datetimefield_value(timezone.now())
    answered = [r for r in results if r.completion is not None]
    with transaction.atomic():
        LLMReply.objects.bulk_create([
            LLMReply(key=r.request.key, text=r.completion.text, finish_reason=r.completion.finish_reason or "",
                     prompt_tokens=r.completion.prompt_tokens, completion_tokens=r.completion.completion_tokens,
                     model_reported=r.completion.model_reported or "", fingerprint=r.completion.fingerprint or "",
                     latency_ms=r.latency_ms, attempts=r.attempts)
            for r in answered], batch_size=BULK_BATCH_SIZE, ignore_conflicts=True)
        # The stored reply, which is this one unless the key was answered before: parse what is stored.
        stored = {key: (pk, text, finish) for key, pk, text, finish in LLMReply.objects.filter(
            key__in={r.request.key for r in answered}).values_list("key", "id", "text", "finish_reason")}
        parameters = []
        for result in results:
            if result.completion is None:
                values = (AuditRequest.State.FAILED, None, result.error, result.attempts, now,
                          AuditRequest.Outcome.ERROR, None, "", "")
            else:
                reply_id, text, finish_reason = stored[result.request.key]
                values = (AuditRequest.State.ANSWERED, reply_id, "", result.attempts, now,
                          *parse(result.request, text, finish_reason))
            parameters.append((*values, result.request.id, AuditRequest.State.PENDING))
        with connection.cursor() as cursor:
            cursor.executemany(_record_statement(), parameters)


def chunk_renew(*, chunk_id: int, audit_id: int, retry_state: dict) -> str:
    """Extend the lease, record the retry state, enforce the error budget; return the audit's status."""
    AuditChunk.objects.filter(pk=chunk_id).update(leased_until=timezone.now() + _lease(), retry_state=retry_state)
    audit = Audit.objects.only("status", "error_budget", "n_requests", "status_reason").get(pk=audit_id)
    if audit.status == Audit.Status.RUNNING and audit.status_reason.startswith(WAITING_NOTE):
        Audit.objects.filter(pk=audit_id, status=Audit.Status.RUNNING, status_reason=audit.status_reason).update(
            status_reason="")
    if audit.status == Audit.Status.RUNNING:
        failed = AuditRequest.objects.filter(audit_id=audit_id, state=AuditRequest.State.FAILED).count()
        if failed > audit.error_budget * audit.n_requests:
            stopped = Audit.objects.filter(pk=audit_id, status=Audit.Status.RUNNING).update(
                status=Audit.Status.STOPPED,
                status_reason=f"error budget exceeded: {failed} of {audit.n_requests} requests failed "
                              f"(more than {audit.error_budget:.0%}); fix the endpoint, then resume or retry failed")
            return Audit.Status.STOPPED if stopped else Audit.objects.get(pk=audit_id).status
    return audit.status


def chunk_release(*, chunk_id: int) -> None:
    """Give back the requests this lease still holds unsent."""
    now = timezone.now()
    with transaction.atomic():
        AuditRequest.objects.filter(chunk_id=chunk_id, state=AuditRequest.State.PENDING).update(chunk=None)
        AuditChunk.objects.filter(pk=chunk_id).update(released_at=now, leased_until=now, retry_state={})


def audit_pending_wait(*, audit_id: int) -> float | None:
    """None when no request of the audit is pending; else seconds until a live lease on one may expire (0 when
    a pending request is free now)."""
    now = timezone.now()
    pending = AuditRequest.objects.filter(audit_id=audit_id, state=AuditRequest.State.PENDING)
    if not pending.exists():
        return None
    if _free_requests(audit_id, now).exists():
        return 0.0
    soonest = pending.aggregate(soonest=Min("chunk__leased_until"))["soonest"]
    return max(0.0, (soonest - now).total_seconds()) if soonest else 0.0


def audit_finish_if_done(*, audit_id: int) -> bool:
    """When nothing is pending, move a running audit to analysis (once, whoever gets here first)."""
    with transaction.atomic():
        if AuditRequest.objects.filter(audit_id=audit_id, state=AuditRequest.State.PENDING).exists():
            return False
        moved = Audit.objects.filter(pk=audit_id, status=Audit.Status.RUNNING).update(
            status=Audit.Status.ANALYSING, finished_at=timezone.now())
        if moved:
            _enqueue_analysis(audit_id)
    return bool(moved)


# ------------------------------------------------------------------------------------------------ control

def audit_pause(*, audit: Audit) -> None:
    if not Audit.objects.filter(pk=audit.pk, status__in=[Audit.Status.QUEUED, Audit.Status.RUNNING]).update(
            status=Audit.Status.PAUSED, status_reason="paused by a researcher"):
        raise AuditError(f"a {audit.get_status_display().lower()} audit cannot be paused")


@transaction.atomic
def audit_resume(*, audit: Audit) -> None:
    """Continue a paused, stopped or failed audit: only the requests still pending are sent (after an error-budget
    stop, the failed ones too)."""
    audit = Audit.objects.select_for_update().get(pk=audit.pk)
    if audit.status not in (Audit.Status.PAUSED, Audit.Status.STOPPED, Audit.Status.FAILED):
        raise AuditError(f"a {audit.get_status_display().lower()} audit cannot be resumed")
    if audit.n_requests == 0:
        audit.status, audit.status_reason, audit.finished_at = Audit.Status.QUEUED, "", None
        audit.save(update_fields=["status", "status_reason", "finished_at"])
        enqueue_prepare(audit.id)
        return
    if audit.status == Audit.Status.STOPPED:
        # The failures that spent the error budget are sent again; otherwise the audit would stop at once.
        _requeue_failed(audit)
    audit.status, audit.status_reason, audit.finished_at = Audit.Status.RUNNING, "", None
    audit.save(update_fields=["status", "status_reason", "finished_at"])
    _enqueue_work(audit.id, audit.parallel_tasks)


def _requeue_failed(audit: Audit) -> int:
    return AuditRequest.objects.filter(audit=audit, state=AuditRequest.State.FAILED).update(
        state=AuditRequest.State.PENDING, error="", outcome="", attempts=0, finished_at=None, chunk=None)


def audit_cancel(*, audit: Audit) -> None:
    active = [Audit.Status.QUEUED, Audit.Status.RUNNING, Audit.Status.PAUSED, Audit.Status.STOPPED,
              Audit.Status.FAILED]
    if not Audit.objects.filter(pk=audit.pk, status__in=active).update(
            status=Audit.Status.CANCELLED, status_reason="cancelled by a researcher", finished_at=timezone.now()):
        raise AuditError(f"a {audit.get_status_display().lower()} audit cannot be cancelled")


@transaction.atomic
def audit_retry_failed(*, audit: Audit) -> int:
    """Send the failed requests of a stopped, paused or finished audit again; returns how many."""
    audit = Audit.objects.select_for_update().get(pk=audit.pk)
    if audit.status in (Audit.Status.QUEUED, Audit.Status.RUNNING, Audit.Status.ANALYSING, Audit.Status.CANCELLED):
        raise AuditError(f"the failed requests of a {audit.get_status_display().lower()} audit cannot be retried")
    n = _requeue_failed(audit)
    if n:
        audit.status, audit.status_reason, audit.finished_at = Audit.Status.RUNNING, "", None
        audit.save(update_fields=["status", "status_reason", "finished_at"])
        _enqueue_work(audit.id, audit.parallel_tasks)
    return n


# ----------------------------------------------------------------------------------- parsing and metrics

def audit_reparse(*, audit_id: int) -> int:
    """Parse every stored reply of the audit again (no model is asked); returns how many were parsed."""
    builder = request_builder(Audit.objects.get(pk=audit_id))
    rows = list(AuditRequest.objects.filter(audit_id=audit_id, state=AuditRequest.State.ANSWERED)
                .select_related("reply").only("id", "condition", "item_id", "unit", "replicate", "reply__text",
                                              "reply__finish_reason"))
    for row in rows:
        row.outcome, row.label, row.explanation, row.parse_reason = builder.parse(row, row.reply.text,
                                                                                  row.reply.finish_reason)
    AuditRequest.objects.bulk_update(rows, ["outcome", "label", "explanation", "parse_reason"],
                                     batch_size=BULK_BATCH_SIZE)
    return len(rows)


def audit_reparse_and_analyse(*, audit: Audit) -> int:
    """Re-parse a finished (or stopped, paused, cancelled) audit's replies and recompute its metrics."""
    if audit.status in (Audit.Status.QUEUED, Audit.Status.RUNNING):
        raise AuditError(f"pause the audit before re-parsing: it is {audit.get_status_display().lower()}")
    n = audit_reparse(audit_id=audit.id)
    _enqueue_analysis(audit.id)
    return n


OUTCOME_COUNTS = ("label", "refusal", "unparseable", "error", "pending")


def audit_analyse(*, audit_id: int) -> None:
    """Metrics per model × condition × reference, Δκ and the means (seed 000 Tables 1–2, Figure 1, §4.1); a
    self-report audit's scores and comparison (:func:`auditapp.self_report_services.self_report_analyse`)."""
    audit = Audit.objects.get(pk=audit_id)
    if audit.paradigm == "self_report":
        from auditapp.self_report_services import self_report_analyse

        self_report_analyse(audit)
        return
    models = list(audit.models.all())
    conditions = list(audit.conditions.values_list("condition", flat=True))
    requests = pd.DataFrame.from_records(
        AuditRequest.objects.filter(audit=audit).values_list("audit_model_id", "condition", "item_id", "replicate",
                                                             "outcome", "label", "state"),
        columns=["model", "condition", "item", "replicate", "outcome", "label", "state"])
    requests["label"] = np.where(requests["outcome"] == AuditRequest.Outcome.LABEL,
                                 requests["label"].astype(float), np.nan)
    requests.loc[requests["state"] == AuditRequest.State.PENDING, "outcome"] = "pending"
    references = pd.DataFrame.from_records(
        AuditItem.objects.filter(audit=audit).order_by("item_id").values_list("item_id", "weighted_label",
                                                                              "majority_label"),
        columns=["item", "weighted", "majority"]).astype({"weighted": float, "majority": float})
    result = classification.analyse(requests, references, models=[m.id for m in models], conditions=conditions,
                                    unparsed=audit.unparsed, n_resamples=audit.n_resamples, seed=audit.seed)
    counts = requests.groupby(["model", "condition", "outcome"]).size()
    names = {m.id: m.display_name for m in models}
    metric_rows = []
    for cell in result.cells:
        values = {k: _json_number(v) for k, v in cell.items() if k not in ("model", "condition", "reference")}
        for outcome in OUTCOME_COUNTS:
            values[f"n_{outcome}"] = int(counts.get((cell["model"], cell["condition"], outcome), 0))
        metric_rows.append(AuditMetric(audit=audit, audit_model_id=cell["model"], condition=cell["condition"],
                                       reference=cell["reference"], unparsed=audit.unparsed, values=values))

    def named(rows: list[dict]) -> list[dict]:
        """Rows keyed by model id get the model's name beside the id."""
        return [{**({"model_id": row["model"]} if "model" in row else {}),
                 **{k: names[v] if k == "model" else _json_number(v) for k, v in row.items()}} for row in rows]

    gap = {k: _json_number(v) for k, v in result.gap.items() if k != "cells"}
    gap["cells"] = named(result.gap["cells"])
    with transaction.atomic():
        AuditMetric.objects.filter(audit=audit).delete()
        AuditMetric.objects.bulk_create(metric_rows)
        Audit.objects.filter(pk=audit_id).update(
            analysis={"unparsed": audit.unparsed, "kappa_gap": gap, "model_means": named(result.model_means),
                      "condition_means": named(result.condition_means)},
            analysed_at=timezone.now())
        Audit.objects.filter(pk=audit_id, status=Audit.Status.ANALYSING).update(status=Audit.Status.COMPLETED)


def _json_number(value):
    """NaN and infinities are not JSON: they become None."""
    if isinstance(value, float | np.floating):
        return float(value) if np.isfinite(value) else None
    if isinstance(value, np.integer):
        return int(value)
    return value
