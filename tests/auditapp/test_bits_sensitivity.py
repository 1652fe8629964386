"""Perturbation Sensitivity Analysis (seed 001 §4): ScoreSense, ScoreDev, LabelDist, t-tests and mean tables,
against a hand-worked example (arithmetic in the comments), numpy/scipy, and a planted effect on the full corpus."""
import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from auditapp.paradigms.bits.corpus import CONTROL, corpus_frame, generate, paper_spec, spec_from_dict
from auditapp.paradigms.bits.sensitivity import (
    LABEL_RULES,
    LabelRule,
    control_tests,
    exact_mean,
    label_dist,
    mean_scores,
    pair_with_controls,
    paper_mark,
    score_dev,
    score_sense,
)

# A toy corpus: three templates (one neutral, one emotional-word, one event-word, one word each), so three
# base sentences A, B, C; group G1 has terms x and y, group G2 has term z.
TOY = spec_from_dict({
    "templates": [{"id": "A", "text": "The <group> one."},
                  {"id": "B", "text": "I feel <emotional word> about the <group> one."},
                  {"id": "C", "text": "It was a <event word> <group> day."}],
    "emotions": [{"emotion": "Joy", "emotional_words": ["glad"], "event_words": ["fine"]}],
    "groups": [{"group": "G1", "terms": ["x", "y"]}, {"group": "G2", "terms": ["z"]}],
})
# The toy scorer's scores:            A      B      C
TOY_SCORES = {"control":          (0.0, 0.5, -0.2),
              "x":                (0.1, 0.3, -0.5),   # diffs  0.1, -0.2, -0.3
              "y":                (-0.2, 0.5, -0.1),  # diffs -0.2,  0.0,  0.1
              "z":                (0.4, 0.9, 0.0)}    # diffs  0.4,  0.4,  0.2


def toy_scored(table: dict) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The toy corpus and its scores from ``table`` (term or "control" → the score in templates A, B, C)."""
    corpus = corpus_frame(generate(TOY))
    position = {"A": 0, "B": 1, "C": 2}
    scores = pd.DataFrame({
        "scorer": "toy", "key": corpus["key"],
        "score": [table[term if isinstance(term, str) else "control"][position[template]]
                  for template, term in zip(corpus["template"], corpus["term"], strict=True)]})
    return corpus, scores


@pytest.fixture
def toy():
    return toy_scored(TOY_SCORES)


def row(frame: pd.DataFrame, **where) -> pd.Series:
    selected = frame
    for column, value in where.items():
        selected = selected[selected[column] == value]
    assert len(selected) == 1, (where, selected)
    return selected.iloc[0]


def test_score_sense_per_group_and_term(toy):
    pairs = pair_with_controls(*toy)
    groups = score_sense(pairs)
    # G1 averages (0.1 - 0.2 - 0.3 - 0.2 + 0.0 + 0.1) / 6 = -0.5 / 6
    assert row(groups, group="G1")["score_sense"] == pytest.approx(-0.5 / 6)
    # G2 averages (0.4 + 0.4 + 0.2) / 3 = 1 / 3
    assert row(groups, group="G2")["score_sense"] == pytest.approx(1 / 3)
    assert list(groups["n"]) == [6, 3] and list(groups["n_missing"]) == [0, 0]
    terms = score_sense(pairs, by_term=True)
    assert row(terms, term="x")["score_sense"] == pytest.approx(-0.4 / 3)  # (0.1 - 0.2 - 0.3) / 3
    assert row(terms, term="y")["score_sense"] == pytest.approx(-0.1 / 3)  # (-0.2 + 0.0 + 0.1) / 3
    assert row(terms, term="z")["score_sense"] == pytest.approx(1 / 3)


# G1's differences cancel:              A      B      C
CANCELLING_SCORES = {"control":   (0.6, 0.2, -0.5),
                     "x":         (0.2, -0.5, 0.7),    # diffs -0.4, -0.7,  1.2
                     "y":         (-0.1, 0.7, -0.4),   # diffs -0.7,  0.5,  0.1: with x's, 0 in all
                     "z":         (0.4, 0.9, 0.0)}     # diffs -0.2,  0.7,  0.5


def test_differences_that_cancel_give_a_score_sense_of_exactly_zero():
    """Summed step by step in the pairs' order, G1's six float differences leave 1.9e-17 (the public BITS files
    gave VADER's PWoD 5.8e-19, shown as "-0.000" in the headline); summed exactly, they are 0."""
    pairs = pair_with_controls(*toy_scored(CANCELLING_SCORES))
    assert math.fsum(pairs.loc[pairs["group"] == "G1", "diff"]) == 0.0
    assert row(score_sense(pairs), group="G1")["score_sense"] == 0.0
    assert row(score_sense(pairs), group="G2")["score_sense"] == pytest.approx(1 / 3)


def test_exact_mean():
    # A pandas group mean of these gives 6.9e-18.
    assert exact_mean(pd.Series([0.1 - 0.2, 0.3 - 0.7, 0.2 - 0.1, 0.7 - 0.3])) == 0.0
    assert exact_mean(pd.Series([0.1, np.nan, 0.3])) == pytest.approx(0.2)  # missing values are left out
    assert math.isnan(exact_mean(pd.Series([np.nan]))) and math.isnan(exact_mean(np.array([])))


def test_a_missing_score_is_left_out_and_counted_never_imputed(toy):
    corpus, scores = toy
    scores.loc[scores["key"] == "C|fine|G1|y", "score"] = math.nan
    groups = score_sense(pair_with_controls(corpus, scores))
    # G1 without (y, C): (0.1 - 0.2 - 0.3 - 0.2 + 0.0) / 5 = -0.12
    assert row(groups, group="G1")["score_sense"] == pytest.approx(-0.12)
    assert (row(groups, group="G1")["n"], row(groups, group="G1")["n_missing"]) == (5, 1)
    # a missing control takes out every pair built on it: C's three pairs
    scores.loc[scores["key"] == "C|fine|control", "score"] = math.nan
    groups = score_sense(pair_with_controls(corpus, scores))
    # G1 over A and B only: (0.1 - 0.2 - 0.2 + 0.0) / 4 = -0.075; G2: (0.4 + 0.4) / 2 = 0.4
    assert row(groups, group="G1")["score_sense"] == pytest.approx(-0.075)
    assert row(groups, group="G2")["score_sense"] == pytest.approx(0.4)
    assert list(groups["n_missing"]) == [2, 1]


def test_score_dev(toy):
    pairs = pair_with_controls(*toy)
    dev = score_dev(pairs)
    # G1, population sd over {x, y} per base: A {0.1, -0.2} -> 0.15; B {0.3, 0.5} -> 0.1; C {-0.5, -0.1} -> 0.2;
    # mean (0.15 + 0.1 + 0.2) / 3 = 0.15
    assert row(dev, group="G1")["score_dev"] == pytest.approx(0.15)
    assert row(dev, group="G2")["score_dev"] == 0.0  # one term: no deviation
    # All: sd over {x, y, z} per base, e.g. A {0.1, -0.2, 0.4}: mean 0.1, variance (0 + 0.09 + 0.09) / 3 = 0.06
    expected_all = np.mean([np.std([0.1, -0.2, 0.4]), np.std([0.3, 0.5, 0.9]), np.std([-0.5, -0.1, 0.0])])
    assert math.sqrt(0.06) == pytest.approx(np.std([0.1, -0.2, 0.4]))
    assert row(dev, group="All")["score_dev"] == pytest.approx(expected_all)
    assert row(dev, group="All")["n_bases"] == 3
    sample = score_dev(pairs, ddof=1)
    # ddof=1 with two terms: sd = |a - b| / sqrt(2): A 0.3, B 0.2, C 0.4 over sqrt(2); mean 0.3 / sqrt(2)
    assert row(sample, group="G1")["score_dev"] == pytest.approx(0.3 / math.sqrt(2))
    assert row(sample, group="G2")["n_bases"] == 0 and math.isnan(row(sample, group="G2")["score_dev"])


def test_label_dist(toy):
    pairs = pair_with_controls(*toy)
    # label 1 when score > 0. Controls: A 0.0 -> 0, B 0.5 -> 1, C -0.2 -> 0: set {B}.
    # x: A 0.1, B 0.3 -> {A, B}: 1 - |{B}| / |{A, B}| = 0.5.  y: {B}: 0.  G1 = (0.5 + 0) / 2 = 0.25.
    # z: A 0.4, B 0.9, C 0.0 (not > 0) -> {A, B}: 0.5.
    result = label_dist(pairs, {"toy": LabelRule(0.0, False)})
    assert row(result, group="G1")["label_dist"] == pytest.approx(0.25)
    assert row(result, group="G2")["label_dist"] == pytest.approx(0.5)
    assert row(result, group="G1")["rule"] == "label 1 when score > 0"
    # label 1 when score >= 0: controls {A, B}; z {A, B, C}: 1 - 2/3.  x {A, B}: 0.  y {B}: 1 - 1/2.
    inclusive = label_dist(pairs, {"toy": LabelRule(0.0, True)})
    assert row(inclusive, group="G2")["label_dist"] == pytest.approx(1 / 3)
    assert row(inclusive, group="G1")["label_dist"] == pytest.approx(0.25)


def test_label_dist_is_undefined_for_a_term_with_no_label_1_either_way(toy):
    pairs = pair_with_controls(*toy)
    result = label_dist(pairs, {"toy": LabelRule(5.0, True)})
    assert row(result, group="G1")["n_terms_undefined"] == 2
    assert math.isnan(row(result, group="G1")["label_dist"])
    with pytest.raises(ValueError, match="no label rule for scorer"):
        label_dist(pairs, {})


def test_label_dist_equals_scikit_learns_jaccard(toy):
    from sklearn.metrics import jaccard_score
    pairs = pair_with_controls(*toy)
    for term, expected_group in (("x", "G1"), ("z", "G2")):
        term_pairs = pairs[pairs["term"] == term]
        reference = 1 - jaccard_score((term_pairs["control_score"] > 0).astype(int), (term_pairs["score"] > 0))
        single = label_dist(term_pairs, {"toy": LABEL_RULES["sentiment"]})
        assert row(single, group=expected_group)["label_dist"] == pytest.approx(reference)


def test_t_tests_against_scipy(toy):
    pairs = pair_with_controls(*toy)
    paired = control_tests(pairs)
    g1 = row(paired, group="G1")
    # G1's value per base sentence is the mean over x and y: A (0.1 - 0.2) / 2 = -0.05, B 0.4, C -0.3;
    # against the controls 0.0, 0.5, -0.2 the differences are -0.05, -0.1, -0.1: mean -0.083333 (= ScoreSense),
    # sd sqrt((0.033333^2 + 2 * 0.016667^2) / 2) = 0.028868, se 0.016667: t = -5.0 with 2 df
    assert g1["t"] == pytest.approx(-5.0)
    reference = stats.ttest_rel([-0.05, 0.4, -0.3], [0.0, 0.5, -0.2])
    assert (g1["t"], g1["p"]) == pytest.approx((reference.statistic, reference.pvalue))
    assert (g1["df"], g1["n_bases"], g1["n_sentences"], g1["test"]) == (2, 3, 6, "paired")
    assert g1["mean_group"] - g1["mean_control"] == pytest.approx(-0.5 / 6)
    welch = control_tests(pairs, test="welch")
    g2 = row(welch, group="G2")
    reference = stats.ttest_ind([0.4, 0.9, 0.0], [0.0, 0.5, -0.2], equal_var=False)
    assert (g2["t"], g2["p"], g2["df"]) == pytest.approx((reference.statistic, reference.pvalue, reference.df))
    reference = stats.ttest_ind([-0.05, 0.4, -0.3], [0.0, 0.5, -0.2], equal_var=False)
    assert row(welch, group="G1")["t"] == pytest.approx(reference.statistic)
    with pytest.raises(ValueError, match="test must be one of"):
        control_tests(pairs, test="anova")


def test_a_scorer_blind_to_the_group_has_no_test(toy):
    corpus, scores = toy
    control_of = dict(zip(corpus["key"], corpus["control_key"].fillna(corpus["key"]), strict=True))
    by_key = dict(zip(scores["key"], scores["score"], strict=True))
    scores["score"] = [by_key[control_of[key]] for key in scores["key"]]
    result = control_tests(pair_with_controls(corpus, scores))
    assert result["t"].isna().all() and result["p"].isna().all()
    assert set(result["mark"]) == {""} and result["note"].str.startswith("undefined").all()
    assert (score_sense(pair_with_controls(corpus, scores))["score_sense"] == 0).all()


def test_paper_marks():
    assert [paper_mark(p) for p in (0.0002, 0.0009999, 0.001, 0.005, 0.0099, 0.01, 0.3, math.nan)] == [
        "**", "**", "*", "*", "*", "", "", ""]


def test_mean_tables(toy):
    corpus, scores = toy
    by_template = mean_scores(corpus, scores, by=["template", "group"])
    # Table 9's cell (B, G1): (0.3 + 0.5) / 2
    assert row(by_template, template="B", group="G1")["mean_score"] == pytest.approx(0.4)
    assert row(by_template, template="B", group=CONTROL)["mean_score"] == pytest.approx(0.5)
    heat = mean_scores(corpus, scores, by=["group"])
    assert row(heat, group="G2")["mean_score"] == pytest.approx((0.4 + 0.9 + 0.0) / 3)
    assert row(heat, group=CONTROL)["n"] == 3


def planted_scores(corpus: pd.DataFrame, *, effect: dict[str, float], seed: int) -> pd.DataFrame:
    """A scorer whose base score depends on the sentence's template and word, plus noise, plus ``effect`` for
    the groups named in it."""
    rng = np.random.default_rng(seed)
    bases = corpus["template"] + "|" + corpus["word"].fillna("")
    base_score = bases.map({b: rng.uniform(-0.5, 0.5) for b in bases.unique()})
    shift = corpus["group"].map(effect).fillna(0.0)
    noise = rng.normal(0, 0.05, len(corpus))
    return pd.DataFrame({"scorer": "planted", "key": corpus["key"], "score": base_score + shift + noise})


def test_a_planted_effect_is_recovered_on_the_paper_corpus():
    corpus = corpus_frame(generate(paper_spec()))
    scores = planted_scores(corpus, effect={"PWD:C": -0.25, "PWD:SD": -0.1}, seed=7)
    pairs = pair_with_controls(corpus, scores)
    sense = score_sense(pairs).set_index("group")["score_sense"]
    assert sense["PWD:C"] == pytest.approx(-0.25, abs=0.01)
    assert sense["PWD:SD"] == pytest.approx(-0.10, abs=0.01)
    assert abs(sense["PWoD"]) < 0.01 and abs(sense["NRMA"]) < 0.01
    tests = control_tests(pairs).set_index("group")
    assert tests.loc["PWD:C", "mark"] == "**" and tests.loc["PWD:SD", "mark"] == "**"
    assert tests.loc["PWoD", "p"] > 0.01 and tests.loc["NRMA", "p"] > 0.01


def test_nothing_is_found_where_nothing_was_planted():
    corpus = corpus_frame(generate(paper_spec()))
    found = 0
    for seed in range(20):
        tests = control_tests(pair_with_controls(corpus, planted_scores(corpus, effect={}, seed=seed)))
        found += int((tests["p"] < 0.01).sum())
    # 20 runs x 4 groups = 80 tests at alpha 0.01: about 0.8 expected by chance; 4 or more has p < 0.01.
    # (A test over sentences rather than base sentences found 5 here: the terms of a base share its control.)
    assert found <= 3


def test_rounding_in_a_bases_mean_is_not_variance():
    """A scorer that scores a group exactly as the control, on the paper's corpus: each base's group value is a
    mean of five equal scores, which floats round (mean([0.1] * 3) - 0.1 = 1.4e-17). The test is undefined, not a
    t of a few units from that noise (VADER's PWoD row read t = -2.03, p = 0.045 before)."""
    corpus = corpus_frame(generate(paper_spec()))
    control_of = dict(zip(corpus["key"], corpus["control_key"].fillna(corpus["key"]), strict=True))
    # Scores whose mean over five equal copies is not the score itself (np.mean([-0.88] * 5) != -0.88), one per
    # base sentence in turn.
    noisy = [v for v in np.round(np.linspace(-0.9, 0.9, 181), 4) if np.mean([v] * 5) != v]
    bases = sorted(set(control_of.values()))
    values = {base: noisy[index % len(noisy)] for index, base in enumerate(bases)}
    scores = pd.DataFrame({"scorer": "blind", "key": corpus["key"],
                           "score": [values[control_of[key]] for key in corpus["key"]]})
    assert len(noisy) > 10
    paired = control_tests(pair_with_controls(corpus, scores), test="paired")
    assert paired["t"].isna().all() and set(paired["mark"]) == {""}, paired[["group", "t", "p"]]
    assert paired["note"].str.startswith("undefined").all()
    # Welch's test compares the two samples, which do vary across base sentences: defined, and finds nothing.
    welch = control_tests(pair_with_controls(corpus, scores), test="welch")
    assert (welch["t"].abs() < 1e-9).all() and (welch["p"] > 0.999).all() and set(welch["mark"]) == {""}
