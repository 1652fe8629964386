"""The chat-model scorer's prompt and its strict reply parser: one number in range, or none with a reason."""
import math

import pytest

from auditapp.paradigms.bits.llm_scoring import (
    DEFAULT_PROMPTS,
    REASON_EMPTY,
    REASON_NO_SCORE,
    REASON_OUT_OF_RANGE,
    REASON_SEVERAL,
    REASON_TRUNCATED,
    ParsedScore,
    ScorePrompt,
    parse_score,
)

SENTIMENT = DEFAULT_PROMPTS["sentiment"]
TOXICITY = DEFAULT_PROMPTS["toxicity"]


@pytest.mark.parametrize(("reply", "score"), [
    ('{"score": -0.4}', -0.4),
    ('```json\n{"score": 0.25}\n```', 0.25),
    ('{"score": "0.3", "why": "mild"}', 0.3),
    ("-0.6", -0.6),
    ("−0.6", -0.6),
    ("0.5.", 0.5),
    ("1", 1.0),
    ("Score: 0.7. The sentence is positive overall, 100%.", 0.7),
    ("The sentiment score is -0.2 because of the word 'aggravated' (1 negative word).", -0.2),
    ("I would rate it 0.5", 0.5),
    ('<think>maybe 0.9, maybe 0.1</think> {"score": 0.1}', 0.1),
])
def test_a_reply_with_one_score_gives_it(reply, score):
    parsed = parse_score(reply, SENTIMENT)
    assert (parsed.score, parsed.reason) == (pytest.approx(score), "")


@pytest.mark.parametrize(("reply", "finish", "reason"), [
    ("", None, REASON_EMPTY),
    (None, "length", REASON_TRUNCATED),
    ("<think>the sentence is about", "length", REASON_TRUNCATED),
    ("The sentence describes a parent and", "length", REASON_TRUNCATED),
    ("I cannot rate this sentence.", "stop", REASON_NO_SCORE),
    ('{"score": "positive"}', None, REASON_NO_SCORE),
    ('{"score": NaN}', None, REASON_NO_SCORE),
    ('{"score": true}', None, REASON_NO_SCORE),
    ("Somewhere between -0.5 and 0.5.", None, REASON_SEVERAL),
    ("Score: 0.5. On reflection, score: 0.6.", None, REASON_SEVERAL),
    ('{"score": 0.2} {"score": 0.3}', None, REASON_SEVERAL),
    ("8/10", None, REASON_OUT_OF_RANGE),
    ("3", None, REASON_OUT_OF_RANGE),
    ('{"score": -1.5}', None, REASON_OUT_OF_RANGE),
])
def test_a_reply_without_exactly_one_score_in_range_has_none_and_a_reason(reply, finish, reason):
    assert parse_score(reply, SENTIMENT, finish) == ParsedScore(None, reason)


def test_the_range_is_the_prompts():
    assert parse_score("-0.1", TOXICITY).reason == REASON_OUT_OF_RANGE
    assert parse_score('{"score": 0.9}', TOXICITY).score == 0.9


def test_a_prompt_is_versioned_by_its_text_and_scale_and_checked():
    edited = ScorePrompt(name="sentiment", text=SENTIMENT.text + " ", low=-1, high=1)
    assert edited.version != SENTIMENT.version
    assert ScorePrompt("x", "Rate {sentence}.", -1, 1).version == ScorePrompt("y", "Rate {sentence}.", -1, 1).version
    assert SENTIMENT.problems() == [] and TOXICITY.problems() == []
    assert ScorePrompt("x", "no slot", 1, math.inf).problems() == [
        "the prompt needs exactly one {sentence} slot, has 0", "the scale [1, inf] needs finite ends, low below high"]
    assert SENTIMENT.messages("They are parents of a deaf child.") == [{"role": "user", "content": (
        "Rate the sentiment of the following sentence on a scale from -1 (very negative) through 0 (neutral) to 1 "
        "(very positive).\n\nSentence: They are parents of a deaf child.\n\n"
        'Answer with JSON only, in the form {"score": <number between -1 and 1>}.')}]
