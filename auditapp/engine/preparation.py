"""Preparing a queued audit: each model's digest, every planned request with its key, cached replies taken, the
manifest, and (with structured output) one probe per chat model, then its work sent.

An endpoint that cannot be reached while its models are listed (refused, reset, timed out, or answering a server
error, a time-out or a rate limit) does not fail the audit at once: it waits, queued, as its requests would wait
for the endpoint's circuit breaker. It says so in its status reason and in ``preparation_waiting``, and the
workers' recovery sends the preparation again about every ``WORK_STALLED_SECONDS``
(:func:`auditapp.engine.recovery.audits_prepare_unsent`), until the endpoint answers or its ``deadline_s`` (the
time one request may take) has passed since the first failure; then the audit fails saying since when."""
from __future__ import annotations

import logging
import subprocess
from collections.abc import Iterable
from datetime import datetime, timedelta

from django.conf import settings
from django.db import OperationalError, connection, transaction
from django.utils import timezone

from auditapp import llm_clients, scorer_kinds
from auditapp.endpoint_keys import EndpointRefused
from auditapp.engine.control import audit_fail
from auditapp.engine.conversations import turns_advance, turns_link
from auditapp.engine.endpoints import endpoint_config, endpoint_list_models, request_identity
from auditapp.engine.judgments import concrete_field
from auditapp.engine.planning import BULK_BATCH_SIZE, audit_answer_schema, planned_requests, request_builder
from auditapp.engine.protocol import is_multi_turn, request_answer_schema
from auditapp.engine.reply_cache import take_cached_replies
from auditapp.engine.sending import enqueue_work
from auditapp.models import (
    Audit,
    AuditModel,
    AuditRequest,
    LLMEndpoint,
)

logger = logging.getLogger(__name__)
ANALYZE_LOCK_WAIT = "2s"
"""How long the preparation waits to gather the requests table's statistics before going on without them."""
LATE_ANALYZE_LOCK_WAIT = "30s"
"""How long it waits again after its commit, when it went on without them (the audit runs meanwhile)."""


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
            reason = _endpoint_wait(audit, endpoint, error) if error.transient else \
                f"could not list the models of endpoint {endpoint}: {error}"
            if reason:
                audit_fail(audit_id=audit_id, status=Audit.Status.QUEUED, reason=reason)
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
                         key=planned.key, turn=planned.turn) for planned in planned_requests(audit, builder)]
    refused = _structured_output_refusal(audit, builder, rows)
    if refused:
        audit_fail(audit_id=audit_id, status=Audit.Status.QUEUED, reason=refused)
        return
    with transaction.atomic():
        _requests_create(rows)
        if any(row.turn for row in rows):
            turns_link(audit.id)
        if audit.use_cache:
            answered = take_cached_replies(audit.id, builder)
            if is_multi_turn(builder):
                turns_advance(audit, builder, answered)
        first_request = next((row for row in rows if row.turn == 0), None)
        manifest = {**builder.manifest(), **app_version(),
                    **structured_output_manifest(audit, models, builder=builder, first_request=first_request),
                    # What its requests' keys hold of each model's endpoint: Resume and Retry failed compare it.
                    "endpoint_identities": {str(m.id): request_identity(m.endpoint, m.model) for m in models}}
        if _endpoints_changed_meanwhile(models):
            # Keyed with settings that are no longer the endpoint's: left queued, prepared again by the recovery.
            transaction.set_rollback(True)
            logger.warning("Audit %s: an endpoint changed while it was prepared; it is prepared again", audit.id)
            return
        # Last, so that the lock ANALYZE takes (until the commit) is held for a moment only: another preparation
        # waits for it.
        gathered = _requests_statistics_gather(ANALYZE_LOCK_WAIT)
        started = Audit.objects.filter(pk=audit.id, status=Audit.Status.QUEUED).update(
            status=Audit.Status.RUNNING, n_requests=len(rows), manifest=manifest, started_at=timezone.now(),
            status_reason="", preparation_waiting={})
        if started:
            enqueue_work(audit.id, audit.parallel_tasks)
        if not gathered:
            # After the work is sent (on_commit callbacks run in their order), and never in its way.
            transaction.on_commit(lambda: _requests_statistics_gather(LATE_ANALYZE_LOCK_WAIT), robust=True)


def _endpoint_wait(audit: Audit, endpoint, error: llm_clients.EndpointError) -> str:
    """The endpoint could not be reached (``error.transient``): note that the audit waits for it and return "",
    or, its deadline passed since the first failure, return why the audit fails."""
    now = timezone.now()
    waiting = audit.preparation_waiting or {}
    since = datetime.fromisoformat(waiting["since"]) if waiting.get("endpoint_id") == endpoint.id else now
    give_up_at = since + timedelta(seconds=endpoint.deadline_s)
    if now >= give_up_at:
        return (f"endpoint {endpoint} could not be reached since {since:%Y-%m-%d %H:%M:%S %Z}, longer than its "
                f"deadline ({endpoint.deadline_s:g} s): {error}; resume the audit once it answers")
    Audit.objects.filter(pk=audit.id, status=Audit.Status.QUEUED).update(
        preparation_waiting={"endpoint": endpoint.name, "endpoint_id": endpoint.id, "since": since.isoformat(),
                             "last_error": str(error)},
        status_reason=(f"waiting for endpoint {endpoint}, which could not be reached since "
                       f"{since:%Y-%m-%d %H:%M:%S %Z} ({error}): the preparation is tried again about every "
                       f"{settings.WORK_STALLED_SECONDS:g} s until {give_up_at:%H:%M:%S %Z} (the endpoint's "
                       "deadline), then the audit fails; cancel it to stop waiting"))
    logger.warning("Audit %s: endpoint %s could not be reached (%s); the preparation waits", audit.id, endpoint,
                   error)
    return ""


def _endpoints_changed_meanwhile(models: list[AuditModel]) -> bool:
    """Lock the audit's endpoints until the commit and say whether what their requests' keys hold changed since the
    preparation first read them (``models``, before their listing gave the digests). A change committed before is
    seen here; one asked after waits for the commit and then finds the requests to send
    (:func:`auditapp.engine.endpoints.endpoint_change_refusal`)."""
    locked = {endpoint.pk: endpoint for endpoint in LLMEndpoint.objects.select_for_update()
              .filter(pk__in={m.endpoint_id for m in models}).order_by("pk")}
    return any(request_identity(locked[m.endpoint_id], m.model) != request_identity(m.endpoint, m.model)
               for m in models)


# The columns a preparation sets on each request; every other column takes its field's default.
_PLANNED_FIELDS = ("audit", "audit_model", "condition", "item", "unit", "replicate", "order", "key", "turn")
_REQUEST_STAGING = "auditapp_request_staging"


def _requests_create(rows: list[AuditRequest]) -> None:
    """Store the planned requests, in their order, skipping one that exists already (a unique constraint: the same
    model, condition, item or unit, replicate and turn), as ``bulk_create(ignore_conflicts=True)`` does.

    On PostgreSQL the rows are COPYed into a temporary staging table (dropped after, or by a rollback), then inserted
    by one ``INSERT … SELECT … ORDER BY position ON CONFLICT DO NOTHING`` with every other column at its field's
    default. bulk_create spent most of the preparation's CPU preparing each value of each row in Python and having
    psycopg quote them into statements of a thousand rows (7% of the worker's CPU in a profile of
    ``benchmarks/audit_throughput.py``, 20,006 requests), where COPY formats the rows in C."""
    if connection.vendor != "postgresql":
        AuditRequest.objects.bulk_create(rows, batch_size=BULK_BATCH_SIZE, ignore_conflicts=True)
        return
    if not rows:
        return
    meta = AuditRequest._meta
    quote = connection.ops.quote_name
    planned = [concrete_field(AuditRequest, name) for name in _PLANNED_FIELDS]
    defaulted = [field for field in meta.concrete_fields if field not in planned and not field.primary_key]
    planned_columns = [quote(field.column) for field in planned]
    defaults = [field.get_db_prep_save(field.get_default(), connection) for field in defaulted]
    staging = quote(_REQUEST_STAGING)
    types = ", ".join(f"{column} {field.db_type(connection)}" for column, field in zip(planned_columns, planned,
                                                                                       strict=True))
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(f"CREATE TEMPORARY TABLE {staging} (position integer, {types})")
        with cursor.cursor.copy(f"COPY {staging} (position, {', '.join(planned_columns)}) FROM STDIN") as copy:
            for position, row in enumerate(rows):
                copy.write_row((position, row.audit_id, row.audit_model_id, row.condition, row.item_id, row.unit,
                                row.replicate, row.order, row.key, row.turn))
        cursor.execute(
            f"INSERT INTO {quote(meta.db_table)} ({', '.join(planned_columns + [quote(f.column) for f in defaulted])}) "  # noqa: S608 - names from the model only
            f"SELECT {', '.join(planned_columns + ['%s'] * len(defaulted))} FROM {staging} ORDER BY position "
            "ON CONFLICT DO NOTHING", defaults)
        cursor.execute(f"DROP TABLE {staging}")


def _requests_statistics_gather(lock_wait: str) -> bool:
    """Gather the planner's statistics of the requests table with the new audit's requests in it (PostgreSQL).

    Autovacuum gathers them once an audit's writes settle, so they would know nothing of this audit: the planner
    would estimate one request for its id and read all of them, then sort them, at every claim of a batch, instead
    of the first of its pending requests in dispatch order (``benchmarks/audit_throughput.py --history``). Inside
    the preparation's transaction ANALYZE samples its own uncommitted rows, and the statistics are visible with
    them at the commit, before any worker claims. It samples a fixed number of rows (30,000 at the default
    statistics target), so it costs about the same on a table of a million requests as on a small one.

    The statistics only speed the audit up (its claims read what they take on any statistics, but choose better
    plans with them): if another preparation's ANALYZE or a vacuum that cannot be interrupted holds the table
    longer than ``lock_wait``, it goes on without them and says so (False)."""
    if connection.vendor != "postgresql":
        return True
    table = connection.ops.quote_name(AuditRequest._meta.db_table)
    try:
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.execute("SELECT current_setting('lock_timeout'), set_config('lock_timeout', %s, true)",
                           [lock_wait])
            previous = cursor.fetchone()[0]
            cursor.execute(f"ANALYZE {table}")
            cursor.execute("SELECT set_config('lock_timeout', %s, true)", [previous])
    except OperationalError as error:
        logger.warning("The statistics of %s were not gathered (%s): the audit's claims may be slower", table, error)
        return False
    return True


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
        row_schema = request_answer_schema(builder, row, schema)
        probe = llm_clients.probe_chat_sync(endpoint_config(endpoint), audit_model.model, builder.payload(row),
                                            audit_model.params, schema=row_schema)
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
        problem = llm_clients.answer_schema_problem(probe.text, row_schema)
        if problem:
            cut_off = " (the reply was cut off at its token limit: raise max_tokens)" if probe.finish_reason == \
                "length" else ""
            return (f"endpoint {endpoint} accepted the structured-output field ({endpoint.structured_output}) for "
                    f"model {model!r} but its answer is not valid against the schema: {problem}{cut_off} — the "
                    "server may ignore the form; choose another, or launch without structured output")
    return ""


def structured_output_manifest(audit: Audit, models: Iterable[AuditModel], *, builder=None,
                               first_request: AuditRequest | None = None) -> dict:
    """What the manifest says about constrained output: off, or the schema and each chat endpoint's form; when the
    builder narrows the schema per request, the first request's schema as an example."""
    schema = audit_answer_schema(audit)
    if schema is None:
        return {"structured_output": False}
    narrowed = (request_answer_schema(builder, first_request, schema)
                if builder is not None and first_request is not None else schema)
    per_request = {} if narrowed == schema else {
        "per_request": "each request's schema narrows this one to what the request sends; the first one's is "
                       "shown as an example",
        "example": narrowed}
    return {"structured_output": {
        "schema": schema, **per_request,
        "forms": {m.endpoint.name: m.structured_output or m.endpoint.structured_output for m in models
                  if scorer_kinds.takes(m.endpoint.protocol) == "messages"},
        "note": "chat models' replies were constrained to the schema by their servers, unlike the papers' free-text "
                "replies"}}


def app_version() -> dict:
    """The app's version and git commit (GIT_COMMIT in the environment, else asked of git)."""
    commit = getattr(settings, "GIT_COMMIT", "")
    if not commit:
        try:
            commit = subprocess.run(
                ["git", "rev-parse", "HEAD"],  # noqa: S607 - a checkout's git, on the PATH; images set GIT_COMMIT
                cwd=settings.BASE_DIR, capture_output=True, text=True, timeout=5, check=True).stdout.strip()
        except (OSError, subprocess.SubprocessError):
            commit = "unknown"
    return {"app_version": settings.APP_VERSION, "git_commit": commit}
