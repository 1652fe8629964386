"""The codebook rules (coding/codebooks.py): the three defaults of seed 000 §3.4/§4.3 and the validation of a
codebook given as JSON, every problem named with its path."""
from __future__ import annotations

import pytest

from coding.codebooks import (
    MAX_CODES,
    RESERVED_SHORTCUTS,
    SHORTCUT_ORDER,
    CodebookInvalid,
    codebook_parse,
    default_codebooks,
)


def problems_of(data) -> list[str]:
    with pytest.raises(CodebookInvalid) as raised:
        codebook_parse(data)
    return [str(problem) for problem in raised.value.problems]


def test_the_defaults_are_the_three_lenses_and_the_codes_the_paper_names():
    defaults = default_codebooks()
    assert [d.spec.name for d in defaults] == ["Thematic content and error type",
                                               "Disability-studies linguistic features", "Reasoning structure"]
    names = [[code.name for code in d.spec.codes] for d in defaults]
    # §4.3 "First analyst".
    assert names[0] == ["WORDING", "STEREOTYPES", "TONE", "INTENT", "FOCUS", "IDENTITY", "INTRACOMMUNITY"]
    # §3.4 (IFL vs PFL, medicalized framing, intersectional cues) and §4.3 "Second analyst".
    assert names[1] == ["IDENTITY-FIRST LANGUAGE (IFL)", "PERSON-FIRST LANGUAGE (PFL)", "STEREOTYPES",
                        "PATHOLOGIZATION", "MEDICALIZED FRAMING", "INTERSECTIONAL CUES",
                        "UNCLEAR MEANING FOR ABLEISM DETERMINATION"]
    # §4.3 "Third analyst" names two; the keyword codes are ours and say so.
    assert names[2] == ["NO CATEGORIZATION", "SPEAKER IDENTITY ENGAGEMENT", "KEYWORD PRESENCE", "KEYWORD ABSENCE"]
    for code in defaults[2].spec.codes[2:]:
        assert code.definition.startswith("Ours")
        assert code.name in defaults[2].spec.source and "are ours" in defaults[2].spec.source


def test_every_default_code_has_our_definition_examples_and_its_own_key():
    for default in default_codebooks():
        spec = default.spec
        assert "§3.4" in spec.source and "§4.3" in spec.source and "ours" in spec.source
        assert all(code.definition_is_ours and code.definition for code in spec.codes)
        assert all(1 <= len(code.examples) <= 2 for code in spec.codes)
        keys = [code.shortcut for code in spec.codes]
        assert keys == list(SHORTCUT_ORDER[:len(keys)]) and not set(keys) & RESERVED_SHORTCUTS
    assert len({d.lineage for d in default_codebooks()}) == 3


def test_a_code_without_a_shortcut_gets_the_next_free_key_digits_first_never_a_reserved_one():
    codes = [{"name": f"C{i}"} for i in range(12)] + [{"name": "given", "shortcut": "2"}]
    spec = codebook_parse({"name": "lens", "codes": codes})
    keys = [code.shortcut for code in spec.codes]
    assert keys == ["1", "3", "4", "5", "6", "7", "8", "9", "a", "b", "c", "d", "2"]
    many = codebook_parse({"name": "lens", "codes": [{"name": f"C{i}"} for i in range(MAX_CODES)]})
    keys = [code.shortcut for code in many.codes]
    assert keys[:32] == list(SHORTCUT_ORDER) and keys[32:] == ["", "", ""]
    assert not {"n", "p", "m", "?"} & set(keys)


def test_an_uppercase_shortcut_is_the_same_key():
    assert codebook_parse({"name": "x", "codes": [{"name": "A", "shortcut": "Q"}]}).codes[0].shortcut == "q"


@pytest.mark.parametrize(("data", "expected"), [
    ([], 'a codebook is a JSON object, not an array'),
    ({"codes": [{"name": "A"}]}, "name: required"),
    ({"name": "   ", "codes": [{"name": "A"}]}, "name: empty name"),
    ({"name": "x" * 201, "codes": [{"name": "A"}]}, "name: too long: 201 characters, at most 200"),
    ({"name": "L", "codes": [{"name": "A"}], "colour": "red"}, "colour: unknown key"),
    ({"name": "L"}, "codes: required: a list of codes"),
    ({"name": "L", "codes": {}}, "codes: must be a list of codes, not an object"),
    ({"name": "L", "codes": []}, "codes: a codebook needs at least one code"),
    ({"name": "L", "codes": [{"name": f"C{i}"} for i in range(36)]}, "codes: 36 codes: at most 35"),
    ({"name": "L", "codes": ["TONE"]}, "codes[0]: a code is a JSON object, not a string"),
    ({"name": "L", "codes": [{"name": ""}]}, "codes[0].name: empty name"),
    ({"name": "L", "codes": [{"name": 7}]}, "codes[0].name: must be text, not a number"),
    ({"name": "L", "codes": [{"name": "A" * 101}]}, "codes[0].name: too long: 101 characters, at most 100"),
    ({"name": "L", "codes": [{"name": "A"}, {"name": "B"}, {"name": "WORDING"}, {"name": "Wording"}]},
     'codes[3].name: duplicate "Wording" (also codes[2])'),
    ({"name": "L", "codes": [{"name": "A", "shortcut": "n"}]}, 'codes[0].shortcut: shortcut reserved: "n"'),
    ({"name": "L", "codes": [{"name": "A", "shortcut": "?"}]}, 'codes[0].shortcut: shortcut reserved: "?"'),
    ({"name": "L", "codes": [{"name": "A", "shortcut": "M"}]}, 'codes[0].shortcut: shortcut reserved: "M"'),
    ({"name": "L", "codes": [{"name": "A", "shortcut": "ab"}]}, 'codes[0].shortcut: "ab" cannot be a shortcut'),
    ({"name": "L", "codes": [{"name": "A", "shortcut": "é"}]}, 'codes[0].shortcut: "é" cannot be a shortcut'),
    ({"name": "L", "codes": [{"name": "A", "shortcut": 1}]}, "codes[0].shortcut: must be one character, not a"),
    ({"name": "L", "codes": [{"name": "A", "shortcut": "1"}, {"name": "B", "shortcut": "1"}]},
     'codes[1].shortcut: "1" is already the key of codes[0]'),
    ({"name": "L", "codes": [{"name": "A", "examples": "one"}]}, "codes[0].examples: must be a list of strings"),
    ({"name": "L", "codes": [{"name": "A", "examples": ["ok", 3]}]},
     "codes[0].examples[1]: examples must be strings, not a number"),
    ({"name": "L", "codes": [{"name": "A", "examples": ["two\nlines"]}]}, "codes[0].examples[0]: an example is one"),
    ({"name": "L", "codes": [{"name": "A", "examples": ["x" * 301]}]}, "codes[0].examples[0]: too long: 301"),
    ({"name": "L", "codes": [{"name": "A", "examples": ["e"] * 11}]}, "codes[0].examples: 11 examples: at most 10"),
    ({"name": "L", "codes": [{"name": "A", "definition": ["no"]}]}, "codes[0].definition: must be text, not an array"),
    ({"name": "L", "codes": [{"name": "A", "definition_is_ours": "yes"}]},
     "codes[0].definition_is_ours: must be true or false, not a string"),
    ({"name": "L", "codes": [{"name": "A", "colour": "#fff"}]}, "codes[0].colour: unknown key"),
    ({"name": "L", "codes": [{"name": "A", "shortcut": None}]}, "codes[0].shortcut: must be one character, not null"),
    ({"name": "L", "description": None, "codes": [{"name": "A"}]}, "description: must be text, not null"),
    ({"name": "L", "codes": [{"name": "A", "examples": None}]}, "codes[0].examples: must be a list of strings, not"),
    ({"name": None, "codes": [{"name": "A"}]}, "name: must be text, not null"),
    ({"name": "L\x00", "codes": [{"name": "A"}]}, "name: contains a NUL character"),
    ({"name": "L\ud800", "codes": [{"name": "A"}]}, "name: contains an invalid character (an unpaired surrogate)"),
    ({"name": "L", "codes": [{"name": "A", "definition": "\udfff"}]}, "codes[0].definition: contains an invalid"),
    ({"name": "L", "codes": [{"name": "A", "examples": ["ok\ud800"]}]}, "codes[0].examples[0]: contains an invalid"),
])
def test_every_problem_is_named_with_its_path(data, expected):
    assert any(problem.startswith(expected) for problem in problems_of(data)), problems_of(data)


def test_all_problems_are_named_at_once():
    problems = problems_of({"name": "", "codes": [{"name": "TONE", "shortcut": "p"}, {"name": "TONE"}, {}]})
    assert problems == ["name: empty name", 'codes[0].shortcut: shortcut reserved: "p" is a key of the coding page '
                        "itself (n, p, m, ?)", 'codes[1].name: duplicate "TONE" (also codes[0])', "codes[2].name: required"]
