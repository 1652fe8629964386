"""Reads of classification audits: the metrics export and the dashboard's data (seed 000 Tables 1–2, Figure 1)."""
from __future__ import annotations

from dataclasses import dataclass

import pandas as pd
from django.db.models import Count, F, IntegerField, OuterRef, Q, Subquery, Value

from annotation.analysis import GROUPS
from annotation.dashboard import SET_DESCRIPTIONS
from annotation.models import ItemSetMember
from auditapp.audit_metrics import METRICS
from auditapp.engine.headlines import Headline, HeadlineRow
from auditapp.models import (
    Audit,
    AuditExtraction,
    AuditExtractionLabel,
    AuditItem,
    AuditMetric,
    AuditRequest,
    distinct_model_names,
)
from auditapp.paradigms.classification.extraction_services import STRICT, outcome_source
from auditapp.paradigms.classification.prompts import DEFAULT_TEMPLATES
from common.export_rows import Export


def condition_name(code: str) -> str:
    return DEFAULT_TEMPLATES[code].name if code in DEFAULT_TEMPLATES else code


def condition_cells(audit: Audit) -> list[tuple[str, str]]:
    """The audit's conditions in order, with their names: the columns of its progress and its tables."""
    return [(code, condition_name(code)) for code in audit.conditions.values_list("condition", flat=True)]


METRIC_VALUES = [*(name for metric in METRICS for name in (metric, f"{metric}_low", f"{metric}_high",
                                                             f"{metric}_note", f"{metric}_ci_note")),
                 "n", "n_items", "n_unparsed", "coverage", "coverage_note", "n_label", "n_refusal", "n_unparseable",
                 "n_error", "n_pending"]
METRIC_EXPORT = ["model", "model_label", "condition", "reference", "unparsed", *METRIC_VALUES, "delta_kappa",
                 "delta_kappa_note", "outcomes", "n_extracted"]


@dataclass(frozen=True)
class OutcomeSource:
    """Which outcomes an audit's metrics are computed with: ``name`` "strict" (the stored metrics) or
    "extraction:<id>"; ``metrics`` maps (model id, condition, reference) to a cell's values; ``analysis`` holds
    Δκ and the means; ``label`` says it in words."""

    name: str
    label: str
    metrics: dict
    analysis: dict
    extraction_id: int | None = None


def outcome_source_results(audit: Audit, source: str | None = None) -> OutcomeSource:
    """The audit's results under an outcome source (default the strict outcomes; raises OutcomeSourceError for
    one that is not "strict" or an extraction of the audit with metrics). Both are read as stored, computed when
    the audit was analysed or the extraction completed: a read never computes."""
    extraction = outcome_source(audit, source)
    if extraction is None:
        return OutcomeSource(STRICT, "strict outcomes: only the labels the strict parser read",
                             {(m.audit_model_id, m.condition, m.reference): m.values
                              for m in AuditMetric.objects.filter(audit=audit)}, audit.analysis or {})
    results = extraction.results
    return OutcomeSource(f"extraction:{extraction.id}",
                         f"with extraction {extraction.id} ({extraction.extractor}, "
                         f"{extraction_coverage(audit).get(extraction.id, _coverage(0, 0))['coverage']}): strict "
                         "labels kept, unparseable replies take the extraction's label where it gives one",
                         {(cell["model"], cell["condition"], cell["reference"]): cell["values"]
                          for cell in results["cells"]},
                         results["analysis"], extraction.id)


def _coverage(n_covered: int, n_unparseable: int, n_labelled: int = 0) -> dict:
    return {"n_covered": n_covered, "n_unparseable": n_unparseable, "n_labelled": n_labelled,
            "coverage": f"read {n_covered} of {n_unparseable} unparseable replies, labelled {n_labelled}"}


def extraction_coverage(audit: Audit) -> dict[int, dict]:
    """Per extraction of the audit: how many of the audit's replies that are unparseable now it has an outcome for
    (its failed extractor requests not counted) and how many of those it gave a label, in numbers and in words
    ("read 42 of 42 unparseable replies, labelled 13": the rest it read as no label). After a resumed audit or a
    re-parse an extraction may cover fewer than all; asking for it again brings it up to date."""
    unparseable = {"state": AuditRequest.State.ANSWERED, "outcome": AuditRequest.Outcome.UNPARSEABLE}
    n_unparseable = AuditRequest.objects.filter(audit=audit, **unparseable).count()
    counts = (AuditExtractionLabel.objects.filter(
        extraction__audit=audit, **{f"request__{name}": value for name, value in unparseable.items()})
        .exclude(outcome="error").values("extraction_id").order_by()
        .annotate(n=Count("id"), n_labelled=Count("id", filter=Q(label__isnull=False)))
        .values_list("extraction_id", "n", "n_labelled"))
    covered = {extraction_id: (n, n_labelled) for extraction_id, n, n_labelled in counts}
    coverage = {}
    for extraction_id in AuditExtraction.objects.filter(audit=audit).values_list("id", flat=True):
        n_covered, n_labelled = covered.get(extraction_id, (0, 0))
        coverage[extraction_id] = _coverage(n_covered, n_unparseable, n_labelled)
    return coverage


def audit_metrics_export(*, audit: Audit, outcomes: str | None = None) -> Export:
    """One row per model × condition × reference with every metric and its 95% CI, and the cell's Δκ, under an
    outcome source (:func:`outcome_source_results`; ``outcomes`` and ``n_extracted`` say which); an undefined value
    is empty (None), its reason in the ``<name>_note`` column beside it."""
    source = outcome_source_results(audit, outcomes)
    delta = {(cell["model_id"], cell["condition"]): (cell["delta_kappa"], cell.get("delta_kappa_note"))
             for cell in source.analysis.get("kappa_gap", {}).get("cells", [])}
    conditions = {c: i for i, c in enumerate(audit.conditions.values_list("condition", flat=True))}
    models = {m.id: m for m in audit.models.all()}
    names = distinct_model_names(models.values())
    keys = sorted(source.metrics, key=lambda k: (models[k[0]].position, k[0], conditions.get(k[1], 99),
                                                 k[2] != "weighted"))
    rows = [(models[model].model, names[model], condition, reference, audit.unparsed,
             *(source.metrics[(model, condition, reference)].get(name) for name in METRIC_VALUES),
             *delta.get((model, condition), (None, None)), source.name,
             source.metrics[(model, condition, reference)].get("n_extracted"))
            for model, condition, reference in keys]
    return Export(METRIC_EXPORT, rows)


def _heatmap(metrics: dict, models: list, conditions: list[str], name: str) -> dict:
    """A models × conditions table of one metric against the weighted ground truth (seed 000 Tables 1–2):
    values with CIs and each cell's n (the items it is computed over), the best condition per row (the paper's
    bold), row means and column means. A mean averages the defined cells only; ``mean_note`` and
    ``column_notes`` say so when a cell was left out ("mean of 5 of 7 cells")."""
    rows = []
    names = distinct_model_names(models)
    for model in models:
        cells = [metrics.get((model.id, condition, "weighted"), {}) for condition in conditions]
        values = [cell.get(name) for cell in cells]
        finite = [v for v in values if v is not None]
        best = max(finite) if finite else None
        rows.append({"model_id": model.id, "model": names[model.id], "values": values,
                     "low": [cell.get(f"{name}_low") for cell in cells],
                     "high": [cell.get(f"{name}_high") for cell in cells],
                     "notes": [_note(cell, name) for cell in cells],
                     "n": [cell.get("n") for cell in cells],
                     "best": [v is not None and v == best for v in values],
                     "mean": sum(finite) / len(finite) if finite else None,
                     "mean_note": _partial_mean_note(len(finite), len(values))})
    column_means, column_notes = [], []
    for index in range(len(conditions)):
        column = [row["values"][index] for row in rows if row["values"][index] is not None]
        column_means.append(sum(column) / len(column) if column else None)
        column_notes.append(_partial_mean_note(len(column), len(rows)))
    return {"metric": name, "reference": "weighted", "rows": rows, "column_means": column_means,
            "column_notes": column_notes}


def _partial_mean_note(n_defined: int, n_cells: int) -> str:
    """"" when a mean is over every cell; else how many it averages (the undefined ones are left out)."""
    return "" if n_defined in (0, n_cells) else f"mean of {n_defined} of {n_cells} cells"


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
    names = distinct_model_names(models)
    rows = []
    for model in models:
        for condition in conditions:
            delta = deltas.get((model.id, condition), {})
            for reference in ("weighted", "majority"):
                values = metrics.get((model.id, condition, reference))
                if values is None:
                    continue
                rows.append({
                    "model_id": model.id, "model": names[model.id], "condition": condition,
                    "reference": reference, "n": values.get("n"), "n_items": values.get("n_items"),
                    "metrics": [{"name": name, "label": label, "value": values.get(name),
                                 "low": values.get(f"{name}_low"), "high": values.get(f"{name}_high"),
                                 "note": _note(values, name), "ci_note": values.get(f"{name}_ci_note") or ""}
                                for name, label in METRIC_NAMES.items()],
                    "delta_kappa": delta.get("delta_kappa"),
                    "delta_kappa_note": delta.get("delta_kappa_note") or ("" if delta else "no Δκ for this cell"),
                })
    return rows


def audit_dashboard_data(audit: Audit, outcomes: str | None = None) -> dict:
    """Everything the audit dashboard draws, as JSON-ready data, under an outcome source (default the strict
    outcomes; ``outcome_source`` and ``outcome_sources`` say which is shown and which can be)."""
    models = list(audit.models.all())
    conditions = list(audit.conditions.values_list("condition", flat=True))
    source = outcome_source_results(audit, outcomes)
    coverage = extraction_coverage(audit)
    metrics = source.metrics
    analysis = source.analysis
    gap = analysis.get("kappa_gap", {})
    names = distinct_model_names(models)
    scatter = [{"model": names[model.id], "model_id": model.id, "condition": condition, "reference": reference,
                "precision": values.get("precision"), "recall": values.get("recall"), "f1": values.get("f1"),
                "n": values.get("n")}
               for model in models for condition in conditions for reference in ("weighted", "majority")
               if (values := metrics.get((model.id, condition, reference)))]
    return {
        "audit": {"id": audit.id, "name": audit.name, "status": audit.status, "status_label": audit.get_status_display(),
                  "status_reason": audit.status_reason, "unparsed": audit.unparsed,
                  "unparsed_label": audit.get_unparsed_display(), "n_requests": audit.n_requests,
                  "analysed": audit.analysed_at is not None},
        "models": audit.models_listing(),
        "conditions": [{"code": c, "name": DEFAULT_TEMPLATES[c].name if c in DEFAULT_TEMPLATES else c}
                       for c in conditions],
        "kappa": _heatmap(metrics, models, conditions, "kappa"),
        "f1": _heatmap(metrics, models, conditions, "f1"),
        "gap": gap,
        "gap_defined_cells": sum(1 for cell in gap.get("cells", []) if cell.get("delta_kappa") is not None),
        "model_means": analysis.get("model_means", []),
        "condition_means": analysis.get("condition_means", []),
        "scatter": scatter,
        "metric_rows": _metric_rows(metrics, models, conditions, gap),
        "robustness": robustness_dashboard_data(audit),
        "judged_groups": judged_groups(audit),
        "outcome_source": {"name": source.name, "label": source.label},
        "outcome_sources": [{"name": STRICT, "label": "strict outcomes (default)"}] + [
            {"name": f"extraction:{e.id}",
             "label": f"extraction {e.id}: {e.extractor} ({coverage[e.id]['coverage']})"}
            for e in AuditExtraction.objects.filter(audit=audit, results__isnull=False).only("id", "extractor")],
    }


def robustness_dashboard_data(audit: Audit) -> dict:
    """The dashboard's robustness section (alternative ground truths), from ``Audit.analysis["robustness"]`` (strict
    outcomes): κ per model × condition × alternative with its CI for the chart, the Δκ tests and Kendall's τ for the
    table."""
    from annotation.alternatives import ALTERNATIVES

    stored = (audit.analysis or {}).get("robustness") or {}
    if not stored.get("available"):
        return {"available": False, "notes": stored.get("notes", [])}
    names = {a.name: a.label for a in ALTERNATIVES}
    tau = {(row["scope"], row["alternative"]): row for row in stored.get("tau", [])}
    rows = [{**test, "label": names.get(test["alternative"], test["alternative"]),
             **{f"tau_{scope}": tau.get((scope, test["alternative"]), {}).get("tau") for scope in
                ("model", "condition", "cell")}}
            for test in stored.get("tests", [])]
    return {"available": True, "alternatives": [{"name": n, "label": names.get(n, n)} for n in stored["alternatives"]],
            "cells": [{k: cell.get(k) for k in ("model", "condition", "alternative", "kappa", "kappa_low", "kappa_high")}
                      for cell in stored.get("cells", [])],
            "rows": rows, "notes": stored.get("notes", []),
            "study_analysis_computed_at": stored.get("study_analysis_computed_at")}


EXTRACTION_COUNTS = ("label_0", "label_1", "none", "unparseable", "error")


def audit_extractions(audit: Audit) -> list[dict]:
    """The audit's extractions, oldest first, each with the counts of its outcomes (``label_0``, ``label_1``,
    ``none``, ``unparseable``, ``error``, ``n``), ``n_to_extract``: the audit's unparseable replies now, and how
    many of them it covers (:func:`extraction_coverage`: ``n_covered``, ``coverage`` in words)."""
    counts: dict[int, dict[str, int]] = {}
    rows = (AuditExtractionLabel.objects.filter(extraction__audit=audit).values("extraction_id", "outcome", "label")
            .annotate(n=Count("id")).order_by())
    for row in rows:
        name = f"label_{row['label']}" if row["outcome"] == "label" else row["outcome"]
        counts.setdefault(row["extraction_id"], dict.fromkeys(EXTRACTION_COUNTS, 0))[name] += row["n"]
    n_to_extract = AuditRequest.objects.filter(audit=audit, state=AuditRequest.State.ANSWERED,
                                               outcome=AuditRequest.Outcome.UNPARSEABLE).count()
    coverage = extraction_coverage(audit)
    out = []
    for extraction in (AuditExtraction.objects.filter(audit=audit).select_related("endpoint").defer("results")
                       .order_by("id")):
        extraction_counts = counts.get(extraction.id, dict.fromkeys(EXTRACTION_COUNTS, 0))
        out.append({"id": extraction.id, "mode": extraction.mode, "extractor": extraction.extractor,
                    "version": extraction.version, "endpoint": extraction.endpoint_id,
                    "endpoint_name": extraction.endpoint.name if extraction.endpoint else None,
                    "model": extraction.model, "params": extraction.params, "digest": extraction.digest,
                    "status": extraction.status, "status_reason": extraction.status_reason,
                    "created_at": extraction.created_at, "finished_at": extraction.finished_at,
                    "counts": {**extraction_counts, "n": sum(extraction_counts.values())},
                    "n_to_extract": n_to_extract, "n_covered": coverage[extraction.id]["n_covered"],
                    "n_labelled": coverage[extraction.id]["n_labelled"],
                    "coverage": coverage[extraction.id]["coverage"], "outcomes": f"extraction:{extraction.id}"})
    return out


EXTRACTION_LABEL_EXPORT = ["request_id", "model", "model_label", "condition", "item", "replicate", "strict_outcome",
                           "strict_reason", "reply", "extraction", "mode", "extractor", "outcome", "label", "reason",
                           "key", "extractor_reply"]


def audit_extraction_labels_export(*, extraction: AuditExtraction) -> Export:
    """One row per reply the extraction read: the request, its strict outcome and reply, and the extraction's
    outcome, label (empty when none) and reason; in model mode the extractor request's key and raw answer."""
    rows = (AuditExtractionLabel.objects.filter(extraction=extraction).order_by("request_id").values_list(
        "request_id", "request__audit_model__model", "request__audit_model__label", "request__condition",
        "request__item__external_id", "request__replicate", "request__outcome", "request__parse_reason",
        "request__reply__text", "extraction_id", "extraction__mode", "extraction__extractor", "outcome", "label",
        "reason", "key", "reply__text"))
    return Export(EXTRACTION_LABEL_EXPORT, rows, transform=_model_label)


def _model_label(row: tuple) -> tuple:
    """The model's label column shows its name when it has no label of its own (as the metrics export does)."""
    return (*row[:2], row[2] or row[1], *row[3:])


ROBUSTNESS_TABLES = {
    "cells": ["model_id", "model", "condition", "alternative", "n", "kappa", "kappa_low", "kappa_high", "kappa_note",
              "f1", "f1_low", "f1_high", "f1_note", "delta_kappa"],
    "ranks": ["scope", "model_id", "key", "alternative", "mean_kappa", "rank"],
    "tau": ["scope", "alternative", "tau", "p_value", "n", "note"],
    "tests": ["alternative", "mean_delta", "t_statistic", "p_value", "df", "bootstrap_low", "bootstrap_high",
              "n_cells", "note"],
    "snapshot": ["alternative", "source", "n_items", "n_changed", "n_missing", "n_unlabelled"],
}


def audit_robustness_export(*, audit: Audit, table: str = "cells") -> Export:
    """A table of the audit's re-scoring against every alternative ground truth (``Audit.analysis["robustness"]``,
    computed when the audit is analysed; empty until then or when the study's analysis has no alternatives)."""
    if table not in ROBUSTNESS_TABLES:
        raise ValueError(f"table must be one of {', '.join(ROBUSTNESS_TABLES)}, not {table!r}")
    records = (audit.analysis or {}).get("robustness", {}).get(table, [])
    columns = ROBUSTNESS_TABLES[table]
    return Export(columns, [tuple(record.get(column) for column in columns) for record in records])


EXPLAINED_REPLY_COLUMNS = ["request_id", "model", "model_name", "condition", "target", "preceding", "following",
                           "label", "explanation", "reference_label", "majority_label"]


def explained_replies(audit: Audit) -> pd.DataFrame:
    """The audit's replies the strict parser read a label from and that carry an explanation, one row per request
    (each replicate its own row), in request id order, with the sentence and its context and the audit's snapshot
    of the item's weighted and majority labels (None where the item has none): the population an error-analysis
    round samples (``Paradigm.explained_replies``). One query: the labels are correlated subqueries. The label
    columns are nullable integers (``Int64``)."""
    snapshot = AuditItem.objects.filter(audit=OuterRef("audit"), item=OuterRef("item"))
    rows = (AuditRequest.objects
            .filter(audit=audit, outcome=AuditRequest.Outcome.LABEL, label__isnull=False, item__isnull=False)
            .exclude(explanation="")
            .annotate(reference_label=Subquery(snapshot.values("weighted_label")[:1]),
                      majority_label=Subquery(snapshot.values("majority_label")[:1]))
            .order_by("id")
            .values_list("id", "audit_model_id", "audit_model__label", "audit_model__model", "condition",
                         "item__target", "item__preceding", "item__following", "label", "explanation",
                         "reference_label", "majority_label"))
    frame = pd.DataFrame(list(rows), columns=["request_id", "model", "model_label", "model_field", "condition",
                                              "target", "preceding", "following", "label", "explanation",
                                              "reference_label", "majority_label"])
    frame["model_name"] = frame.model_label.where(frame.model_label != "", frame.model_field)
    # Nullable integers: an item without a ground truth stays missing instead of turning the column into floats.
    return frame[EXPLAINED_REPLY_COLUMNS].astype({"request_id": "int64", "model": "int64", "label": "Int64",
                                                  "reference_label": "Int64", "majority_label": "Int64"})


def headline(audit: Audit) -> Headline | None:
    """Table 1 (seed 000 §4.2): Cohen's κ of each model × condition against the weighted ground truth, with its
    bootstrap 95% CI and n, from the stored strict metrics; None before the audit is analysed."""
    if audit.analysed_at is None:
        return None
    # Read through the related managers' .all(), so that a page listing many audits prefetches them once.
    names = audit.model_names()
    conditions = [(condition.condition, condition_name(condition.condition))
                  for condition in sorted(audit.conditions.all(), key=lambda c: (c.position, c.id))]
    metrics = {(metric.audit_model_id, metric.condition): metric.values for metric in audit.metrics.all()
               if metric.reference == AuditMetric.Reference.WEIGHTED}
    rows = []
    for model_id, name in names.items():
        for code, cell in conditions:
            values = metrics.get((model_id, code))
            if values is None:
                continue
            rows.append(HeadlineRow(name, cell, values.get("kappa"), values.get("kappa_low"),
                                    values.get("kappa_high"), values.get("n"), values.get("kappa_note") or ""))
    return Headline("Cohen's κ against the weighted ground truth (Table 1)", "Condition", "max", tuple(rows))


JUDGED_COLUMNS = ["request_id", "model", "model_label", "condition", "replicate", "item", "preceding", "text",
                  "following", "weighted_label", "majority_label", "group_label", "label", "correct", "explanation",
                  "outcome", "parse_reason"]
JUDGED_GROUPS = ("all", *GROUPS)
"""The psychometric groups the error browser narrows to: each group's test set (the items every annotator of the
group labelled alike, seed 000 §3.4; "all": every annotator), with the label they agreed on."""
JUDGED_ORDERINGS = {"item": ("item__position", "item_id", "audit_model__position", "condition", "replicate"),
                    "model": ("audit_model__position", "audit_model_id", "condition", "item__position", "replicate"),
                    "condition": ("condition", "audit_model__position", "item__position", "replicate"),
                    "outcome": ("outcome", "audit_model__position", "condition", "item__position", "replicate")}
"""The error browser's sorts (each ends in a unique key, so pages never overlap); "-name" reverses one."""


_CORRECT_AT = JUDGED_COLUMNS.index("correct")


def _judged_row_function(names: dict[int, str]):
    """Each row with ``model_label`` the model's name in the audit's tables (:meth:`Audit.model_names`: two
    unlabelled entries of one model told apart) and ``correct`` inserted: the label equals the weighted ground
    truth (None without a label or a ground truth)."""
    def judged_row(row: tuple) -> tuple:
        weighted, label = row[JUDGED_COLUMNS.index("weighted_label")], row[JUDGED_COLUMNS.index("label")]
        correct = None if weighted is None or label is None else label == weighted
        # row: audit model id, then the columns of JUDGED_COLUMNS without model_label and correct.
        return (row[1], row[2], names.get(row[0], row[2]), *row[3:_CORRECT_AT], correct, *row[_CORRECT_AT:])
    return judged_row


def judged_groups(audit: Audit) -> list[dict]:
    """The psychometric groups the error browser can narrow to: those whose test set in the study's latest analysis
    holds any of the audit's items, with how many (one query)."""
    counts = dict(ItemSetMember.objects.filter(study_id=audit.study_id, set_name__in=JUDGED_GROUPS,
                                               item__in=AuditItem.objects.filter(audit=audit).values("item"))
                  .values("set_name").annotate(n=Count("id")).values_list("set_name", "n"))
    return [{"name": name, "label": SET_DESCRIPTIONS[name], "n_items": counts[name]}
            for name in JUDGED_GROUPS if counts.get(name)]


def judged_replies_export(*, audit: Audit, model: int | None = None, condition: str | None = None,
                          outcome: str | None = None, group: str | None = None, disagrees: str | None = None,
                          q: str = "", ordering: str = "item") -> Export:
    """The error browser: one row per finished request (each replicate its own row) with the sentence and its
    context, the audit's snapshot of the weighted and majority labels, the model's label, whether it is right
    (against the weighted ground truth), its explanation and outcome. Narrowed to one model, condition or outcome;
    ``group`` (:data:`JUDGED_GROUPS`): only the items of that psychometric group's test set in the study's latest
    analysis, with the group's agreed label as ``group_label`` (None without a group); ``disagrees`` "weighted",
    "majority" or "group" (with a group): labelled replies whose label differs from that reference (an item
    without it is left out); ``q``: the sentence or the explanation contains it (case-insensitive); sorted by
    ``ordering`` (:data:`JUDGED_ORDERINGS`). One query, the references as correlated subqueries."""
    if disagrees == "group" and group is None:
        raise ValueError("disagreeing with a group's label needs the group")
    snapshot = AuditItem.objects.filter(audit=OuterRef("audit"), item=OuterRef("item"))
    rows = (AuditRequest.objects.filter(audit=audit, item__isnull=False)
            .exclude(state=AuditRequest.State.PENDING)
            .annotate(weighted_label=Subquery(snapshot.values("weighted_label")[:1]),
                      majority_label=Subquery(snapshot.values("majority_label")[:1])))
    if group is None:
        rows = rows.annotate(group_label=Value(None, output_field=IntegerField()))
    else:
        members = ItemSetMember.objects.filter(study_id=audit.study_id, set_name=group, item=OuterRef("item"))
        rows = rows.annotate(group_label=Subquery(members.values("label")[:1])).filter(group_label__isnull=False)
    if model is not None:
        rows = rows.filter(audit_model_id=model)
    if condition is not None:
        rows = rows.filter(condition=condition)
    if outcome is not None:
        rows = rows.filter(outcome=outcome)
    if disagrees is not None:
        reference = f"{disagrees}_label"
        rows = rows.filter(label__isnull=False, **{f"{reference}__isnull": False}).exclude(label=F(reference))
    if q:
        rows = rows.filter(Q(item__target__icontains=q) | Q(explanation__icontains=q))
    keys = JUDGED_ORDERINGS[ordering.removeprefix("-")]
    rows = rows.order_by(*(f"-{key}" if ordering.startswith("-") else key for key in keys), "id")
    return Export(JUDGED_COLUMNS, rows.values_list(
        "audit_model_id", "id", "audit_model__model", "condition", "replicate", "item__external_id",
        "item__preceding", "item__target", "item__following", "weighted_label", "majority_label", "group_label", "label",
        "explanation", "outcome", "parse_reason"), _judged_row_function(audit.model_names()))
