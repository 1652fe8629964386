"""The endpoint circuit breaker: when an endpoint cannot be reached, hold its requests instead of spending
their attempts, probe it with backoff, and resume by itself when it answers (issue 11, item 11).

Pure layer: no Django; the state is kept in a :class:`BreakerStore` the caller passes (Redis, shared by every
worker on every machine, or the runner's Django-cache store for the embedded setup).

States and transitions (:func:`on_unreachable`, :func:`on_answer`, :func:`try_admit`, all pure)
---------------------------------------------------------------------------------------------
- **closed**: requests are sent. Every attempt that could not reach the endpoint (connection refused or
  reset, a time-out while connecting, the server closing the connection) adds one to a run of consecutive
  failures; any HTTP answer (2xx, 4xx, 5xx: the endpoint is there) to an attempt that began after the run's
  first failure ends the run. An answer to an attempt that began before it is stale: a reply the server wrote
  just before it went away says nothing of now, and letting it close the breaker would count the next refused
  attempts against requests' ``max_attempts`` in the middle of an outage.
- **open**: ``THRESHOLD`` consecutive unreachable attempts open the breaker, "unreachable since" the first
  of them. No request is sent; each waits. One request at a time, from any worker, is let through as a
  **probe** once ``next_probe_at`` has come (a probe lease of ``probe_seconds``, so a prober that dies is
  replaced). A probe that cannot reach the endpoint doubles the backoff (``BACKOFF_FIRST`` up to
  ``BACKOFF_CAP`` seconds); one that gets any HTTP answer closes the breaker and every request goes again.

Attempts' start times are the sending process's wall clock, compared with the store's clock (Redis ``TIME``):
machines whose clocks differ by a second move by a second which answers count as stale, and a probe's answer
closes the breaker whatever the clocks say.

Attempt accounting (see :func:`auditapp.llm_clients.send_chat`): an unreachable attempt after which the
breaker is open does not count against the request's ``max_attempts`` (it is still counted in its
``attempts``, which say how many were sent). So an outage fails no request before its deadline; a request
fails at its deadline ("endpoint unreachable since …") or when the researcher cancels the audit. While the
breaker is closed (an endpoint that now and then refuses a connection but answers the rest), unreachable
attempts count as any other retried failure.

Cost: a process reads the store only when its own view is not "closed and clean": in steady state an
endpoint that answers costs no store round trip; a process learns that another opened the breaker when
its own next attempt fails to connect.
"""
from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, replace
from typing import Any, Protocol

THRESHOLD = 3
BACKOFF_FIRST = 1.0
BACKOFF_CAP = 15.0
POLL_MAX = 1.0
KEY_TTL_MS = 24 * 3600 * 1000


@dataclass(frozen=True)
class BreakerState:
    """One endpoint's breaker; times are seconds since the epoch (the store's clock)."""

    failures: int = 0
    first_failure_at: float | None = None
    open_since: float | None = None
    next_probe_at: float = 0.0
    probe_until: float = 0.0
    backoff: float = 0.0
    last_error: str = ""

    @property
    def is_open(self) -> bool:
        return self.open_since is not None

    @property
    def is_clean(self) -> bool:
        return self == CLOSED


CLOSED = BreakerState()


def on_unreachable(state: BreakerState, now: float, reason: str, *, threshold: int = THRESHOLD,
                   backoff_first: float = BACKOFF_FIRST, backoff_cap: float = BACKOFF_CAP) -> BreakerState:
    """An attempt could not reach the endpoint. Opens the breaker at ``threshold`` consecutive ones; when open,
    a failed probe doubles the backoff (failures of attempts already in flight when it opened do not)."""
    failures = state.failures + 1
    first = state.first_failure_at if state.first_failure_at is not None else now
    if state.is_open:
        probing = state.probe_until > 0
        backoff = min(backoff_cap, state.backoff * 2) if probing else state.backoff
        next_probe = now + backoff if probing else state.next_probe_at
        return replace(state, failures=failures, backoff=backoff, next_probe_at=next_probe, probe_until=0.0,
                       last_error=reason)
    if failures >= threshold:
        return BreakerState(failures=failures, first_failure_at=first, open_since=first,
                            next_probe_at=now + backoff_first, backoff=backoff_first, last_error=reason)
    return replace(state, failures=failures, first_failure_at=first, last_error=reason)


def on_answer(state: BreakerState, started_at: float, *, probe: bool = False) -> BreakerState:
    """The endpoint answered (any HTTP status) an attempt begun at ``started_at``: closed, the run of failures
    over, unless the attempt began before the run's first failure and was not the probe (a stale answer)."""
    if not probe and state.first_failure_at is not None and started_at < state.first_failure_at:
        return state
    return CLOSED


def try_admit(state: BreakerState, now: float, *, probe_seconds: float) -> tuple[BreakerState, bool]:
    """May a request be sent now? Always while closed; while open, one probe at a time once it is due."""
    if not state.is_open:
        return state, True
    if now >= state.next_probe_at and now >= state.probe_until:
        return replace(state, probe_until=now + probe_seconds), True
    return state, False


def wait_seconds(state: BreakerState, now: float) -> float:
    """How long a held request sleeps before asking again (bounded, so it sees a probe's success soon)."""
    due = max(state.next_probe_at, state.probe_until) - now
    return min(POLL_MAX, max(0.05, due))


def encode(state: BreakerState) -> str:
    return json.dumps(asdict(state))


def decode(raw: str | bytes | None) -> BreakerState:
    if not raw:
        return CLOSED
    try:
        return BreakerState(**json.loads(raw))
    except (ValueError, TypeError):
        return CLOSED  # a state written by another version: start closed rather than hold requests forever


Transition = Callable[[BreakerState, float], tuple[BreakerState, Any]]


class BreakerStore(Protocol):
    """Where breaker states live; ``update`` applies a transition atomically and returns (new state, its result)."""

    async def update(self, key: str, transition: Transition) -> tuple[BreakerState, Any]: ...

    async def aclose(self) -> None: ...


class RedisBreakerStore:
    """States in Redis (``llm-breaker:{key}``, a JSON string expiring a day after its last change), changed
    with WATCH/MULTI so concurrent workers never lose an update; the clock is Redis's ``TIME``, so machines
    with skewed clocks agree on when a probe is due."""

    def __init__(self, redis_client, *, owns_client: bool = False):
        self.redis = redis_client
        self._owns_client = owns_client

    async def update(self, key: str, transition: Transition) -> tuple[BreakerState, Any]:
        import redis.exceptions

        name = f"llm-breaker:{key}"
        async with self.redis.pipeline(transaction=True) as pipe:
            while True:
                try:
                    await pipe.watch(name)
                    raw = await pipe.get(name)
                    seconds, micros = await pipe.time()
                    state, result = transition(decode(raw), seconds + micros / 1_000_000)
                    pipe.multi()
                    pipe.set(name, encode(state), px=KEY_TTL_MS)
                    await pipe.execute()
                    return state, result
                except redis.exceptions.WatchError:
                    continue

    async def aclose(self) -> None:
        if self._owns_client:
            await self.redis.aclose()


class MemoryBreakerStore:
    """States in a dict (one process; tests)."""

    def __init__(self, clock: Callable[[], float] = time.time):
        self.states: dict[str, BreakerState] = {}
        self.clock = clock

    async def update(self, key: str, transition: Transition) -> tuple[BreakerState, Any]:
        state, result = transition(self.states.get(key, CLOSED), self.clock())
        self.states[key] = state
        return state, result

    async def aclose(self) -> None:
        return None


class EndpointBreaker:
    """One endpoint's breaker as one process sees it: :meth:`admit` before an attempt, :meth:`unreachable`
    or :meth:`answered` after it. ``view`` is the state last read from the store; right after :meth:`admit`,
    an open view means this request is the probe."""

    def __init__(self, store: BreakerStore, key: str, *, probe_seconds: float, threshold: int = THRESHOLD,
                 backoff_first: float = BACKOFF_FIRST, backoff_cap: float = BACKOFF_CAP):
        self.store = store
        self.key = key
        self.probe_seconds = probe_seconds
        self.threshold, self.backoff_first, self.backoff_cap = threshold, backoff_first, backoff_cap
        self.view = CLOSED

    @property
    def unreachable_since(self) -> float | None:
        """When the endpoint became unreachable (epoch seconds), as last seen here; None while it answers."""
        return self.view.open_since

    async def admit(self, timeout: float) -> bool:
        """Wait until a request may be sent (closed, or this request is the probe); False if ``timeout``
        seconds pass first."""
        if not self.view.is_open:
            return True
        give_up = time.monotonic() + timeout
        while True:
            self.view, (admitted, pause) = await self.store.update(self.key, self._admit_at)
            if admitted:
                return True
            remaining = give_up - time.monotonic()
            if remaining <= 0:
                return False
            await asyncio.sleep(min(remaining, pause))

    def _admit_at(self, state: BreakerState, now: float) -> tuple[BreakerState, tuple[bool, float]]:
        new, admitted = try_admit(state, now, probe_seconds=self.probe_seconds)
        return new, (admitted, wait_seconds(new, now))

    async def unreachable(self, reason: str) -> bool:
        """Record an attempt that could not reach the endpoint; True when the breaker is open after it (the
        attempt is then not counted against the request's attempts)."""
        self.view, _ = await self.store.update(self.key, lambda state, now: (on_unreachable(
            state, now, reason, threshold=self.threshold, backoff_first=self.backoff_first,
            backoff_cap=self.backoff_cap), None))
        return self.view.is_open

    async def answered(self, started_at: float, *, probe: bool = False) -> None:
        """Record an HTTP answer to an attempt begun at ``started_at`` (epoch seconds); touches the store only
        when this process last saw failures."""
        if self.view.is_clean:
            return
        self.view, _ = await self.store.update(
            self.key, lambda state, now: (on_answer(state, started_at, probe=probe), None))
