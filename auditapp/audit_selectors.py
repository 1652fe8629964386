"""Reads of the audit domain: the audit list, live progress, and the exports (responses, metrics).

Progress is counted from the requests themselves (GROUP BY state), so it can never double-count; the
retry state comes from the live leases of the workers.
"""
from __future__ import annotations

from dataclasses import asdict
from datetime import timedelta

from django.db.models import Count, F, Q, QuerySet, Sum
from django.utils import timezone

from annotation.selectors import Export
from auditapp.audit_metrics import METRICS
from auditapp.models import Audit, AuditChunk, AuditMetric, AuditRequest
from auditapp.paradigms.classification.prompts import DEFAULT_TEMPLATES
from auditapp.paradigms.self_report.design import Design, threshold_descriptions
from auditapp.self_report_services import design_of, model_names, questionnaires_of

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
    # A self-report audit's "conditions" are its forms (original:<instrument> and masked).
    conditions = (design_of(audit).form_ids() if audit.paradigm == "self_report"
                  else list(audit.conditions.values_list("condition", flat=True)))
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
    "finished_at": "finished_at",
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


METRIC_VALUES = [*(name for metric in METRICS for name in (metric, f"{metric}_low", f"{metric}_high")),
                 "n", "n_items", "n_unparsed", "coverage", "n_label", "n_refusal", "n_unparseable", "n_error",
                 "n_pending"]
METRIC_EXPORT = ["model", "model_label", "condition", "reference", "unparsed", *METRIC_VALUES, "delta_kappa"]


def audit_metrics_export(*, audit: Audit) -> Export:
    """One row per model × condition × reference with every metric and its 95% CI, and the cell's Δκ."""
    delta = {(cell["model_id"], cell["condition"]): cell["delta_kappa"]
             for cell in (audit.analysis or {}).get("kappa_gap", {}).get("cells", [])}
    conditions = {c: i for i, c in enumerate(audit.conditions.values_list("condition", flat=True))}
    metrics = sorted(AuditMetric.objects.filter(audit=audit).select_related("audit_model"),
                     key=lambda m: (m.audit_model.position, conditions.get(m.condition, 99), m.reference != "weighted"))
    rows = [(m.audit_model.model, m.audit_model.display_name, m.condition, m.reference, m.unparsed,
             *(m.values.get(name) for name in METRIC_VALUES),
             delta.get((m.audit_model_id, m.condition))) for m in metrics]
    return Export(METRIC_EXPORT, rows)


def _heatmap(metrics: dict, models: list, conditions: list[str], name: str) -> dict:
    """A models × conditions table of one metric against the weighted ground truth (seed 000 Tables 1–2):
    values with CIs, the best condition per row (the paper's bold), row means and column means."""
    rows = []
    for model in models:
        cells = [metrics.get((model.id, condition, "weighted"), {}) for condition in conditions]
        values = [cell.get(name) for cell in cells]
        finite = [v for v in values if v is not None]
        best = max(finite) if finite else None
        rows.append({"model_id": model.id, "model": model.display_name, "values": values,
                     "low": [cell.get(f"{name}_low") for cell in cells],
                     "high": [cell.get(f"{name}_high") for cell in cells],
                     "best": [v is not None and v == best for v in values],
                     "mean": sum(finite) / len(finite) if finite else None})
    column_means = []
    for index in range(len(conditions)):
        column = [row["values"][index] for row in rows if row["values"][index] is not None]
        column_means.append(sum(column) / len(column) if column else None)
    return {"metric": name, "reference": "weighted", "rows": rows, "column_means": column_means}


def audit_dashboard_data(audit: Audit) -> dict:
    """Everything the audit dashboard draws, as JSON-ready data."""
    models = list(audit.models.all())
    conditions = list(audit.conditions.values_list("condition", flat=True))
    metrics = {(m.audit_model_id, m.condition, m.reference): m.values
               for m in AuditMetric.objects.filter(audit=audit)}
    analysis = audit.analysis or {}
    gap = analysis.get("kappa_gap", {})
    scatter = [{"model": model.display_name, "model_id": model.id, "condition": condition, "reference": reference,
                "precision": values.get("precision"), "recall": values.get("recall"), "f1": values.get("f1"),
                "n": values.get("n")}
               for model in models for condition in conditions for reference in ("weighted", "majority")
               if (values := metrics.get((model.id, condition, reference)))]
    return {
        "audit": {"id": audit.id, "name": audit.name, "status": audit.status, "status_label": audit.get_status_display(),
                  "status_reason": audit.status_reason, "unparsed": audit.unparsed,
                  "unparsed_label": audit.get_unparsed_display(), "n_requests": audit.n_requests,
                  "analysed": audit.analysed_at is not None},
        "models": [{"id": m.id, "label": m.display_name, "model": m.model} for m in models],
        "conditions": [{"code": c, "name": DEFAULT_TEMPLATES[c].name if c in DEFAULT_TEMPLATES else c}
                       for c in conditions],
        "kappa": _heatmap(metrics, models, conditions, "kappa"),
        "f1": _heatmap(metrics, models, conditions, "f1"),
        "gap": gap,
        "model_means": analysis.get("model_means", []),
        "condition_means": analysis.get("condition_means", []),
        "scatter": scatter,
    }


MODE_DESCRIPTIONS = {"item": "one item per request", "batch": "the whole form in one request"}


def _form_names(design: Design) -> dict[str, str]:
    """Form id → the name the dashboard shows (the progress table's "condition" of a self-report audit)."""
    names = {}
    for form_id in design.form_ids():
        if form_id.startswith("original:"):
            names[form_id] = f"Original: {design.instrument(form_id.removeprefix('original:')).name}"
        else:
            names[form_id] = "Masked: all instruments' items with filler and dummy items"
    return names


def self_report_dashboard_data(audit: Audit) -> dict:
    """Everything a self-report audit's dashboard draws (seed 000 §4.4, Figure 2), as JSON-ready data.

    The header and progress use the same keys as :func:`audit_dashboard_data` (``audit``, ``models``, and the
    forms under ``conditions``, since a request's condition is its form). Once analysed (``analysed``), per
    instrument: ``Audit.analysis``'s comparison (:func:`auditapp.paradigms.self_report.design.analyse`) with,
    per model, its id, its validity flags on the instrument's two forms, the thresholds it crosses and a
    ``level`` for Figure 2's colour ("tier": it changes tier; "threshold": it crosses a threshold; "none");
    and the validity table per model × form with per-administration counts. Before the analysis the
    instruments and the validity table are empty lists and the rule is the design's.
    """
    design = design_of(audit)
    analysis = audit.analysis or {}
    model_ids = {name: model_id for model_id, name in model_names(audit).items()}
    form_names = _form_names(design)
    validity = {(row["model"], row["form"]): row for row in analysis.get("validity", [])}
    rewritten: dict[str, set[int]] = {}
    for questionnaire in questionnaires_of(audit).values():
        for item in questionnaire.items:
            if item.kind == "instrument" and item.rewritten:
                rewritten.setdefault(item.slug, set()).add(item.number)

    instruments = []
    for comparison in analysis.get("instruments", []):
        slug = comparison["instrument"]
        descriptions = threshold_descriptions(design.instrument(slug))
        form_ids = {"original": f"original:{slug}", "masked": "masked"}
        crossed: dict[str, list[dict]] = {}
        thresholds = []
        for crossing in comparison["thresholds"]:
            for direction in ("upward", "downward"):
                for model in crossing[direction]:
                    crossed.setdefault(model, []).append({"threshold": crossing["threshold"], "direction": direction})
            thresholds.append({**crossing, "description": descriptions.get(crossing["threshold"], ""),
                               "crossed": bool(crossing["upward"] or crossing["downward"])})
        rows = []
        for row in comparison["models"]:
            flags = [{"form": form, "form_name": form_names.get(form_id, form_id),
                      "reasons": validity[(row["model"], form_id)]["flag_reasons"]}
                     for form, form_id in form_ids.items()
                     if validity.get((row["model"], form_id), {}).get("flagged")]
            crossings = crossed.get(row["model"], [])
            rows.append({**row, "model_id": model_ids.get(row["model"]), "flags": flags, "flagged": bool(flags),
                         "crossings": crossings,
                         "level": "tier" if row["tier_changed"] else "threshold" if crossings else "none"})
        paired = comparison["paired"]
        instruments.append({**comparison, "models": rows, "thresholds": thresholds,
                            "has_tiers": any(row["original_tier"] or row["masked_tier"] for row in rows),
                            "n_rewritten": len(rewritten.get(slug, ())),
                            "n_with_change": sum(row["change"] is not None for row in rows),
                            "without_change": [row["model"] for row in rows if row["change"] is None],
                            "left_out": [row["model"] for row in rows
                                         if paired is None or row["model"] not in paired["models"]]})

    validity_rows = []
    for row in analysis.get("validity", []):
        administrations = row["administrations"] or 1
        validity_rows.append({**row, "model_id": model_ids.get(row["model"]),
                              "form_name": form_names.get(row["form"], row["form"]),
                              "refusal_percent": 100 * row["refusal_share"],
                              "dummy_per_administration": row["dummy_items"] // administrations})

    models = list(audit.models.all())
    rule = analysis.get("rule") or {**asdict(design.validity), "text": design.validity.describe()}
    return {
        "audit": {"id": audit.id, "name": audit.name, "paradigm": audit.paradigm, "status": audit.status,
                  "status_label": audit.get_status_display(), "status_reason": audit.status_reason,
                  "n_requests": audit.n_requests, "analysed": bool(analysis.get("instruments"))},
        "models": [{"id": m.id, "label": m.display_name, "model": m.model} for m in models],
        "conditions": [{"code": form_id, "name": name} for form_id, name in form_names.items()],
        "instrument_names": [instrument.name for instrument in design.instruments],
        "mode": analysis.get("mode", design.mode),
        "mode_description": MODE_DESCRIPTIONS.get(analysis.get("mode", design.mode), ""),
        "labels": design.labels or ("text" if design.mode == "batch" else "numbers"),
        "replicates": audit.replicates,
        "rule": rule,
        "instruments": instruments,
        "validity": validity_rows,
    }
