"""The whole counterfactual analysis (names and dialect: cells, summaries, completion, reasons) is pinned to its
stored output (``tests/auditapp/data/{names,dialect}_analysis.json``, recorded before the analysis was made
faster): a change of speed must not change a figure (floats to 1e-12) nor a row's order; and the analysis runs
NumPy in ordinary pages, setting its switch back.

If the analysis is meant to change, regenerate the files from ``counterfactual_cases`` and say why in the
commit."""
from __future__ import annotations

import json

import pytest

from tests.auditapp.counterfactual_cases import DATA, as_stored, assert_same_analysis, dialect_case, names_case


@pytest.mark.parametrize(("name", "case"), [("names", names_case), ("dialect", dialect_case)])
def test_the_analysis_gives_its_recorded_output(name, case):
    design, judged, failed, requests, model_names = case()
    expected = json.loads((DATA / f"{name}_analysis.json").read_text())
    assert_same_analysis(as_stored(design.analyse(judged, failed, requests, model_names)), expected)


def test_the_comparison_sees_a_changed_figure():
    design, judged, failed, requests, model_names = names_case()
    expected = json.loads((DATA / "names_analysis.json").read_text())
    judged.loc[judged["label"] == 0, "label"] = 1.0
    with pytest.raises(AssertionError):
        assert_same_analysis(as_stored(design.analyse(judged, failed, requests, model_names)), expected)


def test_the_analysis_runs_numpy_in_small_pages_and_sets_the_switch_back():
    from numpy._core.multiarray import _set_madvise_hugepage

    from auditapp.paradigms.counterfactual import services

    before = _set_madvise_hugepage(True)
    try:
        with services._numpy_in_small_pages():
            assert _set_madvise_hugepage(False) is False  # huge pages off inside
        assert _set_madvise_hugepage(True) is True  # and on again after
        with pytest.raises(ValueError, match="analysis failed"), services._numpy_in_small_pages():
            raise ValueError("the analysis failed")
        assert _set_madvise_hugepage(True) is True  # on again after a failure too
    finally:
        _set_madvise_hugepage(before)
