"""Audits seen together: each audit's headline (its paper's first table, :mod:`auditapp.engine.headlines`, from
its paradigm's ``headline``), two or more audits side by side, and one model across every audit it took part in
(a model's card). Reads only: the headlines come from the stored analyses, and the caller passes the audits a user
may see (:func:`teams.scoping.visible`). Each also as the rows of one flat table, for CSV: one row per model × cell
(the comparison and the card: per audit too), every value in a column of its own.
"""
from __future__ import annotations

from collections.abc import Iterable

from django.db.models import QuerySet

from auditapp.engine import registry
from auditapp.engine.headlines import Headline, NotComparable, compare
from auditapp.models import Audit, AuditModel
from common.participant_input import unstorable_reason


def with_headline_data(audits: QuerySet[Audit]) -> QuerySet[Audit]:
    """The audits with what their headlines read prefetched (models, conditions, metrics): a page of many audits
    asks a few queries in all, not a few per audit."""
    return audits.prefetch_related("models", "conditions", "metrics")


MAX_COMPARED = 8
"""More audits than this side by side make a table nobody reads; the request is refused with the reason."""


def headline_of(audit: Audit) -> Headline | None:
    return registry.get(audit.paradigm).headline(audit)


def headline_summary(audit: Audit) -> dict | None:
    """What a list of audits shows of one: the measure and its one-line summary; None before the analysis."""
    headline = headline_of(audit)
    return None if headline is None else {"measure": headline.measure, "summary": headline.summary()}


def _parse_ids(raw: Iterable[str]) -> list[int]:
    ids: list[int] = []
    for part in raw:
        for piece in str(part).split(","):
            piece = piece.strip()
            if not piece:
                continue
            if not (piece.isascii() and piece.isdigit()) or len(piece) > 18:
                raise NotComparable(f"audit ids are whole numbers of at most 18 digits; got {piece!r}")
            if int(piece) not in ids:
                ids.append(int(piece))
    return ids


class AuditsNotFound(LookupError):
    """An audit asked for is not among those the user may see (a 404, as for any other team's object)."""


def audits_compared(audits: QuerySet[Audit], raw_ids: Iterable[str]) -> dict:
    """The headlines of the audits with those ids (in the order given) side by side, with each one's difference
    from the first and its approximate CI. AuditsNotFound (a 404) when one is not among ``audits``; NotComparable
    (a 400) when more than :data:`MAX_COMPARED` or fewer than two are asked, one has no analysis yet, or their
    headlines measure different things."""
    ids = _parse_ids(raw_ids)
    if len(ids) > MAX_COMPARED:
        raise NotComparable(f"compare at most {MAX_COMPARED} audits at once; {len(ids)} were asked")
    found = {audit.id: audit for audit in with_headline_data(audits.filter(pk__in=ids))}
    missing = [audit_id for audit_id in ids if audit_id not in found]
    if missing:
        raise AuditsNotFound(f"no audit of your teams with id {', '.join(map(str, missing))}")
    if len(ids) < 2:
        raise NotComparable("pick two or more audits to compare")
    chosen = [found[audit_id] for audit_id in ids]
    headlines = []
    for audit in chosen:
        headline = headline_of(audit)
        if headline is None:
            raise NotComparable(f"audit {audit.id} ({audit.name}) has no results yet")
        headlines.append(headline)
    table = compare(headlines)
    table["audits"] = [{"id": audit.id, "name": audit.name, "paradigm": audit.paradigm,
                        "paradigm_label": audit.get_paradigm_display(), "status": audit.status}
                       for audit in chosen]
    return table


def model_name_problem(model: str) -> str:
    """Why ``model`` (a model card's ``?model=``) names no model it could show ("" when it may): empty, or holding
    a character no database stores (a NUL, a lone surrogate), which no model's name holds."""
    if not model:
        return "name the model: ?model=<its name at the endpoint>"
    if reason := unstorable_reason(model):
        return f"model: the name {reason}"
    return ""


def model_card(audits: QuerySet[Audit], model: str) -> dict:
    """One model (its name at the endpoint) across every audit of ``audits`` it took part in: one section per
    paradigm, in the registry's order, each audit with the model's rows of its headline (newest audit first)."""
    entries = (AuditModel.objects.filter(audit__in=audits, model=model)
               .select_related("endpoint").order_by("-audit__created_at", "-audit_id"))
    by_audit: dict[int, list[AuditModel]] = {}
    for entry in entries:
        by_audit.setdefault(entry.audit_id, []).append(entry)
    audits_of = with_headline_data(Audit.objects.filter(pk__in=by_audit)).in_bulk()
    sections: dict[str, list[dict]] = {}
    for audit_id, entries_of_audit in by_audit.items():
        audit = audits_of[audit_id]
        names = audit.model_names()
        shown = {names[entry.id] for entry in entries_of_audit}
        headline = headline_of(audit)
        sections.setdefault(audit.paradigm, []).append({
            "audit": {"id": audit.id, "name": audit.name, "status": audit.status,
                      "status_label": audit.get_status_display()},
            "endpoints": sorted({entry.endpoint.name for entry in entries_of_audit}),
            "names": sorted(shown),
            "headline": None if headline is None else headline.for_models(shown).as_json()})
    return {"model": model, "n_audits": len(by_audit),
            "paradigms": [{"paradigm": name, "label": paradigm_label, "audits": sections[name]}
                          for name, paradigm_label in registry.choices() if name in sections]}


HEADLINE_COLUMNS = ("model", "cell", "value", "low", "high", "n", "note")


def headline_rows(table: dict) -> list[dict]:
    """An audit's headline (:meth:`Headline.as_json`) as flat rows, the measure on each."""
    return [{"measure": table["measure"], **{column: row[column] for column in HEADLINE_COLUMNS}}
            for row in table["rows"]]


def compared_rows(table: dict) -> list[dict]:
    """A comparison (:func:`audits_compared`) as flat rows: one per model × cell × audit, with the audit's value and
    its difference from the first audit's (empty for the first, and where either audit has no value)."""
    rows = []
    for row in table["rows"]:
        differences = [None, *row["differences"]]
        for audit, value, difference in zip(table["audits"], row["values"], differences, strict=True):
            value = value or {}
            difference = difference or {}
            rows.append({"measure": table["measure"], "model": row["model"], "cell": row["cell"],
                         "audit_id": audit["id"], "audit": audit["name"],
                         **{column: value.get(column) for column in ("value", "low", "high", "n", "note")},
                         "difference": difference.get("value"), "difference_low": difference.get("low"),
                         "difference_high": difference.get("high")})
    return rows


def model_card_rows(card: dict) -> list[dict]:
    """A model's card (:func:`model_card`) as flat rows: one per audit × its headline row of the model."""
    return [{"paradigm": section["paradigm"], "audit_id": entry["audit"]["id"], "audit": entry["audit"]["name"],
             "status": entry["audit"]["status"], "endpoints": ", ".join(entry["endpoints"]),
             "measure": entry["headline"]["measure"], **{column: row[column] for column in HEADLINE_COLUMNS}}
            for section in card["paradigms"] for entry in section["audits"] if entry["headline"]
            for row in entry["headline"]["rows"]]
