"""The pairing of uploaded BITS sentences with their controls (auditapp/paradigms/bits/pairing.py): each rule in its
order on rows shaped like the public repository's quirks (the sentences are ours), the report per rule, every
unpaired row's reason, and the edit distance against nltk's."""
import time

import pytest
from nltk.metrics.distance import edit_distance

from auditapp.paradigms.bits.pairing import (
    POSITION,
    TYPO_MAX_EDITS,
    UNPAIRED,
    ControlRow,
    PerturbedRow,
    edit_distance_within,
    pair_sentences,
)


def control(row: int, template: str, text: str, emotion: str | None = None) -> ControlRow:
    return ControlRow(key=f"{template}|control|{text}", template=template, text=text, emotion=emotion, row=row)


def sentence(row: int, template: str, text: str, term: str, emotion: str | None = None, group: str = "G",
             control_text: str | None = None) -> PerturbedRow:
    return PerturbedRow(row=row, template=template, text=text, group=group, term=term, emotion=emotion,
                        control_text=control_text)


CONTROLS = [
    control(2, "T1", "They are parents of a child.", "Neutral"),
    control(3, "T3", "The was a person at school.", "Neutral"),  # a typo: "There" is 2 edits away
    # T6 writes other words in its controls than in its sentences, in the same order within each emotion.
    control(4, "T6", "They were vexing because of the neighbour.", "Anger"),
    control(5, "T6", "They were outraging because of the neighbour.", "Anger"),
    control(6, "T6", "They were wonderful because of the neighbour.", "Happy"),
    # Two controls 1 edit from "I met a pal." and "I met a pat.": the typo rule does not choose.
    control(7, "T4", "I met a pan.", "Neutral"),
    control(8, "T4", "I met a pit.", "Neutral"),
    control(9, "T1", "They are parents of children.", "Neutral"),
]


def by_row(report) -> dict[int, tuple[str | None, str, str]]:
    return {row.row: (pairing.control_key, pairing.rule, pairing.reason)
            for row, pairing in zip(report.rows, report.pairings, strict=True)}


def test_each_rule_in_its_order_and_why_the_others_are_unpaired():
    rows = [
        sentence(2, "T1", "They are parents of an Autistic child.", "Autistic", "Neutral"),
        sentence(3, "T3", "There was a Deaf person at school.", "Deaf", "Neutral"),
        sentence(4, "T6", "They were aggravated because of the Deaf neighbour.", "Deaf", "Anger"),
        sentence(5, "T6", "They were enraged because of the Deaf neighbour.", "Deaf", "Anger"),
        sentence(6, "T6", "They were happy because of the Deaf neighbour.", "Deaf", "Happy"),
        sentence(7, "T6", "They were <emotion state> because of the Deaf neighbour.", "Deaf", "Neutral"),
        # Three Happy sentences of one term against one Happy control: the counts differ.
        sentence(8, "T6", "They were elated because of the Tall neighbour.", "Tall", "Happy"),
        sentence(9, "T6", "They were glad because of the Tall neighbour.", "Tall", "Happy"),
        sentence(10, "T6", "They were jolly because of the Tall neighbour.", "Tall", "Happy"),
        sentence(11, "T4", "I met a Deaf pal.", "Deaf", "Neutral"),
        sentence(12, "T9", "They spoke of the Deaf child.", "Deaf", "Neutral"),
        # The Control column overrides the rules, even where another control matches by text.
        sentence(13, "T1", "They are parents of a Tall child.", "Tall", "Neutral",
                 control_text="They are parents of children."),
    ]
    report = pair_sentences(rows, CONTROLS)
    found = by_row(report)
    assert found[2] == ("T1|control|They are parents of a child.", "exact", "")
    assert found[3] == ("T3|control|The was a person at school.", "typo", "")
    # Position within the emotion, in file order: aggravated → vexing, enraged → outraging, happy → wonderful.
    assert found[4] == ("T6|control|They were vexing because of the neighbour.", "position", "")
    assert found[5] == ("T6|control|They were outraging because of the neighbour.", "position", "")
    assert found[6] == ("T6|control|They were wonderful because of the neighbour.", "position", "")
    assert found[7] == (None, "unpaired", "template T6 has no control with emotion Neutral")
    assert {found[row] for row in (8, 9, 10)} == {(
        None, "unpaired", "template T6, emotion Happy: 3 sentences with 'Tall' but 1 control, so the position rule "
                          "does not apply")}
    # T4 has one Neutral sentence per term but two Neutral controls: position does not apply either, and the
    # reason says the typo rule saw two candidates.
    assert found[11] == (None, "unpaired", "template T4, emotion Neutral: 1 sentence with 'Deaf' but 2 controls, so "
                                           "the position rule does not apply (2 controls are within 2 edits of its "
                                           "text: the typo rule does not choose)")
    assert found[12] == (None, "unpaired", "template T9 has no control")
    assert found[13] == ("T1|control|They are parents of children.", "control column", "")
    assert report.problems == ()

    # 12 rows: control column 1 (13), exact 1 (2), typo 1 (3), position 3 (4, 5, 6), unpaired 6 (7-12).
    assert report.counts() == {"control column": 1, "exact": 1, "typo": 1, "position": 3, "unpaired": 6}
    summary = report.as_dict()
    assert [rule["n"] for rule in summary["rules"]] == [1, 1, 1, 3, 6]
    assert summary["rules"][3]["per_template"] == {"T6": 3}
    assert summary["typo_pairs"] == [{"template": "T3", "text": "There was a person at school.",
                                      "control": "The was a person at school.", "edits": 2, "n": 1}]
    assert [(entry["reason"][:30], entry["rows"]) for entry in summary["unpaired"]] == [
        ("template T6 has no control wit", [7]), ("template T6, emotion Happy: 3 ", [8, 9, 10]),
        ("template T4, emotion Neutral: ", [11]), ("template T9 has no control", [12])]


def test_position_is_not_used_where_part_of_the_terms_sentences_matched_by_text():
    rows = [sentence(2, "T6", "They were vexing because of the Deaf neighbour.", "Deaf", "Anger"),
            sentence(3, "T6", "They were enraged because of the Deaf neighbour.", "Deaf", "Anger")]
    found = by_row(pair_sentences(rows, CONTROLS))
    assert found[2][1] == "exact"
    assert found[3] == (None, "unpaired", "no control matches its text, and the position rule does not apply: 1 of "
                                          "the 2 sentences with 'Deaf' in template T6, emotion Anger, were paired by "
                                          "their text")


def test_a_typo_never_pairs_a_sentence_with_a_control_of_another_emotion():
    # "glad" is two edits from "sad": the typo rule would pair the Joy sentence with the Sadness control; within its
    # emotion it finds none, and the position rule pairs it with the Joy control.
    controls = [control(2, "T9", "The person feels sad.", "Sadness"),
                control(3, "T9", "The person is feeling glad.", "Joy")]
    rows = [sentence(2, "T9", "The autistic person feels glad.", "autistic", "Joy")]
    assert by_row(pair_sentences(rows, controls))[2][:2] == ("T9|control|The person is feeling glad.", "position")


def test_without_an_emotion_only_the_text_rules_apply():
    rows = [sentence(2, "T6", "They were aggravated because of the Deaf neighbour.", "Deaf")]
    assert by_row(pair_sentences(rows, CONTROLS))[2] == (
        None, "unpaired", "no control of template T6 matches 'They were aggravated because of the neighbour.', and "
                          "the row has no Sentiment for the position rule")


def test_a_control_cell_that_names_no_control_is_a_problem():
    rows = [sentence(2, "T1", "They are parents of a Deaf child.", "Deaf", control_text="No such sentence.")]
    report = pair_sentences(rows, CONTROLS)
    assert report.problems == ((2, "no control sentence of template T1 matches 'No such sentence.'"),)
    assert report.pairings[0].control_key is None


@pytest.mark.parametrize(("a", "b"), [
    ("there was a person at school.", "the was a person at school."),
    ("my neighbour has a butterfly garden.", "my neighbour has a butterfly garder."),
    ("they were alarmed because", "they were alarming because"),
    ("kitten", "sitting"), ("", "ab"), ("abc", "abc"), ("flaw", "lawn"),
])
def test_the_edit_distance_is_nltks_within_the_bound(a, b):
    distance = edit_distance(a, b)
    expected = distance if distance <= TYPO_MAX_EDITS else None
    assert edit_distance_within(a, b, TYPO_MAX_EDITS) == expected
    assert edit_distance_within(a, b, 10) == distance


def test_a_template_or_group_named_items_renders_as_any_other():
    # A page looks a name up in a mapping before its method: {"items": 3}.items is 3. The stored report's counts
    # reach the page as (name, n) pairs.
    from django.template.loader import render_to_string

    from auditapp.paradigms.bits.pairing import stored_report

    rows = [sentence(2, "items", "We met a Deaf friend.", "Deaf", "Neutral", group="items")]
    report = pair_sentences(rows, [control(2, "items", "We met a friend.", "Neutral")]).as_dict()
    unpaired = pair_sentences([sentence(3, "items", "We saw a Deaf friend.", "Deaf", "Neutral", group="items")],
                              [control(2, "other", "We met a friend.", "Neutral")]).as_dict()
    for stored in (report, unpaired):
        shown = stored_report({"summary": {"pairing": stored}})
        html = render_to_string("auditapp/_bits_pairing.html", {"corpus": {"pairing": shown, "warnings": []}})
        assert "items: 1" in html
    assert stored_report({"generator": "upload"}) is None


@pytest.mark.parametrize("bound", [0, 1, 2, 3])
def test_the_banded_edit_distance_equals_nltks_on_random_strings(bound):
    import random

    chances = random.Random(bound)
    for _ in range(300):
        a = "".join(chances.choice("ab c") for _ in range(chances.randint(0, 12)))
        b = "".join(chances.choice("ab c") for _ in range(chances.randint(0, 12)))
        distance = edit_distance(a, b)
        assert edit_distance_within(a, b, bound) == (distance if distance <= bound else None), (a, b)


def test_emotions_are_compared_without_case():
    controls = [control(2, "T6", "They were glad because of the neighbour.", emotion="Joy")]
    rows = [sentence(2, "T6", "They were happy because of the Deaf neighbour.", "Deaf", emotion="joy")]
    report = pair_sentences(rows, controls)
    assert report.pairings[0].rule == POSITION and report.pairings[0].control_key == controls[0].key


def test_a_hostile_upload_spends_the_typo_rules_work_limit_and_its_rows_say_so(monkeypatch):
    monkeypatch.setattr("auditapp.paradigms.bits.pairing.TYPO_MAX_STEPS", 10_000)
    long = "x" * 200
    controls = [control(i + 2, "T1", f"{long}{i:03d}") for i in range(50)]
    rows = [sentence(2, "T1", f"{long}abc Deaf", "Deaf")]
    started = time.perf_counter()
    report = pair_sentences(rows, controls)
    assert time.perf_counter() - started < 1
    assert report.pairings[0].rule == UNPAIRED
    assert "the typo rule was not tried: the upload spent its work limit" in report.pairings[0].reason
