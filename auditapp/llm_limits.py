"""Per-endpoint limits on LLM requests: an adaptive concurrency limit (AIMD) and a requests-per-minute limit.

Pure layer: no Django; the caller passes the configuration in. As ARCHITECTURE puts it, "the limits that
must hold across workers live in Redis": :class:`RedisLimiter` keeps one endpoint's limits in Redis so that
every request to that endpoint, from every Celery worker on every machine, shares them.
:class:`LocalLimiter` applies the same rules inside one process, for the embedded setup without Redis —
there each worker process has its own limits, so N workers may together send N times as much.
:func:`limiter_for` picks one of the two from a Redis URL.

Interface (:class:`Limiter`; every method is a coroutine, because the Redis limiter talks to Redis)
---------------------------------------------------------------------------------------------------
``async with limiter.slot():`` waits for a concurrency slot and then for the rate limit, and holds the
slot for the body (one HTTP attempt). ``await limiter.throttled()`` reports a 429 and
``await limiter.succeeded()`` a successful reply; call them inside the slot of the attempt they are
about (they may also be called outside a slot). ``await limiter.current_limit()`` is the concurrency
limit in force; ``await limiter.aclose()`` releases what the limiter owns.

Concurrency limit: AIMD, like TCP congestion control
----------------------------------------------------
The limit starts at ``max_concurrency``.

- Multiplicative decrease: a 429 halves it, ``limit = max(1, limit // 2)``, and restarts the success
  count. Only once per round: every decrease opens a new *epoch*, and a 429 from an attempt that got its
  slot in an earlier epoch is ignored — the burst of 429s from requests that were already in flight when
  the server started refusing says nothing new, and would otherwise halve the limit to 1 at once.
  ``throttled()`` called outside a slot always halves.
- Additive increase: after ``limit`` successes at the current limit, ``limit += 1`` (one step per
  "window" of requests), never above ``max_concurrency``.
- Lowering the limit never interrupts holders; new slots are granted only while holders < limit.

Rate limit: GCRA pacing with no burst
-------------------------------------
With ``requests_per_minute = r`` attempts start at least ``60 / r`` seconds apart (the generic cell rate
algorithm with zero burst tolerance: one "theoretical arrival time" per endpoint). Pacing rather than a
per-minute window keeps any 60-second window at ≤ r + 1 starts without the burst at each window edge
that trips provider limits. A slot reserves the next start time when it is granted and waits for it
while holding the slot, so waiters for the rate sleep exactly as long as needed, in order; the rate
wait is part of ``slot()``.

Redis layout and cost
---------------------
Keys ``llm-limit:{endpoint_key}:holders`` (sorted set: slot token → expiry, µs of Redis server time) and
``llm-limit:{endpoint_key}:state`` (hash: ``limit``, ``successes``, ``epoch``, ``tat``), both expiring
after a day unused (the AIMD limit then starts over at the maximum). Two Lua scripts make each step
atomic and use Redis's ``TIME``, so machines with skewed clocks agree. A holder's entry expires
``slot_ttl`` seconds after its start, so the slots of a SIGKILLed worker come back after ``slot_ttl``
(the caller passes the attempt timeout plus a margin); every acquire first drops expired holders.

Uncontended, a slot costs one round trip to acquire and one to release: an outcome reported inside a
slot (``throttled()``/``succeeded()``) is applied by the release script rather than by a round trip of
its own. Waiting for a concurrency slot is polling, by one task per process at a time: the other local
waiters queue behind it in arrival order (FIFO within a process). The poller sleeps 2 ms doubling to
50 ms, with jitter, between tries, and is woken at once when a slot of its own process is released.
Polling needs no connection per waiter and no lost-wake-up handling, as a blocking pop on a release
list would; one poller per process keeps the cost at about 2–3 script calls per acquisition even with
hundreds of waiters. Across processes there is no order: a process that holds slots retakes them first
(its releases wake its poller), others get one when a poll finds it free. Every request's deadline
counts its wait, so a worker should not queue more requests than the limit serves within the deadline.

A :class:`RedisLimiter` belongs to the event loop it is first used in, as its Redis connections do; a
:class:`LocalLimiter` may serve successive event loops (one ``asyncio.run`` after another), one at a time.
"""
from __future__ import annotations

import asyncio
import contextlib
import contextvars
import math
import random
import time
import uuid
from collections import deque
from dataclasses import dataclass
from typing import Protocol

import redis.asyncio

KEY_TTL_MS = 24 * 3600 * 1000
# Each script call holds a connection for well under a millisecond, so a few serve hundreds of waiting
# tasks; a blocking pool makes the rest queue for one instead of failing with "Too many connections".
REDIS_CONNECTIONS = 16
POLL_FIRST = 0.002
POLL_MAX = 0.05

THROTTLED, SUCCEEDED = "throttled", "ok"


class SlotContext(Protocol):
    """What ``slot()`` returns: an async context manager holding one slot."""

    async def __aenter__(self) -> None: ...

    async def __aexit__(self, *exc_info: object) -> None: ...


class Limiter(Protocol):
    """Concurrency and rate limits of one endpoint (see the module docstring for the rules)."""

    def slot(self) -> SlotContext: ...

    async def throttled(self) -> None: ...

    async def succeeded(self) -> None: ...

    async def current_limit(self) -> int: ...

    async def aclose(self) -> None: ...


@dataclass
class _Hold:
    """One granted slot: which limiter, the epoch it was granted in, and the outcome reported in it."""

    owner: object
    epoch: int
    token: str = ""
    outcome: str = ""


# The slot the current task is inside, so throttled()/succeeded() can tie the outcome to its attempt.
_current_hold: contextvars.ContextVar[_Hold | None] = contextvars.ContextVar("llm_limit_hold", default=None)


class _Slot:
    def __init__(self, acquire, release):
        self._acquire, self._release = acquire, release
        self._hold: _Hold | None = None
        self._context_token: contextvars.Token | None = None

    async def __aenter__(self) -> None:
        self._hold = await self._acquire()
        self._context_token = _current_hold.set(self._hold)

    async def __aexit__(self, *exc_info: object) -> None:
        _current_hold.reset(self._context_token)
        await self._release(self._hold)


def _validate(max_concurrency: int, requests_per_minute: int | None) -> None:
    if max_concurrency < 1:
        raise ValueError(f"max_concurrency must be at least 1, not {max_concurrency}")
    if requests_per_minute is not None and requests_per_minute < 1:
        raise ValueError(f"requests_per_minute must be at least 1 or None, not {requests_per_minute}")


class LocalLimiter:
    """The limits within one process and one event loop at a time (per worker process, not shared)."""

    def __init__(self, max_concurrency: int, requests_per_minute: int | None = None):
        _validate(max_concurrency, requests_per_minute)
        self.max_concurrency = max_concurrency
        self.interval = 60.0 / requests_per_minute if requests_per_minute else 0.0
        self._limit = max_concurrency
        self._successes = 0
        self._epoch = 0
        self._held = 0
        self._next_start = 0.0
        # Futures of the running loop, made per wait, so one limiter survives successive asyncio.run() calls.
        self._waiters: deque[asyncio.Future] = deque()

    def slot(self) -> SlotContext:
        return _Slot(self._acquire, self._release)

    async def _acquire(self) -> _Hold:
        while self._held >= self._limit:
            waiter = asyncio.get_running_loop().create_future()
            self._waiters.append(waiter)
            try:
                await waiter
            except asyncio.CancelledError:
                if waiter.done() and not waiter.cancelled():
                    self._wake()  # pass on the wake-up this task can no longer use
                raise
            finally:
                self._waiters.remove(waiter)
        self._held += 1
        hold = _Hold(owner=self, epoch=self._epoch)
        if self.interval:
            now = time.monotonic()
            start = max(now, self._next_start)
            self._next_start = start + self.interval
            try:
                await asyncio.sleep(start - now)
            except asyncio.CancelledError:
                await self._release(hold)
                raise
        return hold

    async def _release(self, hold: _Hold) -> None:
        self._held -= 1
        self._wake()

    def _wake(self) -> None:
        free = self._limit - self._held
        for waiter in self._waiters:
            if free <= 0:
                break
            if not waiter.done():
                waiter.set_result(None)
                free -= 1

    def _report(self, outcome: str) -> None:
        hold = _current_hold.get()
        if outcome == THROTTLED:
            if hold is None or hold.owner is not self or hold.epoch == self._epoch:
                self._limit = max(1, self._limit // 2)
                self._successes = 0
                self._epoch += 1
        else:
            self._successes += 1
            if self._successes >= self._limit:
                self._limit = min(self._limit + 1, self.max_concurrency)
                self._successes = 0
                self._wake()

    async def throttled(self) -> None:
        self._report(THROTTLED)

    async def succeeded(self) -> None:
        self._report(SUCCEEDED)

    async def current_limit(self) -> int:
        return self._limit

    async def aclose(self) -> None:
        return None


# KEYS: holders, state. ARGV: token, max_concurrency, rate interval µs (0: no rate limit), slot ttl µs,
# key ttl ms. Returns {granted 0/1, epoch, µs to wait before starting}.
_ACQUIRE_LUA = """
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
local max = tonumber(ARGV[2])
local state = redis.call('HMGET', KEYS[2], 'limit', 'epoch', 'tat')
local limit = math.min(tonumber(state[1]) or max, max)
local epoch = tonumber(state[2]) or 0
if redis.call('ZCARD', KEYS[1]) >= limit then
  return {0, epoch, 0}
end
local start = now
local interval = tonumber(ARGV[3])
if interval > 0 then
  start = math.max(now, tonumber(state[3]) or now)
  redis.call('HSET', KEYS[2], 'tat', start + interval)
  redis.call('PEXPIRE', KEYS[2], ARGV[5])
end
redis.call('ZADD', KEYS[1], start + tonumber(ARGV[4]), ARGV[1])
redis.call('PEXPIRE', KEYS[1], ARGV[5])
return {1, epoch, start - now}
"""

# KEYS: holders, state. ARGV: token ('' to release nothing), outcome ('', 'ok', 'throttled'), epoch the
# slot was granted in (-1: none, always halve), max_concurrency, key ttl ms. Returns the limit.
_SETTLE_LUA = """
if ARGV[1] ~= '' then
  redis.call('ZREM', KEYS[1], ARGV[1])
end
local max = tonumber(ARGV[4])
local state = redis.call('HMGET', KEYS[2], 'limit', 'successes', 'epoch')
local limit = math.min(tonumber(state[1]) or max, max)
if ARGV[2] == '' then
  return limit
end
local successes = tonumber(state[2]) or 0
local epoch = tonumber(state[3]) or 0
if ARGV[2] == 'throttled' then
  local seen = tonumber(ARGV[3])
  if seen < 0 or seen == epoch then
    limit = math.max(1, math.floor(limit / 2))
    successes = 0
    epoch = epoch + 1
  end
else
  successes = successes + 1
  if successes >= limit then
    limit = math.min(limit + 1, max)
    successes = 0
  end
end
redis.call('HSET', KEYS[2], 'limit', limit, 'successes', successes, 'epoch', epoch)
redis.call('PEXPIRE', KEYS[2], ARGV[5])
return limit
"""


class RedisLimiter:
    """The limits of one endpoint, held in Redis and shared by every process that uses the same key.

    Every task waiting in ``slot()`` uses a connection of ``redis_client``'s pool now and then: give it a
    pool that blocks when exhausted (as :func:`limiter_for` does) or one as large as the number of tasks.
    """

    def __init__(self, redis_client: redis.asyncio.Redis, endpoint_key: str, max_concurrency: int,
                 requests_per_minute: int | None = None, *, slot_ttl: float, owns_client: bool = False):
        _validate(max_concurrency, requests_per_minute)
        if slot_ttl <= 0:
            raise ValueError(f"slot_ttl must be positive, not {slot_ttl}")
        self.redis = redis_client
        self.endpoint_key = endpoint_key
        self.max_concurrency = max_concurrency
        self.prefix = f"llm-limit:{endpoint_key}:"
        self._keys = [self.prefix + "holders", self.prefix + "state"]
        # Whole microseconds, rounded up so the pacing is never faster than asked.
        self._interval_us = math.ceil(60_000_000 / requests_per_minute) if requests_per_minute else 0
        self._slot_ttl_us = math.ceil(slot_ttl * 1_000_000)
        self._owns_client = owns_client
        self._acquire_script = redis_client.register_script(_ACQUIRE_LUA)
        self._settle_script = redis_client.register_script(_SETTLE_LUA)
        self._turn = asyncio.Lock()
        self._released = asyncio.Event()
        self._releasing: set[asyncio.Task] = set()

    def slot(self) -> SlotContext:
        return _Slot(self._acquire, self._release)

    async def _try_acquire(self, token: str) -> list[int]:
        return await self._acquire_script(
            keys=self._keys, args=[token, self.max_concurrency, self._interval_us, self._slot_ttl_us, KEY_TTL_MS])

    async def _acquire(self) -> _Hold:
        token = uuid.uuid4().hex
        granted = 0
        if not self._turn.locked():
            granted, epoch, wait_us = await self._try_acquire(token)
        if not granted:
            # One poller per process: the other local waiters queue in order behind it, which spares
            # Redis and this process's CPU a poll per waiter, and a slot freed here wakes it at once.
            async with self._turn:
                pause = POLL_FIRST
                while True:
                    self._released.clear()  # before trying, so a release during the try is not missed
                    granted, epoch, wait_us = await self._try_acquire(token)
                    if granted:
                        break
                    # Jitter keeps the pollers of many workers from hitting Redis in lockstep.
                    with contextlib.suppress(TimeoutError):
                        async with asyncio.timeout(random.uniform(pause / 2, pause)):
                            await self._released.wait()
                    pause = min(pause * 2, POLL_MAX)
        hold = _Hold(owner=self, epoch=int(epoch), token=token)
        if wait_us > 0:
            try:
                await asyncio.sleep(int(wait_us) / 1_000_000)
            except asyncio.CancelledError:
                await self._release(hold)
                raise
        return hold

    async def _release(self, hold: _Hold) -> None:
        # Released in the background: the request is done, and its sender need not wait a Redis round trip
        # before taking the next one (the slot stays counted until Redis has it back, so the limit holds).
        task = asyncio.get_running_loop().create_task(self._settle_and_wake(hold))
        self._releasing.add(task)
        task.add_done_callback(self._releasing.discard)

    async def _settle_and_wake(self, hold: _Hold) -> None:
        await self._settle(hold.token, hold.outcome, hold.epoch)
        self._released.set()

    async def _settle(self, token: str, outcome: str, epoch: int) -> int:
        return int(await self._settle_script(keys=self._keys,
                                             args=[token, outcome, epoch, self.max_concurrency, KEY_TTL_MS]))

    async def _report(self, outcome: str) -> None:
        hold = _current_hold.get()
        if hold is not None and hold.owner is self:
            hold.outcome = outcome  # applied by the release script: no extra round trip
        else:
            await self._settle("", outcome, -1)

    async def throttled(self) -> None:
        await self._report(THROTTLED)

    async def succeeded(self) -> None:
        await self._report(SUCCEEDED)

    async def current_limit(self) -> int:
        return await self._settle("", "", -1)

    async def settled(self) -> None:
        """Wait until every slot released so far is back in Redis."""
        if self._releasing:
            await asyncio.gather(*self._releasing, return_exceptions=True)

    async def aclose(self) -> None:
        """Wait for the slots being given back, then close the client if this limiter owns it."""
        await self.settled()
        if self._owns_client:
            await self.redis.aclose()


def limiter_for(redis_url: str | None, endpoint_key: str, max_concurrency: int,
                requests_per_minute: int | None = None, *, slot_ttl: float) -> Limiter:
    """A :class:`RedisLimiter` (owning its client) for a ``redis://``/``rediss://`` URL, else a :class:`LocalLimiter`.

    Create it inside the event loop that uses it: a Redis client's connections belong to one loop.
    """
    if redis_url and redis_url.startswith(("redis://", "rediss://")):
        pool = redis.asyncio.BlockingConnectionPool.from_url(redis_url, max_connections=REDIS_CONNECTIONS,
                                                             timeout=None)
        return RedisLimiter(redis.asyncio.Redis.from_pool(pool), endpoint_key, max_concurrency,
                            requests_per_minute, slot_ttl=slot_ttl, owns_client=True)
    return LocalLimiter(max_concurrency, requests_per_minute)
