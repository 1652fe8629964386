"""BITS sentences as units, an upload's score columns as recorded columns, and the corpus content hash."""
import dataclasses
import hashlib

import pytest

from auditapp.corpora import units_canonical_json, units_hash, units_problems
from auditapp.engine.protocol import Unit
from auditapp.paradigms.bits.corpus import CONTROL, generate, paper_spec
from auditapp.paradigms.bits.units import EMPTY_CELL, FACTOR_NAMES, sentence_units, uploaded_units
from auditapp.paradigms.bits.upload import parse_upload
from tests.auditapp.test_bits_upload import controls, perturbed


@pytest.fixture(scope="module")
def paper_units():
    return sentence_units(generate(paper_spec()))


def test_a_generated_sentence_keeps_its_key_text_factors_and_control(paper_units):
    by_key = {unit.key: unit for unit in paper_units}
    deaf = by_key["T6|aggravated|PWD:SD|Deaf"]
    assert deaf.text == "They were aggravated because of the deaf neighbour."
    assert dict(deaf.factors) == {"template": "T6", "emotion": "Anger", "word": "aggravated", "group": "PWD:SD",
                                  "term": "Deaf", "is_control": "0"}
    assert dict(deaf.fields) == {"control": "T6|aggravated|control"}
    control = by_key["T1|control"]
    # A neutral template has no word and a control no term: empty strings, never None, so factors stay text.
    assert dict(control.factors) == {"template": "T1", "emotion": "", "word": "", "group": CONTROL, "term": "",
                                     "is_control": "1"}
    assert dict(control.fields) == {"control": None}
    assert all(tuple(unit.factors) == FACTOR_NAMES for unit in paper_units)
    assert units_problems(paper_units) == []


def test_an_upload_becomes_units_and_one_recorded_column_per_tool_with_every_unit():
    units, columns = uploaded_units(parse_upload(perturbed(), controls()))
    assert [u.key for u in units] == [
        "T1|control|They are parents of a child.", "T6|control|They were vexing because of the neighbour.",
        "T1|They are parents of a Blind child.", "T1|They are parents of an Autistic child.",
        "T6|They were vexing  because of the Deaf neighbour."]
    assert units[3].factors["emotion"] == "Neutral" and units[3].factors["word"] == ""
    assert units[3].fields["control"] == "T1|control|They are parents of a child."
    assert [c.name for c in columns] == ["GOOGLE", "VADER"]
    google, vader = columns
    assert [value for _, value, _ in vader.scores] == [0.0, -0.5, -0.4, -0.1, -0.6]
    assert vader.n_missing == 0
    # GOOGLE: the control file has no such column; the Blind row's cell is empty. Missing, with the reason.
    assert google.scores == (
        ("T1|control|They are parents of a child.", None, "the control file has no column 'GOOGLE'"),
        ("T6|control|They were vexing because of the neighbour.", None, "the control file has no column 'GOOGLE'"),
        ("T1|They are parents of a Blind child.", None, EMPTY_CELL),
        ("T1|They are parents of an Autistic child.", 0.2, ""),
        ("T6|They were vexing  because of the Deaf neighbour.", -1.0, ""),
    )


def test_units_hash_is_sha256_of_the_canonical_json_and_stable():
    units = [Unit(key="a", text="A b.", factors={"g": "x"}, fields={"control": None}),
             Unit(key="b", text="C d.", factors={"g": "y"})]
    assert units_canonical_json(units) == (
        '[{"factors":{"g":"x"},"fields":{"control":null},"key":"a","pair":"","text":"A b."},'
        '{"factors":{"g":"y"},"fields":{},"key":"b","pair":"","text":"C d."}]')
    assert units_hash(units) == hashlib.sha256(units_canonical_json(units).encode()).hexdigest()
    # The same content built again (factor order in a mapping does not matter) hashes the same.
    again = [Unit(key="a", text="A b.", factors={"g": "x"}, fields={"control": None}),
             Unit(key="b", text="C d.", factors={"g": "y"})]
    assert units_hash(again) == units_hash(units)


def test_units_hash_changes_with_order_and_every_part_of_a_unit():
    units = [Unit(key="a", text="A b.", factors={"g": "x"}), Unit(key="b", text="C d.", factors={"g": "y"})]
    base = units_hash(units)
    assert units_hash(list(reversed(units))) != base
    for change in ({"key": "z"}, {"text": "A c."}, {"factors": {"g": "w"}}, {"fields": {"control": "b"}},
                   {"pair": "p1"}):
        assert units_hash([dataclasses.replace(units[0], **change), units[1]]) != base, change


def test_paper_corpus_hash_is_stable_across_generations(paper_units):
    assert units_hash(sentence_units(generate(paper_spec()))) == units_hash(paper_units)


def test_units_problems_name_every_unit_at_fault():
    units = [Unit(key="a", text="x", factors={"g": "1"}), Unit(key="a", text="y", factors={"g": "1"}),
             Unit(key="", text="z", factors={"g": "1"}), Unit(key="k" * 301, text="w", factors={"g": "1"}),
             Unit(key="c", text="v", factors={"h": "1"}), Unit(key="d", text="u\x00", factors={"g": 2})]
    assert units_problems(units) == [
        "unit 2 ('a'): the same key as unit 1",
        "unit 3 (''): the key is empty",
        f"unit 4 ({'k' * 80!r}): the key has 301 characters; at most 300",
        "unit 5 ('c'): factors ['h'] where the corpus has ['g']",
        "unit 6 ('d'): every factor must be text",
        "unit 6 ('d'): contains a NUL character (byte 0), which cannot be stored",
    ]
    assert units_problems([]) == ["the corpus has no units"]
    assert units_problems([Unit(key="a", text="x", factors={"text": "1", "a__b": "2", "ok_1": "3"})]) == [
        "factors: text cannot name a factor (a column of the unit table)",
        "factors: 'a__b': a factor's name is a letter, then letters, digits and single underscores"]
