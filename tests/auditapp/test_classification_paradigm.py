"""The classification paradigm's pure parts: seeded orders, messages, replicate voting, and the analysis
checked against scikit-learn and scipy."""
from __future__ import annotations

import re

import numpy as np
import pandas as pd
import pytest
from scipy import stats
from sklearn.metrics import cohen_kappa_score, f1_score

from auditapp.engine.request_keys import request_key
from auditapp.paradigms.classification import analysis as classification
from auditapp.paradigms.classification.prompts import DEFAULT_TEMPLATES

EXAMPLES = [classification.Sentence(item_id=100 + i, target=f"Example {i}.", label=i % 2) for i in range(8)]


def test_example_order_is_seeded_by_audit_seed_and_item():
    first = classification.example_order(EXAMPLES, seed=1, item_id=5)
    assert first == classification.example_order(list(reversed(EXAMPLES)), seed=1, item_id=5)
    assert sorted(e.item_id for e in first) == [e.item_id for e in EXAMPLES]
    orders = {tuple(e.item_id for e in classification.example_order(EXAMPLES, seed=1, item_id=i)) for i in range(20)}
    assert len(orders) > 15, "each item gets its own order"
    assert first != classification.example_order(EXAMPLES, seed=2, item_id=5)
    assert classification.dispatch_order(1, 5) == classification.dispatch_order(1, 5) != classification.dispatch_order(2, 5)


def test_messages_are_one_user_message_with_the_paper_prompt():
    item = classification.Sentence(item_id=7, target="They want a cure.", preceding="Before.", following="")
    zs = classification.build_messages(DEFAULT_TEMPLATES["zs"].text, item)
    assert len(zs) == 1 and zs[0]["role"] == "user"
    assert zs[0]["content"].endswith("Preceding sentence: Before.\nTarget sentence: They want a cure.\nFollowing sentence: ")
    icl = classification.build_messages(DEFAULT_TEMPLATES["icl_a"].text, item, examples=EXAMPLES, seed=3)[0]["content"]
    assert len(re.findall(r"^Example \d+:$", icl, re.M)) == 8 and "Label: 1" in icl and "{examples}" not in icl
    again = classification.build_messages(DEFAULT_TEMPLATES["icl_a"].text, item, examples=EXAMPLES, seed=3)
    assert again[0]["content"] == icl


def test_request_keys_change_with_everything_that_changes_the_reply():
    base = {"protocol": "ollama", "base_url": "http://h:11434/", "model": "m", "digest": "d1", "params": {},
            "messages": [{"role": "user", "content": "x"}], "replicate": 0}
    key = request_key(**base)
    assert key == request_key(**{**base, "base_url": "http://h:11434"})
    for change in ({"digest": "d2"}, {"params": {"temperature": 0}}, {"replicate": 1}, {"model": "n"},
                   {"messages": [{"role": "user", "content": "y"}]}, {"scope": "audit:3"}):
        assert request_key(**{**base, **change}) != key


def test_replicates_vote_and_ties_have_no_prediction():
    replies = pd.DataFrame({"model": 1, "condition": "zs", "item": [1, 1, 1, 2, 2, 3, 3],
                            "replicate": [0, 1, 2, 0, 1, 0, 1], "label": [1, 1, 0, 1, 0, np.nan, 0]})
    predictions = classification.cell_predictions(replies).set_index("item")["prediction"]
    assert predictions[1] == 1 and np.isnan(predictions[2]) and predictions[3] == 0


def _replies(rng, n_items, models, conditions):
    rows = []
    for model in models:
        for condition in conditions:
            labels = rng.integers(0, 2, n_items).astype(float)
            labels[rng.random(n_items) < 0.1] = np.nan
            rows += [{"model": model, "condition": condition, "item": i, "replicate": 0, "label": labels[i]}
                     for i in range(n_items)]
    return pd.DataFrame(rows)


@pytest.mark.parametrize("unparsed", ["exclude", "wrong"])
def test_analysis_equals_scikit_learn_and_scipy(unparsed):
    rng = np.random.default_rng(4)
    n = 80
    models, conditions = ["a", "b", "c"], ["zs", "cot"]
    replies = _replies(rng, n, models, conditions)
    weighted = rng.integers(0, 2, n).astype(float)
    majority = np.where(rng.random(n) < 0.15, 1 - weighted, weighted)
    references = pd.DataFrame({"item": range(n), "weighted": weighted, "majority": majority})
    result = classification.analyse(replies, references, models=models, conditions=conditions, unparsed=unparsed,
                                    n_resamples=200)
    kappas = {}
    for cell in result.cells:
        pred = replies[(replies.model == cell["model"]) & (replies.condition == cell["condition"])]["label"].to_numpy()
        ref = references[cell["reference"]].to_numpy()
        if unparsed == "exclude":
            keep = ~np.isnan(pred)
            pred, ref = pred[keep], ref[keep]
        else:
            pred = np.where(np.isnan(pred), 1 - ref, pred)
        assert cell["n"] == len(pred) and cell["unparsed"] == unparsed
        assert cell["kappa"] == pytest.approx(cohen_kappa_score(pred, ref))
        assert cell["f1"] == pytest.approx(f1_score(ref, pred))
        kappas[(cell["model"], cell["condition"], cell["reference"])] = cell["kappa"]
    cells = [(m, c) for m in models for c in conditions]
    km = [kappas[(m, c, "majority")] for m, c in cells]
    kw = [kappas[(m, c, "weighted")] for m, c in cells]
    test = stats.ttest_rel(km, kw)
    assert result.gap["t_statistic"] == pytest.approx(test.statistic)
    assert result.gap["p_value"] == pytest.approx(test.pvalue)
    assert result.gap["df"] == len(cells) - 1
    assert result.gap["mean_delta"] == pytest.approx(np.mean(np.subtract(km, kw)))
    means = {row["model"]: row for row in result.model_means}
    assert means["a"]["kappa_weighted"] == pytest.approx(np.mean([kappas[("a", c, "weighted")] for c in conditions]))
    assert means["a"]["delta_kappa"] == pytest.approx(np.mean([kappas[("a", c, "majority")] - kappas[("a", c, "weighted")]
                                                               for c in conditions]))
