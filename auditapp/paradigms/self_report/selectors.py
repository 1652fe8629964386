"""Reads of self-report audits: the dashboard's data (seed 000 §4.4, Figure 2), the progress table's forms and the
error browser's answers item by item, each beside the same item's answer on the other form
(:func:`judged_items_export`)."""
from __future__ import annotations

from dataclasses import asdict

from auditapp.models import Audit
from auditapp.paradigms.self_report.design import Design, threshold_descriptions
from auditapp.paradigms.self_report.services import design_of, item_answers, questionnaires_of
from common.export_rows import Export

MASKED = "masked"
JUDGED_ITEM_COLUMNS = ["model_id", "model", "replicate", "form", "position", "kind", "source", "number", "keying",
                       "text", "outcome", "option", "reason", "other_form", "other_option", "differs"]
JUDGED_ITEM_ORDERINGS = {
    "form": "model, replicate, form, then the position as presented",
    "item": "the item's source and number, then model, replicate and form (an item's forms side by side)",
    "outcome": "outcome, then model, replicate, form and position",
}
"""The browser's sorts; each ends in the presented position, so pages never overlap."""
JUDGED_OUTCOMES = ("answer", "refusal", "unparseable", "error", "pending")
JUDGED_KINDS = ("instrument", "filler", "dummy")


def form_cells(audit: Audit) -> list[tuple[str, str]]:
    """The audit's forms (a self-report request's condition is its form) with the names the dashboard shows."""
    return list(_form_names(design_of(audit)).items())


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
    model_ids = {name: model_id for model_id, name in audit.model_names().items()}
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

    rule = analysis.get("rule") or {**asdict(design.validity), "text": design.validity.describe()}
    return {
        "judged": judged_choices(audit),
        "audit": {"id": audit.id, "name": audit.name, "paradigm": audit.paradigm, "status": audit.status,
                  "status_label": audit.get_status_display(), "status_reason": audit.status_reason,
                  "n_requests": audit.n_requests, "analysed": bool(analysis.get("instruments"))},
        "models": audit.models_listing(),
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


def _other_form(form: str, source: str, forms: set[str]) -> str | None:
    """The form an instrument item also appears in: the masked form for the instrument's original, and back."""
    other = f"original:{source}" if form == MASKED else MASKED
    return other if other in forms else None


def judged_items_export(audit: Audit, *, model: int | None = None, form: str | None = None,
                        kind: str | None = None, source: str | None = None, outcome: str | None = None,
                        differs: bool | None = None, q: str = "", ordering: str = "form") -> Export:
    """The error browser: one row per model × replicate × form × presented item (the answers export's rows), each
    instrument item beside the same model's answer to it at the same replicate on its other form (the masked form
    for an original, the instrument's original for the masked; seed 000 §4.4 compares them). ``differs``: the two
    chosen options differ (None where either form has no answer, or the item is a filler or dummy item, which only
    the masked form holds). Narrowed to one model (its id), form, kind (instrument, filler, dummy), source (an
    instrument's slug), outcome or ``differs`` value; ``q``: the wording shown contains it (case-insensitive); sorted by ``ordering``
    (:data:`JUDGED_ITEM_ORDERINGS`). The answers are read as the answers export reads them (one query for the
    requests, one for the judgments)."""
    rows = item_answers(audit)
    forms = {row["form"] for row in rows}
    chosen = {(row["model_id"], row["replicate"], row["form"], row["source"], row["number"]): row
              for row in rows if row["kind"] == "instrument"}
    for row in rows:
        other_form = _other_form(row["form"], row["source"], forms) if row["kind"] == "instrument" else None
        other = chosen.get((row["model_id"], row["replicate"], other_form, row["source"], row["number"]))
        row["other_form"] = other_form or ""
        row["other_option"] = other["option"] if other else ""
        both = other is not None and row["option_index"] is not None and other["option_index"] is not None
        row["differs"] = (row["option_index"] != other["option_index"]) if both else None
    folded = q.casefold()
    kept = [row for row in rows
            if (model is None or row["model_id"] == model) and (form is None or row["form"] == form)
            and (kind is None or row["kind"] == kind) and (source is None or row["source"] == source) and (outcome is None or row["outcome"] == outcome)
            and (differs is None or row["differs"] is differs) and (not q or folded in row["text"].casefold())]
    position = {model_id: n for n, model_id in enumerate(dict.fromkeys(row["model_id"] for row in rows))}
    keys = {
        "form": lambda row: (position[row["model_id"]], row["replicate"], row["form"], row["position"]),
        "item": lambda row: (row["source"], row["number"], position[row["model_id"]], row["replicate"], row["form"],
                             row["position"]),
        "outcome": lambda row: (row["outcome"], position[row["model_id"]], row["replicate"], row["form"],
                                row["position"]),
    }
    kept.sort(key=keys[ordering.removeprefix("-")], reverse=ordering.startswith("-"))
    return Export(JUDGED_ITEM_COLUMNS, [tuple(row[column] for column in JUDGED_ITEM_COLUMNS) for row in kept])


def judged_choices(audit: Audit) -> dict[str, list[str]]:
    """What the browser's filters can name: the audit's forms (with their names) and the presented items' sources."""
    design = design_of(audit)
    names = _form_names(design)
    return {"forms": [{"code": code, "name": name} for code, name in names.items()],
            "sources": [{"code": instrument.slug, "name": instrument.name} for instrument in design.instruments]}
