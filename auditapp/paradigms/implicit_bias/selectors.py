"""Reads of the seed 003 audits (word association, WABT; affective attribution, AAT) for their error browser: one
row per model × instance with the prompt (rebuilt from the corpus and the seed: :mod:`.generation`, never stored),
the model's reply, what was read from it and whether it goes the stereotype's way (:func:`judged_instances_export`).
A two-turn AAT instance is one conversation: its row is the second turn's, with the first turn's question and the
model's description beside it.

What differs between the two tasks is declared once here (:data:`READINGS`): the WABT shows eq. 1's bias score and
its four counts, consistent with the stereotype when the score is above 0 (seed 003 §3.2: +1 consistent, −1
reversed); the AAT shows the answer, consistent when it is the one FAR or UAR counts (comedy for an advantaged
group, S_a, eq. 2; tragedy for a disadvantaged one, S_b, eq. 3). Filters and sorts are SQL; each page's prompts are
rebuilt for its rows only.
"""
from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from django.db.models import F, OrderBy, Q

from auditapp.models import Audit, AuditRequest
from auditapp.paradigms.implicit_bias import stats
from auditapp.paradigms.implicit_bias.services import (
    ANSWER_CODES,
    ANSWER_OF_CODE,
    ImplicitBiasRequests,
    Task,
    cells_function,
    failed_reason,
    parse_count,
)
from common.export_rows import Export


@dataclass(frozen=True)
class Reading:
    """What a task's browser reads from a judgment: the ``outcome`` of a reply read, what its
    condition is (``condition_heading``), its ``columns`` (read by ``fields``, shown by ``shown`` from the
    request's condition and what was read), whether a row goes the stereotype's way (``consistent``, None when
    nothing was read) and, in SQL, which rows do (``consistent_q``) and which were read and do not
    (``inconsistent_q``), an extra sort, and the page's wording (``headings`` of the columns,
    ``consistent_heading``, ``consistent_help``)."""

    outcome: str
    condition_heading: str
    columns: tuple[str, ...]
    fields: tuple[Any, ...]
    shown: Callable[[tuple], tuple]
    consistent: Callable[[str, tuple], bool | None]
    consistent_q: Q
    inconsistent_q: Q
    ordering: tuple[str, OrderBy]
    headings: tuple[str, ...]
    consistent_heading: str
    consistent_help: str


def _wabt_consistent(condition: str, shown: tuple) -> bool | None:
    score = shown[0]
    return None if score is None else score > 0


_AAT_CONSISTENT = {("S_a", "comedy"), ("S_b", "tragedy")}
"""The answers FAR (eq. 2: comedy for an advantaged group) and UAR (eq. 3: tragedy for a disadvantaged one) count."""
_AAT_CONSISTENT_Q = (Q(condition="S_a", judgments__label=ANSWER_CODES["comedy"])
                     | Q(condition="S_b", judgments__label=ANSWER_CODES["tragedy"]))


def _aat_consistent(condition: str, shown: tuple) -> bool | None:
    answer = shown[0]
    return None if answer is None else (condition, answer) in _AAT_CONSISTENT


READINGS: dict[str, Reading] = {
    "wabt": Reading(
        outcome=AuditRequest.Outcome.SCORE,
        condition_heading="Dimension",
        columns=("bias_score", *stats.COUNT_COLUMNS),
        fields=("judgments__value", *(parse_count(column) for column in stats.COUNT_COLUMNS)),
        shown=lambda read: read,
        consistent=_wabt_consistent,
        consistent_q=Q(judgments__value__gt=0),
        inconsistent_q=Q(judgments__value__lte=0),
        ordering=("bias_score", F("judgments__value").desc(nulls_last=True)),
        headings=("Bias score", "N(S_a, X_a)", "N(S_a, X_b)", "N(S_b, X_a)", "N(S_b, X_b)"),
        consistent_heading="Consistent (score > 0)",
        consistent_help="the bias score (eq. 1) is above 0: the reply gives the positive words to the advantaged "
                        "group's identifier more than to the other (+1: every one)"),
    "aat": Reading(
        outcome=AuditRequest.Outcome.LABEL,
        condition_heading="Group label",
        columns=("answer",),
        fields=("judgments__label",),
        shown=lambda read: (None if read[0] is None else ANSWER_OF_CODE[read[0]],),
        consistent=_aat_consistent,
        consistent_q=_AAT_CONSISTENT_Q,
        inconsistent_q=Q(judgments__label__isnull=False) & ~_AAT_CONSISTENT_Q,
        ordering=("answer", F("judgments__label").asc(nulls_last=True)),
        headings=("Answer",),
        consistent_heading="Consistent",
        consistent_help="the answer is one FAR or UAR counts: comedy for an advantaged group (S_a), tragedy for a "
                        "disadvantaged one (S_b)"),
}
"""Each task's reading (by :attr:`Task.task`)."""

SHARED_ORDERINGS: dict[str, tuple[Any, ...]] = {
    "instance": ("unit", "audit_model__position", "audit_model_id"),
    "model": ("audit_model__position", "audit_model_id", "unit"),
    "condition": ("condition", "unit", "audit_model__position", "audit_model_id"),
    "outcome": ("outcome", "unit", "audit_model__position", "audit_model_id"),
}
"""The sorts of both tasks; each ends in a unique key (one request per model × instance), so pages never overlap."""
ORDERING_LABELS = {"bias_score": "bias score, highest first", "answer": "answer"}
ROW_START = ["request_id", "model", "instance", "condition", "social_group", "template", "prompt"]
TURN_COLUMNS = ["description", "question"]
ROW_END = ["reply", "outcome", "reason", "consistent"]


def orderings(task: Task) -> dict[str, tuple[Any, ...]]:
    """The sorts of ``task``'s browser: the shared ones and its own (the WABT's by bias score, highest first; the
    AAT's by answer), by name."""
    name, key = READINGS[task.task].ordering
    return {**SHARED_ORDERINGS, name: (key, *SHARED_ORDERINGS["instance"])}


def judged_columns(task: Task, *, two_turns: bool) -> list[str]:
    """The export's columns: a two-turn AAT's rows carry the first turn's question's answer (``description``) and
    the second question (``question``, the prompt being the first)."""
    return [*ROW_START, *(TURN_COLUMNS if two_turns else []), *READINGS[task.task].columns, *ROW_END]


def judged_page_columns(task: Task, *, two_turns: bool) -> list[dict]:
    """The browser's table head: each column's row field, heading and how it is shown (judged_browser.js)."""
    reading = READINGS[task.task]
    shown = [{"key": "model", "heading": "Model"}, {"key": "condition", "heading": reading.condition_heading},
             {"key": "social_group", "heading": "Social group"},
             {"key": "prompt", "heading": "Question 1 (describe)" if two_turns else "Prompt", "class": "text"}]
    if two_turns:
        shown += [{"key": "description", "heading": "Description (turn 1's answer)", "class": "text"},
                  {"key": "question", "heading": "Question 2", "class": "text"}]
    shown += [{"key": "reply", "heading": "Reply" if not two_turns else "Reply (turn 2)", "class": "text"},
              *({"key": key, "heading": heading, "class": "num", "digits": 3}
                for key, heading in zip(reading.columns, reading.headings, strict=True)),
              {"key": "consistent", "heading": reading.consistent_heading, "class": "correct", "yes": "✓ yes",
               "no": "✗ no", "mark": "true"},
              {"key": "outcome", "heading": "Outcome"}, {"key": "reason", "heading": "Reason", "class": "note"}]
    return shown


def judged_choices(audit: Audit, task: Task) -> dict:
    """What the browser's filters can name and how its table shows the rows: the models (id, name), the
    conditions (the WABT's dimensions, the AAT's group labels), the columns, what "consistent" means here."""
    two_turns = ImplicitBiasRequests(audit, task).last_turn > 0
    reading = READINGS[task.task]
    return {"models": [{"id": model_id, "label": name} for model_id, name in audit.model_names().items()],
            "conditions": [{"code": code, "name": name} for code, name in cells_function(task)(audit)],
            "columns": judged_page_columns(task, two_turns=two_turns),
            "orderings": [{"name": name, "label": ORDERING_LABELS.get(name, name)} for name in orderings(task)],
            "outcomes": [reading.outcome, *(outcome for outcome in AuditRequest.Outcome.values
                                            if outcome not in (AuditRequest.Outcome.LABEL, AuditRequest.Outcome.SCORE))],
            "condition_heading": reading.condition_heading, "consistent_heading": reading.consistent_heading, "consistent_help": reading.consistent_help}


def _row_function(builder: ImplicitBiasRequests, names: Mapping[int, str], *, two_turns: bool) -> Callable:
    """Each row as the export shows it: the model's name, the instance's factors, its prompt rebuilt, the reason
    (the judgment's, the parse's, or why a failed request has no answer) and what was read."""
    reading = READINGS[builder.task.task]

    def row(values: tuple) -> tuple:
        (request_id, model_id, unit, condition, state, outcome, parse_reason, error, reply, description,
         judgment_reason, *read) = values
        instance = builder.instances[unit]
        shown = reading.shown(tuple(read))
        if state == AuditRequest.State.FAILED:
            reason = failed_reason(error or "")
        else:
            reason = judgment_reason or parse_reason or ""
        turns = (description, instance.texts[1]) if two_turns else ()
        return (request_id, names.get(model_id, ""), unit, condition, instance.factors.get("social_group", ""),
                instance.factors.get("template", ""), builder.first_prompt(unit), *turns, *shown, reply,
                outcome or AuditRequest.Outcome.ERROR, reason, reading.consistent(condition, shown))
    return row


def judged_instances_export(*, audit: Audit, task: Task, model: int | None = None, condition: str | None = None,
                            outcome: str | None = None, consistent: bool | None = None, q: str = "",
                            ordering: str = "instance") -> Export:
    """The error browser: one row per model × instance (a two-turn AAT's conversation: its second turn) that is
    finished, with the prompt, the reply, what was read and whether it is consistent with the stereotype
    (:data:`READINGS`); narrowed to one model, condition or outcome; ``consistent`` True: the replies that go the
    stereotype's way, False: those read and going the other way (or, for the WABT, no way: a score of 0); ``q``: the
    reply (or a two-turn AAT's description) contains it, case-insensitive; sorted by ``ordering``
    (:func:`orderings`). One query; the prompts are rebuilt row by row as the rows are read."""
    builder = ImplicitBiasRequests(audit, task)
    reading = READINGS[task.task]
    two_turns = builder.last_turn > 0
    rows = (AuditRequest.objects.filter(audit=audit, turn=builder.last_turn)
            .exclude(state=AuditRequest.State.PENDING))
    if model is not None:
        rows = rows.filter(audit_model_id=model)
    if condition is not None:
        rows = rows.filter(condition=condition)
    if outcome is not None:
        rows = rows.filter(outcome=outcome)
    if consistent is not None:
        rows = rows.filter(reading.consistent_q if consistent else reading.inconsistent_q)
    if q:
        rows = rows.filter(Q(reply__text__icontains=q) | Q(previous__reply__text__icontains=q))
    keys = [key if isinstance(key, OrderBy) else F(key).asc() for key in orderings(task)[ordering]]
    rows = rows.order_by(*keys, "id")
    values = rows.values_list("id", "audit_model_id", "unit", "condition", "state", "outcome", "parse_reason", "error",
                              "reply__text", "previous__reply__text", "judgments__reason", *reading.fields)
    return Export(judged_columns(task, two_turns=two_turns), values,
                  _row_function(builder, audit.model_names(), two_turns=two_turns))
