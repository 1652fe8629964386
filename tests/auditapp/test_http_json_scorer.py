"""HTTP JSON scorers, the pure part: request templates filled as JSON values, and scores picked out of replies
by a JMESPath expression, with a reason for every reply that has no score."""
import json
import math

import pytest

from auditapp.scorers.http_json import (
    compile_score_path,
    extract_score,
    render_request,
    validate_request_template,
)
from auditapp.scorers.local import ScoreFailure

PERSPECTIVE = {"comment": {"text": "{{text}}"}, "requestedAttributes": {"TOXICITY": {}}}
HF_CLASSIFIER = {"inputs": "{{text}}"}


def test_the_text_is_a_json_value_whatever_it_holds():
    text = 'He said "hi"\\n\n{{text}} } ] ,'
    body = json.dumps(render_request(PERSPECTIVE, text))
    assert json.loads(body)["comment"]["text"] == text
    assert PERSPECTIVE["comment"]["text"] == "{{text}}"  # the template is not changed


def test_template_problems_are_named():
    assert validate_request_template(HF_CLASSIFIER) == []
    assert "not str" in validate_request_template("{{text}}")[0]
    assert "no string" in validate_request_template({"inputs": "{{ text }}"})[0]
    problem = validate_request_template({"a": "{{text}}", "b": ["{{text}}"]})[0]
    assert "2 times ($.a, $.b[0])" in problem


def test_scores_from_a_perspective_and_a_hugging_face_reply():
    perspective = {"attributeScores": {"TOXICITY": {"summaryScore": {"value": 0.0731, "type": "PROBABILITY"}}}}
    path = compile_score_path("attributeScores.TOXICITY.summaryScore.value")
    assert extract_score(json.dumps(perspective), path, scale=(0, 1)) == 0.0731
    hugging_face = [[{"label": "NEGATIVE", "score": 0.12}, {"label": "POSITIVE", "score": 0.88}]]
    path = compile_score_path("[0][?label=='POSITIVE'].score | [0]")
    assert extract_score(json.dumps(hugging_face).encode(), path, scale=(0, 1)) == 0.88


@pytest.mark.parametrize(("body", "reason"), [
    ("<html>502 Bad Gateway</html>", "not JSON"),
    ("{}", "found nothing"),
    ('{"score": "0.5"}', 'found "0.5", not a number'),
    ('{"score": true}', "found true, not a number"),
    ('{"score": 1.5}', "outside [0, 1]"),
    ('{"score": NaN}', "outside [0, 1]"),
    ("[" * 100_000 + "]" * 100_000, "not JSON"),
])
def test_a_reply_without_a_score_says_why(body, reason):
    result = extract_score(body, compile_score_path("score"), scale=(0, 1))
    assert isinstance(result, ScoreFailure) and reason in result.reason


def test_an_oversized_reply_is_refused_unread():
    result = extract_score(b" " * 1_000_001, compile_score_path("score"), scale=(0, 1))
    assert isinstance(result, ScoreFailure) and "more than 1,000,000" in result.reason


def test_a_bad_score_path_is_named():
    with pytest.raises(ValueError, match="not a JMESPath expression"):
        compile_score_path("[0][?label=='POSITIVE'")
    with pytest.raises(ValueError, match="empty"):
        compile_score_path(" ")
    assert not math.isnan(extract_score('{"s": -1}', compile_score_path("s"), scale=(-1, 1)))
