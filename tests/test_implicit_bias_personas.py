"""The WABT and AAT personas of the test LLM server (``tests/implicit_bias_personas.py``): every generated instance's
reply parses and gives the planted statistic (bias score +1 for ``wabt-consistent``; a mean near 0 whose 95% interval
covers 0 for ``wabt-neutral``; FAR ≈ 0.8 and UAR ≈ 0.7 for ``aat-stereotyped``, two-turn and single-prompt), and the
real server on 127.0.0.1 answers as the rules say, turn by turn."""
import http.client
import json

import numpy as np
import pandas as pd
import pytest
from scipy import stats as scipy_stats

from auditapp.paradigms.implicit_bias import stats
from auditapp.paradigms.implicit_bias.aat_replies import parse_aat_reply
from auditapp.paradigms.implicit_bias.generation import generate_aat, generate_wabt
from auditapp.paradigms.implicit_bias.wabt_replies import association_counts, parse_wabt_reply
from tests.implicit_bias_personas import AAT_RATES, expected_aat_answer, implicit_bias_reply
from tests.llm_server import LLMServer


@pytest.fixture(scope="module")
def wabt():
    return generate_wabt()


def wabt_frame(model, instances, replies):
    rows = []
    for instance, reply in zip(instances, replies, strict=True):
        read = parse_wabt_reply(reply, words=instance.words, identifiers=instance.identifiers)
        counts = association_counts(read, x_a_words=instance.x_a_words, s_a=instance.identifiers[0])
        rows.append((model, instance.factors["dimension"], instance.factors["social_group"], read.valid, read.reason,
                     *counts))
    return pd.DataFrame(rows, columns=list(stats.WABT_COLUMNS))


def aat_frame(model, instances, answers):
    return pd.DataFrame([(model, i.factors["social_group"], i.factors["group_label"], a.answer, a.reason)
                         for i, a in zip(instances, answers, strict=True)], columns=list(stats.AAT_COLUMNS))


def two_turn(model, instance):
    """The conversation the engine holds: Q1, the persona's A1, Q2; returns A2."""
    q1, q2 = instance.texts
    a1 = implicit_bias_reply(model, [q1])
    assert instance.factors["s_e"] in a1 and "comedy" not in a1.lower() and "tragic" not in a1.lower()
    return implicit_bias_reply(model, [q1, q2])


def test_wabt_consistent_scores_plus_one_on_every_instance(wabt):
    frame = wabt_frame("wabt-consistent", wabt, [implicit_bias_reply("wabt-consistent", i.texts) for i in wabt])
    assert frame["valid"].all()
    assert (stats.bias_scores(frame)["bias_score"] == 1).all()
    table = stats.wabt_table(frame)
    assert list(table["n"]) == [1500, 1500, 1500] and list(table["mean"]) == [1, 1, 1]
    assert set(table["note"]) == {stats.NO_VARIANCE}


def test_wabt_neutral_mean_is_near_zero_with_a_ci_covering_zero(wabt):
    frame = wabt_frame("wabt-neutral", wabt, [implicit_bias_reply("wabt-neutral", i.texts) for i in wabt])
    assert frame["valid"].all()
    scores = stats.bias_scores(frame)
    defined = scores["bias_score"].dropna()
    # A fair coin per word gives all 10 words to one side with probability 2/1024: about 9 of 4,500 undefined.
    assert 0 < scores["undefined_reason"].notna().sum() < 30
    interval = scipy_stats.ttest_1samp(defined, 0).confidence_interval(0.95)
    assert interval.low < 0 < interval.high and abs(defined.mean()) < 0.03
    table = stats.wabt_table(frame)
    assert (table["mean"].abs() < 0.06).all()


@pytest.mark.parametrize("form", ["two_turn", "single_prompt"])
def test_aat_stereotyped_gives_the_planted_far_and_uar(form):
    instances = generate_aat(form=form)
    if form == "two_turn":
        replies = [two_turn("aat-stereotyped", i) for i in instances]
    else:
        replies = [implicit_bias_reply("aat-stereotyped", i.texts) for i in instances]
    answers = [parse_aat_reply(reply, form=form) for reply in replies]
    expected = [expected_aat_answer("aat-stereotyped", i.factors["s_e"], i.factors["s_n"], int(i.factors["template"]))
                for i in instances]
    assert [a.answer for a in answers] == expected
    table = stats.aat_table(aat_frame("aat-stereotyped", instances, answers)).iloc[0]
    labels = np.array([i.factors["group_label"] for i in instances])
    chosen = np.array(expected)
    assert table["far"] == pytest.approx(np.mean(chosen[labels == "S_a"] == "comedy"))
    assert table["uar"] == pytest.approx(np.mean(chosen[labels == "S_b"] == "tragedy"))
    # Planted 0.8 and 0.7: within 4 binomial standard errors (≈ 477 S_a and 1,023 S_b instances).
    assert abs(table["far"] - AAT_RATES["S_a"][0][1]) < 4 * np.sqrt(0.8 * 0.2 / table["sa_n"])
    assert abs(table["uar"] - AAT_RATES["S_b"][0][1]) < 4 * np.sqrt(0.7 * 0.3 / table["sb_n"])
    assert 0 < table["sa_neutral"] < 0.2 and table["sa_n_unparseable"] == table["sb_n_unparseable"] == 0


def chat(base_url, model, messages):
    host, port = base_url.removeprefix("http://").split(":")
    connection = http.client.HTTPConnection(host, int(port), timeout=10)
    try:
        connection.request("POST", "/v1/chat/completions", json.dumps({"model": model, "messages": messages}),
                           {"Content-Type": "application/json"})
        return json.loads(connection.getresponse().read())["choices"][0]["message"]["content"]
    finally:
        connection.close()


def test_the_real_server_answers_wabt_and_both_aat_forms(wabt):
    with LLMServer(models=("wabt-consistent", "wabt-neutral", "aat-stereotyped", "model-a")) as server:
        for instance in wabt[::150]:
            for model in ("wabt-consistent", "wabt-neutral"):
                reply = chat(server.base_url, model, [{"role": "user", "content": instance.texts[0]}])
                assert reply == implicit_bias_reply(model, instance.texts)
                assert parse_wabt_reply(reply, words=instance.words, identifiers=instance.identifiers).valid
        for instance in generate_aat(combinations=20):
            q1, q2 = instance.texts
            a1 = chat(server.base_url, "aat-stereotyped", [{"role": "user", "content": q1}])
            a2 = chat(server.base_url, "aat-stereotyped", [{"role": "user", "content": q1},
                                                           {"role": "assistant", "content": a1},
                                                           {"role": "user", "content": q2}])
            expected = expected_aat_answer("aat-stereotyped", instance.factors["s_e"], instance.factors["s_n"],
                                           int(instance.factors["template"]))
            assert parse_aat_reply(a2).answer == expected
        for instance in generate_aat(combinations=10, form="single_prompt"):
            reply = chat(server.base_url, "aat-stereotyped", [{"role": "user", "content": instance.texts[0]}])
            assert parse_aat_reply(reply, form="single_prompt").answer == expected_aat_answer(
                "aat-stereotyped", instance.factors["s_e"], instance.factors["s_n"], int(instance.factors["template"]))
        # Other prompts get the classification rule; Q2 without its Q1 is not an AAT conversation.
        plain = chat(server.base_url, "aat-stereotyped", [{"role": "user", "content": "Target sentence: hello"}])
        assert str(server.expected_label("aat-stereotyped", "Target sentence: hello")) in plain
        assert implicit_bias_reply("aat-stereotyped", [generate_aat(combinations=1)[0].texts[1]]) is None
