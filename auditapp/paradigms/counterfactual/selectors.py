"""Reads of counterfactual audits for their error browser (seed 002): the judged pairs of one model × task
(:func:`judged_pairs_export`), each rebuilt from the audit's design (the texts are never stored) and filled with
the cell's judgments, read in one query.

One cell at a time keeps a page fast at any audit size: a cell is one model × task, ``iterations`` requests of 60
texts (names) or ``batch_size`` texts (dialect), whatever the number of models and tasks (seed 002's names audit
has 74,100 requests; a cell of it, 100).
"""
from __future__ import annotations

from dataclasses import dataclass

from auditapp.corpus_selectors import corpus_units
from auditapp.models import Audit, AuditJudgment, AuditRequest
from auditapp.paradigms.counterfactual.pairs import CellRequest, JudgedPair, judged_pairs, select_pairs
from auditapp.paradigms.counterfactual.services import iteration_of
from common.export_rows import Export

DEFAULT_ORDERING = {"iteration": ("iteration", "first_index")}
REQUESTS_PER_QUERY = 500
"""The cell's judgments are read by their requests' ids, this many a query: the lookup runs on the judgments'
(request, unit) index, where a filter on the audit made SQLite walk the whole audit's judgments (a cell of a
4.4-million-judgment audit: 0.97 s a page against 0.17 s)."""


class PairFilterError(ValueError):
    """A filter the audit cannot take; ``field`` names it."""

    def __init__(self, field: str, message: str):
        super().__init__(message)
        self.field = field


@dataclass(frozen=True)
class PairQuery:
    """The browser's filters, checked for their form by the API: the cell (``model`` id, ``task`` slug) and the
    optional ``group``, ``differs``, ``outcome``, search ``q`` and ``ordering`` (a name, "-" first reverses)."""

    model: int
    task: str
    group: str | None = None
    differs: bool | None = None
    outcome: str | None = None
    q: str | None = None
    ordering: str = "iteration"


def orderings(browser) -> dict[str, tuple[str, ...]]:
    """The sorts a flavour's rows take: by iteration, then the order of the texts in the request (the default), and
    the flavour's own."""
    return {**DEFAULT_ORDERING, **browser.orderings}


def pair_columns(browser) -> list[str]:
    """The export's columns, in order: the cell, the pair and the flavour's design columns, each side's text, label,
    state and why it is missing, and whether the labels differ."""
    sides = [f"{prefix}_{name}" for name in ("text", "label", "outcome", "missing") for prefix in browser.prefixes]
    return ["request_id", "model_id", "model", "task", "iteration", "pair", *browser.column_keys, *sides, "differs"]


def _checked(audit: Audit, browser, query: PairQuery, design) -> None:
    if not audit.models.filter(pk=query.model).exists():
        raise PairFilterError("model", f"audit {audit.id} has no model {query.model}")
    tasks = [task["slug"] for task in audit.design.get("tasks", [])]
    if query.task not in tasks:
        raise PairFilterError("task", f"audit {audit.id} asks no task {query.task!r}: one of {', '.join(tasks)}")
    name = query.ordering.removeprefix("-")
    if name not in orderings(browser):
        raise PairFilterError("ordering", f"a {audit.paradigm} audit's pairs sort by {', '.join(orderings(browser))}"
                                          f" (- first reverses), not {name!r}")
    if query.group is not None:
        groups = browser.groups(design) if browser.groups is not None else None
        if groups is None:
            raise PairFilterError("group", f"a {audit.paradigm} audit's pairs have no group")
        if query.group not in groups:
            raise PairFilterError("group", f"audit {audit.id} has no group {query.group!r}: one of "
                                           f"{', '.join(groups)}")


def _row(pair: JudgedPair, *, model_id: int, model: str, task: str, described: dict, prefixes) -> dict:
    sides = {}
    for prefix, side in zip(prefixes, pair.sides, strict=True):
        sides |= {f"{prefix}_text": side.text, f"{prefix}_label": side.answer, f"{prefix}_outcome": side.outcome,
                  f"{prefix}_missing": side.missing}
    return {"request_id": pair.request_id, "model_id": model_id, "model": model, "task": task,
            "iteration": pair.iteration, "pair": pair.pair, "first_index": pair.first_index, **described, **sides,
            "differs": pair.differs}


def judged_pairs_export(*, audit: Audit, browser, design_class, query: PairQuery) -> Export:
    """The judged pairs of the cell ``query.model`` × ``query.task`` that pass its filters, in its order (see
    :func:`auditapp.paradigms.counterfactual.pairs.select_pairs`): one row per request × pair with the columns of
    :func:`pair_columns`. ``browser`` is the flavour's :class:`~auditapp.paradigms.counterfactual.interface.PairBrowser`.
    Raises PairFilterError for a model, task, group or ordering the audit does not have. The cell's requests in one
    query, their judgments in one per :data:`REQUESTS_PER_QUERY` requests, and the corpus's units for the
    design."""
    design = design_class.from_audit(corpus_units(audit.corpus_id), seed=audit.seed, settings=audit.design)
    _checked(audit, browser, query, design)
    cell = AuditRequest.objects.filter(audit=audit, audit_model_id=query.model, condition=query.task)
    requests = sorted((CellRequest(request_id, iteration_of(unit), state, error)
                       for request_id, unit, state, error in cell.values_list("id", "unit", "state", "error")),
                      key=lambda request: (request.iteration, request.request_id))
    judged: dict = {}
    ids = [request.request_id for request in requests]
    for start in range(0, len(ids), REQUESTS_PER_QUERY):
        judged |= {(request_id, unit): (label, outcome, reason) for request_id, unit, label, outcome, reason in
                   AuditJudgment.objects.filter(request_id__in=ids[start:start + REQUESTS_PER_QUERY])
                   .values_list("request_id", "unit", "label", "outcome", "reason")}
    pairs = judged_pairs(requests, lambda iteration: design.texts(iteration, query.task), judged,
                         sides=browser.sides, unit_pair=browser.unit_pair,
                         side_text=lambda iteration, pair, side: browser.side_text(design, query.task, iteration, pair,
                                                                                    side))
    model = audit.model_names()[query.model]
    rows = [_row(pair, model_id=query.model, model=model, task=query.task, prefixes=browser.prefixes,
                 described=dict(zip(browser.column_keys, browser.describe(design, pair.iteration, pair.pair),
                                    strict=True)))
            for pair in pairs]
    selected = select_pairs(rows, prefixes=browser.prefixes, searched=browser.searched,
                            ordering=orderings(browser)[query.ordering.removeprefix("-")],
                            descending=query.ordering.startswith("-"), group=query.group, differs=query.differs,
                            outcome=query.outcome, q=query.q)
    columns = pair_columns(browser)
    return Export(columns, [tuple(row[column] for column in columns) for row in selected])
