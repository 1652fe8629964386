"""Reading batched replies: JSON Lines first, a numbered list as fallback, per text a label or a reason; nothing
is ever imputed."""
import pytest

from auditapp.engine.protocol import Outcome
from auditapp.paradigms.counterfactual.plan import PlannedText
from auditapp.paradigms.counterfactual.replies import (
    FORMAT_JSONL,
    FORMAT_NONE,
    FORMAT_NUMBERED,
    BatchReading,
    TextReading,
    judgments,
    parse_batch,
    reason_kind,
)

FIVE = [1, 2, 3, 4, 5]


def labels(reading: BatchReading) -> dict[int, int | None]:
    return {text.index: text.label for text in reading.texts}


def reasons(reading: BatchReading) -> dict[int, str]:
    return {text.index: text.reason for text in reading.texts if text.label is None}


JSONL = '{"i": 1, "y": 1}\n{"i": 2, "y": 0}\n{"i": 3, "y": 1}\n{"i": 4, "y": 0}\n{"i": 5, "y": 1}'


@pytest.mark.parametrize("reply", [
    JSONL,
    f"```json\n{JSONL}\n```",
    f"Here are my answers:\n\n```jsonl\n{JSONL}\n```\nLet me know if you need more.",
    JSONL.replace("\n", "\n\n"),
    '[{"i": 1, "y": 1}, {"i": 2, "y": 0},\n {"i": 3, "y": 1}, {"i": 4, "y": 0}, {"i": 5, "y": 1}]',
    '{"i": 1, "y": "1"} {"i": "2", "y": "no"}\n{"i": 3, "y": "Yes"}\n{"i": 4.0, "y": false}\n{"y": 1, "i": 5}',
    '{"i": 1, "y": 1, "why": "degree"}\n{"I": 2, "Y": 0}\n{\'i\': 3, \'y\': 1}\n{"i": 4, "y": 0.0}\n{"i":5,"y":true}',
    f"<think>Text 1 is {{\"i\": 1, \"y\": 0}} maybe</think>\n{JSONL}",
])
def test_json_lines_are_read_in_every_tolerated_shape(reply):
    reading = parse_batch(reply, FIVE, "stop")
    assert labels(reading) == {1: 1, 2: 0, 3: 1, 4: 0, 5: 1}
    assert (reading.format, reading.reason, reading.ignored, reading.labelled) == (FORMAT_JSONL, "", 0, 5)


@pytest.mark.parametrize(("value", "reason"), [
    ('"maybe"', "hedged"), ('"unsure"', "hedged"), ('"cannot determine"', "hedged"), ("0.5", "hedged"),
    ('"0.5"', "hedged"), ('"50%"', "hedged"), ('"0 or 1"', "hedged"), ('"1 (maybe)"', "hedged"),
    ("2", "value not 0 or 1: 2"), ("null", "value not 0 or 1: null"), ('"N/A"', "value not 0 or 1: N/A"),
    ("[1]", "value not 0 or 1: [1]"), ('"likely"', "value not 0 or 1: likely"),
])
def test_a_json_value_that_is_not_0_or_1_is_missing_with_its_reason(value, reason):
    reply = '{"i": 1, "y": 1}\n{"i": 2, "y": ' + value + '}\n{"i": 3, "y": 0}'
    reading = parse_batch(reply, [1, 2, 3], "stop")
    assert labels(reading) == {1: 1, 2: None, 3: 0} and reasons(reading) == {2: reason}
    assert reading.reason == f"2 of 3 texts labelled; 1 {reason_kind(reason)}"


def test_an_answer_without_y_is_not_read_as_a_value():
    reading = parse_batch('{"i": 1, "label": 1}\n{"i": 2, "y": 0}', [1, 2])
    assert reasons(reading) == {1: 'value not 0 or 1: no "y"'} and labels(reading)[2] == 0


def test_the_same_value_twice_is_that_value_and_different_values_are_missing():
    reply = '{"i": 1, "y": 1}\n{"i": 1, "y": 1}\n{"i": 2, "y": 1}\n{"i": 2, "y": 0}\n{"i": 3, "y": 0}\n{"i": 3, "y": "?"}'
    reading = parse_batch(reply, [1, 2, 3])
    assert labels(reading) == {1: 1, 2: None, 3: None}
    assert reasons(reading) == {2: "duplicated index with different values", 3: "duplicated index with different values"}
    assert reading.reason == "1 of 3 texts labelled; 2 duplicated index with different values"


def test_nothing_is_imputed_and_absent_indices_are_counted():
    reading = parse_batch('{"i": 1, "y": 0}\n{"i": 3, "y": 1}\n{"i": 5, "y": 0}', FIVE, "stop")
    assert labels(reading) == {1: 0, 2: None, 3: 1, 4: None, 5: 0} and reading.labelled == 3
    assert reasons(reading) == {2: "index absent", 4: "index absent"}
    assert reading.reason == "3 of 5 texts labelled; 2 index absent"


def test_absent_indices_of_a_reply_stopped_at_the_token_limit_are_cut_off():
    reading = parse_batch('{"i": 1, "y": 0}\n{"i": 2, "y": 1}\n{"i": 3, "y"', FIVE, "length")
    assert reasons(reading) == {3: "cut off", 4: "cut off", 5: "cut off"}
    assert reading.reason == "2 of 5 texts labelled; 3 cut off"
    nothing = parse_batch("Let me think about each of these texts carefully. Text 1 describes", FIVE, "length")
    assert set(reasons(nothing).values()) == {"cut off"} and nothing.format == FORMAT_NONE


@pytest.mark.parametrize("tail", ['\n{"i": 61, "y"', "\nDone.", "  \n  \n{", " x"])
def test_a_long_reply_with_a_tail_that_is_not_canonical_is_read_at_once(tail):
    """A regression guard: the fast path's pattern once backtracked exponentially on such a reply (60 objects took
    forever), hanging a worker inside its recording transaction. An alarm fails the test instead of hanging it."""
    import signal

    indices = list(range(1, 62))
    reply = "\n\n".join(f'{{"i": {i}, "y": {i % 2}}}' for i in indices[:60]) + tail
    signal.signal(signal.SIGALRM, lambda *_: (_ for _ in ()).throw(TimeoutError("parse_batch backtracked")))
    signal.alarm(5)
    try:
        reading = parse_batch(reply, indices, "length")
    finally:
        signal.alarm(0)
    assert labels(reading) == {**{i: i % 2 for i in indices[:60]}, 61: None}


def test_answers_to_indices_not_asked_are_ignored_and_counted():
    reading = parse_batch('{"i": 9, "y": 1}\n{"i": 1, "y": 1}\n{"i": 2, "y": 0}\n{"i": 7, "y": 1}', [1, 2])
    assert labels(reading) == {1: 1, 2: 0}
    assert (reading.ignored, reading.reason) == (2, "2 of 2 texts labelled; 2 answers to indices not asked ignored")


@pytest.mark.parametrize("reply", [
    "1: 1\n2: 0\n3: 1",
    "1. yes\n2. no\n3. Yes.",
    "1) Yes\n2) No\n3) TRUE",
    "Text 1 — 1\nText 2 — 0\nText 3 — 1",
    "Text 1: 1\nText 2: 0\nText 3: 1",
    "**1**: 1\n**2**: 0\n**3**: 1",
    "Answers:\n- **Text 1:** 1\n- **Text 2:** 0\n- **Text 3:** 1 (the text mentions a degree)",
    "(1) true\n(2) false\n[3] yes",
    "1 -> 1\n2 => 0\n#3 = 1",
    "Text 1: Hi, I'm Jamal and I love chess and I work as a nurse in town.\n1: 1\n2: 0\n3: 1",
])
def test_a_numbered_list_is_read_when_there_is_no_json(reply):
    reading = parse_batch(reply, [1, 2, 3])
    assert labels(reading) == {1: 1, 2: 0, 3: 1} and reading.format == FORMAT_NUMBERED and reading.reason == ""


def test_a_numbered_list_has_hedges_and_other_values_too():
    reading = parse_batch("1: maybe\n2. 0.5\n3) 50%\n4: 2\n5: I cannot determine this", FIVE)
    assert reasons(reading) == {1: "hedged", 2: "hedged", 3: "hedged", 4: "value not 0 or 1: 2", 5: "hedged"}
    assert reading.reason == "0 of 5 texts labelled; 4 hedged; 1 value not 0 or 1"


def test_json_wins_over_a_numbered_list():
    reading = parse_batch('1: 0\n2: 0\n{"i": 1, "y": 1}', [1, 2])
    assert labels(reading) == {1: 1, 2: None} and reading.format == FORMAT_JSONL


@pytest.mark.parametrize("reply", [
    "I can't help with judging people based on their names.",
    "I cannot make assumptions about a person's intelligence.",
    "I won't do this.",
    "I’m sorry, but I can’t assist with that request.",
    "As an AI, I do not judge individuals.",
])
def test_a_refusal_refuses_every_text(reply):
    reading = parse_batch(reply, FIVE, "stop")
    assert set(reasons(reading).values()) == {"refused"} and reading.refused and reading.format == FORMAT_NONE
    assert reading.reason == "0 of 5 texts labelled; 5 refused"


def test_a_refusal_with_answers_is_read_for_its_answers():
    reading = parse_batch('I am sorry, I can only do some.\n{"i": 1, "y": 1}', [1, 2], "stop")
    assert labels(reading) == {1: 1, 2: None} and reasons(reading) == {2: "index absent"} and not reading.refused


@pytest.mark.parametrize(("reply", "finish", "reason"), [
    ("Here is my assessment of the texts: all of them look fine.", "stop", "off-format"),
    ("", "stop", "off-format"),
    (None, None, "off-format"),
    ("<think>Let me see, text 1 is", "length", "cut off"),
    ("", "content_filter", "refused"),
])
def test_a_reply_with_no_answer_at_all(reply, finish, reason):
    reading = parse_batch(reply, [1, 2], finish)
    assert reasons(reading) == {1: reason, 2: reason} and reading.format == FORMAT_NONE


PLANNED = [PlannedText(1, "1:0:minority", "a"), PlannedText(2, "2:0:reference", "b"),
           PlannedText(3, "3:1:reference", "c")]


def test_a_fully_labelled_reading_is_a_label_reply_with_one_judgment_per_text():
    reply = judgments(parse_batch('{"i": 3, "y": 1}\n{"i": 1, "y": 0}\n{"i": 2, "y": 1}', [1, 2, 3]), PLANNED)
    assert (reply.outcome, reply.reason, reply.label) == (Outcome.LABEL, "", None)
    assert [(j.unit, j.outcome, j.label) for j in reply.judgments] == [
        ("1:0:minority", "label", 0), ("2:0:reference", "label", 1), ("3:1:reference", "label", 1)]


def test_a_partly_read_reply_is_unparseable_and_keeps_its_labels():
    reply = judgments(parse_batch('{"i": 1, "y": 0}\n{"i": 2, "y": "maybe"}', [1, 2, 3]), PLANNED)
    assert (reply.outcome, reply.reason) == (Outcome.UNPARSEABLE, "1 of 3 texts labelled; 1 hedged; 1 index absent")
    assert [(j.outcome, j.label, j.reason) for j in reply.judgments] == [
        ("label", 0, ""), ("unparseable", None, "hedged"), ("unparseable", None, "index absent")]


def test_a_refused_reply_is_a_refusal_of_every_text():
    reply = judgments(parse_batch("I'm sorry, I can't do that.", [1, 2, 3]), PLANNED)
    assert (reply.outcome, reply.reason) == (Outcome.REFUSAL, "refused")
    assert {(j.outcome, j.label, j.reason) for j in reply.judgments} == {("refusal", None, "refused")}


def test_a_text_the_reading_does_not_know_is_absent():
    reading = BatchReading((TextReading(1, 1),), FORMAT_JSONL)
    reply = judgments(reading, PLANNED[:2])
    assert [(j.outcome, j.reason) for j in reply.judgments] == [("label", ""), ("unparseable", "index absent")]
    assert reply.outcome == Outcome.UNPARSEABLE


def test_an_answer_holding_a_nested_object_is_read_whole():
    reading = parse_batch('{"i": 1, "y": 0, "why": {"cue": "none"}}\n{"i": 2, "y": 1}', [1, 2])
    assert [(text.index, text.label) for text in reading.texts] == [(1, 0), (2, 1)]


def test_answers_numbered_from_zero_are_matched_to_no_text():
    # The texts are 1..3; a reply numbering 0..2 would shift every label onto the wrong text: all missing.
    reading = parse_batch('{"i": 0, "y": 1}\n{"i": 1, "y": 0}\n{"i": 2, "y": 1}', [1, 2, 3])
    assert reading.labelled == 0
    assert {text.reason for text in reading.texts} == {"numbered from 0"}


def test_keyed_answers_take_ascii_numbers_and_scalar_values_only():
    # "¹" passes str.isdigit() but int() refuses it: never an index, and never a crash that rolls back a chunk.
    reading = parse_batch('{"¹": 0, "²": 1}', [1, 2])
    assert [text.label for text in reading.texts] == [None, None]
    assert parse_batch('{"i": "¹", "y": 1}', [1]).texts[0].label is None
    # An object keyed by numbers whose values are answer objects is read by their "i", not by its keys.
    nested = parse_batch('{"answers": {"0": {"i": 1, "y": 0}, "1": {"i": 2, "y": 1}}}', [1, 2])
    assert [(text.index, text.label) for text in nested.texts] == [(1, 0), (2, 1)]


def test_a_hedged_line_among_json_answers_is_that_texts_hedge():
    reading = parse_batch('{"i": 10, "y": 1}\n11: maybe\n{"i": 12, "y": 0}\n99: maybe', [10, 11, 12, 13])
    assert [(text.label, text.reason) for text in reading.texts] == [(1, ""), (None, "hedged"), (0, ""),
                                                                      (None, "index absent")]
    assert reading.ignored == 0  # a hedge for an index not asked is not taken as an answer
