"""What a launch would send, before it is launched: the requests per model and in all, how many are already stored
(the reply cache), and how long sending them should take (:mod:`auditapp.engine.duration`).

The count is not a second copy of any paradigm's arithmetic: :func:`launch_preview` records the audit with the
paradigm's own launch (its corpus, items, conditions, models), plans its requests with the paradigm's own request
builder (:func:`auditapp.engine.planning.planned_requests`, what the preparation creates) and rolls everything back.
Nothing is stored and nothing is queued (the launch's tasks are sent on commit, and there is none).
"""
from __future__ import annotations

import statistics
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, replace
from itertools import islice

from django.db import connection, transaction

from auditapp import scorer_kinds
from auditapp.engine.duration import AuditEstimate, EndpointLoad, audit_estimate
from auditapp.engine.planning import BULK_BATCH_SIZE, planned_requests
from auditapp.models import Audit, AuditModel, AuditRequest, LLMReply

LATENCY_SAMPLE = 200
"""How many of an endpoint's most recent replies its latency is the median of."""
MAX_COUNTED = 100_000
"""The most requests a preview plans (about 20 s of a web request on a small machine; seed 002's names experiment is
74,100): past it the preview says "more than", its counts and time are floors, and the launch still plans them
all."""
MAX_COUNTED_SQLITE = 10_000
"""The same on SQLite (the embedded defaults), where the preview's transaction holds the database's one write lock
while it counts: every other writer (the worker, participants saving labels) waits for it, so it stays short (about
2 s)."""


def counted_limit() -> int:
    return MAX_COUNTED_SQLITE if connection.vendor == "sqlite" else MAX_COUNTED


@dataclass(frozen=True)
class ModelPlan:
    """One model of the audit: its name in tables, its endpoint, its planned requests (of the first
    :data:`MAX_COUNTED` when the audit plans more) and how many of them are already answered by a stored reply
    (taken from the cache, not sent; None: not looked up, as past that many)."""

    name: str
    endpoint: str
    requests: int
    cached: int | None


@dataclass(frozen=True)
class LaunchPreview:
    models: tuple[ModelPlan, ...]
    estimate: AuditEstimate
    use_cache: bool
    complete: bool = True
    """False when the audit plans more than :data:`MAX_COUNTED` requests: the counts stop there."""
    limit: int = MAX_COUNTED

    @property
    def total(self) -> int:
        return sum(model.requests for model in self.models)

    @property
    def cached(self) -> int | None:
        counts = [model.cached for model in self.models]
        return None if None in counts else sum(counts)  # type: ignore[arg-type]


class _RolledBack(Exception):
    """Raised inside the preview's transaction to undo the launch once its requests are counted."""


def launch_preview(launch: Callable[[], Audit]) -> LaunchPreview:
    """The preview of the audit ``launch()`` records (the paradigm's launch, as the admin would call it); it raises
    what the launch raises (AuditError naming the problems). Nothing is kept."""
    result: list[LaunchPreview] = []
    try:
        with transaction.atomic():
            audit = launch()
            result.append(_preview_of(audit))
            raise _RolledBack
    except _RolledBack:
        pass
    return result[0]


def _preview_of(audit: Audit) -> LaunchPreview:
    models = list(audit.models.select_related("endpoint").order_by("position"))
    _pin_listed_digests(models)
    limit = counted_limit()
    planned = list(islice(planned_requests(audit), limit + 1))
    complete = len(planned) <= limit
    planned = planned[:limit]
    counts = Counter(request.audit_model.id for request in planned)
    keys: dict[int, list[str]] = {}
    for request in planned:
        if request.key:  # a later turn's key depends on a reply not given yet
            keys.setdefault(request.audit_model.id, []).append(request.key)
    cached = _stored_counts(keys) if audit.use_cache and complete else None
    plans = tuple(ModelPlan(name=model.display_name, endpoint=model.endpoint.name, requests=counts[model.id],
                            cached=None if cached is None else cached.get(model.id, 0)) for model in models)
    # A request the cache answers takes no time: only the others are timed.
    to_send = Counter({model_id: n - (cached or {}).get(model_id, 0) for model_id, n in counts.items()})
    estimate = audit_estimate(_endpoint_loads(audit, models, to_send))
    if not complete:
        estimate = replace(estimate, floor_only=True)
    return LaunchPreview(models=plans, estimate=estimate, use_cache=audit.use_cache, complete=complete, limit=limit)


def _pin_listed_digests(models: list[AuditModel]) -> None:
    """Each model's digest from its endpoint's last listing, as the preparation pins it from a fresh one: the keys
    (which cover the digest) are then those the launch will plan unless the server's model changes meanwhile."""
    for model in models:
        listed = {entry.get("name"): entry for entry in model.endpoint.listed_models or []}
        model.digest = (listed.get(model.model) or {}).get("digest") or ""
    AuditModel.objects.bulk_update(models, ["digest"])


def _stored_counts(keys: dict[int, list[str]]) -> dict[int, int]:
    """Per model, how many of its request keys already have a stored reply (the reply cache takes those)."""
    stored: dict[int, int] = {}
    for model_id, model_keys in keys.items():
        unique = sorted(set(model_keys))
        found: set[str] = set()
        for start in range(0, len(unique), BULK_BATCH_SIZE):
            found.update(LLMReply.objects.filter(key__in=unique[start:start + BULK_BATCH_SIZE])
                         .values_list("key", flat=True))
        stored[model_id] = sum(key in found for key in model_keys)
    return stored


def _endpoint_loads(audit: Audit, models: list[AuditModel], counts: Counter) -> list[EndpointLoad]:
    loads = []
    for endpoint in sorted({model.endpoint for model in models}, key=lambda endpoint: endpoint.name):
        asked = [model for model in models if model.endpoint_id == endpoint.id]
        networked = scorer_kinds.scorer_kind(endpoint.protocol).networked
        loads.append(EndpointLoad(
            endpoint=endpoint.name, requests=sum(counts[model.id] for model in asked),
            concurrency=endpoint.max_concurrency if networked else max(1, audit.parallel_tasks),
            requests_per_minute=endpoint.requests_per_minute if networked else None,
            seconds_per_request=recent_latency(endpoint.id, [model.model for model in asked])))
    return loads


def recent_latency(endpoint_id: int, models: list[str]) -> float | None:
    """The median latency in seconds of the endpoint's most recent replies (sent, not from the cache) to these
    models, else to any of its models; None when it has answered none."""
    answered = AuditRequest.objects.filter(audit_model__endpoint_id=endpoint_id, reply__isnull=False,
                                           from_cache=False).order_by("-id")
    for scope in (answered.filter(audit_model__model__in=models), answered):
        latencies = list(scope.values_list("reply__latency_ms", flat=True)[:LATENCY_SAMPLE])
        if latencies:
            return statistics.median(latencies) / 1000
    return None
