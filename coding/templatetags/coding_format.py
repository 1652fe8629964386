"""How a round's page writes shares: as whole percentages rounded half up ("WORDING 41%", as seed 000 §4.3
reports them). Django's ``widthratio`` rounds halves to even, which writes 1 of 8 as 12%."""
from __future__ import annotations

from decimal import ROUND_HALF_UP, Decimal

from django import template

register = template.Library()


@register.filter
def percent(share: float | None) -> str:
    """``share`` (0–1) as a whole percentage, half up; an undefined share is "—"."""
    if share is None:
        return "—"
    return f"{Decimal(repr(share * 100)).quantize(Decimal(1), rounding=ROUND_HALF_UP)}%"
