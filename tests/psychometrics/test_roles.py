"""What an instrument is, the role it gets, the checks of a study's roles and what the weights lack: no database."""
from __future__ import annotations

import pytest

from psychometrics.roles import RoleEntry, inferred_role, instrument_kind, study_instrument_problems, weights_gap

AQ50 = RoleEntry(1, "aq50", "Autism-Spectrum Quotient (AQ-50)", "aq")
SATA = RoleEntry(2, "sata_partial", "SATA (partial: 5 published items, demo only)", "sata")


@pytest.mark.parametrize(("slug", "name", "kind"), [
    ("aq50", "Autism-Spectrum Quotient (AQ-50)", "aq"),
    ("aq-10", "", "aq"),
    ("aq_child", "", "aq"),
    ("aq", "", "aq"),
    ("lab_scale", "Autism Spectrum Quotient, our translation", "aq"),
    ("lab_scale", "AQ-10 short form", "aq"),
    ("sata_partial", "SATA (partial: 5 published items, demo only)", "sata"),
    ("sata26", "", "sata"),
    ("attitudes", "Societal Attitudes Towards Autism", "sata"),
    ("aqol", "AQoL-8D quality of life", None),      # a quality-of-life scale, not an AQ
    ("satisfaction", "Satisfaction with life", None),
    ("bigfive", "Big Five Inventory", None),
    ("combined", "AQ and SATA in one", None),        # both: no known kind
])
def test_an_instrument_is_known_by_its_slug_else_its_name(slug, name, kind):
    assert instrument_kind(slug=slug, name=name) == kind
    assert inferred_role(slug=slug, name=name) == (kind or "other")


def test_the_slug_decides_before_the_name():
    assert instrument_kind(slug="sata_lab", name="Autism-Spectrum Quotient") == "sata"


def test_a_study_with_one_aq_and_one_sata_has_no_problem():
    assert study_instrument_problems([AQ50, SATA, RoleEntry(3, "bfi", "Big Five", "other")]) == {}
    # An unknown instrument may carry a weight role; an AQ may be left out of the weights as Other.
    assert study_instrument_problems([RoleEntry(3, "lab", "Our scale", "aq"), RoleEntry(1, "aq50", "AQ-50", "other"),
                                      SATA]) == {}


def test_a_second_aq_or_sata_role_is_named_on_the_second_entry():
    problems = study_instrument_problems([AQ50, RoleEntry(3, "aq10", "AQ-10", "aq"), SATA,
                                          RoleEntry(4, "sata26", "SATA 26", "sata")])
    assert problems == {
        1: ["AQ-10: a second instrument with the role AQ (Autism-Spectrum Quotient (AQ-50) has it); the weights "
            "read one AQ score"],
        3: ["SATA 26: a second instrument with the role SATA (SATA (partial: 5 published items, demo only) has it); "
            "the weights read one SATA score"]}


def test_an_aq_given_the_sata_role_is_refused_and_so_is_the_reverse():
    problems = study_instrument_problems([RoleEntry(1, "aq50", "AQ-50", "sata"), RoleEntry(2, "sata_partial", "SATA",
                                                                                           "aq")])
    assert problems[0] == ["AQ-50 is an AQ instrument (slug 'aq50'): it cannot have the role SATA, the weights would "
                           "read it as the SATA score"]
    assert problems[1][0].startswith("SATA is a SATA instrument (slug 'sata_partial'): it cannot have the role AQ")


def test_an_instrument_listed_twice_and_an_unknown_role_are_problems():
    problems = study_instrument_problems([AQ50, RoleEntry(1, "aq50", "AQ-50", "other"), RoleEntry(5, "x", "X", "iat")])
    assert problems == {1: ["AQ-50 is listed twice"], 2: ["X: 'iat' is not a role (aq, sata or other)"]}


def test_the_weights_gap_says_what_lacks_and_what_the_weights_use():
    assert weights_gap(roles=["aq", "sata", "other"], iat_enabled=True, missing_rule="exclude") is None
    no_sata = weights_gap(roles=["aq"], iat_enabled=True, missing_rule="exclude")
    assert no_sata.startswith("The trust weights will have no SATA score (no instrument has the role SATA): under "
                              "this study's missing-instrument rule (give no weight to annotators missing an "
                              "instrument) no annotator gets a weight")
    assert no_sata.endswith("the weights would use the AQ score and IAT D score only.")
    assert weights_gap(roles=["sata"], iat_enabled=True, missing_rule="average") == (
        "The trust weights will have no AQ score (no instrument has the role AQ): the weights use the SATA score and "
        "IAT D score only (missing-instrument rule: average the instruments an annotator has).")
    assert weights_gap(roles=["aq", "sata"], iat_enabled=False, missing_rule="average") == (
        "The trust weights will have no IAT D score (the IAT is off): the weights use the AQ score and SATA score "
        "only (missing-instrument rule: average the instruments an annotator has).")
    assert weights_gap(roles=["other"], iat_enabled=False, missing_rule="average") == (
        "The trust weights will have no AQ score and no SATA score and no IAT D score (no instrument has the role AQ "
        "or SATA; the IAT is off): no annotator can get a weight, so the weighted ground truth has no label.")
