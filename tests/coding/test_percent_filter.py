"""Shares on a round's page are whole percentages rounded half up, as seed 000 §4.3 writes them."""
from __future__ import annotations

import pytest

from coding.templatetags.coding_format import percent


@pytest.mark.parametrize(("share", "written"), [
    (1 / 8, "13%"),     # 12.5 → 13 (widthratio's half-to-even wrote 12%)
    (3 / 8, "38%"),     # 37.5 → 38
    (41 / 99, "41%"),   # 41.41 → 41: "WORDING (41%)"
    (65 / 99, "66%"),   # 65.66 → 66
    (1 / 6, "17%"),     # 16.67 → 17
    (23 / 40, "58%"),   # 57.5 → 58, though 0.575 * 100 is 57.4999... as a float
    (29 / 200, "15%"),  # 14.5 → 15
    (57 / 200, "29%"),  # 28.5 → 29
    (0.0, "0%"), (1.0, "100%"), (None, "—"),
])
def test_shares_are_written_as_whole_percentages_half_up(share, written):
    assert percent(share) == written


def test_every_count_over_n_is_rounded_half_up_from_the_fraction():
    """Against integer arithmetic: round(100 c / n) half up is floor((200 c + n) / 2n)."""
    wrong = [(count, n) for n in range(1, 401) for count in range(n + 1)
             if percent(count / n) != f"{(200 * count + n) // (2 * n)}%"]
    assert wrong == []
