"""Per-endpoint limits on LLM requests: an adaptive concurrency limit (AIMD) and a requests-per-minute limit.

Pure layer: no Django; the caller passes the configuration in. As ARCHITECTURE puts it, "the limits that
must hold across workers live in Redis": :class:`RedisLimiter` keeps one endpoint's limits in Redis so that
every request to that endpoint, from every Celery worker on every machine, shares them.
:class:`FileLimiter` holds the concurrency and rate limits across every process of one machine through lock files,
for the embedded setup without Redis (its workers all run on that machine). :class:`LocalLimiter` applies the rules
inside one process (the file limiter's in-process part, and tests). :func:`limiter_for` picks one from a Redis URL
and a folder.

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
atomic and use Redis's ``TIME``, so machines with skewed clocks agree. A holder's entry is a short lease
(``slot_ttl`` seconds, e.g. 15): while the process holds slots, a task of its event loop renews them all
every third of the lease, so a request longer than the lease keeps its slot, and the slots of a SIGKILLed
worker come back within ``slot_ttl``; every acquire first drops expired holders. (A process whose event
loop is blocked, or cut off from Redis, for longer than the lease loses its slots to others.)

Each process talks to Redis through one task per limiter, which sends everything that is waiting as one
script call: the slots given back since its last call (with the outcomes reported in them) and the slots
asked for, granted in arrival order (FIFO within a process) while the limit allows. A sender that gives
back its slot and asks for the next one therefore costs one round trip, and 64 senders finishing at once
cost a handful rather than 128: at a thousand requests per second, one call per request was as much of a
worker's CPU as the HTTP itself (``benchmarks/audit_throughput.py``). While no rate limit paces the starts
and the last call saw the limit at its maximum, a slot given back without a 429 even stays in the process:
handed straight to a task of the process waiting for one, or parked for ``PARK_SECONDS`` for the next that
asks (a sender gives its slot back before it builds its next request), then given back; the holders in
Redis stay as many, so the limit holds, and the attempts' outcomes go to Redis in batches. When the
endpoint is full the task polls, sleeping 2 ms doubling to 50 ms with jitter, and is woken at once when a
slot of its own process is given back; polling needs no connection per waiter and no lost-wake-up
handling, as a blocking pop on a release list would. Across processes there is no order: a process that
holds slots retakes them first (its releases go out with its requests), others get one when a poll finds
it free. Every request's deadline counts its wait, so a worker should not queue more requests than the
limit serves within the deadline. A slot is counted in Redis until the call that gives it back has run, so
the limit holds.

A :class:`RedisLimiter` belongs to the event loop it is first used in, as its Redis connections do; a
:class:`LocalLimiter` may serve successive event loops (one ``asyncio.run`` after another), one at a time.
"""
from __future__ import annotations

import asyncio
import contextlib
import contextvars
import fcntl
import itertools
import logging
import math
import os
import random
import time
import uuid
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

import redis.asyncio

logger = logging.getLogger(__name__)

KEY_TTL_MS = 24 * 3600 * 1000
# Each script call holds a connection for well under a millisecond, so a few serve hundreds of waiting
# tasks; a blocking pool makes the rest queue for one instead of failing with "Too many connections".
REDIS_CONNECTIONS = 16
# How long a slot given back with no task of its process waiting stays parked for the next one to ask, and how many
# attempts' outcomes of slots kept in the process wait for a call to Redis (see RedisLimiter._release).
PARK_SECONDS = 0.01
OUTCOMES_PER_CALL = 64
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
        self._context_token: contextvars.Token[_Hold | None] | None = None

    async def __aenter__(self) -> None:
        self._hold = await self._acquire()
        self._context_token = _current_hold.set(self._hold)

    async def __aexit__(self, *exc_info: object) -> None:
        assert self._context_token is not None  # set by __aenter__
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


# KEYS: holders, state. ARGV: max_concurrency, rate interval µs (0: no rate limit), slot ttl µs, key ttl ms,
# the number of slots given back, the number of slots to keep, then (token ('' for none), outcome ('', 'ok',
# 'throttled'), epoch the slot was granted in (-1: none, always halve)) for each slot given back, then the
# tokens of the slots to keep (handed over in the process: their expiry restarts), then the tokens asking
# for a slot, in order. Returns {limit, epoch, then the µs to wait before starting for each granted token}.
_STEP_LUA = """
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local max = tonumber(ARGV[1])
local interval = tonumber(ARGV[2])
local ttl = tonumber(ARGV[3])
local n_back = tonumber(ARGV[5])
local n_keep = tonumber(ARGV[6])
local state = redis.call('HMGET', KEYS[2], 'limit', 'successes', 'epoch', 'tat')
local limit = math.min(tonumber(state[1]) or max, max)
local successes = tonumber(state[2]) or 0
local epoch = tonumber(state[3]) or 0
local tat = tonumber(state[4]) or now
local changed = false
for i = 0, n_back - 1 do
  local token = ARGV[7 + 3 * i]
  local outcome = ARGV[8 + 3 * i]
  if token ~= '' then
    redis.call('ZREM', KEYS[1], token)
  end
  if outcome == 'throttled' then
    local seen = tonumber(ARGV[9 + 3 * i])
    if seen < 0 or seen == epoch then
      limit = math.max(1, math.floor(limit / 2))
      successes = 0
      epoch = epoch + 1
    end
    changed = true
  elseif outcome == 'ok' then
    successes = successes + 1
    if successes >= limit then
      limit = math.min(limit + 1, max)
      successes = 0
    end
    changed = true
  end
end
local result = {limit, epoch}
local first_keep = 7 + 3 * n_back
for i = first_keep, first_keep + n_keep - 1 do
  redis.call('ZADD', KEYS[1], 'XX', now + ttl, ARGV[i])
end
local first = first_keep + n_keep
if first <= #ARGV then
  redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
  local holders = redis.call('ZCARD', KEYS[1])
  for i = first, #ARGV do
    if holders >= limit then
      break
    end
    local start = now
    if interval > 0 then
      start = math.max(now, tat)
      tat = start + interval
      changed = true
    end
    redis.call('ZADD', KEYS[1], start + ttl, ARGV[i])
    holders = holders + 1
    result[#result + 1] = start - now
  end
  redis.call('PEXPIRE', KEYS[1], ARGV[4])
end
if changed then
  redis.call('HSET', KEYS[2], 'limit', limit, 'successes', successes, 'epoch', epoch, 'tat', tat)
  redis.call('PEXPIRE', KEYS[2], ARGV[4])
end
return result
"""


@dataclass
class _Request:
    """A slot asked for: its token and the future resolved with (token of the slot, epoch, µs to wait)."""

    token: str
    future: asyncio.Future


class RedisLimiter:
    """The limits of one endpoint, held in Redis and shared by every process that uses the same key.

    All of this limiter's Redis traffic but :meth:`current_limit` and outcomes reported outside a slot goes
    through one task (see the module docstring), so one connection serves it.
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
        self._step_script = redis_client.register_script(_STEP_LUA)
        # Slot tokens: unique across processes by the random prefix, cheap to make by the counter.
        self._token_prefix = f"{uuid.uuid4().hex}:"
        self._token_numbers = itertools.count()
        self._asking: deque[_Request] = deque()
        self._giving_back: list[tuple[str, str, int]] = []
        self._keeping: list[str] = []
        # What the last call to Redis said; a slot is handed over locally only while the limit is the maximum.
        self._limit_seen = 0
        self._epoch_seen = 0
        self._unsettled = 0  # slots given back and not yet applied in Redis
        self._all_settled = asyncio.Event()
        self._all_settled.set()
        self._work = asyncio.Event()
        self._stepper: asyncio.Task | None = None
        # Slots granted to this process and not given back: their leases are renewed (module docstring).
        self._held: set[str] = set()
        self._renew_seconds = slot_ttl / 3
        self._renewer: asyncio.Task | None = None
        # Slots given back while no task of this process was waiting: token → epoch (_park).
        self._parked: dict[str, int] = {}

    def slot(self) -> SlotContext:
        return _Slot(self._acquire, self._release)

    def _wake_stepper(self) -> None:
        self._work.set()
        loop = asyncio.get_running_loop()
        if self._stepper is None or self._stepper.done():
            self._stepper = loop.create_task(self._step_forever())
        if self._renewer is None or self._renewer.done():
            self._renewer = loop.create_task(self._renew_forever())

    async def _renew_forever(self) -> None:
        """Every third of the lease, renew the slots this process holds, with the stepper's next call (a call that
        fails is retried at the next renewal, well before the leases lapse)."""
        while True:
            await asyncio.sleep(self._renew_seconds)
            if self._held:
                self._keeping.extend(self._held)
                self._wake_stepper()

    async def _acquire(self) -> _Hold:
        if self._parked:
            token = next(iter(self._parked))
            del self._parked[token]
            return _Hold(owner=self, epoch=self._epoch_seen, token=token)
        request = _Request(f"{self._token_prefix}{next(self._token_numbers)}", asyncio.get_running_loop().create_future())
        self._asking.append(request)
        self._wake_stepper()
        try:
            token, epoch, wait_us = await request.future
        except asyncio.CancelledError:
            if request.future.done() and not request.future.cancelled():
                # Granted (or handed over) just before the cancellation reached this task: give it back.
                token, epoch, _ = request.future.result()
                self._give_back(token, "", epoch)
            raise
        hold = _Hold(owner=self, epoch=epoch, token=token)
        if wait_us > 0:
            try:
                await asyncio.sleep(wait_us / 1_000_000)
            except asyncio.CancelledError:
                await self._release(hold)
                raise
        return hold

    async def _release(self, hold: _Hold) -> None:
        # Given back in the background with the next call: the request is done, and its sender need not wait
        # a round trip before taking the next one (the slot stays counted until Redis has it back).
        if not self._may_keep(hold):
            self._give_back(hold.token, hold.outcome, hold.epoch)
        elif not self._hand_over(hold):
            self._park(hold)

    def _may_keep(self, hold: _Hold) -> bool:
        """Whether the slot may go to another task of this process without Redis: no rate limit to pace, the last
        call saw the limit at its maximum, and this attempt was not throttled. The holders in Redis stay as many as
        before, so the limit holds as if the slot had gone through Redis. The attempt's outcome (a success: at the
        maximum it changes nothing) waits for a later call, which takes :data:`OUTCOMES_PER_CALL` of them at a
        time; the slot's expiry is restarted by the renewals, as for any slot held."""
        return not self._interval_us and self._limit_seen >= self.max_concurrency and hold.outcome != THROTTLED

    def _hand_over(self, hold: _Hold) -> bool:
        """Give the slot straight to the first task of this process waiting for one (:meth:`_may_keep`)."""
        while self._asking:
            request = self._asking.popleft()
            if not request.future.done():
                request.future.set_result((hold.token, self._epoch_seen, 0))
                self._outcome_later(hold)
                return True
        return False

    def _park(self, hold: _Hold) -> None:
        """Keep the slot for :data:`PARK_SECONDS` for the next task of this process that asks (:meth:`_may_keep`).

        A sender gives its slot back before it builds its next request, and asks again a moment later: through
        Redis that was one call per request, a tenth of the worker's CPU in a profile of
        ``benchmarks/audit_throughput.py`` (the socket writes alone 8%), and a round trip of waiting. A slot not
        asked for in time is given back."""
        self._parked[hold.token] = hold.epoch
        self._outcome_later(hold)
        asyncio.get_running_loop().call_later(PARK_SECONDS, self._unpark, hold.token)

    def _unpark(self, token: str) -> None:
        epoch = self._parked.pop(token, None)
        if epoch is not None:
            self._give_back(token, "", epoch)

    def _unpark_all(self) -> None:
        for token in list(self._parked):
            self._unpark(token)

    def _outcome_later(self, hold: _Hold) -> None:
        """The attempt's outcome, for a later call (:meth:`_may_keep`)."""
        if not hold.outcome:
            return
        self._giving_back.append(("", hold.outcome, hold.epoch))
        self._unsettled += 1
        self._all_settled.clear()
        if len(self._giving_back) >= OUTCOMES_PER_CALL:
            self._wake_stepper()

    def _give_back(self, token: str, outcome: str, epoch: int) -> None:
        self._held.discard(token)
        self._giving_back.append((token, outcome, epoch))
        self._unsettled += 1
        self._all_settled.clear()
        self._wake_stepper()

    async def _step_forever(self) -> None:
        pause = POLL_FIRST
        while True:
            await self._work.wait()
            await asyncio.sleep(0)  # let the senders that are ready now ask and give back first
            self._work.clear()
            giving_back, self._giving_back = self._giving_back, []
            keeping, self._keeping = self._keeping, []
            asking = [request for request in self._asking if not request.future.done()]  # not cancelled or handed
            if not giving_back and not asking and not keeping:
                continue
            try:
                _, granted_epoch, waits = await self._step(giving_back, [request.token for request in asking],
                                                           keeping)
            except Exception as error:  # noqa: BLE001 - handed to every waiter, whose request then fails
                for request in asking:
                    if not request.future.done():
                        request.future.set_exception(error)
                self._asking = deque(request for request in self._asking if not request.future.done())
                self._settle_count(len(giving_back))  # lost: those slots' leases lapse, as nothing renews them
                if not asking:
                    logger.warning("could not give back %d slots of %s: %s", len(giving_back), self.prefix, error)
                continue
            for request, wait_us in zip(asking, waits, strict=False):
                if request.future.done():  # cancelled during the call: give the slot straight back
                    self._give_back(request.token, "", granted_epoch)
                else:
                    self._held.add(request.token)
                    request.future.set_result((request.token, granted_epoch, wait_us))
            self._asking = deque(request for request in self._asking if not request.future.done())
            self._settle_count(len(giving_back))
            if len(waits) < len(asking):  # the endpoint is full: poll, or go again when a slot comes back here
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(random.uniform(pause / 2, pause)):
                        await self._work.wait()
                self._work.set()
                pause = min(pause * 2, POLL_MAX)
            else:
                pause = POLL_FIRST

    def _settle_count(self, n: int) -> None:
        self._unsettled -= n
        if self._unsettled == 0:
            self._all_settled.set()

    async def _step(self, giving_back: list[tuple[str, str, int]], asking: list[str],
                    keeping: Sequence[str] = ()) -> tuple[int, int, list[int]]:
        """One script call; returns the limit, the epoch and the µs to wait for each granted token."""
        args: list[int | str] = [self.max_concurrency, self._interval_us, self._slot_ttl_us, KEY_TTL_MS,
                                 len(giving_back), len(keeping)]
        for given in giving_back:
            args.extend(given)
        args.extend(keeping)
        args.extend(asking)
        limit, epoch, *waits = await self._step_script(keys=self._keys, args=args)
        self._limit_seen, self._epoch_seen = int(limit), int(epoch)
        if self._limit_seen < self.max_concurrency:
            self._unpark_all()  # the limit went down: a parked slot may no longer be taken without asking
        return self._limit_seen, self._epoch_seen, [int(wait) for wait in waits]

    async def _report(self, outcome: str) -> None:
        hold = _current_hold.get()
        if hold is not None and hold.owner is self:
            hold.outcome = outcome  # applied when the slot is given back: no extra round trip
        else:
            await self._step([("", outcome, -1)], [])

    async def throttled(self) -> None:
        await self._report(THROTTLED)

    async def succeeded(self) -> None:
        await self._report(SUCCEEDED)

    async def current_limit(self) -> int:
        limit, _, _ = await self._step([], [])
        return limit

    async def settled(self) -> None:
        """Wait until every slot given back so far (parked ones too) is back in Redis, with every outcome."""
        self._unpark_all()
        if self._giving_back:
            self._wake_stepper()
        await self._all_settled.wait()

    async def aclose(self) -> None:
        """Wait for the slots being given back, stop the tasks that talk to Redis (a slot still held is renewed no
        more), close an owned client."""
        await self.settled()
        for task in (self._renewer, self._stepper):
            if task is not None:
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task
        if self._owns_client:
            await self.redis.aclose()


class FileLimiter:
    """The limits across every process of one machine that passes the same ``directory`` (the embedded defaults'
    worker processes, which have no Redis).

    A concurrency slot is an exclusive ``flock`` on one of ``max_concurrency`` files in ``directory/endpoint_key``:
    the kernel releases it when its process ends, however it ends (a SIGKILLed worker's slots are free at once, and
    no lease needs renewing). A process asks for one only after its own :class:`LocalLimiter` has let the request
    through (first come, first served within the process, and the AIMD limit, which is this process's own: it can
    only lower what the process takes), then polls the files, sleeping 2 ms doubling to 50 ms with jitter, as the
    Redis limiter polls. The rate limit's next start time (GCRA with no burst, as above, on the wall clock the
    processes share) is a file read and written under a lock. ``endpoint_key`` is the caller's own name for the
    endpoint (``endpoint-<id>``), never user input; two deployments that share a folder (and endpoint ids) share
    their limits, so each has its own VAR_DIR. POSIX only (``fcntl``), as the embedded defaults are."""

    def __init__(self, directory: str | os.PathLike, endpoint_key: str, max_concurrency: int,
                 requests_per_minute: int | None = None):
        _validate(max_concurrency, requests_per_minute)
        self.max_concurrency = max_concurrency
        self.interval = 60.0 / requests_per_minute if requests_per_minute else 0.0
        self._local = LocalLimiter(max_concurrency)
        self._folder = Path(directory) / endpoint_key
        self._folder.mkdir(parents=True, exist_ok=True)
        self._files: dict[int, int] = {}
        self._held: set[int] = set()

    def slot(self) -> SlotContext:
        return _Slot(self._acquire, self._release)

    async def _acquire(self) -> _Hold:
        hold = await self._local._acquire()
        index = None
        try:
            index = await self._lock_a_file()
            if self.interval:
                await asyncio.sleep(self._reserve_start())
        except BaseException:
            if index is not None:
                self._unlock(index)
            await self._local._release(hold)
            raise
        hold.token = str(index)
        return hold

    async def _lock_a_file(self) -> int:
        delay = POLL_FIRST
        while True:
            for index in range(self.max_concurrency):
                if index in self._held:
                    continue
                try:
                    fcntl.flock(self._file(index), fcntl.LOCK_EX | fcntl.LOCK_NB)
                except BlockingIOError:
                    continue
                self._held.add(index)
                return index
            await asyncio.sleep(delay * random.uniform(0.5, 1.0))
            delay = min(delay * 2, POLL_MAX)

    def _file(self, index: int) -> int:
        if index not in self._files:
            self._files[index] = os.open(self._folder / f"slot-{index}.lock", os.O_RDWR | os.O_CREAT, 0o600)
        return self._files[index]

    def _unlock(self, index: int) -> None:
        # After aclose() the file is closed, which gave its lock back already.
        if index in self._files:
            fcntl.flock(self._files[index], fcntl.LOCK_UN)
        self._held.discard(index)

    def _reserve_start(self) -> float:
        """Seconds until this request may start, its start time reserved for it in the shared file."""
        with open(self._folder / "next-start", "a+") as shared:
            fcntl.flock(shared, fcntl.LOCK_EX)
            shared.seek(0)
            now = time.time()
            try:
                start = max(now, float(shared.read() or 0.0))
            except ValueError:
                start = now
            shared.seek(0)
            shared.truncate()
            shared.write(repr(start + self.interval))
        return start - now

    async def _release(self, hold: _Hold) -> None:
        self._unlock(int(hold.token))
        await self._local._release(hold)

    async def throttled(self) -> None:
        await self._local.throttled()

    async def succeeded(self) -> None:
        await self._local.succeeded()

    async def current_limit(self) -> int:
        return await self._local.current_limit()

    async def aclose(self) -> None:
        for descriptor in self._files.values():
            os.close(descriptor)
        self._files.clear()
        self._held.clear()


def limiter_for(redis_url: str | None, endpoint_key: str, max_concurrency: int,
                requests_per_minute: int | None = None, *, slot_ttl: float,
                directory: str | os.PathLike | None = None) -> Limiter:
    """A :class:`RedisLimiter` (owning its client) for a ``redis://``/``rediss://`` URL, else a :class:`FileLimiter`
    in ``directory``, else (no folder) a :class:`LocalLimiter`.

    Create it inside the event loop that uses it: a Redis client's connections belong to one loop.
    """
    if redis_url and redis_url.startswith(("redis://", "rediss://")):
        pool = redis.asyncio.BlockingConnectionPool.from_url(redis_url, max_connections=REDIS_CONNECTIONS,
                                                             timeout=None)
        return RedisLimiter(redis.asyncio.Redis.from_pool(pool), endpoint_key, max_concurrency,
                            requests_per_minute, slot_ttl=slot_ttl, owns_client=True)
    if directory is not None:
        return FileLimiter(directory, endpoint_key, max_concurrency, requests_per_minute)
    return LocalLimiter(max_concurrency, requests_per_minute)
