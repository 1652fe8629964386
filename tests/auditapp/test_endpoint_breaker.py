"""The endpoint circuit breaker (an unreachable endpoint waits, it does not fail): the pure state machine, and send_chat
holding a request through an outage without spending its attempts."""
from __future__ import annotations

import asyncio
import random
import socket

import pytest

from auditapp.endpoint_breaker import (
    CLOSED,
    EndpointBreaker,
    MemoryBreakerStore,
    decode,
    encode,
    on_answer,
    on_unreachable,
    try_admit,
    wait_seconds,
)
from auditapp.llm_clients import EndpointConfig, chat_session, send_chat
from auditapp.llm_limits import LocalLimiter
from tests.integration.support import free_port
from tests.llm_server import LLMServer


def failures(n: int, *, start: float = 100.0, step: float = 0.1, threshold: int = 3):
    state = CLOSED
    for i in range(n):
        state = on_unreachable(state, start + i * step, f"refused {i}", threshold=threshold, backoff_first=1.0,
                               backoff_cap=8.0)
    return state


def test_fewer_than_threshold_failures_keep_it_closed_and_an_answer_forgets_them():
    state = failures(2)
    assert not state.is_open and state.failures == 2 and state.first_failure_at == 100.0
    assert try_admit(state, 100.2, probe_seconds=5) == (state, True)
    assert on_answer(state) == CLOSED


def test_the_threshold_opens_it_unreachable_since_the_first_failure_of_the_run():
    state = failures(3)
    assert state.is_open
    assert state.open_since == 100.0, "since the first of the consecutive failures"
    assert state.next_probe_at == pytest.approx(100.2 + 1.0), "first probe one backoff after opening"
    assert state.last_error == "refused 2"


def test_while_open_one_probe_at_a_time_once_it_is_due():
    state = failures(3)  # opened at 100.2, probe due at 101.2
    assert try_admit(state, 101.0, probe_seconds=5) == (state, False)
    probing, admitted = try_admit(state, 101.2, probe_seconds=5)
    assert admitted and probing.probe_until == pytest.approx(106.2)
    assert try_admit(probing, 101.3, probe_seconds=5)[1] is False, "a second request waits for the probe"
    # A prober that died: its lease runs out and another request probes.
    assert try_admit(probing, 106.2, probe_seconds=5)[1] is True


def test_a_failed_probe_doubles_the_backoff_up_to_the_cap_and_stragglers_do_not():
    state = failures(3)
    straggler = on_unreachable(state, 100.5, "in flight when it opened", backoff_first=1.0, backoff_cap=8.0)
    assert straggler.backoff == 1.0 and straggler.next_probe_at == state.next_probe_at
    now, backoffs = 101.2, []
    for _ in range(5):
        state, admitted = try_admit(state, now, probe_seconds=5)
        assert admitted
        state = on_unreachable(state, now + 0.01, "probe refused", backoff_first=1.0, backoff_cap=8.0)
        backoffs.append(state.backoff)
        now = state.next_probe_at
    assert backoffs == [2.0, 4.0, 8.0, 8.0, 8.0]
    assert state.open_since == 100.0, "still unreachable since the first failure"


def test_a_probe_that_gets_an_answer_closes_it():
    state, _ = try_admit(failures(3), 101.2, probe_seconds=5)
    assert on_answer(state) == CLOSED
    assert try_admit(CLOSED, 101.3, probe_seconds=5) == (CLOSED, True)


def test_held_requests_poll_soon_enough_to_see_the_probe_succeed():
    state = failures(3)
    assert wait_seconds(state, 100.3) == pytest.approx(0.9)
    assert wait_seconds(state, 90.0) == 1.0, "bounded, so a closed breaker is seen within a second"
    assert wait_seconds(state, 200.0) == 0.05


def test_states_round_trip_through_the_store_encoding_and_garbage_reads_closed():
    state = failures(3)
    assert decode(encode(state)) == state
    assert decode(None) == CLOSED and decode(b"{not json") == CLOSED and decode('{"unknown": 1}') == CLOSED


def test_a_process_that_only_sees_answers_never_touches_the_store():
    class CountingStore(MemoryBreakerStore):
        calls = 0

        async def update(self, key, transition):
            CountingStore.calls += 1
            return await super().update(key, transition)

    store = CountingStore()
    breaker = EndpointBreaker(store, "e", probe_seconds=5)

    async def steady():
        for _ in range(100):
            assert await breaker.admit(1.0)
            await breaker.answered()
    asyncio.run(steady())
    assert CountingStore.calls == 0


def test_the_breaker_is_shared_by_everyone_using_the_same_store():
    clock = [100.0]
    store = MemoryBreakerStore(clock=lambda: clock[0])
    first, second = (EndpointBreaker(store, "e", probe_seconds=5) for _ in range(2))

    async def scenario():
        for _ in range(3):
            await first.unreachable("refused")
        assert first.unreachable_since == 100.0
        assert await second.unreachable("refused"), "the second worker finds it open"
        assert not await second.admit(0.0), "no probe due yet"
        clock[0] += 1.0
        assert await second.admit(0.0), "the probe"
        assert not await first.admit(0.0), "one probe at a time, across workers"
        await second.answered()
        assert await first.admit(0.0) and first.unreachable_since is None
    asyncio.run(scenario())


@pytest.mark.integration
def test_send_chat_holds_a_request_through_an_outage_without_spending_its_attempts():
    """The endpoint refuses connections for ~3 s; the request has max_attempts=2 and a 30 s deadline: it waits,
    is answered once the server is up, and its reply counts every attempt it really sent."""
    port = free_port()
    config = EndpointConfig(protocol="openai", base_url=f"http://127.0.0.1:{port}", max_attempts=2,
                            attempt_timeout=5, deadline=30, backoff_base=0.05, backoff_cap=0.1)
    breaker = EndpointBreaker(MemoryBreakerStore(), "e", probe_seconds=6, threshold=2, backoff_first=0.2,
                              backoff_cap=0.5)
    messages = [{"role": "user", "content": "Target sentence: hello"}]

    async def send():
        async with chat_session(4) as session:
            return await send_chat(session, config, LocalLimiter(4), "model-a", messages, {},
                                   rng=random.Random(0), breaker=breaker)

    async def outage_then_up():
        sending = asyncio.ensure_future(send())
        await asyncio.sleep(3)
        assert not sending.done(), "held, not failed"
        assert breaker.unreachable_since is not None
        with LLMServer(port=port, models=("model-a",)):
            return await sending

    result = asyncio.run(outage_then_up())
    assert result.error == "" and result.completion is not None
    assert result.attempts > config.max_attempts, "every attempt sent is counted in attempts"
    assert breaker.view == CLOSED


def test_send_chat_fails_a_held_request_at_its_deadline_saying_since_when():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    config = EndpointConfig(protocol="openai", base_url=f"http://127.0.0.1:{port}", max_attempts=5,
                            attempt_timeout=1, deadline=1.5, backoff_base=0.01, backoff_cap=0.02)
    breaker = EndpointBreaker(MemoryBreakerStore(), "e", probe_seconds=2, threshold=1, backoff_first=5)

    async def send():
        async with chat_session(2) as session:
            return await send_chat(session, config, LocalLimiter(2), "m", [{"role": "user", "content": "x"}], {},
                                   rng=random.Random(0), breaker=breaker)

    result = asyncio.run(send())
    assert result.completion is None and result.attempts == 1
    assert result.error.startswith("deadline exceeded after 1 attempts: endpoint unreachable since ")


def test_a_tls_failure_is_not_an_outage_it_fails_at_once_and_leaves_the_breaker_closed():
    import threading

    # A plain-HTTP server asked with https: it answers the TLS hello with an HTTP error and closes.
    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]

    def answer_in_plain_http():
        while True:
            try:
                connection, _ = listener.accept()
            except OSError:
                return
            with connection:
                connection.recv(1024)
                connection.sendall(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n")

    threading.Thread(target=answer_in_plain_http, daemon=True).start()
    config = EndpointConfig(protocol="openai", base_url=f"https://127.0.0.1:{port}", max_attempts=5,
                            attempt_timeout=5, deadline=30, backoff_base=0.01, backoff_cap=0.02)
    breaker = EndpointBreaker(MemoryBreakerStore(), "e", probe_seconds=2, threshold=1, backoff_first=5)

    async def send():
        async with chat_session(2) as session:
            return await send_chat(session, config, LocalLimiter(2), "model-a", [{"role": "user", "content": "x"}],
                                   {}, rng=random.Random(0), breaker=breaker)

    try:
        result = asyncio.run(send())
    finally:
        listener.close()
    assert result.completion is None and result.attempts == 1, result
    assert "ssl" in result.error.lower()
    assert breaker.view == CLOSED
