"""What the round tests share: a completed classification audit recorded through the ORM, and two lenses."""
from __future__ import annotations

import pytest

from tests.coding.round_support import make_codebook, make_completed_audit


@pytest.fixture
def audit(db):
    return make_completed_audit(30)


@pytest.fixture
def lenses(db):
    return [make_codebook("Thematic"), make_codebook("Linguistic", ("IFL", "PFL", "STEREOTYPES"))]
