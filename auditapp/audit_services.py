"""Writes of the audit domain: templates, creating and preparing an audit, the workers' leases and bulk
writes of replies, control (pause, resume, cancel, retry failed), re-parsing and the metrics.

The engine is the same for every paradigm and never names one: what a paradigm's requests are, how their
replies are parsed into judgments, what the manifest says and how the results are analysed come from its entry
in :mod:`auditapp.paradigms.registry` (:func:`request_builder`, :func:`audit_analyse`).

The life of an audit (statuses of :class:`~auditapp.models.Audit`)::

    queued ──prepare──▶ running ──all requests answered or failed──▶ analysing ──▶ completed
              │            │  ▲
              │            ▼  │ resume
              │     paused / stopped (error budget) ──cancel──▶ cancelled
              └──▶ failed (an endpoint could not list its models, a model is not offered, an endpoint
                           refused structured output) ──resume──▶ queued

Structured output (``Audit.structured_output``, off by default): chat models are asked to answer in the JSON
schema the paradigm declares (its registry entry's ``answer_schema``), sent in each endpoint's form
(:mod:`auditapp.llm_clients`, "Structured output"); the form and schema are part of every request's key, the
manifest records them, and the preparation first sends one probe per model so that an endpoint refusing the
schema fails the audit with its reason instead of failing every request.

Every step is idempotent and guarded by a conditional status update, so tasks delivered twice, or run
by two workers, do the work once.
"""
from __future__ import annotations

import dataclasses
import logging
import subprocess
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path

import redis
from django.conf import settings
from django.core.cache import cache
from django.db import InterfaceError, connection, transaction
from django.db import OperationalError as DatabaseError
from django.db.models import Exists, F, Min, OuterRef, Q
from django.utils import timezone
from kombu.exceptions import OperationalError as BrokerError

from auditapp import llm_clients, scorer_kinds
from auditapp.endpoint_addresses import check_endpoint_url
from auditapp.endpoint_keys import EndpointRefused, check_key_variable
from auditapp.models import (
    Audit,
    AuditChunk,
    AuditJudgment,
    AuditModel,
    AuditRequest,
    LLMEndpoint,
    LLMReply,
    endpoint_address_policy,
)
from auditapp.paradigms import registry
from auditapp.paradigms.base import NoFollowUp, ParsedReply, is_multi_turn
from auditapp.request_keys import request_key

logger = logging.getLogger(__name__)

# Faults that pass by themselves (the broker or the Redis holding the endpoint limits restarting, the database
# failing over): a running audit that meets one waits with a note and resumes by itself
# (``audits_resume_stalled``) instead of failing.
DATABASE_ERRORS = (DatabaseError, InterfaceError)
TRANSIENT_ERRORS = (redis.ConnectionError, redis.TimeoutError, BrokerError, *DATABASE_ERRORS)
WAITING_NOTE = "waiting since"

BULK_BATCH_SIZE = 1000
REPARSE_BATCH_SIZE = 2000
MAX_REPLICATES = 100
REPO = Path(__file__).resolve().parent.parent


class AuditError(ValueError):
    """An audit cannot be created or changed as asked; the message says why."""


# ---------------------------------------------------------------------------------------------- templates

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
        structured_output=endpoint.structured_output, request_template=endpoint.request_template, score_path=endpoint.score_path,
        scale=(endpoint.score_min, endpoint.score_max))


def endpoint_check_usable(endpoint: LLMEndpoint) -> None:
    """Raise EndpointRefused when the endpoint may not be asked: its key variable is not one a key may be read from
    (EndpointKeyRefused), or its host now is, or resolves to, a refused address (EndpointAddressRefused; checked
    before every use: a name may point elsewhere than when it was registered). A local scorer has no address."""
    check_key_variable(endpoint.api_key_env)
    if scorer_kinds.scorer_kind(endpoint.protocol).networked:
        check_endpoint_url(endpoint.base_url, endpoint_address_policy())


def endpoint_list_models(endpoint: LLMEndpoint) -> list[llm_clients.ModelInfo]:
    """Ask the endpoint for its models (a local or HTTP JSON scorer knows them without asking) and remember
    the answer on the endpoint. Raises EndpointError, or EndpointRefused (before asking anything) when
    its address is refused."""
    endpoint_check_usable(endpoint)
    models = scorer_kinds.list_models(endpoint_config(endpoint))
    endpoint.listed_models = [{"name": m.name, "digest": m.digest, "details": m.details} for m in models]
    endpoint.listed_at = timezone.now()
    endpoint.save(update_fields=["listed_models", "listed_at"])
    return models


def launch_problems(*, models: list[ModelChoice], replicates: int, error_budget: float,
                    other_scorers: int = 0, accepts: tuple[str, ...] = ("messages",)) -> list[str]:
    """What every paradigm's launch checks: at least one model (or another scorer the paradigm has, such as
    recorded scores), each model's endpoint of a kind the paradigm can ask (``accepts``: the payloads it builds,
    see ``scorer_kinds.takes``) with generation parameters only for chat models, no two models of one name in
    tables (the same model under two parameter sets or endpoints needs labels), the replicates, the error
    budget."""
    problems = [] if models or other_scorers else ["choose at least one model"]
    for choice in models:
        takes = scorer_kinds.takes(choice.endpoint.protocol)
        if takes not in accepts:
            problems.append(f"endpoint {choice.endpoint.name} ({choice.endpoint.get_protocol_display()}) cannot "
                            f"be asked by this paradigm: it asks {', '.join(accepts)}, the endpoint takes {takes}")
        elif takes != "messages" and choice.params:
            problems.append(f"endpoint {choice.endpoint.name} is a scorer, not a chat model: it takes no generation "
                            f"parameters ({sorted(choice.params)})")
    named: dict[str, int] = {}
    for number, choice in enumerate(models, start=1):
        name = choice.label or choice.model
        if name in named:
            # Tables, charts and exports name a model by its label (or its name): two with one name would read
            # as one model, and the error analysis could not tell their strata apart by name.
            problems.append(f"models {named[name]} and {number} would both be named {name!r} in tables and exports: "
                            "give each a label")
        else:
            named[name] = number
    if not 1 <= replicates <= MAX_REPLICATES:
        problems.append(f"replicates must be between 1 and {MAX_REPLICATES}")
    if not 0 <= error_budget <= 1:
        problems.append("the error budget is a share between 0 and 1")
    return problems


def audit_answer_schema(audit: Audit) -> dict | None:
    """The JSON schema chat models' replies are constrained to: the paradigm's, when the audit asks for structured
    output; else None."""
    return registry.get(audit.paradigm).answer_schema(audit) if audit.structured_output else None


def audit_answer_format(audit: Audit, audit_model: AuditModel) -> dict | None:
    """What constrains a reply of this model in this audit (its form and the schema), or None: structured output
    is off, or the endpoint is not a chat model (a scorer's output is its own). The form is the one recorded when
    the audit was prepared (``AuditModel.structured_output``), the endpoint's own before then: editing the endpoint
    does not change what a running audit sends."""
    schema = audit_answer_schema(audit)
    if schema is None or scorer_kinds.takes(audit_model.endpoint.protocol) != "messages":
        return None
    return {"form": audit_model.structured_output or audit_model.endpoint.structured_output, "schema": schema}


def structured_output_problems(*, schema: dict | None, endpoints) -> list[str]:
    """Why an audit cannot constrain its chat models' output: the paradigm declares no answer schema, or a chat
    endpoint has no structured-output form its protocol takes."""
    if schema is None:
        return ["this paradigm declares no answer schema: it cannot ask for structured output"]
    problems = []
    for endpoint in endpoints:
        if scorer_kinds.takes(endpoint.protocol) != "messages":
            continue
        problem = llm_clients.structured_output_problem(endpoint.protocol, endpoint.structured_output)
        if problem:
            problems.append(f"endpoint {endpoint.name} cannot constrain output: {problem}")
    return problems


def audit_structured_output_set(*, audit: Audit, enabled: bool) -> None:
    """Record whether a queued audit constrains its chat models' output (the launch's ``structured_output``);
    AuditError names every problem. Called in the launch's transaction, before its preparation is sent."""
    if not enabled:
        return
    audit.structured_output = True
    endpoints = {model.endpoint for model in audit.models.select_related("endpoint")}
    problems = structured_output_problems(schema=audit_answer_schema(audit), endpoints=sorted(
        endpoints, key=lambda endpoint: endpoint.name))
    if problems:
        raise AuditError("; ".join(problems))
    Audit.objects.filter(pk=audit.pk, status=Audit.Status.QUEUED).update(structured_output=True)


# Tasks are sent after the commit with robust=True: a broker that is away is logged, never a 500 after the
# audit was stored; the periodic recovery (tasks.recovery) sends what was not sent.

def audit_models_create(audit: Audit, models: list[ModelChoice]) -> None:
    """The audit's models, in the order chosen (their position)."""
    AuditModel.objects.bulk_create([
        AuditModel(audit=audit, endpoint=choice.endpoint, model=choice.model, params=choice.params,
                   label=choice.label, position=position) for position, choice in enumerate(models)])


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
    turn: int = 0


def request_builder(audit: Audit):
    """The request builder of the audit's paradigm (:class:`auditapp.paradigms.base.RequestBuilder`): ``models``
    (id → AuditModel), ``requests()`` (every PlannedRequest), ``payload(request)`` and ``key(...)`` (a request is
    rebuilt, never stored), ``parse(request, text, finish_reason)`` (a ParsedReply) and ``manifest()``."""
    return registry.get(audit.paradigm).builder(audit)


def audit_request_key(audit: Audit, audit_model: AuditModel, messages, replicate: int) -> str:
    """The key of a request: what is sent (chat messages, or a scorer's payload) to which model, and the replicate,
    with the structured-output form and schema when the reply is constrained; scoped to the audit when it does not
    use the cache."""
    identity = scorer_kinds.identity(endpoint_config(audit_model.endpoint), audit_model.model)
    return request_key(protocol=audit_model.endpoint.protocol, base_url=audit_model.endpoint.base_url,
                       model=audit_model.model, digest=audit_model.digest, params=audit_model.params,
                       messages=messages, replicate=replicate, scope="" if audit.use_cache else f"audit:{audit.id}",
                       identity=identity, answer_format=audit_answer_format(audit, audit_model))


def audit_fail(*, audit_id: int, reason: str, status: str = Audit.Status.RUNNING) -> None:
    """An audit in ``status`` that cannot go on: failed, with the reason (resume continues it)."""
    Audit.objects.filter(pk=audit_id, status=status).update(
        status=Audit.Status.FAILED, status_reason=reason, finished_at=timezone.now())


def audit_wait_for_service(*, audit_id: int, error: BaseException) -> None:
    """A running audit met a transient fault (``TRANSIENT_ERRORS``): it stays running with a note saying so while its
    work task waits for the service (or, the task lost, the workers' recovery queues its work again once no lease
    has been held for a while). The note goes at the next renewal of a lease."""
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
        except EndpointRefused as error:
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
    constrained = audit.structured_output and audit_answer_schema(audit) is not None
    for audit_model in models:
        chat = scorer_kinds.takes(audit_model.endpoint.protocol) == "messages"
        audit_model.structured_output = audit_model.endpoint.structured_output if constrained and chat else ""
    AuditModel.objects.bulk_update(models, ["digest", "structured_output"])

    builder = request_builder(audit)
    rows = [AuditRequest(audit=audit, audit_model=planned.audit_model, condition=planned.condition,
                         item_id=planned.item_id, unit=planned.unit, replicate=planned.replicate, order=planned.order,
                         key=planned.key, turn=planned.turn) for planned in builder.requests()]
    refused = _structured_output_refusal(audit, builder, rows)
    if refused:
        audit_fail(audit_id=audit_id, status=Audit.Status.QUEUED, reason=refused)
        return
    with transaction.atomic():
        AuditRequest.objects.bulk_create(rows, batch_size=BULK_BATCH_SIZE, ignore_conflicts=True)
        if any(row.turn for row in rows):
            _turns_link(audit.id)
        if audit.use_cache:
            answered = _take_cached_replies(audit.id, builder)
            if is_multi_turn(builder):
                _turns_advance(audit, builder, answered)
        manifest = {**builder.manifest(), **app_version(), **structured_output_manifest(audit, models)}
        started = Audit.objects.filter(pk=audit.id, status=Audit.Status.QUEUED).update(
            status=Audit.Status.RUNNING, n_requests=len(rows), manifest=manifest, started_at=timezone.now(),
            status_reason="")
        if started:
            _enqueue_work(audit.id, audit.parallel_tasks)


def _structured_output_refusal(audit: Audit, builder, rows: list[AuditRequest]) -> str:
    """With structured output: send each chat model's first planned request once, constrained, and return why the
    audit cannot run; "" when every endpoint took it and answered valid against the schema.

    The audit cannot run when the endpoint answers the probe with a client error (a 400 or 422: it does not take
    the schema in its form, or not this schema; 401 and 403: authentication refused; 404: no such model or path),
    or answers it with a reply that is not valid against the schema: servers that do not know the form's field
    (vLLM since 0.12 for ``guided_json``, llama.cpp's server and Ollama for fields they do not read) ignore it and
    answer unconstrained, which the manifest would misreport as constrained. A transport error, a time-out (408), a
    rate limit (429) or a 5xx says nothing about the schema: it is logged and the requests' own retries meet it.
    The probe's reply is not kept."""
    schema = audit_answer_schema(audit)
    if schema is None:
        return ""
    first: dict[int, AuditRequest] = {}
    for row in rows:
        if row.turn == 0:
            first.setdefault(row.audit_model_id, row)
    for audit_model_id, row in first.items():
        audit_model = builder.models[audit_model_id]
        endpoint = audit_model.endpoint
        if scorer_kinds.takes(endpoint.protocol) != "messages":
            continue
        probe = llm_clients.probe_chat_sync(endpoint_config(endpoint), audit_model.model, builder.payload(row),
                                            audit_model.params, schema=schema)
        model = audit_model.model
        if probe.status_code in (401, 403):
            return (f"endpoint {endpoint} refused authentication for model {model!r}: {probe.reason}; check the "
                    "endpoint's API key")
        if probe.status_code == 404:
            return (f"endpoint {endpoint} found no model {model!r} (or no chat path under {endpoint.base_url}): "
                    f"{probe.reason}; check the model's name and the endpoint's base URL")
        if probe.refused:
            return (f"endpoint {endpoint} refused structured output ({endpoint.structured_output}) for model "
                    f"{model!r}: {probe.reason}; choose the form its server takes, or launch without "
                    "structured output")
        if probe.reason:
            logger.warning("Audit %s: the structured-output probe of %s got no answer (%s); going on", audit.id,
                           endpoint, probe.reason)
            continue
        problem = llm_clients.answer_schema_problem(probe.text, schema)
        if problem:
            cut_off = " (the reply was cut off at its token limit: raise max_tokens)" if probe.finish_reason == \
                "length" else ""
            return (f"endpoint {endpoint} accepted the structured-output field ({endpoint.structured_output}) for "
                    f"model {model!r} but its answer is not valid against the schema: {problem}{cut_off} — the "
                    "server may ignore the form; choose another, or launch without structured output")
    return ""


def structured_output_manifest(audit: Audit, models) -> dict:
    """What the manifest says about constrained output: off, or the schema and each chat endpoint's form."""
    schema = audit_answer_schema(audit)
    if schema is None:
        return {"structured_output": False}
    return {"structured_output": {
        "schema": schema,
        "forms": {m.endpoint.name: m.structured_output or m.endpoint.structured_output for m in models
                  if scorer_kinds.takes(m.endpoint.protocol) == "messages"},
        "note": "chat models' replies were constrained to the schema by their servers, unlike the papers' free-text "
                "replies"}}


def _take_cached_replies(audit_id: int, builder, ids: list[int] | None = None) -> set[int]:
    """Pending requests (of ``ids`` when given) whose key already has a stored reply take it (errors are never
    stored, so never reused); returns their ids. A later turn still waiting for its key takes nothing."""
    pending = AuditRequest.objects.filter(audit_id=audit_id, state=AuditRequest.State.PENDING).exclude(key="")
    if ids is not None:
        pending = pending.filter(id__in=ids)
    keys = set(pending.values_list("key", flat=True))
    replies = {}
    key_list = sorted(keys)
    for start in range(0, len(key_list), BULK_BATCH_SIZE):
        batch = key_list[start:start + BULK_BATCH_SIZE]
        replies.update({reply.key: reply for reply in LLMReply.objects.filter(key__in=batch)})
    if not replies:
        return set()
    now = timezone.now()
    with transaction.atomic():
        # Locked, so a request deleted meanwhile is not returned and gets no judgment (see AuditJudgment).
        rows = [row for row in pending.select_for_update().only(
            "id", "key", "audit_model_id", "condition", "item_id", "unit", "replicate", "turn") if row.key in replies]
        judged = []
        for row in rows:
            reply = replies[row.key]
            row.state, row.reply_id, row.from_cache, row.finished_at = (AuditRequest.State.ANSWERED, reply.id, True,
                                                                        now)
            row.attempts = 0
            parsed = builder.parse(row, reply.text, reply.finish_reason)
            row.outcome, row.label, row.explanation, row.parse_reason = (parsed.outcome, parsed.label,
                                                                         parsed.explanation, parsed.reason)
            judged.append((row.id, parsed))
        AuditRequest.objects.bulk_update(rows, ["state", "reply", "from_cache", "finished_at", "attempts", "outcome",
                                                "label", "explanation", "parse_reason"], batch_size=BULK_BATCH_SIZE)
        _judgments_create(audit_id, judged)
    return {row.id for row in rows}


# ------------------------------------------------------------------------------------------- conversations
# A later turn (AuditRequest.turn > 0) waits, pending with a blank key, until the turn before it is finished; in
# the transaction that records that turn it is keyed (then claimable) or closed with the reason. See "Multi-turn
# requests" in auditapp/paradigms/base.py.

TURN_FAILED = "turn {turn} failed: {reason}"
TURN_ENDED = "turn {turn} gave nothing to continue from: {reason}"
_TURN_ENDED_MARK = " gave nothing to continue from: "
_CONVERSATION_FIELDS = ("id", "audit_model_id", "condition", "item_id", "unit", "replicate", "key", "turn",
                        "previous_id")


def _turns_link(audit_id: int) -> None:
    """Point each later turn of a freshly prepared audit at the turn before it: same model, condition, item or
    unit and replicate, one turn lower. A turn planned without the one before it is a bug of its paradigm."""
    identities = {}
    later = []
    for row in AuditRequest.objects.filter(audit_id=audit_id).only(
            "id", "audit_model_id", "condition", "item_id", "unit", "replicate", "turn", "previous_id"):
        identities[(row.audit_model_id, row.condition, row.item_id, row.unit, row.replicate, row.turn)] = row.id
        if row.turn and row.previous_id is None:
            later.append(row)
    for row in later:
        identity = (row.audit_model_id, row.condition, row.item_id, row.unit, row.replicate, row.turn - 1)
        if identity not in identities:
            raise RuntimeError(f"the paradigm planned turn {row.turn} of {identity[:5]} without turn {row.turn - 1}")
        row.previous_id = identities[identity]
    AuditRequest.objects.bulk_update(later, ["previous_id"], batch_size=BULK_BATCH_SIZE)


@dataclass(frozen=True)
class EarlierTurn:
    """A finished turn of a conversation as a later turn needs it: the request, its state, its reply's text (None
    when it has none) and its error."""

    request: ClaimedRequest
    state: str
    reply_text: str | None
    error: str = ""


def conversations_before(ids) -> dict[int, tuple[EarlierTurn, ...]]:
    """For each request id, its conversation up to and including it (turn 0 first), in one query per turn."""
    chains: dict[int, tuple[EarlierTurn, ...]] = {}
    rows: dict[int, tuple] = {}
    wanted = set(ids)
    while wanted:
        fetched = AuditRequest.objects.filter(id__in=wanted).values_list(*_CONVERSATION_FIELDS, "state",
                                                                          "reply__text", "error")
        rows.update({row[0]: row for row in fetched})
        wanted = {row[8] for row in rows.values() if row[8] is not None and row[8] not in rows}

    def chain(request_id: int) -> tuple[EarlierTurn, ...]:
        if request_id not in chains:
            *fields, state, text, error = rows[request_id]
            turn = EarlierTurn(ClaimedRequest(*fields[:7], turn=fields[7], previous_id=fields[8]), state, text, error)
            chains[request_id] = (*(chain(fields[8]) if fields[8] is not None else ()), turn)
        return chains[request_id]

    return {request_id: chain(request_id) for request_id in ids}


def conversation_payload(builder, request, earlier: tuple[EarlierTurn, ...] = ()):
    """What a request sends: its builder's payload; for a later turn, the first turn's payload continued by each
    earlier reply and the next turn's question (``follow_up``, which may raise NoFollowUp)."""
    if not earlier:
        return builder.payload(request)
    payload = builder.payload(earlier[0].request)
    for before, after in zip(earlier, [*(turn.request for turn in earlier[1:]), request], strict=True):
        payload = builder.follow_up(after, payload, before.reply_text)
    return payload


def request_payload(builder, request: ClaimedRequest):
    """What a claimed request sends (its earlier turns were loaded with the claim)."""
    return conversation_payload(builder, request, request.earlier)


def _turns_advance(audit: Audit, builder, finished_ids) -> None:
    """Key or close the later turns waiting on these finished requests (each only once: a turn already keyed or
    closed is not waiting); a closed turn closes the turns after it, and with the cache a keyed turn takes a stored
    reply, whose next turn is then keyed in turn."""
    finished = set(finished_ids)
    while finished:
        waiting = list(AuditRequest.objects.filter(previous_id__in=finished, state=AuditRequest.State.PENDING,
                                                   key="").values_list(*_CONVERSATION_FIELDS))
        if not waiting:
            return
        # The earlier turns are locked before they are read: "retry failed" re-opening one waits for this
        # transaction, or this one waits for it and reads it pending (and _requeue_failed locks them first too).
        list(AuditRequest.objects.select_for_update().filter(id__in={row[8] for row in waiting}).order_by(
            "id").values_list("id", flat=True))
        chains = conversations_before({row[8] for row in waiting})
        now = timezone.now()
        keyed, closed_failed, closed_ended = [], [], []
        for fields in waiting:
            request = ClaimedRequest(*fields[:7], turn=fields[7], previous_id=fields[8])
            chain = chains[request.previous_id]
            before = chain[-1]
            if before.state == AuditRequest.State.PENDING:
                continue
            if before.state == AuditRequest.State.FAILED:
                closed_failed.append(AuditRequest(id=request.id, error=TURN_FAILED.format(
                    turn=before.request.turn + 1, reason=before.error)))
                continue
            try:
                payload = conversation_payload(builder, request, chain)
            except NoFollowUp as ended:
                closed_ended.append(AuditRequest(id=request.id, error=TURN_ENDED.format(
                    turn=before.request.turn + 1, reason=ended)))
                continue
            keyed.append(AuditRequest(id=request.id, key=builder.key(
                builder.models[request.audit_model_id], payload, request.replicate)))
        for row in (*closed_failed, *closed_ended):
            row.state, row.outcome, row.finished_at, row.attempts = (AuditRequest.State.FAILED,
                                                                     AuditRequest.Outcome.ERROR, now, 0)
        # Each write re-checks, in its own UPDATE, what it was decided on: the turn still waits and the turn
        # before it is still answered or failed (not re-opened by "retry failed" since it was read).
        waits = AuditRequest.objects.filter(state=AuditRequest.State.PENDING, key="")
        closing = ["state", "outcome", "finished_at", "attempts", "error"]
        waits.filter(previous__state=AuditRequest.State.ANSWERED).bulk_update(keyed, ["key"],
                                                                               batch_size=BULK_BATCH_SIZE)
        waits.filter(previous__state=AuditRequest.State.FAILED).bulk_update(closed_failed, closing,
                                                                             batch_size=BULK_BATCH_SIZE)
        waits.filter(previous__state=AuditRequest.State.ANSWERED).bulk_update(closed_ended, closing,
                                                                               batch_size=BULK_BATCH_SIZE)
        # A turn whose close was refused stays pending, so the turns after it keep waiting (the next pass reads it).
        finished = {row.id for row in (*closed_failed, *closed_ended)}
        if audit.use_cache:
            keyed_ids = [row.id for row in keyed]
            for start in range(0, len(keyed_ids), BULK_BATCH_SIZE):
                finished |= _take_cached_replies(audit.id, builder, keyed_ids[start:start + BULK_BATCH_SIZE])


def turns_unblock(*, audit: Audit, builder) -> None:
    """Key or close the later turns still waiting although the turn before them is finished (re-opened by "retry
    failed", or after a fault): run by each work slice, so no conversation is left waiting for ever."""
    if not is_multi_turn(builder):
        return
    stranded = AuditRequest.objects.filter(audit=audit, state=AuditRequest.State.PENDING, key="",
                                           previous__isnull=False).exclude(
        previous__state=AuditRequest.State.PENDING).values_list("previous_id", flat=True)
    with transaction.atomic():
        _turns_advance(audit, builder, set(stranded))


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


def manifest_models(models) -> list[dict]:
    return [{"label": m.display_name, "model": m.model, "endpoint": m.endpoint.name, "protocol": m.endpoint.protocol,
             "base_url": m.endpoint.base_url, "params": m.params or "endpoint defaults", "digest": m.digest or None}
            for m in models]


# ------------------------------------------------------------------------------------- workers' leases

@dataclass(frozen=True)
class ClaimedRequest:
    """A request a worker sends; a later turn of a conversation carries its ``earlier`` turns, answered."""

    id: int
    audit_model_id: int
    condition: str
    item_id: int | None
    unit: str
    replicate: int
    key: str
    turn: int = 0
    previous_id: int | None = None
    earlier: tuple[EarlierTurn, ...] = ()


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


class WorkHeld(Exception):
    """Live leases of other work tasks hold every one of the audit's work holds; ``leases``: each holding lease's id
    and end."""

    def __init__(self, leases: dict[int, datetime]):
        super().__init__(f"the audit's work is held by {len(leases)} other tasks")
        self.leases = leases


def _work_holders(audit_id: int, now):
    """The audit's work holds: leases opened by work tasks (not sent marks), not released and not lapsed."""
    return AuditChunk.objects.filter(audit_id=audit_id, released_at__isnull=True, leased_until__gt=now)


def chunk_open(*, audit_id: int) -> int | None:
    """A new lease for a worker on a running audit (None when the audit is not running).

    The lease is also one of the audit's ``parallel_tasks`` work holds, taken under the audit's row lock: when live
    leases of other tasks hold them all, WorkHeld is raised and nothing is written. So a work task sent twice (the
    broker redelivering a dead worker's task, the recovery, a worker's start) never works beside the first."""
    now = timezone.now()
    with transaction.atomic():
        audit = Audit.objects.select_for_update().filter(pk=audit_id, status=Audit.Status.RUNNING).only(
            "parallel_tasks").first()
        if audit is None:
            return None
        holders = dict(_work_holders(audit_id, now).values_list("id", "leased_until"))
        if len(holders) >= max(1, audit.parallel_tasks):
            raise WorkHeld(holders)
        # The sent work has reached a worker: from now on this lease, not the sent marks, says the audit is alive,
        # so the audit is taken up again within WORK_STALLED_SECONDS if this worker dies.
        AuditChunk.objects.filter(audit_id=audit_id, released_at__isnull=False, leased_until__gt=now).update(
            leased_until=now)
        return AuditChunk.objects.create(audit_id=audit_id, leased_until=now + _lease()).id


def _free_requests(audit_id: int, now):
    """Pending requests no live lease holds, except later turns still waiting for their key."""
    return AuditRequest.objects.filter(audit_id=audit_id, state=AuditRequest.State.PENDING).filter(
        Q(chunk__isnull=True) | Q(chunk__leased_until__lt=now)).exclude(key="")


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
    claimed = [ClaimedRequest(*row) for row in AuditRequest.objects.filter(
        id__in=ids, chunk_id=chunk_id, state=AuditRequest.State.PENDING).order_by("order", "id").values_list(
        *_CONVERSATION_FIELDS)]
    later = {request.previous_id for request in claimed if request.previous_id is not None}
    if not later:
        return claimed
    chains = conversations_before(later)
    return [dataclasses.replace(request, earlier=chains[request.previous_id]) if request.previous_id else request
            for request in claimed]


_RECORDED_FIELDS = ("state", "reply", "error", "attempts", "finished_at", "outcome", "label", "explanation",
                    "parse_reason")


def chunk_record(*, chunk_id: int, results: list[RequestResult], parse, builder=None) -> None:
    """Store a batch of finished requests in bulk: each reply once per key, each request once, and its judgments.
    ``parse`` is the request builder's (the reply stored for a key is parsed, which is this one unless the key was
    answered before). With a multi-turn ``builder``, the later turns waiting on these requests are keyed or closed
    in the same transaction (:func:`_turns_advance`), so a worker killed between two turns loses no conversation."""
    if not results:
        return
    if builder is not None and is_multi_turn(builder):
        with transaction.atomic():
            _chunk_record(chunk_id, results, parse)
            _turns_advance(builder.audit, builder, {result.request.id for result in results})
        return
    _chunk_record(chunk_id, results, parse)


def _chunk_record(chunk_id: int, results: list[RequestResult], parse) -> None:
    now = timezone.now()
    with transaction.atomic():
        stored = _replies_store([r for r in results if r.completion is not None], now)
        finished_at = connection.ops.adapt_datetimefield_value(now)
        parameters = []
        judged: list[tuple[int, ParsedReply]] = []
        for result in results:
            if result.completion is None:
                values = (AuditRequest.State.FAILED, None, result.error, result.attempts, finished_at,
                          AuditRequest.Outcome.ERROR, None, "", "")
            else:
                reply_id, text, finish_reason = stored[result.request.key]
                parsed = parse(result.request, text, finish_reason)
                judged.append((result.request.id, parsed))
                values = (AuditRequest.State.ANSWERED, reply_id, "", result.attempts, finished_at, parsed.outcome,
                          parsed.label, parsed.explanation, parsed.reason)
            parameters.append((result.request.id, *values))
        # Judgments only for requests this reply answered: a duplicate completion of a request answered before
        # finds its judgments there already, one another worker recorded as failed stays failed without any.
        recorded_now = _requests_record(parameters)
        if connection.vendor == "postgresql":
            # A request that was pending has no judgment (a failed one has none, and is retried only once its
            # judgments are gone), so the judgments of the requests recorded now are new: COPY, no conflict check.
            _judgments_copy_new(_audit_of_chunk(chunk_id),
                                [(request_id, parsed) for request_id, parsed in judged if request_id in recorded_now])
        else:
            _judgments_create(_audit_of_chunk(chunk_id),
                              [(request_id, parsed) for request_id, parsed in judged if request_id in recorded_now])


_REPLY_FIELDS = ("key", "text", "finish_reason", "prompt_tokens", "completion_tokens", "model_reported",
                 "fingerprint", "latency_ms", "attempts", "created_at")


def _replies_store(answered: list[RequestResult], now) -> dict[str, tuple[int, str, str]]:
    """Store the replies of a batch, each key once (the first of the batch, unless the key was answered before),
    and return the stored reply of every key: (id, text, finish reason).

    One multi-row ``INSERT … ON CONFLICT (key) DO NOTHING RETURNING key, id``: the replies it inserted are the ones
    in hand, so only the keys answered before are read back. bulk_create costs three times as much here on
    PostgreSQL, where Django 5.2 sends its rows as arrays that psycopg escapes in Python (a 50-reply batch of 60
    judgments each: 27 ms against 9 ms, ``benchmarks/counterfactual_scale.py``)."""
    if not answered:
        return {}
    first: dict[str, RequestResult] = {}
    for result in answered:
        first.setdefault(result.request.key, result)
    created_at = connection.ops.adapt_datetimefield_value(now)
    rows = [(key, r.completion.text, r.completion.finish_reason or "", r.completion.prompt_tokens,
             r.completion.completion_tokens, r.completion.model_reported or "", r.completion.fingerprint or "",
             r.latency_ms, r.attempts, created_at) for key, r in first.items()]
    meta = LLMReply._meta
    quote = connection.ops.quote_name
    columns = ", ".join(quote(meta.get_field(name).column) for name in _REPLY_FIELDS)
    row_placeholder = f"({', '.join(['%s'] * len(_REPLY_FIELDS))})"
    stored: dict[str, tuple[int, str, str]] = {}
    with connection.cursor() as cursor:
        for start in range(0, len(rows), BULK_BATCH_SIZE):
            batch = rows[start:start + BULK_BATCH_SIZE]
            cursor.execute(
                f"INSERT INTO {quote(meta.db_table)} ({columns}) VALUES {', '.join([row_placeholder] * len(batch))} "
                f"ON CONFLICT ({quote(meta.get_field('key').column)}) DO NOTHING "
                f"RETURNING {quote(meta.get_field('key').column)}, {quote(meta.pk.column)}",
                [value for row in batch for value in row])
            for key, reply_id in cursor.fetchall():
                stored[key] = (reply_id, first[key].completion.text, first[key].completion.finish_reason or "")
    answered_before = [key for key in first if key not in stored]
    for start in range(0, len(answered_before), BULK_BATCH_SIZE):
        stored.update({key: (pk, text, finish) for key, pk, text, finish in LLMReply.objects.filter(
            key__in=answered_before[start:start + BULK_BATCH_SIZE]).values_list("key", "id", "text", "finish_reason")})
    return stored


def _requests_record(parameters: list[tuple]) -> set[int]:
    """Record finished requests, each ``(id, *values of _RECORDED_FIELDS)``, in one
    ``UPDATE … FROM (VALUES …) … RETURNING id`` that touches only a request still pending, so a duplicate
    completion (a lease that expired while its worker still lived) is not recorded twice; returns the ids it
    recorded. One statement rather than one per request: on PostgreSQL a 50-request batch costs 3 ms against 8 ms
    with a pipelined executemany (``benchmarks/counterfactual_scale.py``)."""
    meta = AuditRequest._meta
    quote = connection.ops.quote_name
    once: dict[int, tuple] = {}
    for row in parameters:
        once.setdefault(row[0], row)
    fields = [meta.pk, *(meta.get_field(name) for name in _RECORDED_FIELDS)]
    names = ["id", *(field.column for field in fields[1:])]
    casts = [field.cast_db_type(connection) if connection.vendor == "postgresql" else None for field in fields]
    first_row = "(" + ", ".join(f"%s::{cast}" if cast else "%s" for cast in casts) + ")"
    other_row = "(" + ", ".join(["%s"] * len(fields)) + ")"
    table = quote(meta.db_table)
    assignments = ", ".join(f"{quote(column)} = v.{quote(column)}" for column in names[1:])
    recorded: set[int] = set()
    rows = list(once.values())
    with connection.cursor() as cursor:
        for start in range(0, len(rows), BULK_BATCH_SIZE):
            batch = rows[start:start + BULK_BATCH_SIZE]
            values = ", ".join([first_row] + [other_row] * (len(batch) - 1))
            cursor.execute(
                f"WITH v ({', '.join(quote(name) for name in names)}) AS (VALUES {values}) "
                f"UPDATE {table} SET {assignments} FROM v "
                f"WHERE {table}.{quote(meta.pk.column)} = v.{quote('id')} "
                f"AND {table}.{quote('state')} = %s RETURNING {table}.{quote(meta.pk.column)}",
                [*(value for row in batch for value in row), AuditRequest.State.PENDING])
            recorded.update(row[0] for row in cursor.fetchall())
    return recorded


def _audit_of_chunk(chunk_id: int) -> int:
    return AuditChunk.objects.values_list("audit_id", flat=True).get(pk=chunk_id)


_JUDGMENT_FIELDS = ("audit", "request", "unit", "outcome", "value", "label", "reason", "explanation")
# Below this many judgments a PostgreSQL batch takes the executemany path: the COPY path's three extra statements
# (create if missing, copy, truncate) cost more than they save on a few rows.
JUDGMENT_COPY_MIN_ROWS = 200
_JUDGMENT_STAGING = "auditapp_judgment_staging"


def _judgment_columns() -> list[str]:
    meta = AuditJudgment._meta
    return [connection.ops.quote_name(meta.get_field(name).column) for name in _JUDGMENT_FIELDS]


def _judgment_statement() -> str:
    """One INSERT per judgment, run with executemany (a pipeline on psycopg 3), skipping a judgment already
    stored for the same request and unit. Measured on 2,310 judgments (a BITS audit's default corpus): SQLite
    12 ms against 50–125 ms for bulk_create with ignore_conflicts; PostgreSQL 20 ms of the worker's CPU against
    50–125 ms (the server's own time, about 50 ms, is the same)."""
    placeholders = ", ".join(["%s"] * len(_JUDGMENT_FIELDS))
    return (f"INSERT INTO {connection.ops.quote_name(AuditJudgment._meta.db_table)} "
            f"({', '.join(_judgment_columns())}) VALUES ({placeholders}) ON CONFLICT DO NOTHING")


def _judgments_copy(rows: list[tuple]) -> None:
    """PostgreSQL: COPY the rows into a session's temporary staging table, then one INSERT … SELECT … ON CONFLICT
    DO NOTHING in their order (so of two rows for the same request and unit the first is kept, as with
    executemany), then empty the staging table. Issue 13 asks for 50,000 judgments/s (60 per reply, 50 replies per
    transaction): on the 2-core reference machine executemany stored about 25,000/s, this path about 56,000/s
    (benchmarks/judgment_storage.py); most of what remains is the server's (the insert into four indexes, and at
    commit the deferred foreign-key checks).
    The staging table lives as long as the database session; TRUNCATE rather than DELETE empties it, because no
    autovacuum ever cleans a temporary table's dead rows. Everything runs in the caller's transaction (a savepoint
    when there is one), so a rollback leaves neither judgments nor staged rows behind."""
    meta = AuditJudgment._meta
    columns = _judgment_columns()
    types = [meta.get_field(name).db_type(connection) for name in _JUDGMENT_FIELDS]
    staging = connection.ops.quote_name(_JUDGMENT_STAGING)
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(f"CREATE TEMPORARY TABLE IF NOT EXISTS {staging} (position integer, "
                       f"{', '.join(f'{column} {kind}' for column, kind in zip(columns, types, strict=True))})")
        with cursor.cursor.copy(f"COPY {staging} (position, {', '.join(columns)}) FROM STDIN") as copy:
            for position, row in enumerate(rows):
                copy.write_row((position, *row))
        cursor.execute(f"INSERT INTO {connection.ops.quote_name(meta.db_table)} ({', '.join(columns)}) "
                       f"SELECT {', '.join(columns)} FROM {staging} ORDER BY position ON CONFLICT DO NOTHING")
        cursor.execute(f"TRUNCATE {staging}")


def _judgment_rows(audit_id: int, judged: list[tuple[int, ParsedReply]]) -> list[tuple]:
    return [(audit_id, request_id, judgment.unit, judgment.outcome, judgment.value, judgment.label,
             judgment.reason[:200], judgment.explanation)
            for request_id, parsed in judged for judgment in parsed.judgments]


def _judgments_copy_new(audit_id: int, judged: list[tuple[int, ParsedReply]]) -> None:
    """PostgreSQL: the judgments of requests that have none yet, COPYed straight into the table (about twice the
    rate of the staging path, which checks each row for a conflict)."""
    rows = _judgment_rows(audit_id, judged)
    if not rows:
        return
    table = connection.ops.quote_name(AuditJudgment._meta.db_table)
    with connection.cursor() as cursor:
        with cursor.cursor.copy(f"COPY {table} ({', '.join(_judgment_columns())}) FROM STDIN") as copy:
            for row in rows:
                copy.write_row(row)


def _judgments_create(audit_id: int, judged: list[tuple[int, ParsedReply]]) -> None:
    """The judgments of parsed replies, in bulk (an existing judgment of the same request and unit is kept): on
    PostgreSQL through COPY (:func:`_judgments_copy`) from :data:`JUDGMENT_COPY_MIN_ROWS` judgments, else one
    INSERT per judgment with executemany."""
    rows = _judgment_rows(audit_id, judged)
    if connection.vendor == "postgresql" and len(rows) >= JUDGMENT_COPY_MIN_ROWS:
        _judgments_copy(rows)
    elif rows:
        with connection.cursor() as cursor:
            cursor.executemany(_judgment_statement(), rows)


LEASE_LOST = "lease lost"


def _lease_renew(chunk_id: int, audit_id: int, retry_state: dict) -> bool:
    """Extend the lease; one that lapsed (its worker stalled longer than the lease) is taken again only while one
    of the audit's work holds is free (:func:`chunk_open`). False: other tasks hold them all."""
    now = timezone.now()
    if AuditChunk.objects.filter(pk=chunk_id, leased_until__gt=now).update(leased_until=now + _lease(),
                                                                           retry_state=retry_state):
        return True
    with transaction.atomic():
        audit = Audit.objects.select_for_update().only("parallel_tasks").get(pk=audit_id)
        if _work_holders(audit_id, now).exclude(pk=chunk_id).count() >= max(1, audit.parallel_tasks):
            return False
        AuditChunk.objects.filter(pk=chunk_id).update(leased_until=now + _lease(), retry_state=retry_state)
    return True


def chunk_renew(*, chunk_id: int, audit_id: int, retry_state: dict) -> str:
    """Extend the lease, record the retry state, enforce the error budget; return the audit's status, or
    LEASE_LOST when the lease lapsed and other tasks took the audit's work holds."""
    if not _lease_renew(chunk_id, audit_id, retry_state):
        return LEASE_LOST
    audit = Audit.objects.only("status", "error_budget", "n_requests", "status_reason").get(pk=audit_id)
    if audit.status == Audit.Status.RUNNING and audit.status_reason.startswith(WAITING_NOTE):
        Audit.objects.filter(pk=audit_id, status=Audit.Status.RUNNING, status_reason=audit.status_reason).update(
            status_reason="")
    if audit.status == Audit.Status.RUNNING:
        # A later turn closed because the earlier reply gave nothing to continue from (a refusal) is a finding of
        # the audit, not a failure of the endpoint.
        failed = AuditRequest.objects.filter(audit_id=audit_id, state=AuditRequest.State.FAILED).exclude(
            previous__isnull=False, error__contains=_TURN_ENDED_MARK).count()
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
    """Make the failed requests pending again. A later turn re-opened with its earlier turn waits for it again
    (its key blank: the earlier reply will be a new one); one whose earlier turn is answered keeps its key, or is
    keyed or closed again now when it was closed unsent (:func:`turns_unblock`)."""
    failed = AuditRequest.objects.filter(audit=audit, state=AuditRequest.State.FAILED)
    # Locked first, in id order as _turns_advance locks earlier turns: a worker closing a later turn on a failed one
    # finishes before they are re-opened, and the statements below then see the turn it closed.
    list(failed.select_for_update().order_by("id").values_list("id", flat=True))
    AuditJudgment.objects.filter(audit=audit, request__state=AuditRequest.State.FAILED).delete()
    failed.filter(previous__state=AuditRequest.State.FAILED).update(key="")
    n = failed.update(state=AuditRequest.State.PENDING, error="", outcome="", attempts=0, finished_at=None,
                      chunk=None)
    if n and AuditRequest.objects.filter(audit=audit, turn__gt=0).exists():
        turns_unblock(audit=audit, builder=request_builder(audit))
    return n


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


# ------------------------------------------------------------------------------------------------ deletion

def audit_judgments_sweep(*, audit_id: int) -> int:
    """Delete the audit's judgments whose request no longer exists (all of them once the audit is deleted); returns
    how many. Run after the commit of every deletion of an audit or of its models (:mod:`auditapp.signals`): the
    judgments' foreign keys are not database constraints, and Django's cascade deletes judgments before their
    requests, so a worker that held a request's row lock can commit its judgments between the two (AuditJudgment)."""
    orphans = AuditJudgment.objects.filter(audit_id=audit_id).exclude(
        Exists(AuditRequest.objects.filter(pk=OuterRef("request_id"))))
    deleted, _ = orphans.delete()
    if deleted:
        logger.info("Audit %s: deleted %s judgments left by a deletion", audit_id, deleted)
    return deleted


def audit_judgments_sweep_on_commit(*, audit_id: int, using: str) -> None:
    """Sweep the audit's orphaned judgments once the deleting transaction commits (at once outside one): by then
    every worker that held a deleted request's lock has committed, and no later writer finds the request."""
    transaction.on_commit(lambda: audit_judgments_sweep(audit_id=audit_id), using=using, robust=True)


# ----------------------------------------------------------------------------------- parsing and metrics

def audit_reparse(*, audit_id: int) -> int:
    """Parse every stored reply of the audit again (no model is asked) and rewrite its judgments; returns how many
    replies were parsed. Only the judgments of the requests parsed here are replaced, in one transaction, so a
    reply recorded meanwhile keeps its own. Replies are read and judged in batches of REPARSE_BATCH_SIZE requests,
    so an audit of millions of judgments is re-parsed in bounded memory."""
    builder = request_builder(Audit.objects.get(pk=audit_id))
    answered = AuditRequest.objects.filter(audit_id=audit_id, state=AuditRequest.State.ANSWERED).order_by("id")
    parsed_count = 0
    with transaction.atomic():
        ids = list(answered.values_list("id", flat=True))
        for start in range(0, len(ids), REPARSE_BATCH_SIZE):
            batch_ids = ids[start:start + REPARSE_BATCH_SIZE]
            # Locked (PostgreSQL; SQLite's IMMEDIATE transactions hold the whole database): a request deleted
            # meanwhile is not returned, so no judgment is written for it (see AuditJudgment).
            rows = list(answered.filter(id__in=batch_ids).select_related("reply").select_for_update(
                of=("self",)).only("id", "audit_model_id", "condition", "item_id", "unit", "replicate", "turn",
                                   "reply__text", "reply__finish_reason"))
            judged = []
            for row in rows:
                parsed = builder.parse(row, row.reply.text, row.reply.finish_reason)
                row.outcome, row.label, row.explanation, row.parse_reason = (parsed.outcome, parsed.label,
                                                                             parsed.explanation, parsed.reason)
                judged.append((row.id, parsed))
            AuditRequest.objects.bulk_update(rows, ["outcome", "label", "explanation", "parse_reason"],
                                             batch_size=BULK_BATCH_SIZE)
            AuditJudgment.objects.filter(request_id__in=batch_ids).delete()
            _judgments_create(audit_id, judged)
            parsed_count += len(rows)
    return parsed_count


def audit_judge_unjudged(*, audit_id: int) -> int:
    """Write the judgments of answered requests that have none (replies stored before judgments existed), parsing
    their stored replies in batches; nothing else changes. Returns how many requests were judged."""
    builder = request_builder(Audit.objects.get(pk=audit_id))
    unjudged = (AuditRequest.objects.filter(audit_id=audit_id, state=AuditRequest.State.ANSWERED)
                .exclude(Exists(AuditJudgment.objects.filter(request=OuterRef("pk")))).order_by("id"))
    judged_total, last_id = 0, 0
    while True:
        with transaction.atomic():
            # Read and locked in the transaction that writes their judgments, as audit_reparse does.
            rows = list(unjudged.filter(id__gt=last_id).select_related("reply").select_for_update(
                of=("self",)).only("id", "audit_model_id", "condition", "item_id", "unit", "replicate", "turn",
                                   "reply__text", "reply__finish_reason")[:BULK_BATCH_SIZE])
            if not rows:
                return judged_total
            last_id = rows[-1].id
            _judgments_create(audit_id, [(row.id, builder.parse(row, row.reply.text, row.reply.finish_reason))
                                         for row in rows])
        judged_total += len(rows)


def audit_reparse_and_analyse(*, audit: Audit) -> int:
    """Re-parse a finished (or stopped, paused, cancelled) audit's replies and recompute its metrics."""
    if audit.status in (Audit.Status.QUEUED, Audit.Status.RUNNING):
        raise AuditError(f"pause the audit before re-parsing: it is {audit.get_status_display().lower()}")
    n = audit_reparse(audit_id=audit.id)
    _enqueue_analysis(audit.id)
    return n


def audit_analyse(*, audit_id: int) -> None:
    """Compute and store the audit's results: its paradigm's analysis (then a completed audit). An analysis that
    cannot be computed fails the audit with the reason, instead of leaving it analysing for every worker start to
    try again; a transient fault (the database away) is raised, for the task to retry."""
    audit = Audit.objects.get(pk=audit_id)
    try:
        registry.get(audit.paradigm).analyse(audit)
    except TRANSIENT_ERRORS:
        raise
    except Exception as error:  # noqa: BLE001 - any other failure is the audit's, recorded with its reason
        logger.exception("Audit %s: the analysis failed", audit_id)
        audit_fail(audit_id=audit_id, status=Audit.Status.ANALYSING,
                   reason=f"the analysis failed: {type(error).__name__}: {error}")
