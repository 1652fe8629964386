"""The BITS repository's other facet files (race, gender) in their own shape: the group column is named ``Group``
or ``Gender``, there is no ``SubClass`` column, and the controls are the separate standard corpus. The sentences
and groups here are ours; only the columns and the layout (each template and emotion written once per group, in
the same order) reproduce the repository's files."""
import numpy as np
import pandas as pd
import pytest

from auditapp.paradigms.bits.analysis import AnalysisSettings, analyse
from auditapp.paradigms.bits.corpus import CONTROL, corpus_frame
from auditapp.paradigms.bits.upload import BitsUploadError, derived_terms, parse_upload

CONTROLS = [
    ("T1", "We met a cyclist.", "Neutral"),
    ("T2", "The cyclist made us cheerful.", "Happy"),
    ("T2", "The cyclist made us gloomy.", "Sad"),
    ("T3", "Our cyclist painted the fence.", "Neutral"),
]
# (template, sentence with {} for the group's word, emotion); each group's words in the same order.
SENTENCES = [
    ("T1", "We met a {} cyclist.", "Neutral"),
    ("T2", "The {} cyclist made us cheerful.", "Happy"),
    ("T2", "The {} cyclist made us gloomy.", "Sad"),
]
WORDS = {"Left-handed": "left-handed", "Night owl": "night owl", "Early riser": "early-rising"}


def records(header, rows):
    return [(n + 2, dict(zip(header, row, strict=True))) for n, row in enumerate(rows)]


def controls(rows=CONTROLS):
    return records(["", "Template", "Sentence", "Sentiment"], [[str(n), *row] for n, row in enumerate(rows)])


def facet(group_header="Group", words=WORDS, sentences=SENTENCES, extra_columns=()):
    rows = [[template, text.format(word), group, emotion, *extra_columns]
            for group, word in words.items() for template, text, emotion in sentences]
    return records(["Template", "Sentence", group_header, "Sentiment", *(f"x{n}" for n in range(len(extra_columns)))],
                   rows)


@pytest.mark.parametrize("group_header", ["Group", "Gender", "race", " CLASS "])
def test_a_facet_file_with_its_own_group_column_and_no_subclass_is_taken(group_header):
    corpus = parse_upload(facet(group_header), controls())

    assert corpus.summary()["per_group"] == {CONTROL: 4, "Left-handed": 3, "Night owl": 3, "Early riser": 3}
    terms = {(s.group, s.template, s.emotion): s.term for s in corpus.sentences if s.group != CONTROL}
    # The term is the stretch where the groups' sentences differ, two words or one, hyphenated or not; "a"
    # before "left-handed" is written "a" and compared as such.
    assert terms["Night owl", "T1", "Neutral"] == "night owl"
    assert terms["Left-handed", "T2", "Sad"] == "left-handed"
    assert terms["Early riser", "T2", "Happy"] == "early-rising"
    assert corpus.pairing.counts() == {"control column": 0, "exact": 9, "typo": 0, "position": 0, "unpaired": 0}
    assert corpus.warnings == ()


def test_an_and_a_are_read_alike_when_finding_the_term():
    terms, problems = derived_terms([
        (2, "T1", "Neutral", "Vowel", "We met an owl-keeping cyclist."),
        (3, "T1", "Neutral", "Consonant", "We met a dog-keeping cyclist."),
    ])
    assert problems == []
    assert terms == {2: "owl-keeping", 3: "dog-keeping"}


def test_a_sentence_worded_otherwise_takes_the_shortest_difference_to_another_group():
    terms, _ = derived_terms([
        (2, "T1", "Neutral", "A", "There was a tall person at school."),
        (3, "T1", "Neutral", "B", "There was a short person at school."),
        (4, "T1", "Neutral", "C", "Their was a wide person at school"),
    ])
    assert terms[2] == "tall"
    assert terms[3] == "short"
    # C differs from both in more than its word: the whole differing stretch is its term, shown as it is.
    assert terms[4] == "Their was a wide person at school"


def test_two_groups_terms_that_share_a_word_lose_it_as_the_docs_say():
    # The stated limit of the rule (docs/audits/bits.md): against the group that differs least, a shared word is
    # context. A SubClass column gives the exact terms.
    terms, problems = derived_terms([
        (2, "T1", "Neutral", "A", "We met an African American cyclist."),
        (3, "T1", "Neutral", "N", "We met a Native American cyclist."),
        (4, "T1", "Neutral", "W", "We met a white cyclist."),
    ])
    assert problems == [] and terms == {2: "African", 3: "Native", 4: "white"}


def test_facet_groups_reach_every_table_in_the_files_order():
    corpus = corpus_frame(parse_upload(facet("Gender"), controls()).sentences)
    rng = np.random.default_rng(7)
    scores = pd.DataFrame({"scorer": "toy", "imported": False, "kind": "sentiment", "unit": corpus["key"],
                           "replicate": 0, "reason": "", "value": rng.uniform(-1, 1, len(corpus))})

    result = analyse(corpus, scores, settings=AnalysisSettings())

    groups = list(WORDS)
    assert list(result.groups) == groups
    assert result.tables["score_sense"]["group"].tolist() == groups
    assert result.tables["label_dist"]["group"].tolist() == groups
    assert result.tables["score_dev"]["group"].tolist() == [*groups, "All"]
    assert result.tables["group_means"]["group"].tolist() == [*groups, CONTROL]
    assert set(result.tables["term_sense"]["group"]) == set(groups)
    assert (result.tables["score_sense"]["n"] == 3).all()


def problems_of(perturbed, control_rows=CONTROLS):
    with pytest.raises(BitsUploadError) as raised:
        parse_upload(perturbed, controls(control_rows))
    return [str(p) for p in raised.value.problems]


def test_no_group_column_or_two_of_them_are_named():
    no_group = [(row, {k: v for k, v in fields.items() if k != "Group"}) for row, fields in facet()]
    assert problems_of(no_group) == [
        "perturbed file, row 1, column 'class': a required column is missing: the group column (Class, Group, "
        "Gender or Race)"]
    two = [(row, {**fields, "Gender": "x"}) for row, fields in facet()]
    assert problems_of(two) == ["perturbed file, row 1, column 'Gender': two group columns, 'Group' and 'Gender': "
                                "keep one"]


def test_rows_whose_term_cannot_be_found_are_named_and_nothing_is_imported():
    one_group = facet(words={"Left-handed": "left-handed"})
    assert problems_of(one_group)[0] == ("perturbed file, row 2, column 'Sentence': no SubClass column and no term "
                                         "found: template T1, emotion Neutral has sentences of one group only")
    uneven = facet() + records(["Template", "Sentence", "Group", "Sentiment"],
                               [["T3", "Our tall cyclist painted the fence.", "Tall", "Neutral"],
                                ["T3", "Our short cyclist painted the fence.", "Short", "Neutral"],
                                ["T3", "Our short cyclist painted the fence again.", "Short", "Neutral"]])
    assert problems_of(uneven)[0].endswith("no SubClass column and no term found: template T3, emotion Neutral has "
                                           "1 of Tall, 2 of Short: the groups' sentences cannot be compared")
    same = facet(words={"Left-handed": "", "Night owl": ""})
    assert problems_of(same)[0].endswith("template T1, emotion Neutral has the same sentence in every group")


def test_templates_numbered_otherwise_than_the_controls_are_warned_of():
    # The facet numbers T2 what the control file calls T3 (the race facet inserts a template of its own).
    sentences = [("T2", "Our {} cyclist painted the fence.", "Neutral")]
    corpus = parse_upload(facet(sentences=sentences), controls())

    assert corpus.pairing.counts()["unpaired"] == 3
    assert corpus.warnings == ("3 unpaired sentence(s) of template T2 match a control of template T3 in the control "
                               "file: do the two files number their templates alike?",)
