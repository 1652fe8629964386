"""The endpoint circuit breaker (an unreachable endpoint waits, it does not fail): the pure state machine, and send_chat
holding a request through an outage without spending its attempts."""
from __future__ import annotations

import asyncio
import dataclasses
import random
import socket
import time

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
from tests.integration.support import canned_http_server, free_port
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
    assert on_answer(state, 100.05) == CLOSED, "an attempt begun after the run's first failure (100.0)"


def test_an_answer_to_an_attempt_begun_before_the_run_of_failures_is_stale_unless_it_is_the_probe():
    """A reply the server wrote just before it went away must not close the breaker in the middle of the outage:
    the next refused attempts would then count against requests' max_attempts."""
    opened = failures(3)  # failures at 100.0, 100.1, 100.2
    assert on_answer(opened, 99.9) == opened
    assert on_answer(failures(2), 99.9) == failures(2), "nor end a run that has not opened it yet"
    assert on_answer(opened, 100.0) == CLOSED
    assert on_answer(opened, 99.9, probe=True) == CLOSED, "a probe is admitted after the opening, whatever the clocks"
    assert on_answer(CLOSED, 50.0) == CLOSED


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
    assert on_answer(state, 101.2, probe=True) == CLOSED
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
            await breaker.answered(0.0)
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
        await second.answered(99.0, probe=True)
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
    async def send(port: int):
        config = EndpointConfig(protocol="openai", base_url=f"https://127.0.0.1:{port}", max_attempts=5,
                                attempt_timeout=5, deadline=30, backoff_base=0.01, backoff_cap=0.02)
        async with chat_session(2) as session:
            return await send_chat(session, config, LocalLimiter(2), "model-a", [{"role": "user", "content": "x"}],
                                   {}, rng=random.Random(0), breaker=breaker)

    breaker = EndpointBreaker(MemoryBreakerStore(), "e", probe_seconds=2, threshold=1, backoff_first=5)
    # A plain-HTTP server asked with https: it answers the TLS hello with an HTTP error and closes.
    with canned_http_server(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n") as port:
        result = asyncio.run(send(port))
    assert result.completion is None and result.attempts == 1, result
    assert "ssl" in result.error.lower()
    assert breaker.view == CLOSED


@pytest.mark.integration
def test_a_reply_written_before_the_endpoint_went_away_does_not_close_the_breaker():
    """A real socket: the server takes one request, stops listening (later connections are refused, which opens the
    breaker), and only then answers the request it holds. That stale answer leaves the breaker open, so the held
    requests keep their attempts until a probe finds the endpoint back."""
    import threading

    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]
    accepted, answer_now = threading.Event(), threading.Event()
    body = b'{"choices": [{"index": 0, "message": {"role": "assistant", "content": "yes"}}]}'

    def serve_one_then_go_away():
        connection, _ = listener.accept()
        listener.close()
        accepted.set()
        with connection:
            connection.recv(65536)
            answer_now.wait(10)
            connection.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: "
                               + str(len(body)).encode() + b"\r\nConnection: close\r\n\r\n" + body)

    threading.Thread(target=serve_one_then_go_away, daemon=True).start()
    config = EndpointConfig(protocol="openai", base_url=f"http://127.0.0.1:{port}", max_attempts=2,
                            attempt_timeout=20, deadline=30, backoff_base=0.01, backoff_cap=0.02)
    breaker = EndpointBreaker(MemoryBreakerStore(), "e", probe_seconds=5, threshold=3, backoff_first=30)

    async def scenario():
        async with chat_session(8) as session:
            def send(i):
                return asyncio.ensure_future(send_chat(
                    session, config, LocalLimiter(8), "m", [{"role": "user", "content": f"x{i}"}], {},
                    rng=random.Random(i), breaker=breaker))
            early = send(0)
            assert await asyncio.to_thread(accepted.wait, 10)
            held = [send(i) for i in range(1, 4)]
            while breaker.unreachable_since is None:
                await asyncio.sleep(0.01)
            answer_now.set()
            answered = await early
            await asyncio.sleep(0.2)
            assert not any(task.done() for task in held), [task.result().error for task in held if task.done()]
            for task in held:
                task.cancel()
            await asyncio.gather(*held, return_exceptions=True)
            return answered

    answered = asyncio.run(scenario())
    assert answered.error == "" and answered.completion.text == "yes"
    assert breaker.view.is_open, "the stale answer left the breaker open"


def test_writing_to_a_connection_the_server_is_closing_counts_as_unreachable():
    """aiohttp raises ClientConnectionResetError ("Cannot write to closing transport") when a pooled connection
    the server just closed is reused: the endpoint went away, as with ServerDisconnectedError. (A fake session:
    the moment cannot be timed with a real server.)"""
    import aiohttp

    from auditapp.llm_clients import _attempt

    class ClosingSession:
        def post(self, *args, **kwargs):
            raise aiohttp.ClientConnectionResetError("Cannot write to closing transport")

    config = EndpointConfig(protocol="openai", base_url="http://127.0.0.1:9", attempt_timeout=5, deadline=5)
    attempt = asyncio.run(_attempt(ClosingSession(), config, LocalLimiter(1), config.url("/v1/chat/completions"),
                                   b"{}", lambda content: None, 10**9, lambda: None))
    assert attempt.unreachable and attempt.retry
    assert attempt.reason == "ClientConnectionResetError: Cannot write to closing transport"


def test_the_probes_answer_closes_the_breaker_whatever_the_clocks_say(monkeypatch):
    """The probe is admitted by the store after the breaker opened, so its answer closes it even when this machine's
    clock says it was sent before the run of failures began (a clock an hour behind the store's)."""
    now = time.time()
    store = MemoryBreakerStore()
    store.states["e"] = dataclasses.replace(failures(3, start=now - 10), next_probe_at=now - 1)
    breaker = EndpointBreaker(store, "e", probe_seconds=5)
    breaker.view = store.states["e"]
    monkeypatch.setattr("auditapp.llm_clients.time.time", lambda: now - 3600)

    async def send(base_url: str):
        config = EndpointConfig(protocol="openai", base_url=base_url, attempt_timeout=5, deadline=10)
        async with chat_session(2) as session:
            return await send_chat(session, config, LocalLimiter(2), "model-a",
                                   [{"role": "user", "content": "Target sentence: hello"}], {},
                                   rng=random.Random(0), breaker=breaker)

    with LLMServer(models=("model-a",)) as server:
        result = asyncio.run(send(server.base_url))
    assert result.error == ""
    assert store.states["e"] == CLOSED
