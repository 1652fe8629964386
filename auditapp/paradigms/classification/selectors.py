"""Reads of classification audits: the metrics export and the dashboard's data (seed 000 Tables 1–2, Figure 1)."""
from __future__ import annotations

from annotation.selectors import Export
from auditapp.audit_metrics import METRICS
from auditapp.models import Audit, AuditMetric
from auditapp.paradigms.classification.prompts import DEFAULT_TEMPLATES


def condition_cells(audit: Audit) -> list[tuple[str, str]]:
    """The audit's conditions in order, with their names: the columns of its progress and its tables."""
    return [(code, DEFAULT_TEMPLATES[code].name if code in DEFAULT_TEMPLATES else code)
            for code in audit.conditions.values_list("condition", flat=True)]


METRIC_VALUES = [*(name for metric in METRICS for name in (metric, f"{metric}_low", f"{metric}_high",
                                                             f"{metric}_note", f"{metric}_ci_note")),
                 "n", "n_items", "n_unparsed", "coverage", "coverage_note", "n_label", "n_refusal", "n_unparseable",
                 "n_error", "n_pending"]
METRIC_EXPORT = ["model", "model_label", "condition", "reference", "unparsed", *METRIC_VALUES, "delta_kappa",
                 "delta_kappa_note"]


def audit_metrics_export(*, audit: Audit) -> Export:
    """One row per model × condition × reference with every metric and its 95% CI, and the cell's Δκ; an undefined
    value is empty (None), its reason in the ``<name>_note`` column beside it."""
    delta = {(cell["model_id"], cell["condition"]): (cell["delta_kappa"], cell.get("delta_kappa_note"))
             for cell in (audit.analysis or {}).get("kappa_gap", {}).get("cells", [])}
    conditions = {c: i for i, c in enumerate(audit.conditions.values_list("condition", flat=True))}
    metrics = sorted(AuditMetric.objects.filter(audit=audit).select_related("audit_model"),
                     key=lambda m: (m.audit_model.position, conditions.get(m.condition, 99), m.reference != "weighted"))
    rows = [(m.audit_model.model, m.audit_model.display_name, m.condition, m.reference, m.unparsed,
             *(m.values.get(name) for name in METRIC_VALUES),
             *delta.get((m.audit_model_id, m.condition), (None, None))) for m in metrics]
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
                     "notes": [_note(cell, name) for cell in cells],
                     "best": [v is not None and v == best for v in values],
                     "mean": sum(finite) / len(finite) if finite else None})
    column_means = []
    for index in range(len(conditions)):
        column = [row["values"][index] for row in rows if row["values"][index] is not None]
        column_means.append(sum(column) / len(column) if column else None)
    return {"metric": name, "reference": "weighted", "rows": rows, "column_means": column_means}


def _note(values: dict, name: str) -> str:
    """Why a stored value is undefined ("" when it is defined; "no replies" for a cell with no metrics)."""
    if not values:
        return "no replies in this cell"
    return values.get(f"{name}_note") or ("" if values.get(name) is not None else "undefined")


METRIC_NAMES = {"kappa": "κ", "f1": "F1", "precision": "Precision", "recall": "Recall", "accuracy": "Accuracy"}


def _metric_rows(metrics: dict, models: list, conditions: list[str], gap: dict) -> list[dict]:
    """Every metric of every model × condition × reference with its CI, or "—" and the reason it is undefined,
    and the cell's Δκ (the dashboard's table "Every metric")."""
    deltas = {(cell["model_id"], cell["condition"]): cell for cell in gap.get("cells", [])}
    rows = []
    for model in models:
        for condition in conditions:
            delta = deltas.get((model.id, condition), {})
            for reference in ("weighted", "majority"):
                values = metrics.get((model.id, condition, reference))
                if values is None:
                    continue
                rows.append({
                    "model_id": model.id, "model": model.display_name, "condition": condition,
                    "reference": reference, "n": values.get("n"), "n_items": values.get("n_items"),
                    "metrics": [{"name": name, "label": label, "value": values.get(name),
                                 "low": values.get(f"{name}_low"), "high": values.get(f"{name}_high"),
                                 "note": _note(values, name), "ci_note": values.get(f"{name}_ci_note") or ""}
                                for name, label in METRIC_NAMES.items()],
                    "delta_kappa": delta.get("delta_kappa"),
                    "delta_kappa_note": delta.get("delta_kappa_note") or ("" if delta else "no Δκ for this cell"),
                })
    return rows


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
        "metric_rows": _metric_rows(metrics, models, conditions, gap),
    }
