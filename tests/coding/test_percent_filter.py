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
    (0.0, "0%"), (1.0, "100%"), (None, "—"),
])
def test_shares_are_written_as_whole_percentages_half_up(share, written):
    assert percent(share) == written
