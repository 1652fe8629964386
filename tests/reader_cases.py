"""The answer readers against real replies read by a person (tests/data/real_replies/*.csv): each reader's reading of
each reply, and its agreement with the person's.

A case table has one row per reply: ``reader`` (which reader reads it), the ``prompt`` sent, the ``reply`` and its
``finish_reason``, and ``human``, what a person reads in it, in the reader's terms:

- ``aat_two_turn``, ``aat_single_prompt``: ``comedy``, ``tragedy``, ``neutral`` or ``none`` (no choice);
- ``wabt``: ``invalid``, or the assignment as JSON (``{"word": "identifier", ...}``);
- ``classification``: ``0``, ``1`` or ``none``; read by the strict parser and by the rules extraction;
- ``names``: per numbered text of the prompt, ``index=label`` pairs separated by spaces (the texts not named have
  no label), or ``none`` (no text labelled).

A reader agrees with the person on a reply (for names: on a text) when it reads the same; it gives a **wrong label**
when it reads a label the person does not (another label, or one where the person reads none). A reader that
leaves a reply unread where the person reads a label disagrees, but misreports nothing.
"""
from __future__ import annotations

import csv
import json
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from auditapp.paradigms.classification.replies import parse_reply
from auditapp.paradigms.classification.verbal_rules import read_verbal
from auditapp.paradigms.counterfactual.replies import parse_batch
from auditapp.paradigms.implicit_bias.aat_replies import parse_aat_reply
from auditapp.paradigms.implicit_bias.generation import generate_wabt

CASES = Path(__file__).resolve().parent / "data" / "real_replies"
NONE = "none"
_TEXT_LINE = re.compile(r"^Text (\d+):", re.M)


@dataclass(frozen=True)
class Agreement:
    """One reader over a case table: how many readings (replies, or texts for names), how many agree with the
    person's, and how many give a label the person does not."""

    reader: str
    n: int
    agreed: int
    wrong_labels: int

    @property
    def share(self) -> float:
        return self.agreed / self.n if self.n else float("nan")


def case_rows(path: Path) -> list[dict]:
    with path.open(encoding="utf-8", newline="") as table:
        return list(csv.DictReader(table))


def _aat(form: str):
    def read(row: dict) -> Iterator[tuple[str, str]]:
        reading = parse_aat_reply(row["reply"], form=form)
        yield reading.answer or NONE, row["human"]
    return read


def _wabt_instances() -> dict[str, object]:
    return {instance.texts[0]: instance for instance in generate_wabt(samples_per_combination=1)}


def _wabt(row: dict, instances: dict) -> Iterator[tuple[str, str]]:
    from auditapp.paradigms.implicit_bias.wabt_replies import parse_wabt_reply

    instance = instances[row["prompt"]]
    reading = parse_wabt_reply(row["reply"], words=instance.words, identifiers=instance.identifiers)
    found = json.dumps(dict(reading.assignments), sort_keys=True) if reading.valid else "invalid"
    human = row["human"] if row["human"] == "invalid" else json.dumps(json.loads(row["human"]), sort_keys=True)
    yield found, human


def _strict(row: dict) -> Iterator[tuple[str, str]]:
    reading = parse_reply(row["reply"], row["finish_reason"])
    yield (str(reading.label) if reading.outcome == "label" else NONE), row["human"]


def _rules(row: dict) -> Iterator[tuple[str, str]]:
    reading = read_verbal(row["reply"])
    yield (NONE if reading.label is None else str(reading.label)), row["human"]


def _names(row: dict) -> Iterator[tuple[str, str]]:
    indices = [int(index) for index in _TEXT_LINE.findall(row["prompt"])]
    human = {} if row["human"] == NONE else {int(k): v for k, v in (pair.split("=") for pair in row["human"].split())}
    for text in parse_batch(row["reply"], indices, row["finish_reason"] or None).texts:
        yield (NONE if text.label is None else str(text.label)), human.get(text.index, NONE)


def agreements(rows: Iterable[dict]) -> list[Agreement]:
    """Each reader's agreement over the rows (the classification rows twice: the strict parser and the rules)."""
    rows = list(rows)
    instances = _wabt_instances() if any(row["reader"] == "wabt" for row in rows) else {}
    readers = {"aat_two_turn": [("AAT two-turn (Q2)", _aat("two_turn"))],
               "aat_single_prompt": [("AAT single prompt", _aat("single_prompt"))],
               "wabt": [("WABT", lambda row: _wabt(row, instances))],
               "classification": [("Classification, strict parser", _strict),
                                  ("Classification, rules extraction", _rules)],
               "names": [("Names batch (per text)", _names)]}
    found: dict[str, list[tuple[str, str]]] = {}
    for row in rows:
        for name, read in readers[row["reader"]]:
            found.setdefault(name, []).extend(read(row))
    return [Agreement(name, len(pairs), sum(a == b for a, b in pairs),
                      sum(a not in (NONE, "invalid") and a != b for a, b in pairs))
            for name, pairs in found.items()]
