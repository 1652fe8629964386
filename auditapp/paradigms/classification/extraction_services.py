"""The second-pass extraction of classification audits (replies left unparseable by the strict parser), the Django side:
recording an extraction, running it (a worker's task, idempotent), and the metrics under an outcome source.

The pure part (template, strict reading of the extractor's answer, labels under an extraction) is
:mod:`.extraction`; the verbal rules are :mod:`.verbal_rules`. An extraction reads only the replies the strict
parser left unparseable, and stores its outcomes in :class:`~auditapp.models.AuditExtractionLabel`, beside the
strict outcomes, which nothing here changes.

Model mode goes through the engine's HTTP client (:func:`auditapp.llm_clients.send_chat`: retries, backoff,
deadline) under the endpoint's own limits (:func:`auditapp.llm_limits.limiter_for` with the key the audits use,
so extractions and audits share an endpoint's concurrency and rate limit across workers). Each extractor request
has its own key (:func:`auditapp.engine.request_keys.request_key` of the extractor's messages); its reply is stored once
per key in :class:`~auditapp.models.LLMReply` and, when the audit uses the cache, reused by any later extraction
that asks the same model the same question.

A worker runs an extraction under a lease (``AuditExtraction.leased_until``) and records whatever stops it; the
workers' recovery (:func:`extractions_recover`) sends again one whose task was lost or whose worker died. Its
metrics are computed when it completes and whenever the audit is analysed again (:func:`extractions_analyse`),
and stored in ``AuditExtraction.results``: reading them never computes.
"""
from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import logging
import random
import re
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import timedelta

import pandas as pd
from django.conf import settings
from django.db import IntegrityError, connections, transaction
from django.db.models import Q
from django.utils import timezone

from auditapp import llm_clients, scorer_kinds
from auditapp.endpoint_keys import EndpointRefused
from auditapp.engine.endpoints import endpoint_config, endpoint_list_models
from auditapp.engine.errors import TRANSIENT_ERRORS, AuditError
from auditapp.engine.planning import BULK_BATCH_SIZE
from auditapp.engine.request_keys import request_key
from auditapp.llm_limits import limiter_for
from auditapp.models import (
    Audit,
    AuditExtraction,
    AuditExtractionLabel,
    AuditRequest,
    LLMEndpoint,
    LLMReply,
    endpoint_address_policy,
)
from auditapp.paradigms.classification.extraction import (
    TEMPLATE_VERSION,
    extraction_messages,
    labels_with_extraction,
    parse_extractor_answer,
)
from auditapp.paradigms.classification.services import classification_requests_frame, classification_results
from auditapp.paradigms.classification.verbal_rules import RULES_VERSION, read_verbal
from tasks.sending import task_send

logger = logging.getLogger(__name__)

# Extractor requests sent together, then stored: a task stopped half-way keeps what it stored.
MODEL_BATCH = 200
STRICT = "strict"
FINISHED = (Audit.Status.COMPLETED, Audit.Status.STOPPED, Audit.Status.PAUSED, Audit.Status.CANCELLED,
            Audit.Status.FAILED)


# ------------------------------------------------------------------------------------------------ recording

def _identity(mode: str, version: str, endpoint: LLMEndpoint | None, model: str, params: dict) -> str:
    document = {"mode": mode, "version": version, "endpoint": endpoint.id if endpoint else None, "model": model,
                "params": params}
    return hashlib.sha256(json.dumps(document, sort_keys=True).encode()).hexdigest()


def extraction_problems(*, audit: Audit, mode: str, endpoint: LLMEndpoint | None, model: str,
                        params: dict) -> list[str]:
    """Everything that stops this extraction of the audit from being recorded (empty when it can be)."""
    problems = []
    if audit.status not in FINISHED:
        problems.append(f"an extraction runs after the audit: this one is {audit.get_status_display().lower()}")
    if mode == AuditExtraction.Mode.RULES:
        if endpoint is not None or model or params:
            problems.append("the rules mode takes no endpoint, model or params")
    elif mode == AuditExtraction.Mode.MODEL:
        if endpoint is None or not model:
            problems.append("the model mode needs an endpoint and a model")
        elif scorer_kinds.takes(endpoint.protocol) != "messages":
            problems.append(f"endpoint {endpoint.name} ({endpoint.get_protocol_display()}) is not a chat model")
        else:
            problems += [f"params: {problem}" for problem in llm_clients.chat_params_problems(params)]
            try:
                llm_clients.chat_payload(endpoint.protocol, model, [], params)
            except ValueError as error:
                problems.append(f"params: {error}")
    else:
        problems.append(f"mode must be one of {list(AuditExtraction.Mode.values)}, not {mode!r}")
    return problems


def extraction_create(*, audit: Audit, mode: str, endpoint: LLMEndpoint | None = None, model: str = "",
                      params: dict | None = None, created_by=None) -> tuple[AuditExtraction, bool]:
    """Record an extraction of the audit and have a worker run it; returns (the extraction, whether it is new).

    The same extraction (mode, version, endpoint, model, params) already recorded is not redone, only brought up to
    date: a failed or queued one is queued again, and a completed one too when it is out of date
    (:func:`extraction_out_of_date`: unparseable replies it does not cover, say after a resumed audit or a
    re-parse, or requests of the extractor that failed); its task does only what is missing. A running one is
    left to its worker (the workers' recovery takes it over if that worker dies). Raises AuditError naming every
    problem (:func:`extraction_problems`)."""
    params = params or {}
    problems = extraction_problems(audit=audit, mode=mode, endpoint=endpoint, model=model, params=params)
    if problems:
        raise AuditError("; ".join(problems))
    version = RULES_VERSION if mode == AuditExtraction.Mode.RULES else TEMPLATE_VERSION
    extractor = (f"verbal rules v{version}" if mode == AuditExtraction.Mode.RULES else
                 f"{model} at {endpoint.name}, extraction template v{version}"
                 + (f", params {json.dumps(params, sort_keys=True)}" if params else ""))
    identity = _identity(mode, version, endpoint, model, params)
    existing = AuditExtraction.objects.filter(audit=audit, identity=identity).defer("results").first()
    if existing is not None:
        if existing.status in (AuditExtraction.Status.FAILED, AuditExtraction.Status.QUEUED) or (
                existing.status == AuditExtraction.Status.COMPLETED and extraction_out_of_date(existing)):
            if AuditExtraction.objects.filter(pk=existing.pk, status=existing.status).update(
                    status=AuditExtraction.Status.QUEUED, status_reason="", finished_at=None,
                    leased_until=_resend_at()):
                _enqueue(existing.pk)
            existing.refresh_from_db()
        return existing, False
    try:
        with transaction.atomic():
            extraction = AuditExtraction.objects.create(
                audit=audit, mode=mode, endpoint=endpoint, model=model, params=params, version=version,
                extractor=extractor, identity=identity, created_by=created_by, leased_until=_resend_at())
    except IntegrityError:  # recorded meanwhile by a concurrent request
        return AuditExtraction.objects.get(audit=audit, identity=identity), False
    _enqueue(extraction.pk)
    return extraction, True


def extraction_out_of_date(extraction: AuditExtraction) -> bool:
    """Whether the extraction lacks something it would do if run now: an outcome for an unparseable reply of the
    audit (one it never read, or one whose extractor request failed), or its stored metrics."""
    return (AuditExtraction.objects.filter(pk=extraction.pk, results__isnull=True).exists()
            or _missing(extraction).exists())


def _resend_at():
    """When the workers' recovery sends a queued extraction's task again if no worker has started it."""
    return timezone.now() + timedelta(seconds=settings.WORK_QUEUED_GRACE_SECONDS)


def _enqueue(extraction_id: int) -> None:
    transaction.on_commit(lambda: task_send("auditapp.audit_extraction_run", extraction_id,
                                            what=f"extraction {extraction_id}"), robust=True)


def extractions_recover(*, stalled_after: timedelta) -> list[int]:
    """Send again the task of every extraction that is stuck: queued past its resend time (its task was lost,
    or never sent because the broker was away) or running past its lease (its worker died, or was stopped
    without recording why). Each is first marked queued with a new resend time by a conditional update, so two
    recoveries at the same time send it once. Returns the extraction ids sent."""
    now = timezone.now()
    stuck = AuditExtraction.objects.filter(
        Q(status__in=[AuditExtraction.Status.QUEUED, AuditExtraction.Status.RUNNING])
        & (Q(leased_until__isnull=True) | Q(leased_until__lt=now)))
    sent = []
    for extraction_id, extraction_status, leased_until in stuck.values_list("id", "status", "leased_until"):
        if AuditExtraction.objects.filter(pk=extraction_id, status=extraction_status,
                                          leased_until=leased_until).update(
                status=AuditExtraction.Status.QUEUED, leased_until=now + stalled_after):
            logger.warning("Extraction %s: %s with no worker holding it; sending its task again", extraction_id,
                           extraction_status)
            _enqueue(extraction_id)
            sent.append(extraction_id)
    return sent


# -------------------------------------------------------------------------------------------------- running

class _LeaseLost(Exception):
    """Another worker took the extraction over (this one's lease passed) or it is no longer running."""


def _lease_until():
    return timezone.now() + timedelta(seconds=settings.EXTRACTION_LEASE_SECONDS)


def _renew(extraction_id: int) -> None:
    if not AuditExtraction.objects.filter(pk=extraction_id, status=AuditExtraction.Status.RUNNING).update(
            leased_until=_lease_until()):
        raise _LeaseLost(extraction_id)


def _fail(extraction_id: int, reason: str) -> None:
    AuditExtraction.objects.filter(pk=extraction_id, status=AuditExtraction.Status.RUNNING).update(
        status=AuditExtraction.Status.FAILED, status_reason=reason, finished_at=timezone.now(), leased_until=None)


def _missing(extraction: AuditExtraction):
    """The audit's unparseable replies this extraction has no outcome for yet (never read, or its extractor request
    failed: those are asked again), with their text."""
    done = (AuditExtractionLabel.objects.filter(extraction_id=extraction.pk)
            .exclude(outcome="error").values("request_id"))
    return (AuditRequest.objects.filter(audit_id=extraction.audit_id, state=AuditRequest.State.ANSWERED,
                                        outcome=AuditRequest.Outcome.UNPARSEABLE)
            .exclude(pk__in=done).select_related("reply").only("id", "reply__text").order_by("id"))


def extraction_run(*, extraction_id: int) -> str:
    """Run an extraction: read every unparseable reply it has no outcome for yet (or whose extractor request
    failed), store the outcomes (an outcome already stored is kept), compute and store the metrics with it, then
    mark it completed. Returns its status.

    Claimed with a lease (``leased_until``), renewed while it runs: a second delivery of the task, while a worker
    holds the lease, does nothing; once the lease has passed (the worker died) a delivery takes it over and does
    only what is missing. Whatever stops the run is recorded: a transient fault (the database or the Redis of the
    limits away) puts it back in the queue with a note and is raised for the task to retry (the recovery sends it
    again otherwise); any other error, the time limit included, fails it with the reason (asking for the same
    extraction again resumes it)."""
    now = timezone.now()
    claimed = AuditExtraction.objects.filter(
        Q(pk=extraction_id) & (Q(status=AuditExtraction.Status.QUEUED)
                               | Q(status=AuditExtraction.Status.RUNNING, leased_until__isnull=True)
                               | Q(status=AuditExtraction.Status.RUNNING, leased_until__lt=now))).update(
        status=AuditExtraction.Status.RUNNING, status_reason="", leased_until=_lease_until())
    if not claimed:
        return AuditExtraction.objects.values_list("status", flat=True).get(pk=extraction_id)
    try:
        extraction = AuditExtraction.objects.select_related("endpoint", "audit").defer("results").get(
            pk=extraction_id)
        reason = _run_rules(extraction) if extraction.mode == AuditExtraction.Mode.RULES else _run_model(extraction)
        if reason:
            _fail(extraction_id, reason)
            return AuditExtraction.Status.FAILED
        _renew(extraction_id)
        results = extraction_results_compute(extraction.audit, extraction)
        AuditExtraction.objects.filter(pk=extraction_id, status=AuditExtraction.Status.RUNNING).update(
            status=AuditExtraction.Status.COMPLETED, status_reason="", finished_at=timezone.now(), leased_until=None,
            results=results)
    except _LeaseLost:
        pass
    except TRANSIENT_ERRORS as error:
        logger.warning("Extraction %s: waiting for a service: %r", extraction_id, error)
        # If the service is still away, its lease passes and the recovery takes it over.
        with contextlib.suppress(TRANSIENT_ERRORS):
            AuditExtraction.objects.filter(pk=extraction_id, status=AuditExtraction.Status.RUNNING).update(
                status=AuditExtraction.Status.QUEUED, leased_until=_resend_at(),
                status_reason=f"waiting since {timezone.now():%Y-%m-%d %H:%M:%S %Z}: {type(error).__name__}: "
                              f"{error}; it resumes by itself")
        raise
    except Exception as error:  # anything else stops it: recorded with its reason, never left running
        logger.exception("Extraction %s failed", extraction_id)
        _fail(extraction_id, f"the extraction stopped: {type(error).__name__}: {error}; ask for the same extraction "
                             "again to do the rest")
    return AuditExtraction.objects.values_list("status", flat=True).get(pk=extraction_id)


def _pages(extraction: AuditExtraction, size: int):
    """The missing replies (:func:`_missing`) a page at a time, by request id: each page is stored before the next
    is read, and the lease renewed between pages."""
    after = 0
    while page := list(_missing(extraction).filter(pk__gt=after)[:size]):
        yield page
        after = page[-1].id
        _renew(extraction.pk)


def _run_rules(extraction: AuditExtraction) -> str:
    for page in _pages(extraction, BULK_BATCH_SIZE):
        rows = []
        for request in page:
            reading = read_verbal(request.reply.text)
            rows.append(AuditExtractionLabel(extraction=extraction, request_id=request.id,
                                             outcome="label" if reading.label is not None else "none",
                                             label=reading.label, reason=reading.reason[:300]))
        AuditExtractionLabel.objects.bulk_create(rows, ignore_conflicts=True)
    return ""


@dataclass(frozen=True)
class _Ask:
    request_id: int
    key: str
    messages: list[dict]


def _run_model(extraction: AuditExtraction) -> str:
    """Ask the extractor model about every missing reply; "" when done, else why the extraction failed."""
    endpoint = extraction.endpoint
    try:
        offered = {info.name: info for info in endpoint_list_models(endpoint)}
    except EndpointRefused as error:
        return f"endpoint {endpoint} is not asked: {error}"
    except llm_clients.EndpointError as error:
        return f"could not list the models of endpoint {endpoint}: {error}"
    if extraction.model not in offered:
        return (f"endpoint {endpoint} does not offer model {extraction.model!r} "
                f"(it offers: {', '.join(sorted(offered)) or 'nothing'})")
    digest = offered[extraction.model].digest or ""
    if digest != extraction.digest:
        AuditExtraction.objects.filter(pk=extraction.pk).update(digest=digest)
    scope = "" if extraction.audit.use_cache else f"extraction:{extraction.pk}"
    for page in _pages(extraction, MODEL_BATCH):
        asks = []
        for request in page:
            messages = extraction_messages(request.reply.text)
            key = extractor_request_key(endpoint, extraction.model, digest, extraction.params, messages, scope)
            asks.append(_Ask(request.id, key, messages))
        stored = LLMReply.objects.in_bulk([ask.key for ask in asks], field_name="key")
        # Replies of the same text are one extractor request, asked once.
        to_send = list({ask.key: ask for ask in asks if ask.key not in stored}.values())
        sent = asyncio.run(_send(extraction, to_send)) if to_send else {}
        _store(extraction, asks, stored, sent)
    return ""


def extractor_request_key(endpoint: LLMEndpoint, model: str, digest: str, params: dict, messages: list[dict],
                            scope: str) -> str:
    """The key of an extractor request, made as an audit request's is (replicate 0)."""
    return request_key(protocol=endpoint.protocol, base_url=endpoint.base_url, model=model, digest=digest,
                       params=params, messages=messages, replicate=0, scope=scope,
                       identity=scorer_kinds.identity(endpoint_config(endpoint), model))


async def _send(extraction: AuditExtraction, asks: list[_Ask]) -> dict[str, llm_clients.SendResult]:
    endpoint = extraction.endpoint
    config = endpoint_config(endpoint)
    limiter = limiter_for(settings.LLM_LIMITS_REDIS_URL or None, f"endpoint-{endpoint.id}", endpoint.max_concurrency,
                          endpoint.requests_per_minute, slot_ttl=settings.LLM_SLOT_LEASE_SECONDS,
                          directory=settings.LLM_LIMITS_DIR)
    rng = random.Random(f"extraction:{extraction.pk}")
    gate = asyncio.Semaphore(endpoint.max_concurrency)
    loop = asyncio.get_running_loop()
    database = ThreadPoolExecutor(max_workers=1, thread_name_prefix=f"extraction-{extraction.pk}-db")

    async def one(session, ask: _Ask) -> tuple[str, llm_clients.SendResult]:
        async with gate:
            return ask.key, await llm_clients.send_chat(session, config, limiter, extraction.model, ask.messages,
                                                        extraction.params, rng=rng)

    async def renew_lease() -> None:
        # A slow endpoint may take longer than the lease over one page: the lease is renewed while it answers.
        while True:
            await asyncio.sleep(settings.EXTRACTION_LEASE_SECONDS / 3)
            await loop.run_in_executor(database, _renew, extraction.pk)

    renewing = asyncio.create_task(renew_lease())
    try:
        async with llm_clients.chat_session(endpoint.max_concurrency,
                                            address_policy=endpoint_address_policy()) as session:
            return dict(await asyncio.gather(*(one(session, ask) for ask in asks)))
    finally:
        renewing.cancel()
        await asyncio.gather(renewing, return_exceptions=True)
        await loop.run_in_executor(database, connections.close_all)
        database.shutdown(wait=True)
        await limiter.aclose()


def _store(extraction: AuditExtraction, asks: list[_Ask], stored: dict[str, LLMReply],
           sent: dict[str, llm_clients.SendResult]) -> None:
    """Store the new replies once per key, then each reply's outcome (an outcome already stored is kept)."""
    with transaction.atomic():
        new_replies = [LLMReply(key=key, text=result.completion.text, finish_reason=result.completion.finish_reason or "",
                                prompt_tokens=result.completion.prompt_tokens,
                                completion_tokens=result.completion.completion_tokens,
                                model_reported=result.completion.model_reported or "",
                                fingerprint=result.completion.fingerprint or "", latency_ms=result.latency_ms,
                                attempts=result.attempts)
                       for key, result in sent.items() if result.completion is not None and not result.error]
        LLMReply.objects.bulk_create(new_replies, ignore_conflicts=True)
        replies = {**stored, **LLMReply.objects.in_bulk([reply.key for reply in new_replies], field_name="key")}
        # The outcomes of failed extractor requests asked again are replaced by the new ones.
        AuditExtractionLabel.objects.filter(extraction=extraction, outcome="error",
                                            request_id__in=[ask.request_id for ask in asks]).delete()
        rows = []
        for ask in asks:
            reply = replies.get(ask.key)
            if reply is None:
                rows.append(AuditExtractionLabel(extraction=extraction, request_id=ask.request_id, outcome="error",
                                                 reason=sent[ask.key].error[:300], key=ask.key))
                continue
            answer = parse_extractor_answer(reply.text)
            rows.append(AuditExtractionLabel(extraction=extraction, request_id=ask.request_id, outcome=answer.outcome,
                                             label=answer.label, reason=answer.reason, key=ask.key, reply=reply))
        AuditExtractionLabel.objects.bulk_create(rows, batch_size=BULK_BATCH_SIZE, ignore_conflicts=True)


# ------------------------------------------------------------------------------------------------- metrics

class OutcomeSourceError(ValueError):
    """An outcome source that is not "strict" or "extraction:<id>" of an extraction of the audit with metrics;
    ``status`` is the HTTP status that says so: 400 (not a source's name), 404 (no such extraction of the audit),
    409 (the extraction has no metrics yet: it has not completed)."""

    def __init__(self, message: str, *, status: int = 400):
        super().__init__(message)
        self.status = status


EXTRACTION_SOURCE_RE = re.compile(r"extraction:([0-9]{1,18})")


def extraction_id_of(text: str) -> int | None:
    """The id in an extraction's number as given in a URL ("12"), or None when it is not one (ASCII digits only:
    ``str.isdigit`` also takes "²", which ``int`` refuses)."""
    return int(text) if re.fullmatch(r"[0-9]{1,18}", text) else None


def outcome_source(audit: Audit, source: str | None) -> AuditExtraction | None:
    """The extraction an outcome source names (None for the strict outcomes, the default), with its stored
    metrics. An extraction being brought up to date keeps serving the metrics it stored last."""
    if source is None or source == STRICT:
        return None
    match = EXTRACTION_SOURCE_RE.fullmatch(source)
    if match is None:
        raise OutcomeSourceError(f"outcomes must be {STRICT!r} or 'extraction:<id>', not {source!r}")
    extraction = AuditExtraction.objects.filter(audit=audit, pk=int(match.group(1))).first()
    if extraction is None:
        raise OutcomeSourceError(f"audit {audit.id} has no extraction {match.group(1)}", status=404)
    if extraction.results is None:
        raise OutcomeSourceError(f"extraction {extraction.id} is {extraction.get_status_display().lower()}, not "
                                 "completed: it has no metrics yet", status=409)
    return extraction


def extraction_results(audit: Audit, extraction: AuditExtraction) -> tuple[list[dict], dict]:
    """The audit's results (:func:`~.services.classification_results`) with the extraction's labels: strict labels
    kept, replies whose current outcome is unparseable take the extraction's label where it gives one
    (:func:`.labels_with_extraction`). Each cell's values add ``n_extracted``: its replies whose label came from the
    extraction. Computes with every bootstrap: :func:`extraction_results_compute` stores it once."""
    requests = classification_requests_frame(audit)
    extracted = pd.DataFrame.from_records(
        AuditExtractionLabel.objects.filter(extraction=extraction).values_list("request_id", "label"),
        columns=["request", "label"]).astype({"label": float})
    labels = labels_with_extraction(requests, extracted)
    cells, analysis = classification_results(audit, labels=labels)
    taken = requests.assign(taken=requests["label"].isna() & labels.notna()).groupby(["model", "condition"])["taken"]
    n_extracted = taken.sum()
    for cell in cells:
        cell["values"]["n_extracted"] = int(n_extracted.get((cell["model"], cell["condition"]), 0))
    return cells, analysis


def extraction_results_compute(audit: Audit, extraction: AuditExtraction) -> dict:
    """The extraction's metrics as stored in ``AuditExtraction.results``: {"cells": …, "analysis": …}."""
    cells, analysis = extraction_results(audit, extraction)
    return {"cells": cells, "analysis": analysis}


def extractions_analyse(audit: Audit) -> None:
    """Compute again and store the metrics of every extraction of the audit that has them (the audit is being
    analysed again: resumed, re-parsed), so reading them never computes."""
    for extraction in AuditExtraction.objects.filter(audit=audit, results__isnull=False).only("id", "audit_id"):
        AuditExtraction.objects.filter(pk=extraction.pk).update(
            results=extraction_results_compute(audit, extraction))
