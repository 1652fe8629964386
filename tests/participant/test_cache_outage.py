"""The count of unknown invite links lives in the cache (Redis in production, ``CACHE_URL``): while it cannot be
reached, an unknown participant or coder link is still a 404 (uncounted, and logged), never a 500, and a valid link
still works; once it is back, the count goes on."""
from __future__ import annotations

import os
import signal
import threading
import time

import pytest
from django.test import Client, override_settings

from annotation.access import BAD_TOKEN_LIMIT
from tests.integration.support import ThrowawayRedis, free_port
from tests.participant.helpers import flow_study, invite

pytestmark = pytest.mark.django_db


def redis_cache(url: str):
    return override_settings(CACHES={"default": {"BACKEND": "django.core.cache.backends.redis.RedisCache",
                                                 "LOCATION": url}})


def test_unknown_links_are_404_while_the_cache_is_unreachable(caplog):
    (participant,) = invite(flow_study())
    with redis_cache(f"redis://127.0.0.1:{free_port()}/0"):  # a closed port: every cache call is refused
        client = Client(raise_request_exception=False)
        for n in range(BAD_TOKEN_LIMIT + 5):
            assert client.get(f"/p/guess-{n}/").status_code == 404
            assert client.get(f"/c/guess-{n}/").status_code == 404
        assert client.get(f"/p/{participant.invite_token}/").status_code == 302
    assert "unknown invite links are not counted: the cache is unreachable" in caplog.text


def test_the_count_stops_while_redis_is_stopped_and_goes_on_when_it_is_back():
    server = ThrowawayRedis()
    try:
        with redis_cache(server.url):
            client = Client(raise_request_exception=False)
            for n in range(BAD_TOKEN_LIMIT):
                assert client.get(f"/c/guess-{n}/").status_code == 404
            assert client.get("/p/guess-more/").status_code == 429
            server.stop()
            assert [client.get(f"/{kind}/guess-while-down/").status_code for kind in "pc"] == [404, 404]
            server.start()  # empty: it saves nothing, so the count starts again
            for n in range(BAD_TOKEN_LIMIT):
                assert client.get(f"/p/guess-again-{n}/").status_code == 404
            assert client.get("/c/guess-again-more/").status_code == 429
    finally:
        server.close()


@pytest.mark.slow
def test_a_redis_that_hangs_is_given_up_on_within_seconds():
    """A paused Redis still accepts connections but never answers: redis-py's socket time-out (5 s by default in the
    version we pin) ends the wait, and the link gets its 404."""
    server = ThrowawayRedis()
    try:
        with redis_cache(server.url):
            client = Client(raise_request_exception=False)
            assert client.get("/p/guess/").status_code == 404
            os.kill(server.process.pid, signal.SIGSTOP)
            resume = threading.Timer(20, os.kill, (server.process.pid, signal.SIGCONT))  # a hang ends, and fails
            resume.start()
            started = time.monotonic()
            try:
                assert client.get("/c/guess-while-paused/").status_code == 404
            finally:
                resume.cancel()
                os.kill(server.process.pid, signal.SIGCONT)
            assert time.monotonic() - started < 15
    finally:
        server.close()


def test_a_window_ending_between_counting_steps_opens_the_next_one(client, monkeypatch):
    """The count's key expires between ``cache.add`` and ``cache.incr`` (incr then raises ValueError): the miss is
    counted in a new window, and the link still gets its 404."""
    from django.core.cache import cache

    real_add = cache.add
    calls = []

    def add_then_expire(key, value, timeout=None):
        calls.append(value)
        added = real_add(key, value, timeout)
        if len(calls) == 1:
            cache.delete(key)
        return added

    monkeypatch.setattr(cache, "add", add_then_expire)
    assert client.get("/p/no-such-token/").status_code == 404
    assert calls == [0, 1]
    assert cache.get("bad-token:127.0.0.1") == 1
