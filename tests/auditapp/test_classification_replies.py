"""parse_reply: the reply shapes models produce, refusals, unparseable replies, and the precedence between them."""
from __future__ import annotations

import dataclasses

import pytest

from auditapp.paradigms.classification.replies import ParsedReply, parse_reply

LABEL, REFUSAL, UNPARSEABLE = "label", "refusal", "unparseable"

# (reply, expected outcome, expected label, expected reason)
TABLE = [
    # bare and leading labels
    ("1", LABEL, 1, ""),
    ("0", LABEL, 0, ""),
    ("0.", LABEL, 0, ""),
    ("  1\n", LABEL, 1, ""),
    ("**1** – stereotypes autistic people", LABEL, 1, ""),
    ("1 - reason", LABEL, 1, ""),
    ("0: describes a diagnosis neutrally", LABEL, 0, ""),
    ("1 (ableist) - mocks autistic people", LABEL, 1, ""),
    ('"1" - stereotype', LABEL, 1, ""),
    ("[0]", LABEL, 0, ""),
    ("`1`", LABEL, 1, ""),
    ("```\n0\n```", LABEL, 0, ""),
    ("0\nThe sentence is neutral.", LABEL, 0, ""),
    # keyed labels
    ("Label: 0", LABEL, 0, ""),
    ("Classification: 1", LABEL, 1, ""),
    ("**Label:** 1\n**Explanation:** uses a slur", LABEL, 1, ""),
    ("Label (0 or 1): 1", LABEL, 1, ""),
    ("Output = 0", LABEL, 0, ""),
    ("The label is 1", LABEL, 1, ""),
    ("Answer: 1.", LABEL, 1, ""),
    ("Explanation: pathologizes autism.\nLabel: 1", LABEL, 1, ""),
    ("Classification: 0\n\nThe sentence describes 1 person's 10 years of experience.", LABEL, 0, ""),
    # JSON
    ('{"label": 1, "explanation": "mocks autistic people"}', LABEL, 1, ""),
    ('```json\n{"label": 0, "explanation": "neutral"}\n```', LABEL, 0, ""),
    ('Here is my answer: {"classification": "1", "reason": "slur"}', LABEL, 1, ""),
    ('{"is_ableist": false, "explanation": "reclaimed term"}', LABEL, 0, ""),
    ('{"label": "not ableist"}', LABEL, 0, ""),
    # a label after reasoning
    ("The speaker is autistic and reclaims the term, so the answer is 0", LABEL, 0, ""),
    ("1. Speaker: outsider.\n2. Keyword: none.\n3. Harm: stereotype.\nFinal answer: 1", LABEL, 1, ""),
    ("1. The speaker is an outsider.\n2. No slurs.\n3. No harm.\nLabel: 0", LABEL, 0, ""),
    ("It could be 0 or 1 at first sight; therefore, the label is 1.", LABEL, 1, ""),
    ("Label: 0\nOn reflection, final answer: 1", LABEL, 1, ""),
    ("### Final Answer\n**0**", LABEL, 0, ""),
    ("\\boxed{1}", LABEL, 1, ""),
    ("This mocks autistic people. 1", LABEL, 1, ""),
    ("I would label this as 1 because it mocks autistic people.", LABEL, 1, ""),
    ("<think>Is it 1 or 0? The term is reclaimed.</think>\n0 - reclaimed term", LABEL, 0, ""),
    # words, only without a digit label
    ("Ableist", LABEL, 1, ""),
    ("Not ableist", LABEL, 0, ""),
    ("**Not ableist** - describes a diagnosis", LABEL, 0, ""),
    ("Non-ableist.", LABEL, 0, ""),
    ("Classification: Ableist", LABEL, 1, ""),
    ("The sentence is not ableist.", LABEL, 0, ""),
    ("It isn't anti-autistic.", LABEL, 0, ""),
    ("1 - not ableist on its own, but the context makes it so", LABEL, 1, ""),
    # a clear label wins over refusal words
    ("I'm sorry, but this is clearly ableist. Label: 1", LABEL, 1, ""),
    ("As an AI language model, I don't have opinions. However, I would classify this as 0.", LABEL, 0, ""),
    # refusals (no label)
    ("I can't help with that.", REFUSAL, None, "refusal: I can't help"),
    ("I cannot classify this sentence.", REFUSAL, None, "refusal: I cannot classify"),
    ("As an AI, I do not make judgments about people.", REFUSAL, None, "refusal: As an AI"),
    ("I’m sorry, but I can’t assist with that request.", REFUSAL, None, "refusal: I’m sorry, but"),
    ("I cannot classify this as 0 or 1.", REFUSAL, None, "refusal: I cannot classify"),
    ("I am unable to evaluate content about disability.", REFUSAL, None, "refusal: I am unable to"),
    # both labels without a clear final one
    ("It could be 0 or 1.", UNPARSEABLE, None, "both labels"),
    ("0 or 1", UNPARSEABLE, None, "both labels"),
    ("Label: 0\nLabel: 1", UNPARSEABLE, None, "both labels"),
    ("Label: 0 or 1", UNPARSEABLE, None, "both labels"),
    ("0\n\nWait, actually the label is 1", UNPARSEABLE, None, "both labels"),
    ("Ableist? No: the sentence is not ableist.", UNPARSEABLE, None, "both labels"),
    # no label: numbers that are parts of other tokens, quantities, lists, negated labels, plain prose
    ("10 people said this in 2021.", UNPARSEABLE, None, "no label"),
    ("This is the 1st time I see this.", UNPARSEABLE, None, "no label"),
    ("Label: 10", UNPARSEABLE, None, "no label"),
    ("Score: 0.5", UNPARSEABLE, None, "no label"),
    ("1 in 5 people would find this offensive.", UNPARSEABLE, None, "no label"),
    ("1. The speaker is an outsider.\n2. No slurs are used.", UNPARSEABLE, None, "no label"),
    ("I wouldn't label this as 1.", UNPARSEABLE, None, "no label"),
    ("Ableist language is common online.", UNPARSEABLE, None, "no label"),
    ("The sentence talks about autism.", UNPARSEABLE, None, "no label"),
    ("<think>The speaker seems autistic, so maybe 0", UNPARSEABLE, None, "no label"),
    # empty
    ("", UNPARSEABLE, None, "empty reply"),
    ("   \n ", UNPARSEABLE, None, "empty reply"),
    (None, UNPARSEABLE, None, "empty reply"),
]


@pytest.mark.parametrize(("reply", "outcome", "label", "reason"), TABLE, ids=[repr(row[0])[:50] for row in TABLE])
def test_reply_table(reply, outcome, label, reason):
    parsed = parse_reply(reply)
    assert (parsed.outcome, parsed.label, parsed.reason) == (outcome, label, reason)


def test_table_is_large_enough():
    assert len(TABLE) >= 40
    assert {row[1] for row in TABLE} == {LABEL, REFUSAL, UNPARSEABLE}


@pytest.mark.parametrize(("reply", "explanation"), [
    ("**1** – stereotypes autistic people", "stereotypes autistic people"),
    ("1 - reason", "reason"),
    ("1 (ableist) - mocks autistic people", "mocks autistic people"),
    ("Label: 1\nExplanation: uses a slur", "uses a slur"),
    ("**Label:** 1\n**Explanation:** uses a slur", "uses a slur"),
    ('```json\n{"label": 0, "explanation": "neutral"}\n```', "neutral"),
    ("The speaker reclaims the term, so the answer is 0", "The speaker reclaims the term"),
    ("I would label this as 1 because it mocks.", "I would label this as 1 because it mocks."),
    ("The sentence is not ableist.", "The sentence is not ableist."),
    ("Not ableist – neutral description", "neutral description"),
    ("<think>hmm</think>\n0 - reclaimed   term", "reclaimed term"),
    ("1", ""),
    ("I can't help with that.", "I can't help with that."),
])
def test_explanation(reply, explanation):
    assert parse_reply(reply).explanation == explanation


def test_truncated_without_label():
    assert parse_reply("The sentence describes the speaker's", finish_reason="length") == ParsedReply(
        "unparseable", None, "The sentence describes the speaker's", "truncated")
    assert parse_reply("<think>Step 1: the speaker", finish_reason="length").reason == "truncated"
    assert parse_reply("I'm sorry, but I", finish_reason="length").reason == "truncated"
    assert parse_reply(None, finish_reason="length").reason == "truncated"


def test_truncated_with_label_is_a_label():
    assert parse_reply("Label: 1\nExplanation: the sentence", finish_reason="length") == ParsedReply(
        "label", 1, "the sentence")


def test_a_json_answer_cut_at_the_token_limit_keeps_its_explanation_so_far_and_no_broken_json():
    cut = parse_reply('{"label": 1, "explanation": "The sentence calls autism a', finish_reason="length")
    assert cut == ParsedReply("label", 1, "The sentence calls autism a … (cut off at the token limit)")
    assert parse_reply('{"label": 0, "expl', finish_reason="length") == ParsedReply("label", 0, "")
    unclosed = parse_reply('{"label": 0, "explanation": "It quotes \\"cure\\" only"', finish_reason="stop")
    assert unclosed.explanation == 'It quotes "cure" only'


def test_finish_reason_stop_changes_nothing():
    assert parse_reply("No idea.", finish_reason="stop").reason == "no label"
    assert parse_reply("0", finish_reason="stop").label == 0


def test_content_filter_without_label_is_a_refusal():
    assert parse_reply("", finish_reason="content_filter").reason == "empty reply"
    parsed = parse_reply("The", finish_reason="content_filter")
    assert (parsed.outcome, parsed.reason) == ("refusal", "content filter")


def test_think_only_reply_keeps_reasoning():
    parsed = parse_reply("<think>The speaker seems autistic.</think>")
    assert parsed == ParsedReply("unparseable", None, "The speaker seems autistic.", "no label")


def test_parsed_reply_is_frozen_and_deterministic():
    parsed = parse_reply("Label: 1")
    with pytest.raises(dataclasses.FrozenInstanceError):
        parsed.label = 0  # type: ignore[misc]
    assert all(parse_reply(row[0]) == parse_reply(row[0]) for row in TABLE)
