"""LocalLimiter, FileLimiter and RedisLimiter: the concurrency bound, the AIMD limit, the rate limit, reclaiming dead
holders (the file limiter's across real processes)."""
from __future__ import annotations

import asyncio
import os
import signal
import sys
import time
import uuid
from itertools import pairwise

import pytest
import redis
import redis.asyncio

from auditapp.llm_limits import FileLimiter, LocalLimiter, RedisLimiter, limiter_for
from tests.integration.support import REPO, WatchedProcess, redis_broker_url


class Gauge:
    """Counts holders inside slots and remembers the most at once."""

    def __init__(self):
        self.now = self.peak = self.total = 0

    async def hold(self, limiter, seconds: float) -> None:
        async with limiter.slot():
            self.now += 1
            self.total += 1
            self.peak = max(self.peak, self.now)
            await asyncio.sleep(seconds)
            self.now -= 1


async def start_times(limiters, n_per_limiter: int) -> tuple[list[float], float]:
    """Start times of slots taken back to back through each limiter, and the longest the event loop was late
    waking a 5 ms sleep meanwhile (a machine busy with other processes can stall the loop for a tenth of a second)."""
    times: list[float] = []
    lag = 0.0

    async def take(limiter):
        async with limiter.slot():
            times.append(time.perf_counter())

    async def watch_the_loop():
        nonlocal lag
        while True:
            asked = time.perf_counter()
            await asyncio.sleep(0.005)
            lag = max(lag, time.perf_counter() - asked - 0.005)

    watcher = asyncio.create_task(watch_the_loop())
    await asyncio.gather(*(take(limiter) for limiter in limiters for _ in range(n_per_limiter)))
    watcher.cancel()
    return sorted(times), lag


async def seconds_to_a_slot(make_limiter, timeout: float) -> float | None:
    """Seconds until a limiter made here (in this event loop, as a Redis limiter must be) grants a slot; None if
    not within ``timeout``. The limiter is closed after."""
    limiter = make_limiter()
    try:
        started = time.perf_counter()
        async with asyncio.timeout(timeout), limiter.slot():
            return time.perf_counter() - started
    except TimeoutError:
        return None
    finally:
        await limiter.aclose()


async def held_together(limiters, n: int) -> Gauge:
    """``n`` short holds spread over the limiters at once (closed after): the gauge of how many were held together."""
    gauge = Gauge()
    try:
        await asyncio.gather(*(gauge.hold(limiters[i % len(limiters)], 0.002 * (i % 4)) for i in range(n)))
    finally:
        for limiter in limiters:
            await limiter.aclose()
    return gauge


def assert_paced(times_and_lag: tuple[list[float], float], *, interval: float) -> None:
    """Starts that keep ``interval`` apart. A start woken late by a stalled event loop comes closer to the next one,
    by at most the loop's lateness: the gaps are checked against that. The span is shortened by it too when the
    late start is the first (on a busy CI machine the first start, due at once, was recorded 27 ms late)."""
    times, lag = times_and_lag
    gaps = [round(b - a, 4) for a, b in pairwise(times)]
    assert min(gaps) >= interval * 0.8 - lag, (gaps, lag)
    span = times[-1] - times[0]
    assert interval * (len(times) - 1) - 0.02 - lag <= span <= interval * (len(times) + 3) + lag, (gaps, lag)


def test_local_limiter_never_exceeds_max_concurrency():
    async def main():
        limiter, gauge = LocalLimiter(8), Gauge()
        await asyncio.gather(*(gauge.hold(limiter, 0.001 * (i % 3)) for i in range(200)))
        return gauge

    gauge = asyncio.run(main())
    assert gauge.total == 200
    assert gauge.peak == 8


def test_local_limiter_halves_once_per_round_of_429s_and_recovers_one_step_per_window():
    async def main():
        limiter = LocalLimiter(8)
        assert await limiter.current_limit() == 8
        entered = asyncio.Event()
        release = asyncio.Event()
        count = 0

        async def throttled_in_flight():
            nonlocal count
            async with limiter.slot():
                count += 1
                if count == 8:
                    entered.set()
                await release.wait()
                await limiter.throttled()

        tasks = [asyncio.create_task(throttled_in_flight()) for _ in range(8)]
        await entered.wait()
        release.set()
        await asyncio.gather(*tasks)
        # Eight 429s from requests that were all in flight together: one halving.
        assert await limiter.current_limit() == 4

        async with limiter.slot():  # granted after the decrease: its 429 halves again
            await limiter.throttled()
        assert await limiter.current_limit() == 2
        await limiter.throttled()  # outside a slot: always halves
        await limiter.throttled()
        await limiter.throttled()
        assert await limiter.current_limit() == 1

        seen = []
        for _ in range(1 + 2 + 3 + 4 + 5 + 6 + 7 + 10):
            async with limiter.slot():
                await limiter.succeeded()
            seen.append(await limiter.current_limit())
        return seen

    seen = asyncio.run(main())
    # +1 after `limit` successes at that limit, capped at the maximum.
    assert seen[0] == 2 and seen[2] == 3 and seen[5] == 4 and seen[27] == 8
    assert seen[1] == 2 and seen[4] == 3 and seen[26] == 7
    assert max(seen) == 8


def test_local_limiter_holds_the_lowered_limit():
    async def main():
        limiter, gauge = LocalLimiter(8), Gauge()
        await limiter.throttled()
        await limiter.throttled()
        await asyncio.gather(*(gauge.hold(limiter, 0.002) for _ in range(40)))
        return gauge

    assert asyncio.run(main()).peak == 2


def test_local_limiter_paces_starts_to_the_rate_limit():
    async def main():
        return await start_times([LocalLimiter(4, requests_per_minute=600)], 12)

    times = asyncio.run(main())
    assert_paced(times, interval=0.1)  # 600/min


def test_local_limiter_gives_back_the_slot_of_a_cancelled_waiter():
    async def main():
        limiter = LocalLimiter(1)
        async with limiter.slot():
            waiter = asyncio.create_task(Gauge().hold(limiter, 0))
            await asyncio.sleep(0.01)
            waiter.cancel()
            with pytest.raises(asyncio.CancelledError):
                await waiter
        async with asyncio.timeout(1):
            async with limiter.slot():
                pass

    asyncio.run(main())


def test_limiter_for_without_redis_or_a_folder_is_local():
    assert isinstance(limiter_for(None, "x", 4, None, slot_ttl=10), LocalLimiter)
    assert isinstance(limiter_for("filesystem://", "x", 4, None, slot_ttl=10), LocalLimiter)


# --- FileLimiter: the embedded defaults' worker processes share lock files --------------------------------


def test_limiter_for_without_redis_but_with_a_folder_holds_its_limits_on_files(tmp_path):
    assert isinstance(limiter_for(None, "x", 4, None, slot_ttl=10, directory=tmp_path), FileLimiter)
    assert isinstance(limiter_for("filesystem://", "x", 4, None, slot_ttl=10, directory=tmp_path), FileLimiter)


def test_file_limiters_together_never_exceed_the_limit(tmp_path):
    # Two limiters open their own lock files, as two worker processes do.
    gauge = asyncio.run(held_together([FileLimiter(tmp_path, "endpoint-1", 3) for _ in range(2)], 200))
    assert gauge.total == 200
    assert gauge.peak == 3


def test_file_limiters_together_keep_the_rate_limit(tmp_path):
    async def main():
        limiters = [FileLimiter(tmp_path, "endpoint-1", 8, requests_per_minute=600) for _ in range(2)]
        try:
            return await start_times(limiters, 6)
        finally:
            await close_all(limiters)

    assert_paced(asyncio.run(main()), interval=0.1)


def test_a_file_limiter_gives_back_the_slot_of_a_cancelled_waiter_and_halves_on_a_429(tmp_path):
    async def main():
        holder, waiter = FileLimiter(tmp_path, "endpoint-1", 2), FileLimiter(tmp_path, "endpoint-1", 2)
        try:
            async with holder.slot(), holder.slot():
                with pytest.raises(TimeoutError):
                    async with asyncio.timeout(0.2), waiter.slot():
                        pass
            async with asyncio.timeout(1), waiter.slot():
                await waiter.throttled()
            return await waiter.current_limit(), await holder.current_limit()
        finally:
            await close_all([holder, waiter])

    # The waiter's 429 halves its own limit (2 → 1), not the other process's; nothing was left held.
    assert asyncio.run(main()) == (1, 2)


HOLD_FILE_SLOT_UNTIL_KILLED = """
import asyncio, sys
from auditapp.llm_limits import FileLimiter

async def main():
    async with FileLimiter(sys.argv[1], "endpoint-1", 1).slot():
        print("holding", flush=True)
        await asyncio.sleep(3600)

asyncio.run(main())
"""


def test_a_file_slot_held_by_another_process_waits_and_is_free_the_moment_it_is_killed(tmp_path):
    def take(timeout: float) -> float | None:
        return asyncio.run(seconds_to_a_slot(lambda: FileLimiter(tmp_path, "endpoint-1", 1), timeout))

    holder = WatchedProcess([sys.executable, "-c", HOLD_FILE_SLOT_UNTIL_KILLED, str(tmp_path)],
                            env={**os.environ, "PYTHONPATH": str(REPO)})
    try:
        holder.wait_for_output("holding", timeout=30)
        assert take(0.5) is None, "another process's slot was taken"
    finally:
        holder.stop(signal.SIGKILL)
    waited = take(5)
    assert waited is not None and waited < 0.5


# --- RedisLimiter against a real Redis -------------------------------------------------------------------


@pytest.fixture
def redis_url():
    if not os.environ.get("CELERY_BROKER_URL") and not os.environ.get("DATABASE_URL"):
        pytest.skip("runs in bin/test's PostgreSQL + Redis pass (or set CELERY_BROKER_URL=redis://...)")
    return redis_broker_url()


@pytest.fixture
def endpoint_key(redis_url):
    """A key of its own for each test; its Redis keys are deleted afterwards."""
    key = f"test-{uuid.uuid4().hex}"
    yield key
    client = redis.Redis.from_url(redis_url)
    stale = list(client.scan_iter(match=f"llm-limit:{key}:*"))
    if stale:
        client.delete(*stale)
    client.close()


def two_workers(url: str, key: str, max_concurrency: int, rpm: int | None = None, slot_ttl: float = 30):
    """Two limiters with a Redis client each, as two worker processes would have."""
    limiters = [limiter_for(url, key, max_concurrency, rpm, slot_ttl=slot_ttl) for _ in range(2)]
    assert all(isinstance(limiter, RedisLimiter) for limiter in limiters)
    return limiters


async def close_all(limiters) -> None:
    for limiter in limiters:
        await limiter.aclose()


@pytest.mark.integration
def test_redis_limiters_together_never_exceed_the_limit(redis_url, endpoint_key):
    # More tasks than each client's connection pool: the pool makes them queue, not fail.
    gauge = asyncio.run(held_together(two_workers(redis_url, endpoint_key, 5), 300))
    assert gauge.total == 300
    assert gauge.peak == 5


@pytest.mark.integration
def test_redis_limiter_waiters_cancelled_in_the_queue_leave_nothing_behind(redis_url, endpoint_key):
    async def main():
        (limiter, _) = limiters = two_workers(redis_url, endpoint_key, 1)
        gauge = Gauge()
        try:
            async with limiter.slot():
                waiters = [asyncio.create_task(gauge.hold(limiter, 0)) for _ in range(6)]
                await asyncio.sleep(0.05)
                waiters[0].cancel()  # the one polling for the process
                waiters[3].cancel()  # one queued behind it
                await asyncio.sleep(0.01)
            async with asyncio.timeout(2):
                results = await asyncio.gather(*waiters, return_exceptions=True)
            await limiter.settled()  # the last slot is given back in the background
            holders = await limiter.redis.zcard(limiter.prefix + "holders")
        finally:
            await close_all(limiters)
        return results, holders, gauge

    results, holders, gauge = asyncio.run(main())
    assert [isinstance(result, asyncio.CancelledError) for result in results] == [True, False, False, True, False, False]
    assert gauge.total == 4 and gauge.peak == 1
    assert holders == 0


@pytest.mark.integration
def test_redis_limiter_reclaims_the_slot_of_a_killed_worker(redis_url, endpoint_key):
    async def main():
        killed, alive = two_workers(redis_url, endpoint_key, 1, slot_ttl=0.3)
        try:
            await killed.slot().__aenter__()
            await killed.aclose()  # never given back and renewed no more, like a SIGKILLed worker's slot
            held_at = time.perf_counter()
            async with alive.slot():
                waited = time.perf_counter() - held_at
        finally:
            await close_all([killed, alive])
        return waited

    waited = asyncio.run(main())
    assert 0.25 <= waited < 1.5


@pytest.mark.integration
def test_redis_limiter_renews_the_slot_of_a_request_longer_than_its_lease(redis_url, endpoint_key):
    async def main():
        long, other = two_workers(redis_url, endpoint_key, 1, slot_ttl=0.3)
        gauge = Gauge()
        try:
            holding = asyncio.create_task(gauge.hold(long, 1.5))  # five leases long
            await asyncio.sleep(0.05)
            started = time.perf_counter()
            await gauge.hold(other, 0)
            waited = time.perf_counter() - started
            await holding
        finally:
            await close_all([long, other])
        return gauge, waited

    gauge, waited = asyncio.run(main())
    assert gauge.total == 2 and gauge.peak == 1
    assert waited >= 1.4


HOLD_UNTIL_KILLED = """
import asyncio, sys
from auditapp.llm_limits import limiter_for

async def main():
    limiter = limiter_for(sys.argv[1], sys.argv[2], 1, None, slot_ttl=float(sys.argv[3]))
    async with limiter.slot():
        print("holding", flush=True)
        await asyncio.sleep(3600)

asyncio.run(main())
"""


@pytest.mark.integration
@pytest.mark.slow
def test_the_slot_of_a_killed_process_is_free_again_within_its_lease(redis_url, endpoint_key):
    """A process holding a slot for longer than the lease of the settings keeps it; killed with SIGKILL, its slot is
    free again within the lease, not after the attempt's time-out."""
    from django.conf import settings

    lease = settings.LLM_SLOT_LEASE_SECONDS

    def take(timeout: float) -> float | None:
        return asyncio.run(seconds_to_a_slot(lambda: limiter_for(redis_url, endpoint_key, 1, slot_ttl=lease),
                                             timeout))

    holder = WatchedProcess([sys.executable, "-c", HOLD_UNTIL_KILLED, redis_url, endpoint_key, str(lease)],
                            env={**os.environ, "PYTHONPATH": str(REPO)})
    try:
        holder.wait_for_output("holding", timeout=30)
        time.sleep(lease * 1.2)
        assert take(0.5) is None, "the living holder's slot lapsed"
    finally:
        holder.stop(signal.SIGKILL)
    waited = take(lease + 10)
    assert waited is not None and waited < lease + 5


@pytest.mark.integration
def test_redis_limiter_hands_slots_over_in_the_process_without_letting_them_expire(redis_url, endpoint_key):
    async def main():
        keeper, other = two_workers(redis_url, endpoint_key, 1, slot_ttl=0.3)
        gauge = Gauge()
        try:
            await keeper.current_limit()  # a first call: the limit is seen at its maximum
            await gauge.hold(keeper, 0)
            await keeper.settled()
            handed_over = [asyncio.create_task(gauge.hold(keeper, 0.05)) for _ in range(16)]  # 0.8 s in a row
            await asyncio.sleep(0.01)
            holders_seen = set()

            async def watch():
                while not all(task.done() for task in handed_over):
                    holders_seen.update(await keeper.redis.zrange(keeper.prefix + "holders", 0, -1))
                    await asyncio.sleep(0.02)

            watcher = asyncio.create_task(watch())
            started = time.perf_counter()
            await gauge.hold(other, 0)
            other_waited = time.perf_counter() - started
            await asyncio.gather(*handed_over, watcher)
        finally:
            await close_all([keeper, other])
        return gauge, other_waited, holders_seen

    gauge, other_waited, holders_seen = asyncio.run(main())
    # One slot in Redis went from task to task in the keeping process, well past its 0.3 s expiry, which each
    # hand-over restarted: the other process never got a second slot, and got the slot once the keeper was done.
    assert len(holders_seen) == 1
    assert gauge.total == 18 and gauge.peak == 1
    assert other_waited >= 0.7


@pytest.mark.integration
def test_redis_limiter_gives_back_a_slot_handed_to_a_task_cancelled_before_it_ran(redis_url, endpoint_key):
    async def main():
        limiter, other = two_workers(redis_url, endpoint_key, 1)
        try:
            await limiter.current_limit()  # the limit is seen at its maximum: slots may be handed over
            slot = limiter.slot()
            await slot.__aenter__()
            waiter = asyncio.create_task(Gauge().hold(limiter, 0))
            await asyncio.sleep(0.05)  # the waiter is queued for the slot
            await slot.__aexit__(None, None, None)  # hands the slot to the waiter...
            waiter.cancel()  # ...which is cancelled before it could run
            with pytest.raises(asyncio.CancelledError):
                await waiter
            await limiter.settled()
            holders = await limiter.redis.zcard(limiter.prefix + "holders")
            async with asyncio.timeout(1), other.slot():  # another process gets the slot at once
                pass
        finally:
            await close_all([limiter, other])
        return holders

    assert asyncio.run(main()) == 0


@pytest.mark.integration
def test_redis_limiter_shares_the_aimd_limit(redis_url, endpoint_key):
    async def main():
        first, second = two_workers(redis_url, endpoint_key, 8)
        try:
            async with first.slot():
                await first.throttled()
            await first.settled()  # slots are given back in the background
            async with first.slot():  # granted before the next 429: that one does not halve again
                async with second.slot():
                    await second.throttled()
                await second.settled()
                await first.throttled()
            await first.settled()
            after_429s = await second.current_limit()
            for _ in range(4):
                async with second.slot():
                    await second.succeeded()
                await second.settled()
            after_successes = await first.current_limit()
            gauge = Gauge()
            await second.throttled()
            await second.throttled()
            lowered = await first.current_limit()
            await asyncio.gather(*(gauge.hold((first, second)[i % 2], 0.002) for i in range(30)))
        finally:
            await close_all([first, second])
        return after_429s, after_successes, lowered, gauge.peak

    after_429s, after_successes, lowered, peak = asyncio.run(main())
    assert after_429s == 2  # 8 → 4 → 2; the stale 429 from `first` was ignored
    assert after_successes == 3  # 2 successes at limit 2 → 3
    assert lowered == 1  # 3 → 1 → 1 (floor)
    assert peak == 1


@pytest.mark.integration
def test_redis_limiters_together_keep_the_rate_limit(redis_url, endpoint_key):
    async def main():
        limiters = two_workers(redis_url, endpoint_key, 8, rpm=600)
        try:
            return await start_times(limiters, 6)
        finally:
            await close_all(limiters)

    times = asyncio.run(main())
    assert_paced(times, interval=0.1)  # paced by Redis's clock, slept by ours


def counted_commands(limiter) -> list[str]:
    """The Redis commands the limiter sends from now on, by name."""
    commands: list[str] = []
    execute = limiter.redis.execute_command

    async def counting(*args, **kwargs):
        commands.append(args[0])
        return await execute(*args, **kwargs)

    limiter.redis.execute_command = counting
    return commands


@pytest.mark.integration
def test_redis_limiter_keeps_a_given_back_slot_for_the_next_request_and_batches_concurrent_ones(redis_url,
                                                                                               endpoint_key):
    async def main():
        limiter = RedisLimiter(redis.asyncio.Redis.from_url(redis_url), endpoint_key, 64, None, slot_ttl=30,
                               owns_client=True)
        commands = counted_commands(limiter)
        try:
            async with limiter.slot():  # loads the scripts on first use
                await limiter.succeeded()
            await limiter.settled()
            commands.clear()
            for _ in range(10):
                async with limiter.slot():
                    await limiter.succeeded()
            await limiter.settled()
            sequential = commands[:]
            commands.clear()
            gauge = Gauge()
            await asyncio.gather(*(gauge.hold(limiter, 0) for _ in range(64)))
            await limiter.settled()
            limit = await limiter.current_limit()
        finally:
            await limiter.aclose()
        return sequential, commands, gauge, limit

    sequential, concurrent, gauge, limit = asyncio.run(main())
    # The first slot asked for; the nine after it took the slot the one before parked in the process; the last given
    # back with the ten outcomes.
    assert sequential == ["EVALSHA"] * 2
    # 64 slots asked for at once in one call and given back in one or a few, instead of 128 calls.
    assert gauge.total == 64 and gauge.peak == 64
    assert set(concurrent) == {"EVALSHA"} and 2 <= len(concurrent) <= 4
    assert limit == 64


@pytest.mark.integration
def test_a_parked_slot_goes_back_to_redis_when_no_task_asks_and_none_is_parked_below_the_maximum(redis_url,
                                                                                                endpoint_key):
    async def main():
        keeper, other = two_workers(redis_url, endpoint_key, 2)
        try:
            await keeper.current_limit()  # the limit is seen at its maximum: slots may be kept in the process
            async with keeper.slot(), keeper.slot():
                await keeper.succeeded()
            holders_parked = await keeper.redis.zcard(keeper.prefix + "holders")
            started = time.perf_counter()
            async with asyncio.timeout(1), other.slot(), other.slot():  # both back within the parking time
                waited = time.perf_counter() - started
            await other.settled()
            async with keeper.slot():
                await keeper.throttled()  # 2 → 1: below the maximum nothing is kept
            await keeper.settled()
            commands = counted_commands(keeper)
            for _ in range(3):
                async with keeper.slot():
                    await keeper.succeeded()
        finally:
            await close_all([keeper, other])
        return holders_parked, waited, commands

    holders_parked, waited, commands = asyncio.run(main())
    assert holders_parked == 2  # parked: still counted in Redis, so the limit holds
    assert waited < 0.5
    # Each slot asked for through Redis (a slot given back goes with the next one asked for), as the limit is below
    # its maximum; kept in the process, the three would cost two calls: the first asked for, the last given back.
    assert commands.count("EVALSHA") >= 3
