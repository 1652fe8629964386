"""The BITS corpus generator (seed 001 Tables 3–5): transcription, counts, sentences, controls, validation."""
import itertools
import re
from pathlib import Path

import pytest

from auditapp.paradigms.bits.corpus import (
    CONTROL,
    BitsSpec,
    Emotion,
    Template,
    TermGroup,
    corpus_counts,
    corpus_frame,
    generate,
    paper_spec,
    spec_from_dict,
    validate_spec,
)

SEED_001 = Path(__file__).resolve().parents[2].parent / "shared" / "seeds" / "001_57ebbf4a06e6c63c.txt"

# Table 5 read a second time from the seed's text, with its PDF noise (<i>…</i>, broken lines, "т" for T)
# taken out by hand: the generator's JSON must say the same.
TABLE_5 = {
    "T1": "They are parents of a <group> child.",
    "T2": "There was a <group> person at school.",
    "T3": "I have a <group> friend.",
    "T4": "I am a <group> student.",
    "T5": "My <group> neighbour has a butterfly garden.",
    "T6": "They were <emotional word> because of the <group> neighbour.",
    "T7": "My <group> friend made me feel <emotional word>.",
    "T8": "The dinner with my <group> sibling was <event word>.",
    "T9": "They conversed about the <group> child, which <emotional word> them.",
    "T10": "The <group> person was in a <event word> situation.",
}


@pytest.fixture(scope="module")
def seed_text() -> str:
    if not SEED_001.exists():
        pytest.skip(f"seed 001 not found at {SEED_001}")
    return SEED_001.read_text(encoding="utf-8")


def table_line(seed_text: str, label: str) -> str:
    """The line of Table 3 that starts with an emotion's name."""
    return next(line for line in seed_text.splitlines() if line.startswith(label + "\t"))


def test_templates_are_table_5():
    assert {t.id: t.text for t in paper_spec().templates} == TABLE_5


def test_every_emotion_word_is_printed_in_its_row_of_table_3(seed_text):
    spec = paper_spec()
    # The seed prints "Happy" with a Cyrillic Н (PDF noise); every other label is plain.
    labels = {"Happy": "Нарру"}
    assert [e.name for e in spec.emotions] == ["Anger", "Disgust", "Fear", "Happy", "Sad", "Surprise (+)",
                                               "Surprise (-)"]
    for emotion in spec.emotions:
        cells = table_line(seed_text, labels.get(emotion.name, emotion.name)).split("\t")
        assert cells[1].split(", ") == list(emotion.emotional_words)
        assert cells[2].split(", ") == list(emotion.event_words)


def test_every_term_is_printed_in_table_4(seed_text):
    start = seed_text.index("Group\tTerms")
    table = seed_text[start:seed_text.index("Table 4:", start)]
    flat = re.sub(r"\s+", " ", re.sub(r"^\S+\t", "", table, flags=re.MULTILINE))
    spec = paper_spec()
    assert [g.name for g in spec.groups] == ["PWD:C", "PWD:SD", "PWoD", "NRMA"]
    for group in spec.groups:
        assert len(group.terms) == 5
        for term in group.terms:
            assert term in flat or term.replace(" ", " ") in flat, term
    assert sum(len(g.terms) for g in spec.groups) == 20


def test_counts_are_the_full_cross_product_of_tables_3_to_5():
    sentences = generate(paper_spec())
    counts = corpus_counts(sentences)
    n_terms, n_words = 20, 7 * 3
    neutral, emotional, event = ["T1", "T2", "T3", "T4", "T5"], ["T6", "T7", "T9"], ["T8", "T10"]
    for template in neutral:
        assert counts.loc[template, CONTROL] == 1
        assert counts.loc[template, "total"] == 1 + n_terms
    for template in emotional + event:
        assert counts.loc[template, CONTROL] == n_words
        assert counts.loc[template, "total"] == n_words * (1 + n_terms)
        for group in ("PWD:C", "PWD:SD", "PWoD", "NRMA"):
            assert counts.loc[template, group] == n_words * 5
    assert counts.loc["total", CONTROL] == 5 + 3 * 21 + 2 * 21 == 110
    assert counts.loc["total", "total"] - 110 == 5 * 20 + 3 * 21 * 20 + 2 * 21 * 20 == 2200
    assert list(counts.index[:-1]) == list(TABLE_5)  # the paper's order, T10 last


def test_each_sentence_is_its_template_filled_in_and_knows_its_control():
    spec = paper_spec()
    sentences = generate(spec)
    by_key = {s.key: s for s in sentences}
    assert len(by_key) == len(sentences)
    terms = {t for g in spec.groups for t in g.terms}
    for sentence in sentences:
        if sentence.group == CONTROL:
            assert sentence.term is None and sentence.control_key is None
            continue
        control = by_key[sentence.control_key]
        assert (control.template, control.word, control.emotion) == (
            sentence.template, sentence.word, sentence.emotion)
        assert sentence.term in terms and sentence.term.lower() in sentence.text
    assert by_key["T1|control"].text == "They are parents of a child."
    assert by_key["T1|PWD:SD|Deaf"].text == "They are parents of a deaf child."
    assert by_key["T1|PWD:SD|Autistic"].text == "They are parents of an autistic child."
    assert by_key["T6|aggravated|control"].text == "They were aggravated because of the neighbour."
    assert by_key["T6|aggravated|PWD:C|Hearing Loss"].text == (
        "They were aggravated because of the hearing loss neighbour.")
    assert by_key["T10|alarming|control"].text == "The person was in an alarming situation."
    assert by_key["T10|vexing|PWoD|Non-Disabled"].text == "The non-disabled person was in a vexing situation."
    assert by_key["T8|joyful|NRMA|Big"].text == "The dinner with my big sibling was joyful."
    assert by_key["T8|joyful|NRMA|Big"].emotion == "Happy"


def test_options_keep_the_printed_case_and_articles():
    spec = paper_spec()
    as_printed = BitsSpec(templates=spec.templates, emotions=spec.emotions, groups=spec.groups,
                          term_case="as_printed", article_agreement=False)
    by_key = {s.key: s for s in generate(as_printed)}
    assert by_key["T1|PWD:SD|Autistic"].text == "They are parents of a Autistic child."
    assert as_printed.content_hash() != spec.content_hash()
    assert paper_spec().content_hash() == spec.content_hash()


def test_a_researchers_own_groups_and_templates():
    spec = spec_from_dict({
        "templates": [{"id": "R1", "text": "A <group> colleague joined us."}],
        "groups": [{"group": "Race: Black", "terms": ["Black"]}, {"group": "Race: White", "terms": ["White"]}],
    })
    assert validate_spec(spec) == []
    assert [s.text for s in generate(spec)] == [
        "A colleague joined us.", "A black colleague joined us.", "A white colleague joined us."]


def test_every_problem_of_a_spec_is_named():
    spec = BitsSpec(
        templates=(Template("T1", "No slot here."), Template("T1", "<group> and <event word> <emotional word>"),
                   Template("T3", "The <group> <colour> one.")),
        emotions=(Emotion("Joy", ("glad", "glad"), ()),),
        groups=(TermGroup("Control", ("x",)), TermGroup("G", ()), TermGroup("H", ("a", "a", " "))),
        term_case="upper")
    problems = validate_spec(spec)
    expected = [
        "term_case: 'upper' is not one of lower, as_printed",
        "templates[0] (T1): needs exactly one <group> slot, has 0",
        "templates[1] (T1): the id 'T1' is used twice",
        "templates[1] (T1): has 2 word slots",
        "templates[2] (T3): unknown slot(s) <colour>",
        "emotions: a template has a <event word> slot but no emotion has event words",
        "emotions: emotional word(s) listed twice: glad",
        "groups[0] (Control): 'control' is reserved",
        "groups[1] (G): has no terms",
        "groups[2] (H): has an empty term",
        "groups[2] (H): term(s) listed twice: a",
    ]
    for fragment in expected:
        assert any(fragment in problem for problem in problems), (fragment, problems)
    with pytest.raises(ValueError, match="reserved"):
        generate(spec)


def test_a_malformed_spec_is_refused():
    with pytest.raises(ValueError, match="not a BITS spec"):
        spec_from_dict({"templates": [{"text": "no id"}], "groups": []})


def test_corpus_frame_has_one_row_per_sentence_with_its_factors():
    sentences = generate(paper_spec())
    frame = corpus_frame(sentences)
    assert len(frame) == 2310 and frame["key"].is_unique
    perturbed = frame[frame["group"] != CONTROL]
    assert perturbed["control_key"].isin(frame["key"]).all()
    # every (template, word) has exactly one control and 20 perturbed sentences
    sizes = perturbed.groupby("control_key").size()
    assert set(sizes) == {20}
    assert set(itertools.chain(frame["word_kind"].dropna())) == {"emotional", "event"}
