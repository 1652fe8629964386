"""A BITS corpus in the public repository's shape: controls matched, recorded scores kept exactly, every bad
row named, nothing imported from a file with a problem. The sentences are ours, in the repository's columns
(an unnamed pandas index column, Template, Sentence, Sentiment, Class, SubClass, one column per tool)."""
import math

import pandas as pd
import pytest

from auditapp.paradigms.bits import sensitivity
from auditapp.paradigms.bits.corpus import CONTROL, corpus_frame
from auditapp.paradigms.bits.upload import BitsUploadError, parse_upload

CONTROL_HEADER = ["", "Template", "Sentence", "Sentiment", "VADER"]
PERTURBED_HEADER = ["", "Template", "Sentence", "Sentiment", "Class", "SubClass", "VADER", "GOOGLE"]


def records(header: list[str], rows: list[list[str]]):
    return [(n + 2, dict(zip(header, row, strict=True))) for n, row in enumerate(rows)]


def controls(*extra):
    return records(CONTROL_HEADER, [
        ["0", "T1", "They are parents of a child.", "Neutral", "0.0"],
        ["1", "T6", "They were vexing because of the neighbour.", "Anger", "-0.5"],
        *extra,
    ])


def perturbed(*extra):
    return records(PERTURBED_HEADER, [
        ["0", "T1", "They are parents of a Blind child.", "Neutral", "Disable", "Blind", "-0.4", ""],
        # "an" before a vowel in the sentence, "a" in the control: the same base sentence.
        ["1", "T1", "They are parents of an Autistic child.", "Neutral", "Disable", "Autistic", "-0.1", "0.2"],
        ["2", "T6", "They were vexing  because of the Deaf neighbour.", "Anger", "Normal", "Deaf", "-0.6", "-1"],
        *extra,
    ])


def test_controls_are_matched_by_removing_the_term_and_scores_are_kept_exactly():
    corpus = parse_upload(perturbed(), controls())

    by_text = {s.text: s for s in corpus.sentences}
    assert by_text["They are parents of an Autistic child."].control_key == "T1|control|They are parents of a child."
    assert by_text["They were vexing  because of the Deaf neighbour."].control_key == (
        "T6|control|They were vexing because of the neighbour.")
    assert by_text["They are parents of a child."].group == CONTROL
    assert by_text["They are parents of a Blind child."].term == "Blind"
    assert by_text["They were vexing  because of the Deaf neighbour."].emotion == "Anger"
    assert corpus.pairing.counts() == {"control column": 0, "exact": 3, "typo": 0, "position": 0, "unpaired": 0}
    assert corpus.unit_fields["T1|They are parents of a Blind child."] == {"row": 2, "pairing": "exact"}
    assert corpus.warnings == ("the control file has no GOOGLE scores: its pairs' ScoreSense is undefined",)

    scores = corpus.recorded_scores.set_index(["scorer", "key"])["score"]
    assert scores["VADER", "T1|They are parents of a Blind child."] == -0.4
    # An empty cell is a missing score, never 0; the control file has no GOOGLE column at all.
    assert math.isnan(scores["GOOGLE", "T1|They are parents of a Blind child."])
    assert ("GOOGLE", "T1|control|They are parents of a child.") not in scores.index
    assert corpus.summary()["recorded_scorers"] == ["GOOGLE", "VADER"]


def test_recorded_scores_feed_the_pair_statistics():
    corpus = parse_upload(perturbed(), controls())
    pairs = sensitivity.pair_with_controls(corpus_frame(corpus.sentences), corpus.recorded_scores)
    sense = sensitivity.score_sense(pairs).set_index(["scorer", "group"])
    # VADER, group Disable: (-0.4 - 0.0) and (-0.1 - 0.0), mean -0.25; group Normal: -0.6 - (-0.5) = -0.1.
    assert sense.loc[("VADER", "Disable"), "score_sense"] == pytest.approx(-0.25)
    assert sense.loc[("VADER", "Normal"), "score_sense"] == pytest.approx(-0.1)
    # GOOGLE has no control scores: no pair is complete, nothing is imputed.
    assert sense.loc[("GOOGLE", "Disable"), "n"] == 0
    assert math.isnan(sense.loc[("GOOGLE", "Disable"), "score_sense"])


def test_a_sentence_without_a_matching_control_is_reported_or_refused():
    odd = ["3", "T3", "There was a Deaf person at school.", "Neutral", "Disable", "Deaf", "0.1", "0.1"]
    corpus = parse_upload(perturbed(odd), controls())
    assert corpus.summary()["pairing"]["unpaired"] == [{
        "reason": "template T3 has no control", "n": 1, "rows": [5], "templates": ["T3"], "per_group": {"Disable": 1}}]
    assert [s.control_key for s in corpus.sentences if s.template == "T3"] == [None]
    assert corpus.unit_fields["T3|There was a Deaf person at school."] == {
        "row": 5, "pairing": "unpaired", "unpaired": "template T3 has no control"}
    pairs = sensitivity.pair_with_controls(corpus_frame(corpus.sentences), corpus.recorded_scores)
    assert sensitivity.score_dev(pairs).query("group == 'Disable' and scorer == 'VADER'")["n_bases"].item() == 1
    # Counted apart from the missing scores: Disable's VADER pairs are Blind and Autistic (T1), both complete.
    disable = sensitivity.score_sense(pairs).query("group == 'Disable' and scorer == 'VADER'").iloc[0]
    assert (disable["n"], disable["n_missing"], disable["n_unpaired"]) == (2, 0, 1)

    with pytest.raises(BitsUploadError) as refused:
        parse_upload(perturbed(odd), controls(), unmatched="refuse")
    assert [str(p) for p in refused.value.problems] == [
        "perturbed file, row 5, column 'Sentence': no control: template T3 has no control"]


def test_an_explicit_control_column_names_the_control():
    header = ["Template", "Sentence", "Class", "SubClass", "Control"]
    rows = records(header, [["T1", "My Blind neighbour has a garden.", "Disable", "Blind",
                             "They are parents of a child."]])
    corpus = parse_upload(rows, controls())
    assert corpus.sentences[-1].control_key == "T1|control|They are parents of a child."
    assert corpus.unit_fields[corpus.sentences[-1].key]["pairing"] == "control column"


def test_a_control_cell_naming_no_control_is_a_problem():
    header = ["Template", "Sentence", "Class", "SubClass", "Control"]
    rows = records(header, [["T1", "They are parents of a Blind child.", "Disable", "Blind", ""],
                            ["T1", "They are parents of a Deaf child.", "Disable", "Deaf", "No such control."]])
    with pytest.raises(BitsUploadError) as error:
        parse_upload(rows, controls())
    # The empty cell leaves row 2 to the rules (exact); row 3's text names no control of T1.
    assert [str(p) for p in error.value.problems] == [
        "perturbed file, row 3, column 'Control': no control sentence of template T1 matches 'No such control.'"]


def test_every_problem_is_named_and_nothing_is_imported():
    bad_perturbed = records(PERTURBED_HEADER, [
        ["0", "T1", "They are parents of a Blind child.", "Neutral", "Disable", "Blind", "high", ""],
        ["1", "", "They are parents of a Deaf child.", "Neutral", "Disable", "Deaf", "0", ""],
        ["2", "T1", "They are parents of a Blind child.", "Neutral", "Disable", "Blind", "0", ""],
        ["3", "T1", "They are parents of a Deaf child.", "Neutral", "Disable", "Autistic", "0", ""],
        ["4", "T1", "They are parents of a Lame child.", "Neutral", "control", "Lame", "0", ""],
        ["5", "T1", "They are parents of a Tall child.", "Neutral", "Normal", "Tall", "inf", ""],
    ])
    bad_controls = controls(["2", "T1", "They are parents of a  child .", "Neutral", "0"])
    with pytest.raises(BitsUploadError) as error:
        parse_upload(bad_perturbed, bad_controls)
    assert [str(p) for p in error.value.problems] == [
        "control file, row 4, column 'Sentence': the same control sentence as row 2 of template T1",
        "perturbed file, row 2, column 'VADER': a score must be a finite number, not 'high'",
        "perturbed file, row 3, column 'Template': empty",
        "perturbed file, row 4, column 'Sentence': the same sentence as row 2 of template T1",
        "perturbed file, row 5, column 'SubClass': the term 'Autistic' is not in the sentence",
        "perturbed file, row 6, column 'Class': 'control' is reserved for the no-group control sentences",
        "perturbed file, row 7, column 'VADER': a score must be a finite number, not 'inf'",
    ]


def test_missing_columns_and_empty_files_are_named():
    with pytest.raises(BitsUploadError) as error:
        parse_upload(records(["Template", "Text"], [["T1", "x"]]), [])
    assert [str(p) for p in error.value.problems] == [
        "control file: the file has no rows",
        "perturbed file, row 1, column 'sentence': a required column is missing",
        # SubClass may be absent (the terms are then found: test_bits_facets.py); a group column may not.
        "perturbed file, row 1, column 'class': a required column is missing: the group column (Class, Group, "
        "Gender or Race)",
    ]


def test_group_names_rename_the_files_classes():
    corpus = parse_upload(perturbed(), controls(), group_names={"Normal": "NRM", "Disable": "PWD:C"})
    assert pd.Series([s.group for s in corpus.sentences]).value_counts().to_dict() == {
        "PWD:C": 2, CONTROL: 2, "NRM": 1}
