"""An audit's headline: the one table of its paper that a researcher looks at first (seed 000 Table 1's κ per model
and condition, seed 001 Table 7's ScoreSense, seed 002's gaps, seed 003's Tables 4 and 5), as rows of model × cell
with a value, its 95% CI where the analysis gives one, and n; and what the audit index, the comparison of audits
and a model's card compute from it: a one-line summary, and two or more audits side by side with differences.

Each paradigm builds its headline from what its analysis stored (``Paradigm.headline``); nothing here is
recomputed from judgments. Pure: no Django.
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field

Z_95 = 1.959963984540054
"""The standard normal's 97.5th percentile: a 95% interval is ±Z_95 standard errors."""


@dataclass(frozen=True)
class HeadlineRow:
    """One model × cell of a headline: ``value`` None when undefined (``note`` says why); ``low``/``high`` its
    95% CI when the analysis computed one; ``note`` may also carry the paper's significance mark."""

    model: str
    cell: str
    value: float | None
    low: float | None = None
    high: float | None = None
    n: int | None = None
    note: str = ""


@dataclass(frozen=True)
class Headline:
    """``measure`` names the value and where the paper has it ("Cohen's κ against the weighted ground truth,
    Table 1"); ``cell`` names the rows' second key ("Condition", "Group", "Task"); ``largest`` says which row the
    summary points at: "max" (higher is better: agreement) or "abs" (a bias, either sign)."""

    measure: str
    cell: str
    largest: str
    rows: tuple[HeadlineRow, ...] = field(default_factory=tuple)

    def summary(self) -> str:
        """One line for a list of audits: the range of the defined values and the row the measure points at."""
        defined = [(row, row.value) for row in self.rows if row.value is not None and math.isfinite(row.value)]
        if not defined:
            return f"{self.measure}: no defined value" + (f" ({self.rows[0].note})" if self.rows and
                                                          self.rows[0].note else "")
        values = [value for _, value in defined]
        top, top_value = max(defined, key=(lambda pair: pair[1]) if self.largest == "max" else
                             (lambda pair: abs(pair[1])))
        which = "highest" if self.largest == "max" else "largest in size"
        span = f"{_fmt(min(values))} to {_fmt(max(values))}" if len(values) > 1 else _fmt(values[0])
        return (f"{self.measure}: {span} over {len(values)} of {len(self.rows)} cells; {which} {_fmt(top_value)} "
                f"({top.model}, {top.cell})")

    def for_models(self, names: set[str]) -> Headline:
        """The rows of the named models only (a model's card)."""
        return Headline(self.measure, self.cell, self.largest, tuple(row for row in self.rows if row.model in names))

    def as_json(self) -> dict:
        return {"measure": self.measure, "cell": self.cell, "largest": self.largest, "summary": self.summary(),
                "rows": [asdict(row) for row in self.rows]}


def _fmt(value: float) -> str:
    """Three decimals; a value that rounds to zero is "0.000", never "-0.000" (the ``z`` option)."""
    return f"{value:z.3f}"


def standard_error(row: HeadlineRow) -> float | None:
    """The standard error a symmetric 95% CI implies, (high − low) / (2 · 1.96); None without a CI."""
    if row.low is None or row.high is None or not (math.isfinite(row.low) and math.isfinite(row.high)):
        return None
    return (row.high - row.low) / (2 * Z_95)


@dataclass(frozen=True)
class Difference:
    """``value`` = the later audit's value − the first's; ``low``/``high`` its approximate 95% CI when both have
    one: ±1.96 · √(se₁² + se₂²), each se from its own CI (independent estimates)."""

    value: float | None
    low: float | None
    high: float | None


def difference(first: HeadlineRow | None, other: HeadlineRow | None) -> Difference:
    if first is None or other is None or first.value is None or other.value is None:
        return Difference(None, None, None)
    value = other.value - first.value
    if not math.isfinite(value):
        return Difference(None, None, None)
    se_first, se_other = standard_error(first), standard_error(other)
    if se_first is None or se_other is None:
        return Difference(value, None, None)
    half = Z_95 * math.sqrt(se_first ** 2 + se_other ** 2)
    return Difference(value, value - half, value + half)


class NotComparable(ValueError):
    """The headlines measure different things (audits of different paradigms or designs)."""


def compare(headlines: Sequence[Headline]) -> dict:
    """Two or more headlines of the same measure side by side, JSON-ready: one row per (model, cell) in the order
    first seen, each audit's row as a dict (None where it has none) and its :class:`Difference` from the first
    audit's, as a dict."""
    if len(headlines) < 2:
        raise NotComparable("pick two or more audits to compare")
    measures = {(headline.measure, headline.cell) for headline in headlines}
    if len(measures) > 1:
        raise NotComparable("these audits' headline tables measure different things: "
                            + "; ".join(sorted(f"{measure} per {cell.lower()}" for measure, cell in measures)))
    keyed = [{(row.model, row.cell): row for row in headline.rows} for headline in headlines]
    order: dict[tuple[str, str], None] = {}
    for headline in headlines:
        for row in headline.rows:
            order.setdefault((row.model, row.cell), None)
    rows = []
    for key in order:
        first = keyed[0].get(key)
        rows.append({"model": key[0], "cell": key[1],
                     "values": [None if rows_of.get(key) is None else asdict(rows_of[key]) for rows_of in keyed],
                     "differences": [asdict(difference(first, rows_of.get(key))) for rows_of in keyed[1:]]})
    return {"measure": headlines[0].measure, "cell": headlines[0].cell, "rows": rows}
