"""The launch preview's estimate of the sending time (auditapp.engine.duration), against worked examples."""
from __future__ import annotations

import pytest

from auditapp.engine.duration import EndpointLoad, audit_estimate, duration_words, endpoint_estimate


def load(**changes) -> EndpointLoad:
    return EndpointLoad(**{"endpoint": "e", "requests": 3900, "concurrency": 8, "requests_per_minute": None,
                           "seconds_per_request": None, **changes})


def test_concurrency_over_latency_when_there_is_no_rate_limit():
    # 8 in flight, 2 s each: 4 requests a second; 3,900 requests take 975 s.
    estimate = endpoint_estimate(load(seconds_per_request=2.0))
    assert estimate.seconds == pytest.approx(975) and not estimate.floor_only
    assert "8 at a time, 2.00 s each" in estimate.how


def test_the_slower_of_the_rate_limit_and_the_concurrency():
    # 60 a minute is 1 a second, slower than 8 / 2 s = 4 a second: 3,900 s.
    assert endpoint_estimate(load(seconds_per_request=2.0, requests_per_minute=60)).seconds == pytest.approx(3900)
    # 600 a minute is 10 a second, faster than 4 a second: the concurrency decides, 975 s.
    estimate = endpoint_estimate(load(seconds_per_request=2.0, requests_per_minute=600))
    assert estimate.seconds == pytest.approx(975) and "at a time" in estimate.how


def test_a_rate_limit_without_a_known_latency_is_a_floor_and_nothing_is_no_estimate():
    floor = endpoint_estimate(load(requests_per_minute=120))
    assert floor.seconds == pytest.approx(1950) and floor.floor_only and "a floor" in floor.how
    unknown = endpoint_estimate(load())
    assert unknown.seconds is None and unknown.floor_only and "no estimate" in unknown.how
    assert endpoint_estimate(load(requests=0)).seconds == 0


def test_the_audit_takes_as_long_as_its_slowest_endpoint():
    estimate = audit_estimate([load(endpoint="fast", requests=100, seconds_per_request=0.5),
                               load(endpoint="slow", requests=100, concurrency=1, seconds_per_request=3.0)])
    # fast: 100 / (8 / 0.5) = 6.25 s; slow: 100 / (1 / 3) = 300 s.
    assert estimate.seconds == pytest.approx(300) and not estimate.floor_only
    assert [e.endpoint for e in estimate.endpoints] == ["fast", "slow"]
    partly = audit_estimate([load(endpoint="known", requests=100, seconds_per_request=0.5), load(endpoint="new")])
    assert partly.seconds == pytest.approx(6.25) and partly.floor_only
    assert audit_estimate([load()]).seconds is None


@pytest.mark.parametrize(("seconds", "words"), [(None, "unknown"), (59, "under a minute"), (84, "about 1 minute"),
                                                (975, "about 16 minutes"),
                                                (3900, "about 1.1 hours"), (3 * 86400, "about 3.0 days")])
def test_durations_in_words(seconds, words):
    assert duration_words(seconds) == words
