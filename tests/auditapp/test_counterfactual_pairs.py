"""The judged pairs of a counterfactual cell (auditapp.paradigms.counterfactual.pairs), worked by hand: each side's
state from the request and its judgments, whether the two labels differ, and every filter and sort of
select_pairs."""
from __future__ import annotations

from auditapp.paradigms.counterfactual.pairs import CellRequest, judged_pairs, select_pairs
from auditapp.paradigms.counterfactual.plan import PlannedText

SIDES = ("SAE", "AAVE")


def unit_pair(unit: str) -> tuple[str, str]:
    pair, dialect = unit.split(":", 1)[1].rsplit(":", 1)
    return pair, dialect


def batch(*units: str) -> list[PlannedText]:
    return [PlannedText(index, f"{index}:{unit}", f"text {unit}") for index, unit in enumerate(units, start=1)]


def pairs_of(requests, planned, judged):
    return judged_pairs(requests, planned, judged, sides=SIDES, unit_pair=unit_pair,
                        side_text=lambda iteration, pair, side: f"unasked {pair}:{side}")


def test_each_side_state_and_whether_the_labels_differ():
    # Request 1 (iteration 0): p1 both sides (yes, no: differ), p2 SAE only, p3 AAVE twice answered yes and no,
    # p4 both labelled alike, p5 SAE refused, p6 AAVE with no judgment stored.
    texts = batch("p1:SAE", "p2:SAE", "p1:AAVE", "p3:AAVE", "p3:AAVE", "p4:SAE", "p4:AAVE", "p5:SAE", "p5:AAVE",
                  "p6:AAVE")
    judged = {(1, "1:p1:SAE"): (1, "label", ""), (1, "3:p1:AAVE"): (0, "label", ""), (1, "2:p2:SAE"): (1, "label", ""),
              (1, "4:p3:AAVE"): (1, "label", ""), (1, "5:p3:AAVE"): (0, "label", ""),
              (1, "6:p4:SAE"): (0, "label", ""), (1, "7:p4:AAVE"): (0, "label", ""),
              (1, "8:p5:SAE"): (None, "refusal", "refused"), (1, "9:p5:AAVE"): (1, "label", "")}
    rows = {pair.pair: pair for pair in pairs_of([CellRequest(1, 0, "answered")], lambda iteration: texts, judged)}
    assert list(rows) == ["p1", "p2", "p3", "p4", "p5", "p6"]  # in the order of their first text
    p1, p2, p3, p4, p5, p6 = rows.values()
    assert [side.answer for side in p1.sides] == ["yes", "no"] and p1.differs is True
    assert p1.sides[1].indices == (3,) and p1.first_index == 1
    assert p2.sides[1].outcome == "unasked" and p2.sides[1].text == "unasked p2:AAVE" and p2.differs is None
    assert p2.sides[1].missing == "not in this request's batch" and p2.sides[0].answer == "yes"
    assert p3.sides[1].outcome == "inconsistent" and p3.sides[1].label is None and p3.sides[1].indices == (4, 5)
    assert p3.sides[1].missing == "asked 2 times, answered yes to text 4, no to text 5"
    assert p4.differs is False and p4.first_index == 6
    assert (p5.sides[0].outcome, p5.sides[0].missing, p5.differs) == ("refusal", "refusal: refused", None)
    assert (p6.sides[1].outcome, p6.sides[1].missing) == ("unrecorded", "no judgment recorded for text 10")


def test_a_failed_or_pending_request_leaves_every_side_without_a_label():
    texts = batch("p1:SAE", "p1:AAVE")
    failed, pending = pairs_of([CellRequest(1, 0, "failed", "HTTP 500 after 3 attempts"), CellRequest(2, 1, "pending")],
                               lambda iteration: texts, {})
    assert [side.outcome for side in failed.sides] == ["failed", "failed"]
    assert failed.sides[0].missing == "the request failed: HTTP 500 after 3 attempts" and failed.differs is None
    assert [side.missing for side in pending.sides] == ["not answered yet"] * 2 and pending.iteration == 1


ROWS = [
    {"iteration": 0, "first_index": 2, "pair": "b", "group": "Black", "sae_outcome": "label", "aave_outcome": "label",
     "differs": True, "sae_text": "We be working", "aave_text": "x"},
    {"iteration": 0, "first_index": 1, "pair": "a", "group": "Asian", "sae_outcome": "label", "aave_outcome": "label",
     "differs": False, "sae_text": "y", "aave_text": "Hello THERE"},
    {"iteration": 1, "first_index": 1, "pair": "c", "group": "Black", "sae_outcome": "refusal",
     "aave_outcome": "label", "differs": None, "sae_text": "z", "aave_text": None},
    {"iteration": 1, "first_index": 3, "pair": "a", "group": "Black", "sae_outcome": "label",
     "aave_outcome": "unasked", "differs": None, "sae_text": "w", "aave_text": "there"},
]


def chosen(**filters) -> list[tuple]:
    ordering = filters.pop("ordering", ("iteration", "first_index"))
    rows = select_pairs(ROWS, prefixes=("sae", "aave"), searched=("sae_text", "aave_text"), ordering=ordering,
                        **filters)
    return [(row["iteration"], row["pair"]) for row in rows]


def test_every_filter_and_sort():
    assert chosen() == [(0, "a"), (0, "b"), (1, "c"), (1, "a")]
    assert chosen(descending=True) == [(1, "a"), (1, "c"), (0, "b"), (0, "a")]
    assert chosen(ordering=("pair", "iteration", "first_index")) == [(0, "a"), (1, "a"), (0, "b"), (1, "c")]
    assert chosen(group="Black") == [(0, "b"), (1, "c"), (1, "a")]
    assert chosen(differs=True) == [(0, "b")]
    assert chosen(differs=False) == [(0, "a")]
    assert chosen(outcome="complete") == [(0, "a"), (0, "b")]
    assert chosen(outcome="missing") == [(1, "c"), (1, "a")]
    assert chosen(outcome="refusal") == [(1, "c")]
    assert chosen(outcome="unasked") == [(1, "a")]
    assert chosen(q="there") == [(0, "a"), (1, "a")]  # case-insensitive, either text; a missing text is no match
    assert chosen(q="there", group="Black", outcome="missing") == [(1, "a")]
