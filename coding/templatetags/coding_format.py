"""How a round's page writes shares: as whole percentages rounded half up ("WORDING 41%", as seed 000 §4.3
reports them). Django's ``widthratio`` rounds halves to even, which writes 1 of 8 as 12%."""
from __future__ import annotations

import math
from fractions import Fraction

from django import template

register = template.Library()

LARGEST_DENOMINATOR = 10**6
"""A share is a count over at most this many excerpts: two such fractions differ by more than 10⁻¹², far above a
float's error, so the nearest fraction with a denominator this small is the count over n itself."""


@register.filter
def percent(share: float | None) -> str:
    """``share`` (0–1, a count over n as a float) as a whole percentage, half up; an undefined share is "—".

    Rounded from the fraction, not the float: 23/40 is 0.575, but 0.575 × 100 is 57.4999… in binary, which would
    round down to 57%."""
    if share is None:
        return "—"
    exact = Fraction(share).limit_denominator(LARGEST_DENOMINATOR) * 100
    return f"{math.floor(exact + Fraction(1, 2))}%"
