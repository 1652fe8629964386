"""Reads of the audit domain shared by every paradigm: the audit list, live progress, the responses export.

Progress is counted from the requests themselves (GROUP BY state), so it can never double-count; the
retry state comes from the live leases of the workers.
"""
from __future__ import annotations

from datetime import timedelta

from django.db.models import Count, F, Q, QuerySet, Sum
from django.utils import timezone

from annotation.selectors import Export
from auditapp.models import Audit, AuditChunk, AuditRequest
from auditapp.paradigms import registry

RATE_WINDOW = timedelta(seconds=60)


def audit_list() -> QuerySet[Audit]:
    return Audit.objects.select_related("study").annotate(
        n_answered=Count("requests", filter=Q(requests__state=AuditRequest.State.ANSWERED)),
        n_failed=Count("requests", filter=Q(requests__state=AuditRequest.State.FAILED)),
    ).order_by("-created_at", "-id")


def audit_progress(audit: Audit) -> dict:
    """Per model × condition: answered, failed, waiting, from cache, retries, rate (requests finished per
    second over the last minute), requests waiting to retry now, and an ETA; then the totals; and the endpoints
    a live worker finds unreachable (its requests held until they answer), each with since when (ISO 8601)."""
    now = timezone.now()
    since = now - RATE_WINDOW
    rows = (AuditRequest.objects.filter(audit=audit).values("audit_model_id", "condition")
            .annotate(answered=Count("id", filter=Q(state=AuditRequest.State.ANSWERED)),
                      failed=Count("id", filter=Q(state=AuditRequest.State.FAILED)),
                      waiting=Count("id", filter=Q(state=AuditRequest.State.PENDING)),
                      recent=Count("id", filter=Q(finished_at__gte=since, from_cache=False)),
                      cached=Count("id", filter=Q(from_cache=True)),
                      retried=Sum(F("attempts") - 1, filter=Q(attempts__gt=1)))
            .order_by())
    live = AuditChunk.objects.filter(audit=audit, released_at__isnull=True, leased_until__gte=now)
    retrying_now: dict[str, int] = {}
    last_reason = ""
    unreachable: dict[str, dict] = {}
    for state in live.values_list("retry_state", flat=True):
        for cell, n in (state or {}).get("waiting", {}).items():
            retrying_now[cell] = retrying_now.get(cell, 0) + n
        last_reason = (state or {}).get("last_reason") or last_reason
        for endpoint, seen in (state or {}).get("unreachable", {}).items():
            if endpoint not in unreachable or seen["since"] < unreachable[endpoint]["since"]:
                unreachable[endpoint] = seen
    models = {m.id: m.display_name for m in audit.models.all()}
    conditions = [code for code, _ in registry.get(audit.paradigm).cells(audit)]
    by_cell = {(row["audit_model_id"], row["condition"]): row for row in rows}
    cells = []
    for model_id, name in models.items():
        for condition in conditions:
            row = by_cell.get((model_id, condition), {})
            cells.append(_progress_row({"model_id": model_id, "model": name, "condition": condition}, row,
                                       retrying_now.get(f"{model_id}:{condition}", 0)))
    totals = _progress_row({}, {key: sum(row.get(key) or 0 for row in by_cell.values())
                                for key in ("answered", "failed", "waiting", "cached", "recent", "retried")},
                           sum(retrying_now.values()))
    return {"status": audit.status, "status_reason": audit.status_reason, "n_requests": audit.n_requests,
            "last_retry_reason": last_reason, "live_workers": live.count(), "totals": totals, "cells": cells,
            "unreachable_endpoints": [{"endpoint": endpoint, **seen} for endpoint, seen in sorted(unreachable.items())]}


def _progress_row(head: dict, counts: dict, retrying_now: int) -> dict:
    answered, failed, waiting = counts.get("answered", 0), counts.get("failed", 0), counts.get("waiting", 0)
    rate = (counts.get("recent") or 0) / RATE_WINDOW.total_seconds()
    return {**head, "answered": answered, "failed": failed, "waiting": waiting,
            "from_cache": counts.get("cached", 0), "retries": counts.get("retried") or 0,
            "retrying_now": retrying_now, "rate_per_s": round(rate, 3),
            "eta_s": round(waiting / rate, 1) if rate > 0 and waiting else (0.0 if not waiting else None)}


RESPONSE_EXPORT = {
    "key": "key", "model": "audit_model__model", "model_label": "audit_model__label", "condition": "condition",
    "item": "item__external_id", "unit": "unit", "replicate": "replicate", "state": "state", "outcome": "outcome",
    "label": "label", "explanation": "explanation", "parse_reason": "parse_reason", "reply": "reply__text",
    "finish_reason": "reply__finish_reason", "latency_ms": "reply__latency_ms",
    "prompt_tokens": "reply__prompt_tokens", "completion_tokens": "reply__completion_tokens",
    "attempts": "attempts", "error": "error", "from_cache": "from_cache", "model_reported": "reply__model_reported",
    "finished_at": "finished_at", "request_id": "id",
}


_STATE_AT, _OUTCOME_AT = list(RESPONSE_EXPORT).index("state"), list(RESPONSE_EXPORT).index("outcome")


def _response_row(row: tuple) -> tuple:
    """A waiting request has no outcome yet: it reads "pending"."""
    if row[_STATE_AT] != AuditRequest.State.PENDING:
        return row
    values = list(row)
    values[_OUTCOME_AT] = "pending"
    return tuple(values)


def audit_responses_export(*, audit: Audit, model: int | None = None, condition: str | None = None,
                           outcome: str | None = None) -> Export:
    """Every request of the audit with its reply, parse and error, in dispatch order (optionally one cell
    or one outcome: the dashboard's drill-down)."""
    rows = AuditRequest.objects.filter(audit=audit)
    if model is not None:
        rows = rows.filter(audit_model_id=model)
    if condition:
        rows = rows.filter(condition=condition)
    if outcome == "pending":
        rows = rows.filter(state=AuditRequest.State.PENDING)
    elif outcome:
        rows = rows.filter(outcome=outcome)
    rows = rows.order_by("order", "item_id", "audit_model__position", "condition", "replicate").values_list(
        *RESPONSE_EXPORT.values())
    return Export(list(RESPONSE_EXPORT), rows, _response_row)


def audit_request_detail(*, audit: Audit, request_id: int) -> dict | None:
    """One request whole, for a drill-down: what was sent (rebuilt by the paradigm's request builder; its key
    proves it is what was sent), the stored reply, the parse and each judgment. None when the audit has no such
    request."""
    request = (AuditRequest.objects.filter(audit=audit, pk=request_id)
               .select_related("audit_model__endpoint", "reply").first())
    if request is None:
        return None
    builder = registry.get(audit.paradigm).builder(audit)
    sent = builder.payload(request)
    reply = request.reply
    return {
        "id": request.id, "model": request.audit_model.display_name, "condition": request.condition,
        "unit": request.unit, "item": request.item_id, "replicate": request.replicate, "state": request.state,
        "key": request.key, "key_matches": builder.key(request.audit_model, sent, request.replicate) == request.key,
        "sent": sent,
        "reply": None if reply is None else {"text": reply.text, "finish_reason": reply.finish_reason,
                                             "latency_ms": reply.latency_ms, "from_cache": request.from_cache},
        "outcome": request.outcome, "label": request.label, "parse_reason": request.parse_reason,
        "error": request.error,
        "judgments": list(request.judgments.order_by("id").values("unit", "outcome", "label", "value", "reason")),
    }
