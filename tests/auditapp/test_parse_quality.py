"""Reply shapes and the parse-quality warning (auditapp.engine.parse_quality), worked by hand."""
from __future__ import annotations

import pytest

from auditapp.engine.parse_quality import cell_warning, frequent_shapes, is_truncated, reply_shape

LONG = "The given sentences are not ableist and they highlight " + "the speaker's view " * 6


@pytest.mark.parametrize(("text", "finish_reason", "shape"), [
    (None, None, "empty"),
    ("   \n", "stop", "empty"),
    ("", "length", "empty · cut off"),
    (LONG, "length", 'prose "the given sentences" · 100–499 chars · cut off'),
    (LONG, "stop", 'prose "the given sentences" · 100–499 chars'),
    ("This label of 0 indicates that the speaker…", "stop", 'prose "this label of" · 20–99 chars'),
    ("This label of 1 shows it.", "stop", 'prose "this label of" · 20–99 chars'),
    ("«The Idiot» is a classic example", None, 'prose "the idiot is" · 20–99 chars'),
    ("Hmm.", None, 'prose "hmm" · < 20 chars'),
    ("0.8", None, 'number "#.#" · < 20 chars'),
    ("-1 maybe", None, 'number "# maybe" · < 20 chars'),
    (".5 it is", None, 'number "# it is" · < 20 chars'),
    ('{"answer": 2, "why": "x"}', "stop", 'JSON {"answer": …} · 20–99 chars'),
    ('{ "label": "maybe"', "max_tokens", 'JSON {"label": …} · < 20 chars · cut off'),
    ("{}", None, "JSON object · < 20 chars"),
    ("[1, 0]", None, "JSON array · < 20 chars"),
    ("```json\n{\"label\": 1}\n```", None, "code block · 20–99 chars"),
    ("x" * 500, "LENGTH", 'prose "xxxxxxxxxxxxxxxxxxxx…" · ≥ 500 chars · cut off'),
])
def test_reply_shape(text, finish_reason, shape):
    assert reply_shape(text, finish_reason) == shape


def test_truncation_reasons():
    assert is_truncated("length") and is_truncated("max_tokens") and is_truncated("Length")
    assert not is_truncated("stop") and not is_truncated(None) and not is_truncated("")


def test_frequent_shapes_ranks_counts_and_keeps_an_example():
    replies = [("This label of 0 indicates x.", "stop"), ("This label of 1 means y.", "stop"),
               ("Hmm.", None), ("", "length"), ("", "length"), ("Well.", None)]
    shapes = frequent_shapes(replies, top=3)
    assert shapes == [
        {"shape": "empty · cut off", "n": 2, "example": ""},
        {"shape": 'prose "this label of" · 20–99 chars', "n": 2, "example": "This label of 0 indicates x."},
        {"shape": 'prose "hmm" · < 20 chars', "n": 1, "example": "Hmm."},
    ]
    assert frequent_shapes([]) == []
    assert frequent_shapes([("y" * 300, None)])[0]["example"] == "y" * 200


def test_cell_warning_after_twenty_answered_when_most_are_unparseable_or_cut_off():
    # 19 answered, all unparseable: too early to say.
    assert cell_warning(answered=19, unparseable=19, truncated=0, unparseable_or_truncated=19) == ""
    # 20 answered, exactly half: not more than half.
    assert cell_warning(answered=20, unparseable=10, truncated=0, unparseable_or_truncated=10) == ""
    warning = cell_warning(answered=20, unparseable=9, truncated=8, unparseable_or_truncated=11, pending=5)
    assert warning == ("11 of 20 answered replies are unparseable or cut off (9 unparseable; 8 cut off at the token "
                       "limit: raise max_tokens): read the reply shapes before waiting for the rest")
    # Nothing left to wait for: the advice does not say to stop waiting.
    assert cell_warning(answered=20, unparseable=9, truncated=8, unparseable_or_truncated=11).endswith(
        "raise max_tokens): read the reply shapes")
    assert "raise max_tokens" not in cell_warning(answered=30, unparseable=16, truncated=0,
                                                  unparseable_or_truncated=16)
