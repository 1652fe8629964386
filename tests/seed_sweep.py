"""Seeds for tests that compare a port with its reference on random inputs: the first few run in the quick layer,
the whole sweep with the suite (the rest are marked ``slow``), so ``-m pure`` stays quick and CI checks them all."""
from __future__ import annotations

import pytest


def seed_sweep(n_seeds: int, *, quick: int) -> list:
    return [pytest.param(seed, marks=[pytest.mark.slow] if seed >= quick else []) for seed in range(n_seeds)]
