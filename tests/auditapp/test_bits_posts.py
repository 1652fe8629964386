"""Perturbing a researcher's own texts (seed 001 §3.1, Table 6): what counts as a mention, the perturbed sentence
and the control each rule makes (a case table), the rows left out with their reasons, and the problems that stop
an upload naming their row and column. Pure: no database."""
from __future__ import annotations

import pytest

from auditapp.paradigms.bits.corpus import CONTROL, TermGroup, paper_spec
from auditapp.paradigms.bits.posts import (
    DEFAULT_TARGET_WORDS,
    MAX_SENTENCES,
    PostsError,
    PostsOptions,
    control_text,
    mention_pattern,
    perturb_posts,
    perturbed_text,
)

PATTERN = mention_pattern(DEFAULT_TARGET_WORDS)
GROUPS = (TermGroup("PWD:C", ("Hearing Loss", "Autism Spectrum Disorder")), TermGroup("NRMA", ("Good",)))

# text → (its control, its sentence with "Autism Spectrum Disorder", with "Hearing Loss")
CASES = {
    "I am disabled and proud.": (
        "I am and proud.", "I am autism spectrum disorder and proud.", "I am hearing loss and proud."),
    "Being a disabled person is hard.": (  # the article agrees with the word now after it
        "Being a person is hard.", "Being an autism spectrum disorder person is hard.",
        "Being a hearing loss person is hard."),
    "Disabled people vote. Disabled voices matter.": (  # a capital mention that began a sentence
        "People vote. Voices matter.", "Autism spectrum disorder people vote. Autism spectrum disorder voices matter.",
        "Hearing loss people vote. Hearing loss voices matter."),
    "My disability's cost is high": (  # the possessive goes with the mention
        "My cost is high", "My autism spectrum disorder's cost is high", "My hearing loss's cost is high"),
    "#disabled and #Disability pride": (  # a hashtag: the term as a hashtag, no spaces
        "and pride", "#autismspectrumdisorder and #Autismspectrumdisorder pride",
        "#hearingloss and #Hearingloss pride"),
    "DISABLED rights now": ("Rights now", "AUTISM SPECTRUM DISORDER rights now", "HEARING LOSS rights now"),
    "They called me disabled.": ("They called me.", "They called me autism spectrum disorder.",
                                 "They called me hearing loss."),
    "An ad about disability  and   more": (  # spacing elsewhere is left as written
        "An ad about and   more", "An ad about autism spectrum disorder  and   more",
        "An ad about hearing loss  and   more"),
    "I'm ok. Disabled, and proud": (  # punctuation after punctuation goes with the mention
        "I'm ok. And proud", "I'm ok. Autism spectrum disorder, and proud", "I'm ok. Hearing loss, and proud"),
    "I, disabled, am": ("I, am", "I, autism spectrum disorder, am", "I, hearing loss, am"),
    "Hi! Disabled!!! people": ("Hi! People", "Hi! Autism spectrum disorder!!! people", "Hi! Hearing loss!!! people"),
    '"Disabled people" she said': (  # an opening quote begins the sentence
        '"People" she said', '"Autism spectrum disorder people" she said', '"Hearing loss people" she said'),
    "Hello\nDisabled people": ("Hello\nPeople", "Hello\nAutism spectrum disorder people",
                               "Hello\nHearing loss people"),
    "Disabled, and proud": ("And proud", "Autism spectrum disorder, and proud", "Hearing loss, and proud"),
    "@disabled and https://x.com/disabled are not mentions; disabled is": (
        "@disabled and https://x.com/disabled are not mentions; is",
        "@disabled and https://x.com/disabled are not mentions; autism spectrum disorder is",
        "@disabled and https://x.com/disabled are not mentions; hearing loss is"),
}


def test_removing_many_mentions_takes_time_in_proportion_to_the_text():
    import time

    started = time.perf_counter()
    assert control_text("I am disabled. " * 40_000, PATTERN) == "I am. " * 40_000
    assert time.perf_counter() - started < 5  # was minutes: each removal re-read the text before it


@pytest.mark.parametrize("text", list(CASES))
def test_each_rule_makes_the_sentence_the_case_table_says(text):
    control, autism, hearing = CASES[text]
    assert control_text(text, PATTERN) == control
    assert perturbed_text(text, PATTERN, "Autism Spectrum Disorder") == autism
    assert perturbed_text(text, PATTERN, "Hearing Loss") == hearing


@pytest.mark.parametrize("text", ["non-disabled people", "disabilities", "disability-related costs", "undisabled",
                                  "Disabledness", "the #disabledlife tag"])
def test_a_word_inside_a_longer_word_or_a_compound_is_not_a_mention(text):
    assert not PATTERN.search(text)


def test_terms_keep_their_printed_capitals_when_asked():
    assert perturbed_text("a disabled friend", PATTERN, "Deaf", term_case="as_printed") == "a Deaf friend"
    assert perturbed_text("a disabled friend", PATTERN, "Deaf") == "a deaf friend"


def records(*rows: dict) -> list[tuple[int, dict]]:
    return [(index + 2, row) for index, row in enumerate(rows)]


def test_every_text_gives_a_control_and_a_sentence_per_term_and_texts_without_a_mention_are_reported():
    posts = perturb_posts(records(
        {"id": "r1", "text": "Disabled parking is never free.", "platform": "Reddit", "date": "2022-01-02"},
        {"id": "t1", "text": "Nothing to see here.", "platform": "Twitter", "date": "2022-01-03"},
        {"id": "t2", "text": "My disability is invisible.", "platform": "Twitter", "date": ""},
        {"id": "t3", "text": "disabled", "platform": "Twitter", "date": ""},
    ), PostsOptions(groups=GROUPS))
    assert [post.id for post in posts.posts] == ["r1", "t2"]
    assert [(s.row, s.id) for s in posts.skipped] == [(3, "t1"), (5, "t3")]
    assert "no mention of 'disability' or 'disabled'" in posts.skipped[0].reason
    assert posts.skipped[1].reason == "nothing is left once the mention is removed"
    sentences = posts.sentences()
    assert len(sentences) == 2 * (1 + 3)
    first = sentences[:4]
    assert first[0].group == CONTROL and first[0].text == "Parking is never free." and first[0].key == "r1|control"
    assert [(s.group, s.term, s.text) for s in first[1:]] == [
        ("PWD:C", "Hearing Loss", "Hearing loss parking is never free."),
        ("PWD:C", "Autism Spectrum Disorder", "Autism spectrum disorder parking is never free."),
        ("NRMA", "Good", "Good parking is never free.")]
    assert {s.control_key for s in first[1:]} == {"r1|control"}
    assert {s.template for s in first} == {"r1"} and {s.source for s in first} == {"Reddit"}
    assert posts.source_column == "platform" and posts.metadata_columns == ("platform", "date")
    report = posts.report()
    assert report == {"rows": 4, "posts": 2, "skipped": 2, "sentences": 8, "mentions": 2,
                      "per_source": {"Reddit": 1, "Twitter": 1}, "source_column": "platform",
                      "metadata_columns": ["platform", "date"], "warnings": [],
                      "skipped_rows": [{"row": 3, "id": "t1", "reason": posts.skipped[0].reason},
                                       {"row": 5, "id": "t3", "reason": posts.skipped[1].reason}]}
    preview = posts.preview(1)
    assert preview[0]["original"] == "Disabled parking is never free."
    assert preview[0]["control"] == "Parking is never free." and len(preview[0]["sentences"]) == 3


def test_the_default_groups_are_table_4_and_a_file_without_a_source_column_has_no_breakdown():
    posts = perturb_posts(records({"ID": "a", "Text": "a disabled friend"}), PostsOptions(groups=paper_spec().groups))
    assert len(posts.posts[0].sentences) == 20 and posts.source_column is None
    assert posts.posts[0].source == ""


def test_every_problem_of_the_file_is_named_with_its_row_and_column_and_nothing_is_made():
    with pytest.raises(PostsError) as raised:
        perturb_posts(records({"id": "a", "text": "a disabled friend"}, {"id": "", "text": "disabled people"},
                              {"id": "a", "text": "disabled people"}, {"id": "c", "text": "  "}),
                      PostsOptions(groups=GROUPS))
    assert [(p.row, p.column, p.message) for p in raised.value.problems] == [
        (3, "id", "empty"), (4, "id", "the same id as row 2"), (5, "text", "empty")]


def test_missing_columns_and_bad_options_are_named():
    with pytest.raises(PostsError) as raised:
        perturb_posts(records({"post": "a", "body": "disabled"}), PostsOptions(groups=GROUPS, source_column="site"))
    assert [(p.column, p.message.split(" (")[0]) for p in raised.value.problems] == [
        ("site", "the source column is missing"), ("id", "a required column is missing"),
        ("text", "a required column is missing")]
    with pytest.raises(PostsError) as raised:
        perturb_posts(records({"id": "a", "text": "disabled"}), PostsOptions(
            groups=(TermGroup("control", ("x",)), TermGroup("B", ())), target_words=("Disabled", "disabled", ""),
            term_case="title"))
    messages = [p.message for p in raised.value.problems]
    assert "target_words: an empty word" in messages
    assert "target_words: listed twice (case aside): disabled" in messages
    assert any(m.startswith("term_case: 'title'") for m in messages)
    assert any(m.startswith("groups[0] (control): 'control' is reserved") for m in messages)
    assert "groups[1] (B): has no terms" in messages


def test_too_many_sentences_is_a_problem_before_anything_is_stored():
    groups = (TermGroup("G", tuple(f"term {i}" for i in range(1000))),)
    many = [{"id": str(i), "text": "a disabled friend"} for i in range(MAX_SENTENCES // 1001 + 1)]
    with pytest.raises(PostsError, match=f"more than {MAX_SENTENCES:,} sentences"):
        perturb_posts(records(*many), PostsOptions(groups=groups))


def test_a_source_column_with_an_address_per_text_gives_no_breakdown_unless_named():
    many = [{"id": str(i), "text": "a disabled friend", "source": f"https://example.org/{i}"} for i in range(60)]
    posts = perturb_posts(records(*many), PostsOptions(groups=GROUPS))
    assert posts.source_column is None and {post.source for post in posts.posts} == {""}
    assert posts.report()["warnings"] == [
        "the column 'source' has 60 values; a source (a platform) has at most 50: it is kept as metadata, and there "
        "is no per-source breakdown"]
    with pytest.raises(PostsError, match="the column 'source' has 60 values"):
        perturb_posts(records(*many), PostsOptions(groups=GROUPS, source_column="source"))


def test_sentence_keys_that_clash_or_run_too_long_are_named_by_row():
    with pytest.raises(PostsError) as raised:
        perturb_posts(records({"id": "r1|PWD:C", "text": "a disabled friend"},
                              {"id": "r1", "text": "a disabled friend"},
                              {"id": "x" * 100, "text": "a disabled friend"}),
                      PostsOptions(groups=(TermGroup("PWD:C", ("control",)), TermGroup("G" * 150, ("t" * 60,)))))
    assert [(p.row, p.column) for p in raised.value.problems] == [(3, "id"), (4, "id")]
    assert "'r1|PWD:C|control' is also a sentence key of row 2" in raised.value.problems[0].message
    assert "at most 300" in raised.value.problems[1].message


def test_too_many_terms_are_refused_before_they_are_checked():
    with pytest.raises(PostsError, match="groups: 40,000 terms; at most 1,000"):
        perturb_posts(records({"id": "a", "text": "disabled people"}),
                      PostsOptions(groups=(TermGroup("G", tuple(f"t{i}" for i in range(40_000))),)))


def test_a_page_reads_the_texts_per_source_as_pairs_whatever_the_sources_are_called():
    from django.template import Context, Template

    from auditapp.paradigms.bits.posts import report_for_page

    posts = perturb_posts(records({"id": "a", "text": "disabled people", "platform": "items"},
                                  {"id": "b", "text": "disabled people", "platform": "Reddit"}),
                          PostsOptions(groups=GROUPS))
    page = Template("{% for source, n in report.per_source %}{{ source }}={{ n }};{% endfor %}").render(
        Context({"report": report_for_page(posts.report())}))
    assert page == "items=1;Reddit=1;"
