"""The second-pass extraction of classification audits (issue 16), the Django side: recording an extraction,
running it (a worker's task, idempotent), and the metrics under an outcome source.

The pure part (template, strict reading of the extractor's answer, labels under an extraction) is
:mod:`.extraction`; the verbal rules are :mod:`.verbal_rules`. An extraction reads only the replies the strict
parser left unparseable, and stores its outcomes in :class:`~auditapp.models.AuditExtractionLabel`, beside the
strict outcomes, which nothing here changes.

Model mode goes through the engine's HTTP client (:func:`auditapp.llm_clients.send_chat`: retries, backoff,
deadline) under the endpoint's own limits (:func:`auditapp.llm_limits.limiter_for` with the key the audits use,
so extractions and audits share an endpoint's concurrency and rate limit across workers). Each extractor request
has its own key (:func:`auditapp.request_keys.request_key` of the extractor's messages); its reply is stored once
per key in :class:`~auditapp.models.LLMReply` and, when the audit uses the cache, reused by any later extraction
that asks the same model the same question.
"""
from __future__ import annotations

import asyncio
import hashlib
import json
import random
from dataclasses import dataclass

import pandas as pd
from django.conf import settings
from django.db import IntegrityError, transaction
from django.utils import timezone

from auditapp import llm_clients, scorer_kinds
from auditapp.audit_services import (
    BULK_BATCH_SIZE,
    AuditError,
    endpoint_config,
    endpoint_list_models,
)
from auditapp.endpoint_addresses import EndpointAddressRefused
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
from auditapp.request_keys import request_key

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

    The same extraction (mode, version, endpoint, model, params) already recorded is not redone: it is returned
    as it is; if it failed or is still queued, its task is sent again to do what is still missing. Raises AuditError naming
    every problem (:func:`extraction_problems`)."""
    params = params or {}
    problems = extraction_problems(audit=audit, mode=mode, endpoint=endpoint, model=model, params=params)
    if problems:
        raise AuditError("; ".join(problems))
    version = RULES_VERSION if mode == AuditExtraction.Mode.RULES else TEMPLATE_VERSION
    extractor = (f"verbal rules v{version}" if mode == AuditExtraction.Mode.RULES else
                 f"{model} at {endpoint.name}, extraction template v{version}"
                 + (f", params {json.dumps(params, sort_keys=True)}" if params else ""))
    identity = _identity(mode, version, endpoint, model, params)
    existing = AuditExtraction.objects.filter(audit=audit, identity=identity).first()
    if existing is not None:
        # A failed one is queued again, a queued one sent again (its task may have been lost): the task does only
        # what is missing. A running or completed one is left alone.
        if existing.status in (AuditExtraction.Status.FAILED, AuditExtraction.Status.QUEUED):
            AuditExtraction.objects.filter(pk=existing.pk, status=existing.status).update(
                status=AuditExtraction.Status.QUEUED, status_reason="", finished_at=None)
            _enqueue(existing.pk)
            existing.refresh_from_db()
        return existing, False
    try:
        with transaction.atomic():
            extraction = AuditExtraction.objects.create(
                audit=audit, mode=mode, endpoint=endpoint, model=model, params=params, version=version,
                extractor=extractor, identity=identity, created_by=created_by)
    except IntegrityError:  # recorded meanwhile by a concurrent request
        return AuditExtraction.objects.get(audit=audit, identity=identity), False
    _enqueue(extraction.pk)
    return extraction, True


def _enqueue(extraction_id: int) -> None:
    from tasks.extractions import audit_extraction_run_task
    from tasks.sending import task_send

    transaction.on_commit(lambda: task_send(audit_extraction_run_task, extraction_id,
                                            what=f"extraction {extraction_id}"), robust=True)


# -------------------------------------------------------------------------------------------------- running

def _fail(extraction_id: int, reason: str) -> None:
    AuditExtraction.objects.filter(pk=extraction_id).exclude(status=AuditExtraction.Status.COMPLETED).update(
        status=AuditExtraction.Status.FAILED, status_reason=reason, finished_at=timezone.now())


def _missing(extraction: AuditExtraction):
    """The audit's unparseable replies this extraction has no outcome for yet, with their text."""
    done = AuditExtractionLabel.objects.filter(extraction=extraction).values("request_id")
    return (AuditRequest.objects.filter(audit_id=extraction.audit_id, state=AuditRequest.State.ANSWERED,
                                        outcome=AuditRequest.Outcome.UNPARSEABLE)
            .exclude(pk__in=done).select_related("reply").only("id", "reply__text").order_by("id"))


def extraction_run(*, extraction_id: int) -> str:
    """Run an extraction: read every unparseable reply it has no outcome for yet, store the outcomes (an outcome
    already stored is kept), then mark it completed. Idempotent: a second delivery, or a run after a crash,
    does only what is missing; a completed extraction is left as it is. Returns its status."""
    claimed = AuditExtraction.objects.filter(
        pk=extraction_id, status__in=[AuditExtraction.Status.QUEUED, AuditExtraction.Status.RUNNING]).update(
        status=AuditExtraction.Status.RUNNING)
    extraction = AuditExtraction.objects.select_related("endpoint", "audit").get(pk=extraction_id)
    if not claimed:
        return extraction.status
    if extraction.mode == AuditExtraction.Mode.RULES:
        _run_rules(extraction)
    else:
        reason = _run_model(extraction)
        if reason:
            _fail(extraction_id, reason)
            return AuditExtraction.Status.FAILED
    AuditExtraction.objects.filter(pk=extraction_id, status=AuditExtraction.Status.RUNNING).update(
        status=AuditExtraction.Status.COMPLETED, status_reason="", finished_at=timezone.now())
    return AuditExtraction.objects.values_list("status", flat=True).get(pk=extraction_id)


def _run_rules(extraction: AuditExtraction) -> None:
    rows = []
    for request in _missing(extraction).iterator(chunk_size=BULK_BATCH_SIZE):
        reading = read_verbal(request.reply.text)
        rows.append(AuditExtractionLabel(extraction=extraction, request_id=request.id,
                                         outcome="label" if reading.label is not None else "none",
                                         label=reading.label, reason=reading.reason[:300]))
    AuditExtractionLabel.objects.bulk_create(rows, batch_size=BULK_BATCH_SIZE, ignore_conflicts=True)


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
    except EndpointAddressRefused as error:
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
    missing = list(_missing(extraction))
    for start in range(0, len(missing), MODEL_BATCH):
        asks = []
        for request in missing[start:start + MODEL_BATCH]:
            messages = extraction_messages(request.reply.text)
            key = extractor_request_key(endpoint, extraction.model, digest, extraction.params, messages, scope)
            asks.append(_Ask(request.id, key, messages))
        stored = LLMReply.objects.in_bulk([ask.key for ask in asks], field_name="key")
        to_send = [ask for ask in asks if ask.key not in stored]
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
                          endpoint.requests_per_minute, slot_ttl=endpoint.attempt_timeout_s + 30)
    rng = random.Random(f"extraction:{extraction.pk}")
    gate = asyncio.Semaphore(endpoint.max_concurrency)

    async def one(session, ask: _Ask) -> tuple[str, llm_clients.SendResult]:
        async with gate:
            return ask.key, await llm_clients.send_chat(session, config, limiter, extraction.model, ask.messages,
                                                        extraction.params, rng=rng)

    try:
        async with llm_clients.chat_session(endpoint.max_concurrency,
                                            address_policy=endpoint_address_policy()) as session:
            return dict(await asyncio.gather(*(one(session, ask) for ask in asks)))
    finally:
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
    """An outcome source that is not "strict" or "extraction:<id>" of a completed extraction of the audit;
    ``status`` is the HTTP status that says so: 400 (not a source's name), 404 (no such extraction of the audit),
    409 (the extraction has not completed)."""

    def __init__(self, message: str, *, status: int = 400):
        super().__init__(message)
        self.status = status


def outcome_source(audit: Audit, source: str | None) -> AuditExtraction | None:
    """The extraction an outcome source names (None for the strict outcomes, the default)."""
    if source is None or source == STRICT:
        return None
    prefix, _, number = source.partition(":")
    if prefix != "extraction" or not number.isdigit():
        raise OutcomeSourceError(f"outcomes must be {STRICT!r} or 'extraction:<id>', not {source!r}")
    extraction = AuditExtraction.objects.filter(audit=audit, pk=int(number)).first()
    if extraction is None:
        raise OutcomeSourceError(f"audit {audit.id} has no extraction {number}", status=404)
    if extraction.status != AuditExtraction.Status.COMPLETED:
        raise OutcomeSourceError(f"extraction {number} is {extraction.get_status_display().lower()}, not completed",
                                 status=409)
    return extraction


def extraction_results(audit: Audit, extraction: AuditExtraction) -> tuple[list[dict], dict]:
    """The audit's results (:func:`~.services.classification_results`) with the extraction's labels: strict labels
    kept, replies without one take the extraction's label where it gives one (:func:`.labels_with_extraction`).
    Each cell's values add ``n_extracted``: its replies whose label came from the extraction."""
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
