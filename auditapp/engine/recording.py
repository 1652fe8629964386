"""A worker's side of an audit: its lease on the audit's work (one of its ``parallel_tasks`` work holds), the
requests it claims, and the bulk writes of their results (each reply once per key, each request once, its
judgments), renewals that enforce the error budget, and moving a finished audit on to its analysis."""
from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.conf import settings
from django.db import connection, transaction
from django.db.models import Count, Min, Q, QuerySet
from django.utils import timezone

from auditapp import llm_clients
from auditapp.engine.conversations import CONVERSATION_FIELDS, ClaimedRequest, conversations_before, turns_advance
from auditapp.engine.errors import WAITING_NOTE, failure_advice
from auditapp.engine.judgments import concrete_field, judgments_copy_new, judgments_create
from auditapp.engine.planning import BULK_BATCH_SIZE
from auditapp.engine.protocol import TURN_ENDED_MARK, ParsedReply, is_multi_turn
from auditapp.engine.sending import enqueue_analysis
from auditapp.models import (
    Audit,
    AuditChunk,
    AuditRequest,
    LLMReply,
)

# A request builder's ``parse``: a claimed request and its reply's text and finish reason, parsed.
ReplyParser = Callable[[ClaimedRequest, str, str], ParsedReply]


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

    def __init__(self, leases: dict[int, datetime]) -> None:
        super().__init__(f"the audit's work is held by {len(leases)} other tasks")
        self.leases = leases


def _work_holders(audit_id: int, now: datetime) -> QuerySet[AuditChunk]:
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


def _free(requests: QuerySet[AuditRequest], audit_id: int, now: datetime) -> QuerySet[AuditRequest]:
    """Those of ``requests`` that are pending and that no live lease holds, except later turns still waiting for
    their key. The lapsed leases are a subquery, not a join, so that reading the audit's pending requests in
    dispatch order off the pending-requests index stays a plan the planner can choose."""
    lapsed = AuditChunk.objects.filter(audit_id=audit_id, leased_until__lt=now).values("id")
    return requests.filter(state=AuditRequest.State.PENDING).filter(
        Q(chunk_id__isnull=True) | Q(chunk_id__in=lapsed)).exclude(key="")


@contextmanager
def _planner_setting(name: str, value: str) -> Iterator[None]:
    """A PostgreSQL planner setting for the statements inside, in the current transaction only, then as it was
    (nothing elsewhere)."""
    if connection.vendor != "postgresql":
        yield
        return
    with connection.cursor() as cursor:
        cursor.execute("SELECT current_setting(%s), set_config(%s, %s, true)", [name, name, value])
        previous = cursor.fetchone()[0]
    yield
    # Not on an error: the transaction is then aborted (a statement sent would hide the error) and its rollback
    # undoes the setting anyway.
    with connection.cursor() as cursor:
        cursor.execute("SELECT set_config(%s, %s, true)", [name, previous])


def _free_requests(audit_id: int, now: datetime) -> QuerySet[AuditRequest]:
    """The audit's pending requests no live lease holds, except later turns still waiting for their key."""
    return _free(AuditRequest.objects.filter(audit_id=audit_id), audit_id, now)


def chunk_claim(*, chunk_id: int, audit_id: int, limit: int) -> list[ClaimedRequest]:
    """Take up to ``limit`` pending requests no live lease holds, in dispatch order.

    Each claim reads only the rows it takes, whatever the planner's statistics say. They are gathered (by
    autovacuum) while no audit runs, so they may know nothing of this audit's rows (the preparation gathers them
    again, but may have had to go on without: ``engine.preparation``); on such statistics the planner estimated one
    row for the audit and for the lease, and read every request of the audit, sorted them, or read every request of
    the lease, at each claim (``benchmarks/audit_throughput.py --history``). So on PostgreSQL the first statement
    may not sort (the pending-requests index gives the rows in dispatch order) and takes its rows under lock; the
    later ones name rows by id only (``tests/auditapp/test_claim_plans.py`` counts what each reads)."""
    now = timezone.now()
    locks = connection.features.has_select_for_update_skip_locked
    with transaction.atomic():
        free = _free_requests(audit_id, now).order_by("order", "id")
        if locks:
            free = free.select_for_update(skip_locked=True, of=("self",))
            with _planner_setting("enable_sort", "off"):
                ids = list(free.values_list("id", flat=True)[:limit])
            # Locked by the SELECT until the commit: still free.
            AuditRequest.objects.filter(id__in=ids).update(chunk_id=chunk_id)
        else:
            ids = list(free.values_list("id", flat=True)[:limit])
            # Re-checked in the UPDATE itself: without row locks (SQLite) two workers may have read the same ids,
            # and only the first UPDATE still finds them free.
            _free(AuditRequest.objects.filter(id__in=ids), audit_id, now).update(chunk_id=chunk_id)
    rows = AuditRequest.objects.filter(id__in=ids).values_list("chunk_id", "state", "order", *CONVERSATION_FIELDS)
    claimed = [ClaimedRequest(*row[3:]) for row in sorted(rows, key=lambda row: (row[2], row[3]))
               if row[0] == chunk_id and row[1] == AuditRequest.State.PENDING]
    later = {request.previous_id for request in claimed if request.previous_id is not None}
    if not later:
        return claimed
    chains = conversations_before(later)
    return [dataclasses.replace(request, earlier=chains[request.previous_id]) if request.previous_id else request
            for request in claimed]


_RECORDED_FIELDS = ("state", "reply", "error", "attempts", "finished_at", "outcome", "label", "explanation",
                    "parse_reason")


def chunk_record(*, chunk_id: int, results: list[RequestResult], parse: ReplyParser, builder=None) -> None:
    """Store a batch of finished requests in bulk: each reply once per key, each request once, and its judgments.
    ``parse`` is the request builder's (the reply stored for a key is parsed, which is this one unless the key was
    answered before). With a multi-turn ``builder``, the later turns waiting on these requests are keyed or closed
    in the same transaction (:func:`turns_advance`), so a worker killed between two turns loses no conversation."""
    if not results:
        return
    audit_id = builder.audit.id if builder is not None else None
    if builder is not None and is_multi_turn(builder):
        with transaction.atomic():
            _chunk_record(chunk_id, results, parse, audit_id)
            turns_advance(builder.audit, builder, {result.request.id for result in results})
        return
    _chunk_record(chunk_id, results, parse, audit_id)


def _chunk_record(chunk_id: int, results: list[RequestResult], parse: ReplyParser, audit_id: int | None) -> None:
    now = timezone.now()
    with transaction.atomic():
        stored = _replies_store(results, now)
        finished_at = connection.ops.adapt_datetimefield_value(now)
        parameters = []
        judged: list[tuple[int, ParsedReply]] = []
        for result in results:
            values: tuple[object, ...]
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
            judgments_copy_new(audit_id or _audit_of_chunk(chunk_id),
                                [(request_id, parsed) for request_id, parsed in judged if request_id in recorded_now])
        else:
            judgments_create(audit_id or _audit_of_chunk(chunk_id),
                              [(request_id, parsed) for request_id, parsed in judged if request_id in recorded_now])


_REPLY_FIELDS = ("key", "text", "finish_reason", "prompt_tokens", "completion_tokens", "model_reported",
                 "fingerprint", "latency_ms", "attempts", "created_at")


# Temporary tables a batch's replies and finished requests are COPYed into on PostgreSQL (_staged).
_REPLY_STAGING = "auditapp_reply_staging"
_RECORD_STAGING = "auditapp_record_staging"


@contextmanager
def _staged(cursor, staging: str, columns: list[tuple[str, str | None]], rows: Iterable[tuple]) -> Iterator[str]:
    """PostgreSQL: ``rows`` COPYed into the session's temporary table ``staging`` (``columns``: quoted name and
    type each), whose quoted name is yielded for one statement to read them.

    A batch's VALUES list had psycopg quote each value into the statement in Python, and PostgreSQL parse it: 6% of
    the worker's CPU for the replies and the requests together in a profile of ``benchmarks/audit_throughput.py``;
    COPY formats the rows in C. The table is made the first time a database session needs it (a reconnected session
    makes it again) and emptied at each commit (ON COMMIT DELETE ROWS: no dead rows pile up, and no other batch sees
    these); the statements run in a transaction (the caller's, without a savepoint), so the rows are there for the
    statement that reads them."""
    name = connection.ops.quote_name(staging)
    with transaction.atomic(savepoint=False):
        cursor.execute(f"CREATE TEMPORARY TABLE IF NOT EXISTS {name} "
                       f"({', '.join(f'{column} {kind}' for column, kind in columns)}) ON COMMIT DELETE ROWS")
        with cursor.cursor.copy(f"COPY {name} ({', '.join(column for column, _ in columns)}) FROM STDIN") as copy:
            for row in rows:
                copy.write_row(row)
        yield name


def _replies_store(results: list[RequestResult], now: datetime) -> dict[str, tuple[int, str, str]]:
    """Store the replies of a batch (its results with a completion), each key once (the first of the batch, unless
    the key was answered before), and return the stored reply of every key: (id, text, finish reason).

    One ``INSERT … ON CONFLICT (key) DO NOTHING RETURNING key, id`` of the batch's rows in their order (on
    PostgreSQL from a staging table, :func:`_staged`; elsewhere from a VALUES list): the replies it inserted are the
    ones in hand, so only the keys answered before are read back. bulk_create costs three times as much here on
    PostgreSQL, where Django 5.2 sends its rows as arrays that psycopg escapes in Python (a 50-reply batch of 60
    judgments each: 27 ms against 9 ms, ``benchmarks/counterfactual_scale.py``)."""
    first: dict[str, tuple[RequestResult, llm_clients.Completion]] = {}
    for result in results:
        if result.completion is not None:
            first.setdefault(result.request.key, (result, result.completion))
    if not first:
        return {}
    created_at = connection.ops.adapt_datetimefield_value(now)
    rows = [(key, c.text, c.finish_reason or "", c.prompt_tokens, c.completion_tokens, c.model_reported or "",
             c.fingerprint or "", r.latency_ms, r.attempts, created_at) for key, (r, c) in first.items()]
    meta = LLMReply._meta
    quote = connection.ops.quote_name
    fields = [concrete_field(LLMReply, name) for name in _REPLY_FIELDS]
    columns = ", ".join(quote(field.column) for field in fields)
    table, key_column = quote(meta.db_table), quote(concrete_field(LLMReply, "key").column)
    returning = f"ON CONFLICT ({key_column}) DO NOTHING RETURNING {key_column}, {quote(meta.pk.column)}"
    inserted: list[tuple[str, int]] = []
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            staging_columns = [("position", "integer"), *((quote(f.column), f.db_type(connection)) for f in fields)]
            with _staged(cursor, _REPLY_STAGING, staging_columns,
                         ((position, *row) for position, row in enumerate(rows))) as staging:
                cursor.execute(f"INSERT INTO {table} ({columns}) SELECT {columns} FROM {staging} "  # noqa: S608 - names from the model only
                               f"ORDER BY position {returning}")
                inserted = cursor.fetchall()
        else:
            row_placeholder = f"({', '.join(['%s'] * len(_REPLY_FIELDS))})"
            for start in range(0, len(rows), BULK_BATCH_SIZE):
                batch = rows[start:start + BULK_BATCH_SIZE]
                cursor.execute(f"INSERT INTO {table} ({columns}) "  # noqa: S608 - names from the model only
                               f"VALUES {', '.join([row_placeholder] * len(batch))} {returning}",
                               [value for row in batch for value in row])
                inserted += cursor.fetchall()
    stored: dict[str, tuple[int, str, str]] = {}
    for key, reply_id in inserted:
        completion = first[key][1]
        stored[key] = (reply_id, completion.text, completion.finish_reason or "")
    answered_before = [key for key in first if key not in stored]
    for start in range(0, len(answered_before), BULK_BATCH_SIZE):
        stored.update({key: (pk, text, finish) for key, pk, text, finish in LLMReply.objects.filter(
            key__in=answered_before[start:start + BULK_BATCH_SIZE]).values_list("key", "id", "text", "finish_reason")})
    return stored


def _requests_record(parameters: list[tuple]) -> set[int]:
    """Record finished requests, each ``(id, *values of _RECORDED_FIELDS)``, in one
    ``UPDATE … FROM … RETURNING id`` (on PostgreSQL from a staging table, :func:`_staged`; elsewhere from a VALUES
    list) that touches only a request still pending, so a duplicate completion (a lease that expired while its
    worker still lived) is not recorded twice; returns the ids it recorded. One statement rather than one per
    request: on PostgreSQL a 50-request batch costs 3 ms against 8 ms with a pipelined executemany
    (``benchmarks/counterfactual_scale.py``)."""
    meta = AuditRequest._meta
    quote = connection.ops.quote_name
    once: dict[int, tuple] = {}
    for row in parameters:
        once.setdefault(row[0], row)
    fields = [meta.pk, *(concrete_field(AuditRequest, name) for name in _RECORDED_FIELDS)]
    names = ["id", *(field.column for field in fields[1:])]
    table, v_columns = quote(meta.db_table), ", ".join(quote(name) for name in names)
    assignments = ", ".join(f"{quote(column)} = v.{quote(column)}" for column in names[1:])
    pending = (f"WHERE {table}.{quote(meta.pk.column)} = v.{quote('id')} "
               f"AND {table}.{quote('state')} = %s RETURNING {table}.{quote(meta.pk.column)}")
    recorded: set[int] = set()
    rows = list(once.values())
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            # Field.cast_db_type is Django's (5.2) but missing from django-stubs 5.2.9.
            staging_columns = [(quote(name), field.cast_db_type(connection))  # type: ignore[attr-defined]
                               for name, field in zip(names, fields, strict=True)]
            with _staged(cursor, _RECORD_STAGING, staging_columns, rows) as staging:
                cursor.execute(f"UPDATE {table} SET {assignments} FROM {staging} v {pending}",  # noqa: S608 - names from the model only
                               [AuditRequest.State.PENDING])
                recorded.update(row[0] for row in cursor.fetchall())
            return recorded
        row_placeholder = "(" + ", ".join(["%s"] * len(fields)) + ")"
        for start in range(0, len(rows), BULK_BATCH_SIZE):
            batch = rows[start:start + BULK_BATCH_SIZE]
            cursor.execute(
                f"WITH v ({v_columns}) AS (VALUES {', '.join([row_placeholder] * len(batch))}) "  # noqa: S608 - names from the model only
                f"UPDATE {table} SET {assignments} FROM v {pending}",
                [*(value for row in batch for value in row), AuditRequest.State.PENDING])
            recorded.update(row[0] for row in cursor.fetchall())
    return recorded


def _audit_of_chunk(chunk_id: int) -> int:
    return AuditChunk.objects.values_list("audit_id", flat=True).get(pk=chunk_id)


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
            previous__isnull=False, error__contains=TURN_ENDED_MARK).count()
        if failed > audit.error_budget * audit.n_requests:
            stopped = Audit.objects.filter(pk=audit_id, status=Audit.Status.RUNNING).update(
                status=Audit.Status.STOPPED,
                status_reason=_budget_reason(audit_id, failed, audit.n_requests, audit.error_budget))
            return Audit.Status.STOPPED if stopped else Audit.objects.get(pk=audit_id).status
    return audit.status


def _budget_reason(audit_id: int, failed: int, n_requests: int, error_budget: float) -> str:
    """Why an audit stopped on its error budget: how many failed, the most frequent error and what to do about it
    (one grouped query, run once, when the audit stops)."""
    top = (AuditRequest.objects.filter(audit_id=audit_id, state=AuditRequest.State.FAILED).values("error")
           .annotate(n=Count("id")).order_by("-n", "error").first())
    error = (top or {}).get("error") or ""
    most = f"; most often ({top['n']} of them): {error[:200]}" if top else ""
    advice = failure_advice(error)
    return (f"error budget exceeded: {failed} of {n_requests} requests failed (more than {error_budget:.0%})"
            f"{most}. {advice[0].upper()}{advice[1:]}, then resume or retry failed")


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
            enqueue_analysis(audit_id)
    return bool(moved)
