"""Reads of the audit domain shared by every paradigm: the audit list, live progress, the responses export, the
parse-quality report.

Progress is counted from the requests themselves (GROUP BY state), so it can never double-count; the
retry state comes from the live leases of the workers.
"""
from __future__ import annotations

from datetime import datetime, timedelta

from django.core.cache import cache
from django.db.models import Avg, Count, Exists, F, Min, OuterRef, Q, QuerySet, Subquery, Sum, Window
from django.db.models.functions import Coalesce, RowNumber
from django.urls import reverse
from django.utils import timezone

from auditapp.engine import parse_quality, registry
from auditapp.engine.conversations import conversation_payload, conversations_before
from auditapp.engine.protocol import NoFollowUp, Outcome
from auditapp.models import Audit, AuditChunk, AuditJudgment, AuditRequest, distinct_model_names
from auditapp.worker_status import worker_status
from common.export_rows import Export

RATE_WINDOW = timedelta(seconds=60)
MIN_RATE_SPAN = timedelta(seconds=1)


def finished_counts() -> dict[str, Coalesce]:
    """``n_answered`` and ``n_failed`` of each audit as subqueries per row: a page of audits counts only its own
    requests (a join and group over every audit's requests would come before the page's LIMIT)."""
    def count(state: str) -> Subquery:
        return Subquery(AuditRequest.objects.filter(audit=OuterRef("pk"), state=state).order_by()
                        .values("audit").annotate(n=Count("id")).values("n"))
    return {"n_answered": Coalesce(count(AuditRequest.State.ANSWERED), 0),
            "n_failed": Coalesce(count(AuditRequest.State.FAILED), 0)}


def audit_list() -> QuerySet[Audit]:
    return Audit.objects.select_related("study").annotate(
        n_answered=Count("requests", filter=Q(requests__state=AuditRequest.State.ANSWERED)),
        n_failed=Count("requests", filter=Q(requests__state=AuditRequest.State.FAILED)),
    ).order_by("-created_at", "-id")


def audit_progress(audit: Audit) -> dict:
    """Per model × condition: answered, failed, waiting, from cache, retries, rate (:func:`_sending_rates`),
    requests waiting to retry now, and an ETA (the waiting requests at that rate; None unless the audit is
    running); then the totals; the endpoints a live worker finds unreachable (its requests held until they answer),
    or that a queued audit's preparation waits for, each with since when (ISO 8601) and the last error; whether any
    worker is alive (:mod:`auditapp.worker_status`); and when the results were last computed (``analysed_at``, ISO
    8601 or None), which a dashboard waiting for a recomputation watches."""
    now = timezone.now()
    rows = (AuditRequest.objects.filter(audit=audit).values("audit_model_id", "condition")
            .annotate(answered=Count("id", filter=Q(state=AuditRequest.State.ANSWERED)),
                      failed=Count("id", filter=Q(state=AuditRequest.State.FAILED)),
                      waiting=Count("id", filter=Q(state=AuditRequest.State.PENDING)),
                      cached=Count("id", filter=Q(from_cache=True)),
                      retried=Sum(F("attempts") - 1, filter=Q(attempts__gt=1)))
            .order_by())
    rates, total_rate = _sending_rates(audit, now)
    running = audit.status == Audit.Status.RUNNING
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
    waiting = audit.preparation_waiting
    if audit.status == Audit.Status.QUEUED and waiting:
        unreachable[waiting["endpoint"]] = {"since": waiting["since"], "last_error": waiting["last_error"]}
    models = audit.model_names()
    conditions = [code for code, _ in registry.get(audit.paradigm).cells(audit)]
    by_cell = {(row["audit_model_id"], row["condition"]): row for row in rows}
    cells = []
    for model_id, name in models.items():
        for condition in conditions:
            row = by_cell.get((model_id, condition), {})
            cells.append(_progress_row({"model_id": model_id, "model": name, "condition": condition}, row,
                                       retrying_now.get(f"{model_id}:{condition}", 0),
                                       rates.get((model_id, condition), 0.0), running))
    totals = _progress_row({}, {key: sum(row.get(key) or 0 for row in by_cell.values())
                                for key in ("answered", "failed", "waiting", "cached", "retried")},
                           sum(retrying_now.values()), total_rate, running)
    return {"status": audit.status, "status_reason": audit.status_reason, "n_requests": audit.n_requests,
            "analysed_at": audit.analysed_at.isoformat() if audit.analysed_at else None,
            "last_retry_reason": last_reason, "live_workers": live.count(), "worker": worker_status().as_json(),
            "totals": totals, "cells": cells,
            "unreachable_endpoints": [{"endpoint": endpoint, **seen} for endpoint, seen in sorted(unreachable.items())]}


def _sending_rates(audit: Audit, now: datetime) -> tuple[dict[tuple[int, str], float], float]:
    """Requests finished per second (replies from the cache not counted) per model × condition, and in all.

    A rate is the requests finished within the last :data:`RATE_WINDOW` over the time spent sending them: from when
    the first of them was sent (its finish less the mean latency of the row's replies in the window: the requests in
    flight when sending began, or began again after an outage or a pause, took that long to come back), or from the
    audit's start or the window's start if later, to now. So 12 s into an audit, or 10 s after an outage ended, the
    rate is that of those seconds, not of a minute mostly spent waiting; a row that stops sending slows down as the
    time since grows. After a resume (``resumed_at``) only what finished since counts, over the time since. The
    span is at least :data:`MIN_RATE_SPAN` (replies are written in batches, so the first ones share one time). One
    grouped query over the window's rows (the ``audit, finished_at`` index), never one per row."""
    window_start = max(now - RATE_WINDOW, audit.resumed_at) if audit.resumed_at else now - RATE_WINDOW
    floor = max(window_start, audit.started_at) if audit.started_at else window_start
    recent = (AuditRequest.objects.filter(audit=audit, finished_at__gte=window_start, from_cache=False)
              .values("audit_model_id", "condition")
              .annotate(n=Count("id"), first=Min("finished_at"), latency_ms=Avg("reply__latency_ms")).order_by())
    starts: dict[tuple[int, str], tuple[int, datetime]] = {}
    for row in recent:
        sent = row["first"] - timedelta(milliseconds=row["latency_ms"] or 0)
        starts[_cell_key(row)] = row["n"], max(sent, floor)

    def rate(n: int, start: datetime) -> float:
        return n / max((now - start).total_seconds(), MIN_RATE_SPAN.total_seconds())

    rates = {cell: rate(n, start) for cell, (n, start) in starts.items()}
    total = rate(sum(n for n, _ in starts.values()), min(start for _, start in starts.values())) if starts else 0.0
    return rates, total


def _progress_row(head: dict, counts: dict, retrying_now: int, rate: float, running: bool) -> dict:
    """One row of the progress table. Its ETA is None unless the audit is running (a paused, stopped, cancelled,
    failed or finished audit sends nothing, so none can be said), 0 once nothing waits, and None while nothing
    was finished in the window."""
    answered, failed, waiting = counts.get("answered", 0), counts.get("failed", 0), counts.get("waiting", 0)
    eta = None
    if running and not waiting:
        eta = 0.0
    elif running and rate > 0:
        eta = round(waiting / rate, 1)
    return {**head, "answered": answered, "failed": failed, "waiting": waiting,
            "from_cache": counts.get("cached", 0), "retries": counts.get("retried") or 0,
            "retrying_now": retrying_now, "rate_per_s": round(rate, 3), "eta_s": eta}


RESPONSE_EXPORT = {
    "key": "key", "model": "audit_model__model", "model_label": "audit_model__label", "condition": "condition",
    "item": "item__external_id", "unit": "unit", "replicate": "replicate", "turn": "turn", "state": "state", "outcome": "outcome",
    "label": "label", "explanation": "explanation", "parse_reason": "parse_reason", "reply": "reply__text",
    "finish_reason": "reply__finish_reason", "latency_ms": "reply__latency_ms",
    "prompt_tokens": "reply__prompt_tokens", "completion_tokens": "reply__completion_tokens",
    "attempts": "attempts", "error": "error", "from_cache": "from_cache", "model_reported": "reply__model_reported",
    "finished_at": "finished_at", "request_id": "id",
}


_STATE_AT, _OUTCOME_AT = list(RESPONSE_EXPORT).index("state"), list(RESPONSE_EXPORT).index("outcome")
_MODEL_AT, _MODEL_LABEL_AT = list(RESPONSE_EXPORT).index("model"), list(RESPONSE_EXPORT).index("model_label")


def _response_row(row: tuple) -> tuple:
    """A waiting request has no outcome yet: it reads "pending". A model without a label of its own shows its name
    in ``model_label`` (as the metrics export does)."""
    if row[_STATE_AT] != AuditRequest.State.PENDING and row[_MODEL_LABEL_AT]:
        return row
    values = list(row)
    if row[_STATE_AT] == AuditRequest.State.PENDING:
        values[_OUTCOME_AT] = "pending"
    values[_MODEL_LABEL_AT] = row[_MODEL_LABEL_AT] or row[_MODEL_AT]
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
    request. A later turn of a conversation also lists the turns before it (``conversation``: each one's reply or
    error); ``sent`` then holds every message of the conversation up to this turn's question, and is None while
    it waits for an earlier turn or was closed unsent."""
    request = (AuditRequest.objects.filter(audit=audit, pk=request_id)
               .select_related("audit_model__endpoint", "reply").first())
    if request is None:
        return None
    builder = registry.get(audit.paradigm).builder(audit)
    earlier = conversations_before([request.previous_id])[request.previous_id] if request.previous_id else ()
    sent = None
    if all(turn.state == AuditRequest.State.ANSWERED for turn in earlier):
        try:
            sent = conversation_payload(builder, request, earlier)
        except NoFollowUp:
            sent = None
    reply = request.reply
    return {
        "id": request.id, "model": request.audit_model.display_name, "condition": request.condition,
        "unit": request.unit, "item": request.item_id, "replicate": request.replicate, "state": request.state,
        "key": request.key, "key_matches": sent is not None and builder.key(
            request.audit_model, sent, request.replicate) == request.key,
        "sent": sent, "turn": request.turn,
        "conversation": [{"turn": turn.request.turn, "request_id": turn.request.id, "key": turn.request.key,
                          "state": turn.state, "reply": turn.reply_text, "error": turn.error} for turn in earlier],
        "reply": None if reply is None else {"text": reply.text, "finish_reason": reply.finish_reason,
                                             "latency_ms": reply.latency_ms, "from_cache": request.from_cache},
        "outcome": request.outcome, "label": request.label, "parse_reason": request.parse_reason,
        "error": request.error,
        "judgments": list(request.judgments.order_by("id").values("unit", "outcome", "label", "value", "reason")),
    }


SHAPE_SAMPLE = 200
"""The unparseable replies per cell whose shapes the parse-quality report reads: the most recent ones. The report is
polled every few seconds while an audit runs, so it reads a sample of bounded size, not every reply's text."""


def _cell_key(row: dict) -> tuple[int, str]:
    return row["audit_model_id"], row["condition"]


UNITS_CACHE_SECONDS = 30


def _units_answered(audit: Audit) -> dict[tuple[int, str], dict]:
    """Per cell, the units its requests asked about and those answered (a batch request asks about many texts).
    It reads every judgment, millions for a large names audit, so while the audit runs the dashboard's 5-second
    polls share one reading per :data:`UNITS_CACHE_SECONDS`; a finished audit is read afresh."""
    # The creation time too: a database made again (tests, a restore) gives an id to another audit.
    key = f"parse-quality-units:{audit.id}:{audit.created_at.timestamp()}"
    running = audit.status == Audit.Status.RUNNING
    cached = cache.get(key) if running else None
    if cached is not None:
        return cached
    units = {(row["request__audit_model_id"], row["request__condition"]): row for row in (
        AuditJudgment.objects.filter(audit=audit).values("request__audit_model_id", "request__condition")
        .annotate(n_units=Count("id"), n_units_answered=Count("id", filter=Q(outcome__in=Outcome.ANSWERED)))
        .order_by())}
    if running:
        cache.set(key, units, UNITS_CACHE_SECONDS)
    return units


def audit_parse_quality(audit: Audit) -> Export:
    """Per model × condition: the requests' outcome counts and shares (of all the cell's requests, the waiting ones
    as "pending"), the units its requests asked about and how many of them were answered (a batch request asks about
    many texts, and is unparseable when any of them is), the finish reasons of the replies with those cut off at the token limit flagged,
    the most frequent shapes (:func:`auditapp.engine.parse_quality.reply_shape`) of the :data:`SHAPE_SAMPLE` most recent
    unparseable replies, a warning once a cell's replies are mostly unparseable or cut off, and the address of
    the cell's unparseable replies.

    Four queries whatever the audit's size: the outcome counts grouped by cell, the judgments grouped by cell
    (shared for 30 s while the audit runs), the finish reasons grouped by cell, and the unparseable sample (a window
    function numbers each cell's unparseable replies, newest first)."""
    outcomes = list(AuditRequest.Outcome.values)
    finished = ~Q(state=AuditRequest.State.PENDING)
    answered = Q(state=AuditRequest.State.ANSWERED)
    truncated = answered & Q(reply__finish_reason__in=parse_quality.TRUNCATED)
    requests = AuditRequest.objects.filter(audit=audit)
    counts = {_cell_key(row): row for row in requests.values("audit_model_id", "condition").annotate(
        n_requests=Count("id"), answered=Count("id", filter=answered),
        failed=Count("id", filter=Q(state=AuditRequest.State.FAILED)),
        pending=Count("id", filter=Q(state=AuditRequest.State.PENDING)),
        truncated=Count("id", filter=truncated),
        unparseable_or_truncated=Count("id", filter=answered & (Q(outcome=AuditRequest.Outcome.UNPARSEABLE)
                                                                 | Q(reply__finish_reason__in=parse_quality.TRUNCATED))),
        **{f"n_{outcome}": Count("id", filter=finished & Q(outcome=outcome)) for outcome in outcomes}).order_by()}
    units = _units_answered(audit)
    finish_reasons: dict[tuple[int, str], list[dict]] = {}
    for row in (requests.filter(reply__isnull=False).values("audit_model_id", "condition", "reply__finish_reason")
                .annotate(n=Count("id")).order_by("-n", "reply__finish_reason")):
        reason = row["reply__finish_reason"] or ""
        finish_reasons.setdefault(_cell_key(row), []).append(
            {"finish_reason": reason, "n": row["n"], "truncated": parse_quality.is_truncated(reason)})
    newest_first = Window(RowNumber(), partition_by=[F("audit_model_id"), F("condition")],
                          order_by=[F("finished_at").desc(nulls_last=True), F("id").desc()])
    sample: dict[tuple[int, str], list[tuple]] = {}
    for row in (requests.filter(outcome=AuditRequest.Outcome.UNPARSEABLE, state=AuditRequest.State.ANSWERED)
                .annotate(newest=newest_first).filter(newest__lte=SHAPE_SAMPLE).order_by("newest")
                .values("audit_model_id", "condition", "reply__text", "reply__finish_reason")):
        sample.setdefault(_cell_key(row), []).append((row["reply__text"], row["reply__finish_reason"]))

    responses = reverse("api:audit-responses", args=[audit.id])
    rows = []
    audit_models = list(audit.models.all())
    names = distinct_model_names(audit_models)
    for audit_model in audit_models:
        for condition, condition_name in registry.get(audit.paradigm).cells(audit):
            cell = counts.get((audit_model.id, condition), {})
            total = cell.get("n_requests", 0)
            n_unparseable = cell.get(f"n_{AuditRequest.Outcome.UNPARSEABLE}", 0)
            replies = sample.get((audit_model.id, condition), [])
            n_truncated = cell.get("truncated", 0)
            record = {
                "model_id": audit_model.id, "model": names[audit_model.id], "condition": condition,
                "condition_name": condition_name, "n_requests": total, "answered": cell.get("answered", 0),
                "failed": cell.get("failed", 0), "pending": cell.get("pending", 0)}
            for outcome in [*outcomes, "pending"]:
                n = cell.get("pending" if outcome == "pending" else f"n_{outcome}", 0)
                record[f"n_{outcome}"] = n
                record[f"share_{outcome}"] = n / total if total else None
            cell_units = units.get((audit_model.id, condition), {})
            n_units, n_units_answered = cell_units.get("n_units", 0), cell_units.get("n_units_answered", 0)
            record.update({
                "n_units": n_units, "n_units_answered": n_units_answered,
                "share_units_answered": n_units_answered / n_units if n_units else None,
                "truncated": n_truncated,
                "truncated_note": f"{n_truncated} {parse_quality.RAISE_MAX_TOKENS}" if n_truncated else "",
                "finish_reasons": finish_reasons.get((audit_model.id, condition), []),
                "unparseable_shapes": parse_quality.frequent_shapes(replies),
                "shapes_sampled": len(replies),
                "shapes_note": (f"shapes of the {SHAPE_SAMPLE:,} most recent of {n_unparseable:,} unparseable replies"
                                if n_unparseable > len(replies) else ""),
                "warning": parse_quality.cell_warning(
                    answered=cell.get("answered", 0), unparseable=n_unparseable, truncated=n_truncated,
                    unparseable_or_truncated=cell.get("unparseable_or_truncated", 0),
                    pending=cell.get("pending", 0)),
                "unparseable_replies_url": f"{responses}?model={audit_model.id}&condition={condition}"
                                           f"&outcome={AuditRequest.Outcome.UNPARSEABLE}",
            })
            rows.append(record)
    columns = parse_quality_columns()
    return Export(columns, [tuple(row[c] for c in columns) for row in rows])


def parse_quality_columns() -> list[str]:
    """The columns of :func:`audit_parse_quality`, in order."""
    outcomes = [*AuditRequest.Outcome.values, "pending"]
    return ["model_id", "model", "condition", "condition_name", "n_requests", "answered", "failed", "pending",
            *(name for outcome in outcomes for name in (f"n_{outcome}", f"share_{outcome}")),
            "n_units", "n_units_answered", "share_units_answered",
            "truncated", "truncated_note", "finish_reasons", "unparseable_shapes", "shapes_sampled", "shapes_note",
            "warning", "unparseable_replies_url"]


def judgment_orphan_counts() -> dict[int, int]:
    """Audit id → how many of its judgments have no request (none should: see AuditJudgment); one anti-join."""
    orphans = AuditJudgment.objects.exclude(Exists(AuditRequest.objects.filter(pk=OuterRef("request_id"))))
    return dict(orphans.values("audit_id").annotate(n=Count("id")).order_by("audit_id").values_list("audit_id", "n"))
