"""The worker side of an audit: one asyncio loop per Celery task sends pending requests concurrently.

A work task (``tasks.audits.audit_work_task``) calls :func:`audit_work`. It opens a lease
(:func:`~auditapp.engine.recording.chunk_open`), then loops:

- claim pending requests in dispatch order whenever the local queue runs low;
- senders (one coroutine per unit of the endpoints' max concurrency) rebuild each request's messages (a later
  turn of a conversation: from its earlier turns' payloads and replies, loaded with the claim),
  check that they still hash to the request's key, and send them through
  :func:`auditapp.scorer_kinds.send` (one aiohttp session with keep-alive connections), which holds the
  endpoint's cross-worker limits and retries (a local scorer has none);
- an endpoint that cannot be reached holds its requests (:mod:`auditapp.endpoint_breaker`, shared by all
  workers through Redis, else Django's cache) and is shown as "unreachable since" in the progress;
- every :data:`FLUSH_SECONDS`, or at once when nothing is queued or in flight, the finished requests are
  written in bulk, the lease is renewed and the audit's status is read: pause, cancel and an exceeded error
  budget stop the loop (requests in flight are abandoned and stay pending, so a resume sends them again).

A work task's lease is one of the audit's ``parallel_tasks`` work holds (:func:`~auditapp.engine.recording.chunk_open`):
a task sent again while live tasks hold them all (the broker redelivering a killed worker's task, the recovery, a
worker's start) waits only to see their leases renewed, and ends; it takes over a lease left by a killed worker
once that lapses.

Database work runs in one dedicated thread (Django's ORM is synchronous; one thread means one connection).
A task works for at most :data:`SLICE_SECONDS` and then hands over to a fresh task, so no task meets the
Celery time limit however long the audit. When no request is free, it waits for leases held by others to
finish or expire (a killed worker's lease expires after settings.AUDIT_LEASE_SECONDS), and the
task that finds nothing pending moves the audit on to its analysis. A transient fault is waited out by the task
itself, so the audit goes on within a second or two of the service's return: the slice waits for a database that
cannot be reached, keeping its lease, its requests and its unwritten replies; another service away (the Redis of
the endpoint limits) stops the slice with a note, the audit still running, and a new slice is tried after a short
pause. Only a task that is lost leaves the audit to the workers' periodic recovery
(``recovery.audits_resume_stalled``).
"""
from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import gc
import logging
import math
import random
import sys
import time
from collections import Counter
from collections.abc import Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from functools import partial

import aiohttp
import redis.asyncio
import uvloop
from django.conf import settings
from django.core.cache import cache
from django.db import close_old_connections, connections

from auditapp import llm_clients, scorer_kinds
from auditapp.endpoint_breaker import EndpointBreaker, RedisBreakerStore
from auditapp.endpoint_breaker import decode as decode_breaker
from auditapp.endpoint_breaker import encode as encode_breaker
from auditapp.endpoint_keys import EndpointRefused
from auditapp.engine import control, errors, planning, recording
from auditapp.engine import conversations as engine_conversations
from auditapp.engine import endpoints as engine_endpoints
from auditapp.engine import recovery as engine_recovery
from auditapp.engine.protocol import request_answer_schema
from auditapp.llm_clients import chat_session
from auditapp.llm_limits import limiter_for
from auditapp.models import Audit, AuditModel, LLMEndpoint, endpoint_address_policy

logger = logging.getLogger(__name__)

FLUSH_SECONDS = 0.25
SLICE_SECONDS = 15 * 60
MAX_SENDERS = 512
QUEUE_LOW, QUEUE_HIGH = 4, 8
WAIT_POLL_SECONDS = 2.0
# How often a slice tries the database again while it cannot be reached; the pauses before a new slice after another
# service's fault (the Redis of the endpoint limits away) double from the first to the last.
DATABASE_RETRY_SECONDS = 1.0
SERVICE_PAUSES = (0.5, 2.0)
GIL_SWITCH_SECONDS = 0.0005
# A probe's lease on the endpoint: its connect time-out and this; a prober that dies is replaced after it.
PROBE_MARGIN_SECONDS = 5.0


class RetryTracker:
    """Which model × condition cells have requests waiting to retry right now, and the last reason."""

    def __init__(self) -> None:
        self.waiting: Counter[str] = Counter()
        self.retries: Counter[str] = Counter()
        self.last_reason = ""

    def note(self, cell: str, reason: str, delay: float) -> None:
        self.waiting[cell] += 1
        self.retries[cell] += 1
        self.last_reason = reason
        asyncio.get_running_loop().call_later(delay, self._done, cell)

    def _done(self, cell: str) -> None:
        self.waiting[cell] -= 1

    def state(self) -> dict:
        return {"waiting": {cell: n for cell, n in self.waiting.items() if n > 0}, "retries": dict(self.retries),
                "last_reason": self.last_reason}


def _close_connections() -> None:
    connections.close_all()


async def run_slice(audit_id: int, *, slice_seconds: float = SLICE_SECONDS) -> str:
    """Send the audit's free pending requests for up to ``slice_seconds``.

    Returns "stopped" (the audit is not running), "exhausted" (nothing left to claim), "slice" (time is up
    with work left), "held" (this task's lease lapsed and other tasks took the audit's work holds) or "waiting"
    (a service other than the database is away: try again soon). Raises
    :class:`~auditapp.engine.recording.WorkHeld` when other tasks hold them all from the start.

    A database that cannot be reached is waited for, tried again every :data:`DATABASE_RETRY_SECONDS` on a new
    connection until the slice's time is up: the slice keeps its lease, its claimed requests and the replies it
    has not written, and goes on within a second of the database's return.
    """
    loop = asyncio.get_running_loop()
    executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix=f"audit-{audit_id}-db")
    give_up_at = time.monotonic() + slice_seconds

    async def db(function, /, **kwargs):
        waiting = False
        while True:
            try:
                return await loop.run_in_executor(executor, partial(function, **kwargs))
            except errors.DATABASE_ERRORS as error:
                if time.monotonic() > give_up_at:
                    raise
                if not waiting:
                    waiting = True
                    logger.warning("audit %s: waiting for the database: %r", audit_id, error)
                await loop.run_in_executor(executor, _close_connections)
                await asyncio.sleep(DATABASE_RETRY_SECONDS)

    try:
        chunk_id = await db(recording.chunk_open, audit_id=audit_id)
        if chunk_id is None:
            return "stopped"
        try:
            return await _send_claimed(audit_id, chunk_id, db, slice_seconds)
        finally:
            await db(recording.chunk_release, chunk_id=chunk_id)
    finally:
        await loop.run_in_executor(executor, _close_connections)
        executor.shutdown(wait=True)


@contextlib.contextmanager
def _short_pauses() -> Iterator[None]:
    """While a slice sends, keep the event loop from stalling (each stall delays every reply waiting in it):

    - the database thread gives the GIL back after 0.5 ms instead of Python's 5 ms;
    - the objects alive now (Django, the request builder's caches) are moved out of the garbage collector's
      view, so its full collections stop scanning them.

    Measured by benchmarks/audit_throughput.py at 50 ms of server latency: the worker's median reply latency
    fell by about a millisecond, and the slowest reply from 212–235 ms to 66–80 ms. Both settings are the
    process's, and are restored.
    """
    switch_interval = sys.getswitchinterval()
    sys.setswitchinterval(GIL_SWITCH_SECONDS)
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()
        sys.setswitchinterval(switch_interval)


async def _send_claimed(audit_id: int, chunk_id: int, db, slice_seconds: float) -> str:
    builder = await db(_builder, audit_id=audit_id)
    with _short_pauses():
        return await _send_built(audit_id, chunk_id, db, slice_seconds, builder)


async def _send_built(audit_id: int, chunk_id: int, db, slice_seconds: float,
                      builder) -> str:
    endpoints = {m.endpoint_id: m.endpoint for m in builder.models.values()}
    if not endpoints:
        # An audit of recorded scores only has nothing to send; with no sender the claim loop below would never
        # claim and never end.
        return "exhausted"
    refused = await db(_refused_address, endpoints=list(endpoints.values()))
    if refused:
        await db(control.audit_fail, audit_id=audit_id, reason=refused)
        return "stopped"
    # What a chat endpoint's replies are constrained to (structured output: the form recorded at preparation and
    # the schema), None for the others.
    answer_formats = await db(_answer_formats, audit=builder.audit, models=list(builder.models.values()))
    unusable = _unusable_answer_format(endpoints, answer_formats)
    if unusable:
        await db(control.audit_fail, audit_id=audit_id, reason=unusable)
        return "stopped"
    configs = {endpoint_id: dataclasses.replace(
        engine_endpoints.endpoint_config(endpoint),
        structured_output=(answer_formats[endpoint_id] or {}).get("form", endpoint.structured_output))
        for endpoint_id, endpoint in endpoints.items()}
    schemas = {endpoint_id: (answer_format or {}).get("schema") for endpoint_id, answer_format in answer_formats.items()}
    limiters = {endpoint_id: limiter_for(settings.LLM_LIMITS_REDIS_URL or None, f"endpoint-{endpoint_id}",
                                         endpoint.max_concurrency, endpoint.requests_per_minute,
                                         slot_ttl=settings.LLM_SLOT_LEASE_SECONDS,
                                         directory=settings.LLM_LIMITS_DIR)
                for endpoint_id, endpoint in endpoints.items()}
    breaker_store = _breaker_store()
    breakers = {endpoint_id: EndpointBreaker(breaker_store, f"endpoint-{endpoint_id}",
                                             probe_seconds=configs[endpoint_id].connect_timeout + PROBE_MARGIN_SECONDS)
                for endpoint_id in endpoints}
    n_senders = min(MAX_SENDERS, _senders_per_task(endpoints.values(), builder.audit.parallel_tasks))
    queue: asyncio.Queue = asyncio.Queue()
    results: list[recording.RequestResult] = []
    tracker = RetryTracker()
    rng = random.Random(f"{audit_id}:{chunk_id}")
    busy = 0
    # Set while no request is queued or in flight: the loop then writes and claims at once instead of waiting out
    # the flush interval (a local scorer answers a whole claim in less than one).
    idle = asyncio.Event()

    crashes: list[BaseException] = []

    async def sender(session: aiohttp.ClientSession | None) -> None:
        nonlocal busy
        while True:
            request = await queue.get()
            busy += 1
            try:
                results.append(await _send_one(session, request))
            except Exception as error:  # noqa: BLE001 - not an endpoint problem (those are results): stop the slice
                crashes.append(error)
                return
            finally:
                busy -= 1
                if busy == 0 and queue.empty():
                    idle.set()

    async def _send_one(session: aiohttp.ClientSession | None, request: engine_conversations.ClaimedRequest) -> recording.RequestResult:
        audit_model = builder.models[request.audit_model_id]
        payload = engine_conversations.request_payload(builder, request)
        if builder.key(audit_model, payload, request.replicate) != request.key:
            return recording.RequestResult(request, None, "the request no longer matches its key (its item, template, "
                                          "instrument or endpoint changed after the audit was prepared)", 0, 0.0)
        cell = f"{audit_model.id}:{request.condition}"
        sent = await scorer_kinds.send(session, configs[audit_model.endpoint_id], limiters[audit_model.endpoint_id],
                                       audit_model.model, payload, audit_model.params, rng=rng,
                                       on_retry=partial(tracker.note, cell), breaker=breakers[audit_model.endpoint_id],
                                       schema=request_answer_schema(builder, request,
                                                                    schemas[audit_model.endpoint_id]))
        return recording.RequestResult(request, sent.completion, sent.error, sent.attempts, sent.latency_ms)

    async def flush() -> str:
        batch = results[:]
        results.clear()
        await db(recording.chunk_record, chunk_id=chunk_id, results=batch, parse=builder.parse,
                        builder=builder)
        unreachable = {endpoints[endpoint_id].name: {
            "since": datetime.fromtimestamp(breaker.unreachable_since, UTC).isoformat(timespec="seconds"),
            "last_error": breaker.view.last_error}
            for endpoint_id, breaker in breakers.items() if breaker.unreachable_since is not None}
        return await db(recording.chunk_renew, chunk_id=chunk_id, audit_id=audit_id,
                        retry_state={**tracker.state(), "unreachable": unreachable})

    # Scorers run in the worker need no HTTP session (making one loads the system's certificates: 20 ms a slice).
    networked = any(scorer_kinds.scorer_kind(endpoint.protocol).networked for endpoint in endpoints.values())
    session_context = (chat_session(n_senders, address_policy=endpoint_address_policy()) if networked
                       else contextlib.nullcontext())
    async with session_context as session:
        senders = [asyncio.create_task(sender(session)) for _ in range(n_senders)]
        started = time.monotonic()
        claiming, outcome = True, "exhausted"
        try:
            while True:
                if time.monotonic() - started > slice_seconds and claiming:
                    claiming, outcome = False, "slice"
                # Claims are checked once per flush, so the queue must hold more than the senders can send
                # in one interval (64 senders at 50 ms send 320 in 0.25 s).
                if claiming and queue.qsize() < QUEUE_LOW * n_senders:
                    claimed = await db(recording.chunk_claim, chunk_id=chunk_id, audit_id=audit_id,
                                       limit=QUEUE_HIGH * n_senders - queue.qsize())
                    for request in claimed:
                        queue.put_nowait(request)
                    claiming = bool(claimed)
                if busy == 0 and queue.empty():
                    idle.set()
                else:
                    idle.clear()
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(idle.wait(), FLUSH_SECONDS)
                status = await flush()
                if crashes and isinstance(crashes[0], errors.TRANSIENT_ERRORS):
                    logger.warning("audit %s: waiting for a service: %r", audit_id, crashes[0])
                    await db(engine_recovery.audit_wait_for_service, audit_id=audit_id, error=crashes[0])
                    outcome = "waiting"
                    break
                if crashes:
                    logger.error("audit %s: a sender failed", audit_id, exc_info=crashes[0])
                    await db(control.audit_fail, audit_id=audit_id,
                             reason=f"the worker could not send requests: {type(crashes[0]).__name__}: {crashes[0]}; "
                                    "fix the cause, then resume")
                    outcome = "stopped"
                    break
                if status != Audit.Status.RUNNING:
                    outcome = "held" if status == recording.LEASE_LOST else "stopped"
                    break
                if not claiming and queue.empty() and busy == 0:
                    break
        finally:
            for task in senders:
                task.cancel()
            await asyncio.gather(*senders, return_exceptions=True)
            await db(recording.chunk_record, chunk_id=chunk_id, results=results[:], parse=builder.parse,
                        builder=builder)
            for limiter in limiters.values():
                await limiter.aclose()
            await breaker_store.aclose()
    return outcome


def _senders_per_task(endpoints: Iterable[LLMEndpoint], parallel_tasks: int) -> int:
    """Each of the audit's parallel tasks sends its share of the endpoints' concurrency, so the tasks do not
    queue for each other's slots in Redis (the limiter still holds the limit against other audits and
    workers). Measured: sending more than the share makes the tasks poll Redis for each other's slots and
    lowers throughput (benchmarks/audit_throughput.py)."""
    return sum(math.ceil(endpoint.max_concurrency / max(1, parallel_tasks)) for endpoint in endpoints)


class CacheBreakerStore:
    """Breaker states in Django's cache, for the embedded setup without Redis (with the default local-memory
    cache, each worker process has its own breakers, as it has its own limits). Not atomic across processes:
    a lost update only delays a probe or an opening by one attempt."""

    async def update(self, key: str, transition):
        name = f"llm-breaker:{key}"
        state, result = transition(decode_breaker(await cache.aget(name)), time.time())
        await cache.aset(name, encode_breaker(state), timeout=24 * 3600)
        return state, result

    async def aclose(self) -> None:
        return None


def _breaker_store():
    """The endpoints' breakers live where their limits do: in Redis when there is one, else Django's cache."""
    url = settings.LLM_LIMITS_REDIS_URL
    if url and url.startswith(("redis://", "rediss://")):
        return RedisBreakerStore(redis.asyncio.Redis.from_url(url), owns_client=True)
    return CacheBreakerStore()


def _refused_address(*, endpoints: list[LLMEndpoint]) -> str:
    """Why an endpoint may not be asked (its key variable is refused, or its host is, or now resolves to, a refused
    address), or ""."""
    for endpoint in endpoints:
        try:
            engine_endpoints.endpoint_check_usable(endpoint)
        except EndpointRefused as error:
            return f"endpoint {endpoint} is not asked: {error}; change the endpoint, then resume"
    return ""


def _answer_formats(*, audit: Audit, models: list[AuditModel]) -> dict[int, planning.AnswerFormat | None]:
    """Endpoint id → :func:`~auditapp.engine.planning.audit_answer_format` (its models were prepared together, so
    they share the recorded form)."""
    return {model.endpoint_id: planning.audit_answer_format(audit, model) for model in models}


def _unusable_answer_format(endpoints: dict[int, LLMEndpoint],
                            answer_formats: dict[int, planning.AnswerFormat | None]) -> str:
    """Why a constrained endpoint's requests cannot be built (no form recorded at preparation, and the endpoint's
    own no longer one its protocol takes), or "": the audit fails with it instead of every slice crashing."""
    for endpoint_id, answer_format in answer_formats.items():
        if answer_format is None:
            continue
        problem = llm_clients.structured_output_problem(endpoints[endpoint_id].protocol, answer_format["form"])
        if problem:
            return (f"endpoint {endpoints[endpoint_id]} cannot constrain output any more: {problem}; set the form "
                    "this audit was prepared with, then resume")
    return ""


def _builder(*, audit_id: int):
    """The audit's request builder; conversations whose next turn waits on a finished one are moved on first."""
    builder = planning.request_builder(Audit.objects.get(pk=audit_id))
    engine_conversations.turns_unblock(audit=builder.audit, builder=builder)
    return builder


def _run_in_own_loop(make_coroutine):
    """Run on a new uvloop event loop (a fifth less CPU per request than asyncio's own loop, measured by
    benchmarks/audit_throughput.py); in a helper thread when this thread already runs a loop (an async caller)."""
    def run():
        with asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:
            return runner.run(make_coroutine())

    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return run()
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="audit-loop") as pool:
        return pool.submit(run).result()


def _holders_alive(leases: dict, first_seen: dict) -> bool:
    """Whether every lease holding the audit's work has been renewed since this task first saw it: their tasks are
    alive. A killed worker's lease is never renewed, and lapses within settings.AUDIT_LEASE_SECONDS."""
    for chunk_id, until in leases.items():
        first_seen.setdefault(chunk_id, until)
    return all(until > first_seen[chunk_id] for chunk_id, until in leases.items())


def audit_work(audit_id: int, *, slice_seconds: float = SLICE_SECONDS) -> str:
    """Work on a running audit until nothing is pending or the slice is used; see the module docstring.

    Returns "stopped", "finished" (this task moved the audit on to its analysis, or another did), "held" (other
    live tasks hold the audit's work: this one is a duplicate) or "continue" (the caller should queue a fresh
    task). While the work holds are taken by leases not renewed since this task first saw them (a killed worker's,
    say), it waits for them to lapse and then takes over. A transient fault (a service away) is waited out here,
    a new slice tried after each of :data:`SERVICE_PAUSES`, so the audit goes on soon after the service is back
    rather than when the workers' recovery finds it stalled.
    """
    deadline = time.monotonic() + slice_seconds
    holders_seen: dict = {}
    pause = SERVICE_PAUSES[0]
    while True:
        close_old_connections()
        try:
            outcome = _run_in_own_loop(partial(run_slice, audit_id,
                                               slice_seconds=max(1.0, deadline - time.monotonic())))
            if outcome == "exhausted":
                outcome = _wait_for_leases(audit_id, deadline)
        except recording.WorkHeld as held:
            if _holders_alive(held.leases, holders_seen) or time.monotonic() > deadline:
                return "held"
            soonest_lapse = (min(held.leases.values()) - datetime.now(UTC)).total_seconds()
            time.sleep(min(WAIT_POLL_SECONDS, max(0.05, soonest_lapse)))
            continue
        except errors.TRANSIENT_ERRORS as error:
            logger.warning("audit %s: waiting for a service: %r", audit_id, error)
            outcome = "waiting"
        if outcome == "waiting":
            if time.monotonic() > deadline:
                return "continue"
            time.sleep(pause)
            pause = min(2 * pause, SERVICE_PAUSES[1])
            continue
        pause = SERVICE_PAUSES[0]
        if outcome == "slice":
            return "continue"
        if outcome != "again":
            return outcome


def _wait_for_leases(audit_id: int, deadline: float) -> str:
    """After a slice found nothing free to claim: wait for the leases others hold on pending requests. Returns
    "finished" (nothing pending: the audit is moved on to its analysis), "stopped", "continue" (the deadline
    passed) or "again" (a pending request is free: work another slice)."""
    while True:
        wait = recording.audit_pending_wait(audit_id=audit_id)
        if wait is None:
            recording.audit_finish_if_done(audit_id=audit_id)
            return "finished"
        if not Audit.objects.filter(pk=audit_id, status=Audit.Status.RUNNING).exists():
            return "stopped"
        if time.monotonic() > deadline:
            return "continue"
        if wait == 0:
            return "again"
        time.sleep(min(wait, WAIT_POLL_SECONDS))
