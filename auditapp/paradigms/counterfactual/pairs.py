"""The judged pairs of one model × task of a counterfactual audit, for its error browser (seed 002: what each
experiment compares). Pure: no Django.

A *pair* is what the paradigm compares within one request (one model × task × iteration): in a names audit the
two texts of a vignette that differ only in the name (both are always in the request); in a dialect audit one SAE/AAVE
pair of the material, of which the batch drew the SAE text, the AAVE text, both, or one of them twice (each text
of a batch is drawn independently). :func:`judged_pairs` gives one :class:`JudgedPair` per request × pair, in the
order of the request's numbered texts, each side in one :class:`SideState`:

- ``label``: every text of the side in the request has an answer and they agree: ``label`` 1 (yes) or 0 (no);
- ``refusal`` or ``unparseable``: a text of the side has no answer, the judgment's outcome and reason (the first
  such text of the side);
- ``inconsistent``: the side's text was asked twice or more in the batch and answered both yes and no;
- ``unasked``: the batch did not draw that side (dialect only);
- ``failed``: the request got no reply (its error); ``pending``: it is not answered yet;
- ``unrecorded``: the request was answered but holds no judgment of the text (a judgment was never written).

``differs`` is whether the two sides' labels differ, None unless both sides have one. :func:`select_pairs`
filters and sorts rows built from them (see its docstring).
"""
from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass

from auditapp.paradigms.counterfactual.plan import PlannedText

LABELLED = "label"
SIDE_OUTCOMES = (LABELLED, "refusal", "unparseable", "inconsistent", "unasked", "failed", "pending", "unrecorded")
"""What a side of a pair can be (see the module docstring)."""
OUTCOME_FILTERS = ("complete", "missing", *SIDE_OUTCOMES[1:])
"""The browser's outcome filter: ``complete`` both sides labelled, ``missing`` a side without a label, or a side
in one of the other states."""
ANSWERS = {1: "yes", 0: "no"}
ANSWER_CHOICES = ("yes", "no")


@dataclass(frozen=True)
class CellRequest:
    """One request of the cell: its id, iteration, state (pending, answered, failed) and error (when failed)."""

    request_id: int
    iteration: int
    state: str
    error: str = ""


@dataclass(frozen=True)
class SideState:
    """One side of a pair in one request: its texts' numbers in the request (none when unasked), the text sent
    (None when unasked), its label (None when it has none), state (:data:`SIDE_OUTCOMES`) and, without a label,
    why (``missing``)."""

    indices: tuple[int, ...]
    text: str | None
    label: int | None
    outcome: str
    missing: str | None

    @property
    def answer(self) -> str | None:
        return None if self.label is None else ANSWERS[self.label]


@dataclass(frozen=True)
class JudgedPair:
    request_id: int
    iteration: int
    pair: Hashable
    first_index: int
    sides: tuple[SideState, SideState]

    @property
    def differs(self) -> bool | None:
        first, second = self.sides
        if first.label is None or second.label is None:
            return None
        return first.label != second.label


def _side_state(texts: Sequence[PlannedText], request: CellRequest,
                judged: Mapping[tuple[int, str], tuple[int | None, str, str]]) -> SideState:
    if not texts:
        return SideState((), None, None, "unasked", "not in this request's batch")
    indices, text = tuple(planned.index for planned in texts), texts[0].text
    if request.state == "pending":
        return SideState(indices, text, None, "pending", "not answered yet")
    if request.state == "failed":
        return SideState(indices, text, None, "failed", f"the request failed: {request.error or 'no reason given'}")
    answers = []
    for planned in texts:
        judgment = judged.get((request.request_id, planned.unit))
        if judgment is None:
            return SideState(indices, text, None, "unrecorded", f"no judgment recorded for text {planned.index}")
        label, outcome, reason = judgment
        if label is None:
            return SideState(indices, text, None, outcome, f"{outcome}: {reason}" if reason else outcome)
        answers.append(label)
    if len(set(answers)) > 1:
        said = ", ".join(f"{ANSWERS[label]} to text {planned.index}" for planned, label in zip(texts, answers,
                                                                                                  strict=True))
        return SideState(indices, text, None, "inconsistent", f"asked {len(texts)} times, answered {said}")
    return SideState(indices, text, answers[0], LABELLED, None)


def judged_pairs(requests: Iterable[CellRequest], planned: Callable[[int], Sequence[PlannedText]],
                 judged: Mapping[tuple[int, str], tuple[int | None, str, str]], *, sides: tuple[str, str],
                 unit_pair: Callable[[str], tuple[Hashable, str]],
                 side_text: Callable[[int, Hashable, str], str]) -> list[JudgedPair]:
    """One pair per request × pair its texts hold, requests in the order given and pairs in the order of their
    first text in the request. ``planned(iteration)`` rebuilds the request's numbered texts; ``judged`` maps
    (request id, unit) to (label or None, outcome, reason); ``unit_pair(unit)`` names a text's pair and side (one of
    ``sides``); ``side_text(iteration, pair, side)`` is the text a side would have had where the batch did not draw
    it."""
    rows = []
    for request in requests:
        texts_of: dict[Hashable, dict[str, list[PlannedText]]] = {}
        for text in planned(request.iteration):
            pair, side = unit_pair(text.unit)
            texts_of.setdefault(pair, {name: [] for name in sides})[side].append(text)
        for pair, by_side in texts_of.items():
            states = tuple(_side_state(by_side[side], request, judged) for side in sides)
            states = tuple(state if state.text is not None else
                           SideState((), side_text(request.iteration, pair, side), None, state.outcome, state.missing)
                           for state, side in zip(states, sides, strict=True))
            first = min(index for state in states for index in state.indices)
            rows.append(JudgedPair(request.request_id, request.iteration, pair, first, (states[0], states[1])))
    return rows


def _matches_outcome(row: Mapping, outcome: str, prefixes: tuple[str, str]) -> bool:
    states = [row[f"{prefix}_outcome"] for prefix in prefixes]
    if outcome == "complete":
        return all(state == LABELLED for state in states)
    if outcome == "missing":
        return any(state != LABELLED for state in states)
    return outcome in states


def select_pairs(rows: Sequence[Mapping], *, prefixes: tuple[str, str], searched: Sequence[str],
                 ordering: Sequence[str], descending: bool = False, group: str | None = None,
                 differs: bool | None = None, outcome: str | None = None, q: str | None = None) -> list[Mapping]:
    """The rows that pass every filter given, sorted by the ``ordering`` columns (``descending`` reverses).

    ``group``: the row's ``group`` equals it; ``differs``: True the sides' labels differ, False both sides are
    labelled alike (a pair without both labels passes neither); ``outcome``: one of :data:`OUTCOME_FILTERS` (a side
    in that state, ``complete`` or ``missing``); ``q``: the ``searched`` columns, case-insensitively, contain it.
    Rows hold ``<prefix>_outcome`` for each side's prefix. Sorting is stable, so rows equal in the ordering keep
    their order."""
    needle = q.casefold() if q else None
    selected = [row for row in rows
                if (group is None or row.get("group") == group)
                and (differs is None or row["differs"] is differs)
                and (outcome is None or _matches_outcome(row, outcome, prefixes))
                and (needle is None or any(needle in str(row[column] or "").casefold() for column in searched))]
    return sorted(selected, key=lambda row: tuple(row[column] for column in ordering), reverse=descending)
