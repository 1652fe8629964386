"""How long an audit's requests will take to send, estimated before it is launched. Pure: no Django.

Each endpoint sends its requests at the slower of two rates (ARCHITECTURE.md, "Scorers": both limits hold across
all workers):

- its **rate limit**, ``requests_per_minute / 60`` per second, when it has one;
- its **concurrency over its latency**: ``max_concurrency`` requests in flight, each taking ``seconds_per_request``
  (the median latency of its recent replies), i.e. ``max_concurrency / seconds_per_request`` per second. A local
  scorer (VADER, TextBlob) takes no limiter slot: it scores in one thread per worker task, so its concurrency is
  the audit's parallel tasks.

Endpoints are asked side by side (the work is leased in an order that interleaves the models), so the audit takes
about as long as its slowest endpoint. The estimate leaves out retries, back-off and a worker's own overhead (it is
a floor); the caller gives each endpoint the requests it will send (a request answered from the reply cache takes no
time, and is left out). An endpoint
with no reply yet and no rate limit has no estimate; one with a rate limit but no reply yet has only the rate
limit's floor.
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class EndpointLoad:
    """What one endpoint is asked by an audit, and what limits its pace."""

    endpoint: str
    requests: int
    concurrency: int
    requests_per_minute: int | None
    seconds_per_request: float | None


@dataclass(frozen=True)
class EndpointEstimate:
    """An endpoint's sending time in seconds (None: no estimate), whether it is only a floor (the latency is not
    known yet), and how it was computed, in words."""

    endpoint: str
    requests: int
    seconds: float | None
    floor_only: bool
    how: str


@dataclass(frozen=True)
class AuditEstimate:
    """The audit's sending time: its slowest endpoint's (None when no endpoint has an estimate), whether it is only a
    floor (an endpoint has only its rate limit's floor, or none at all), and each endpoint's estimate."""

    seconds: float | None
    floor_only: bool
    endpoints: tuple[EndpointEstimate, ...]


def endpoint_estimate(load: EndpointLoad) -> EndpointEstimate:
    """The time ``load.requests`` take at the endpoint's slower rate (see the module docstring). No requests: 0 s."""
    if load.requests == 0:
        return EndpointEstimate(load.endpoint, 0, 0.0, False, "nothing to send")
    rates: list[tuple[float, str]] = []
    if load.requests_per_minute:
        rates.append((load.requests_per_minute / 60, f"its rate limit of {load.requests_per_minute} requests a "
                                                     "minute"))
    if load.seconds_per_request:
        rates.append((load.concurrency / load.seconds_per_request,
                      f"{load.concurrency} at a time, {load.seconds_per_request:.2f} s each (the median latency of "
                      "its recent replies)"))
    if not rates:
        return EndpointEstimate(load.endpoint, load.requests, None, True,
                                "no estimate: it has answered no request yet and has no rate limit")
    rate, how = min(rates)
    floor_only = load.seconds_per_request is None
    if floor_only:
        how += "; its latency is not known yet (no reply from it), so this is a floor"
    return EndpointEstimate(load.endpoint, load.requests, load.requests / rate, floor_only, how)


def audit_estimate(loads: list[EndpointLoad]) -> AuditEstimate:
    """Every endpoint's estimate and the audit's: the slowest endpoint's time, a floor ("at least") when any
    endpoint's is one or is unknown (it may be the slowest), unknown when no endpoint's is known."""
    estimates = tuple(endpoint_estimate(load) for load in loads)
    known = [estimate.seconds for estimate in estimates if estimate.seconds is not None]
    return AuditEstimate(seconds=max(known) if known else None,
                         floor_only=any(estimate.floor_only or estimate.seconds is None for estimate in estimates),
                         endpoints=estimates)


def duration_words(seconds: float | None) -> str:
    """A duration as people say it: "under a minute", "about 12 minutes", "about 3.5 hours", "about 2.1 days"."""
    if seconds is None:
        return "unknown"
    if seconds < 60:
        return "under a minute"
    if seconds < 3600:
        minutes = round(seconds / 60)
        return f"about {minutes} minute{'' if minutes == 1 else 's'}"
    if seconds < 2 * 86400:
        return f"about {seconds / 3600:.1f} hours"
    return f"about {seconds / 86400:.1f} days"
