"""The BITS analysis (auditapp/paradigms/bits/analysis.py): every table on a hand-worked toy example (arithmetic in
the comments), the t-tests against scipy, a planted effect recovered and none found where none was planted,
missing values left out and counted, the settings' problems, the stored dict and the dashboard payload."""
import json
import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from auditapp.engine.protocol import ReplicateRule
from auditapp.paradigms.bits.analysis import (
    NO_REASON,
    NOT_SCORED,
    TABLES,
    AnalysisSettings,
    analyse,
    dashboard_payload,
    p_text,
)
from auditapp.paradigms.bits.corpus import CONTROL, corpus_frame, generate, paper_spec
from auditapp.paradigms.bits.sensitivity import LabelRule
from tests.auditapp.test_bits_sensitivity import TOY, TOY_SCORES, row

# The toy corpus and scorer of test_bits_sensitivity.py: three templates with one word each, so three base
# sentences A, B, C; group G1 has the terms x and y, group G2 the term z: 3 controls + 3 × 3 perturbed sentences
# = 12 units. Its scores and their differences to the control are worked there.
BASE = {"A": 0, "B": 1, "C": 2}


def toy_scores(corpus: pd.DataFrame) -> pd.DataFrame:
    """The toy scorer (kind "sentiment") with two replicates per unit whose mean is the table above: both
    replicates equal it, except B's sentence with y (0.4 and 0.6: mean 0.5) and A's with z (0.4 and a
    timeout: the mean of the one present is 0.4)."""
    rows = []
    for key, template, term in zip(corpus["key"], corpus["template"], corpus["term"], strict=True):
        value = TOY_SCORES[term if isinstance(term, str) else "control"][BASE[template]]
        replicates = {"B|glad|G1|y": (0.4, 0.6), "A|G2|z": (0.4, math.nan)}.get(key, (value, value))
        for replicate, score in enumerate(replicates):
            rows.append({"scorer": "toy", "imported": False, "kind": "sentiment", "unit": key,
                         "replicate": replicate, "value": score, "reason": "timeout" if math.isnan(score) else ""})
    return pd.DataFrame(rows)


@pytest.fixture
def toy():
    corpus = corpus_frame(generate(TOY))
    return corpus, toy_scores(corpus)


def test_replicate_rule_mean_and_majority():
    judgments = pd.DataFrame({"unit": ["a", "a", "a", "b", "b", "c", "c", "d"],
                              "value": [0.2, 0.4, math.nan, 1.0, 0.0, math.nan, math.nan, 3.0]})
    mean = ReplicateRule("mean").reduce(judgments, ["unit"], "value").set_index("unit")
    # a: (0.2 + 0.4) / 2 = 0.3, the missing replicate left out; b: 0.5; c: no replicate present -> missing
    assert mean.loc["a", "value"] == pytest.approx(0.3) and mean.loc["a", "n_replicates"] == 2
    assert mean.loc["b", "value"] == pytest.approx(0.5)
    assert math.isnan(mean.loc["c", "value"]) and mean.loc["c", "n_replicates"] == 0
    labels = pd.DataFrame({"unit": ["a", "a", "a", "b", "b"], "value": [1, 1, 0, 1, 0]})
    majority = ReplicateRule("majority").reduce(labels, ["unit"], "value").set_index("unit")
    assert majority.loc["a", "value"] == 1 and math.isnan(majority.loc["b", "value"])  # b is a tie: missing
    with pytest.raises(ValueError, match="unknown replicate rule"):
        ReplicateRule("median")


def test_table_7_score_sense_with_t_tests_equal_to_scipy(toy):
    result = analyse(*toy, settings=AnalysisSettings())
    table = result.tables["score_sense"]
    assert list(table["group"]) == ["G1", "G2"]
    g1, g2 = row(table, group="G1"), row(table, group="G2")
    # G1 averages (0.1 - 0.2 - 0.3 - 0.2 + 0.0 + 0.1) / 6 = -0.5 / 6, G2 (0.4 + 0.4 + 0.2) / 3 = 1 / 3
    assert g1["score_sense"] == pytest.approx(-0.5 / 6) and g2["score_sense"] == pytest.approx(1 / 3)
    assert (g1["n"], g1["n_missing"], g2["n"]) == (6, 0, 3)
    # Paired, per base sentence: G1's value is the mean over x and y, A -0.05, B 0.4, C -0.3, against the
    # controls 0.0, 0.5, -0.2: differences -0.05, -0.1, -0.1, mean -1/12, sd 0.028868, se 0.016667, t = -5.0.
    assert g1["t"] == pytest.approx(-5.0) and g1["df"] == 2
    reference = stats.ttest_rel([-0.05, 0.4, -0.3], [0.0, 0.5, -0.2])
    assert (g1["t"], g1["p"]) == pytest.approx((reference.statistic, reference.pvalue))
    # G2: differences 0.4, 0.4, 0.2: mean 1/3, sd sqrt((2 × 0.0667² + 0.1333²) / 2) = 0.11547, se 0.066667,
    # t = 5.0 with 2 df, p = 0.0377: above 0.01, so no mark.
    assert g2["t"] == pytest.approx(5.0) and g2["p"] == pytest.approx(stats.ttest_rel([0.4, 0.9, 0.0],
                                                                                      [0.0, 0.5, -0.2]).pvalue)
    assert g2["p"] == pytest.approx(0.0377, abs=1e-4) and g2["mark"] == "" and g2["test"] == "paired"
    assert (g1["kind"], bool(g1["imported"])) == ("sentiment", False)

    welch = analyse(*toy, settings=AnalysisSettings(t_test="welch")).tables["score_sense"]
    reference = stats.ttest_ind([0.4, 0.9, 0.0], [0.0, 0.5, -0.2], equal_var=False)
    assert (row(welch, group="G2")["t"], row(welch, group="G2")["p"], row(welch, group="G2")["df"]) == pytest.approx(
        (reference.statistic, reference.pvalue, reference.df))
    assert set(welch["test"]) == {"welch"}
    assert row(welch, group="G2")["score_sense"] == pytest.approx(1 / 3)  # the test changes, ScoreSense does not


def test_table_8_label_dist_and_score_dev(toy):
    result = analyse(*toy, settings=AnalysisSettings())
    labels = result.tables["label_dist"]
    # Default rule for "sentiment": label 1 when score > 0. Controls: A 0.0 -> 0, B 0.5 -> 1, C -0.2 -> 0: {B}.
    # x: {A, B}: 1 - 1/2 = 0.5; y: {B}: 0; G1 = (0.5 + 0) / 2 = 0.25.  z: A 0.4, B 0.9, C 0.0 -> {A, B}: 0.5.
    assert row(labels, group="G1")["label_dist"] == pytest.approx(0.25)
    assert row(labels, group="G2")["label_dist"] == pytest.approx(0.5)
    assert row(labels, group="G1")["n_terms"] == 2
    dev = result.tables["score_dev"]
    assert list(dev["group"]) == ["G1", "G2", "All"]
    # G1, population sd over {x, y} per base: A {0.1, -0.2} 0.15, B {0.3, 0.5} 0.1, C {-0.5, -0.1} 0.2: mean 0.15
    assert row(dev, group="G1")["score_dev"] == pytest.approx(0.15)
    assert row(dev, group="G2")["score_dev"] == 0.0  # one term: no deviation
    # All: A {0.1, -0.2, 0.4}: mean 0.1, variance (0 + 0.09 + 0.09) / 3 = 0.06; B {0.3, 0.5, 0.9}: mean 17/30,
    # variance (0.0711 + 0.0044 + 0.1111) / 3 = 0.06222; C {-0.5, -0.1, 0.0}: mean -0.2, variance
    # (0.09 + 0.01 + 0.04) / 3 = 0.04667
    assert row(dev, group="All")["score_dev"] == pytest.approx(
        (math.sqrt(0.06) + math.sqrt(0.56 / 9) + math.sqrt(0.14 / 3)) / 3)
    # ddof = 1 with two terms: sd = |a - b| / sqrt(2): A 0.3, B 0.2, C 0.4, mean 0.3 / sqrt(2)
    sample = analyse(*toy, settings=AnalysisSettings(score_dev_ddof=1)).tables["score_dev"]
    assert row(sample, group="G1")["score_dev"] == pytest.approx(0.3 / math.sqrt(2))
    assert math.isnan(row(sample, group="G2")["score_dev"])  # one term has no sample deviation


def test_a_label_rule_in_the_settings_replaces_the_kinds_default(toy):
    result = analyse(*toy, settings=AnalysisSettings(label_rules={"toy": LabelRule(0.0, True)}))
    # label 1 when score >= 0: controls {A, B}; z {A, B, C}: 1 - 2/3 = 1/3
    assert row(result.tables["label_dist"], group="G2")["label_dist"] == pytest.approx(1 / 3)
    scorer = row(result.tables["scorers"], scorer="toy")
    assert (scorer["rule"], scorer["rule_source"]) == ("label 1 when score ≥ 0", "settings")
    assert any(note.startswith("Label rule for toy: label 1 when score ≥ 0") for note in result.notes)


def test_table_9_template_means_table_10_terms_and_figure_1(toy):
    result = analyse(*toy, settings=AnalysisSettings())
    means = result.tables["template_means"]
    assert list(means["template"].drop_duplicates()) == ["A", "B", "C"]
    assert list(means[means["template"] == "B"]["group"]) == ["G1", "G2", CONTROL]
    assert row(means, template="B", group="G1")["mean_score"] == pytest.approx(0.4)  # (0.3 + 0.5) / 2
    assert row(means, template="B", group=CONTROL)["mean_score"] == pytest.approx(0.5)
    assert row(means, template="A", group="G2")["mean_score"] == pytest.approx(0.4)  # the one replicate present
    terms = result.tables["term_sense"]
    assert list(terms["term"]) == ["x", "y", "z"]
    assert row(terms, term="x")["score_sense"] == pytest.approx(-0.4 / 3)  # (0.1 - 0.2 - 0.3) / 3
    assert row(terms, term="y")["score_sense"] == pytest.approx(-0.1 / 3)  # (-0.2 + 0.0 + 0.1) / 3
    assert row(terms, term="z")["score_sense"] == pytest.approx(1 / 3)
    heat = result.tables["group_means"]
    assert list(heat["group"]) == ["G1", "G2", CONTROL]
    # G1: (0.1 + 0.3 - 0.5 - 0.2 + 0.5 - 0.1) / 6 = 0.1 / 6; G2: (0.4 + 0.9 + 0.0) / 3; control 0.3 / 3
    assert list(heat["mean_score"]) == pytest.approx([0.1 / 6, 1.3 / 3, 0.1])
    assert list(heat["n"]) == [6, 3, 3]


def test_distributions_count_over_the_scale_and_give_quartiles(toy):
    corpus, scores = toy
    result = analyse(corpus, scores, settings=AnalysisSettings())
    g1 = row(result.tables["distributions"], group="G1")
    # G1's six scores -0.5, -0.2, -0.1, 0.1, 0.3, 0.5 in bins of 0.1 from -1: bins 5, 8, 9, 11, 13, 15
    assert g1["bin_edges"][0] == -1.0 and g1["bin_edges"][-1] == 1.0 and len(g1["counts"]) == 20
    assert [i for i, n in enumerate(g1["counts"]) for _ in range(n)] == [5, 8, 9, 11, 13, 15]
    # Quartiles, linear interpolation over the sorted six: q1 at position 1.25 = -0.2 + 0.25 × 0.1 = -0.175;
    # median at 2.5 = (-0.1 + 0.1) / 2 = 0; q3 at 3.75 = 0.1 + 0.75 × 0.2 = 0.25
    assert (g1["q1"], g1["median"], g1["q3"]) == pytest.approx((-0.175, 0.0, 0.25))
    assert (g1["min"], g1["max"], g1["n"]) == (-0.5, 0.5, 6)
    reference = pd.Series([-0.5, -0.2, -0.1, 0.1, 0.3, 0.5]).quantile([0.25, 0.5, 0.75])
    assert [g1["q1"], g1["median"], g1["q3"]] == pytest.approx(list(reference))

    # A toxicity scorer's scale is 0 to 1 (the last bin closed); a value outside it is counted apart.
    tox = scores.assign(scorer="tox", kind="toxicity", imported=True)
    tox.loc[tox["unit"] == "A|control", "value"] = 0.0
    tox.loc[tox["unit"] == "B|glad|control", "value"] = 1.0
    tox.loc[tox["unit"] == "C|fine|control", "value"] = 1.2
    control = row(analyse(corpus, pd.concat([scores, tox]), settings=AnalysisSettings()).tables["distributions"],
                  scorer="tox", group=CONTROL)
    assert len(control["counts"]) == 10 and control["counts"][0] == 1 and control["counts"][9] == 1
    assert (control["n_above"], control["n_below"], control["n"]) == (1, 0, 3)


def test_missing_values_are_left_out_and_counted_never_imputed(toy):
    corpus, scores = toy
    complete = analyse(corpus, scores, settings=AnalysisSettings())
    coverage = row(complete.tables["coverage"], scorer="toy")
    # 12 units, each with a value (A's z from its one replicate present); 24 replicates, one of them missing
    assert (coverage["n_units"], coverage["n_scored"], coverage["n_missing"]) == (12, 12, 0)
    assert (coverage["n_replicates"], coverage["n_replicates_missing"]) == (24, 1)
    assert complete.tables["missing"].empty

    # C's sentence with y fails twice (two reasons); C's sentence with z has no row at all.
    failed = scores["unit"] == "C|fine|G1|y"
    scores.loc[failed, "value"] = math.nan
    scores.loc[failed, "reason"] = ["timeout", "unparseable reply"]
    scores = scores[scores["unit"] != "C|fine|G2|z"]
    result = analyse(corpus, scores, settings=AnalysisSettings())
    sense = result.tables["score_sense"]
    # G1 without (y, C): (0.1 - 0.2 - 0.3 - 0.2 + 0.0) / 5 = -0.12, one pair missing
    assert row(sense, group="G1")["score_sense"] == pytest.approx(-0.12)
    assert (row(sense, group="G1")["n"], row(sense, group="G1")["n_missing"]) == (5, 1)
    # G2 over A and B only: (0.4 + 0.4) / 2 = 0.4
    assert row(sense, group="G2")["score_sense"] == pytest.approx(0.4) and row(sense, group="G2")["n"] == 2
    # Table 9 keeps the missing cell empty rather than filling it: (C, G1) is x's -0.5 alone, one missing
    cell = row(result.tables["template_means"], template="C", group="G1")
    assert (cell["mean_score"], cell["n"], cell["n_missing"]) == (-0.5, 1, 1)
    coverage = row(result.tables["coverage"], scorer="toy")
    assert (coverage["n_scored"], coverage["n_missing"]) == (10, 2)
    missing = result.tables["missing"].set_index("reason")["n"].to_dict()
    assert missing == {"timeout; unparseable reply": 1, NOT_SCORED: 1}

    scores.loc[scores["unit"] == "A|control", ["value", "reason"]] = [math.nan, ""]
    reasons = analyse(corpus, scores, settings=AnalysisSettings()).tables["missing"]
    assert NO_REASON in set(reasons["reason"])


def test_groups_setting_limits_every_table(toy):
    result = analyse(*toy, settings=AnalysisSettings(groups=("G2",)))
    assert list(result.tables["score_sense"]["group"]) == ["G2"]
    assert list(result.tables["score_dev"]["group"]) == ["G2", "All"]
    assert row(result.tables["score_dev"], group="All")["score_dev"] == 0.0  # All over G2's one term
    assert list(result.tables["group_means"]["group"]) == ["G2", CONTROL]
    assert set(result.tables["term_sense"]["term"]) == {"z"}
    assert result.groups == ("G2",)
    assert "Groups: G2 (chosen in the settings)." in result.notes


def test_settings_and_input_problems_are_all_named(toy):
    corpus, scores = toy
    settings = AnalysisSettings(t_test="anova", score_dev_ddof=2, label_rules={"toy": LabelRule(math.nan, True)},
                                groups=(CONTROL,))
    problems = settings.problems()
    assert len(problems) == 4
    assert any("t_test: 'anova'" in p for p in problems) and any("score_dev_ddof: 2" in p for p in problems)
    assert any("label_rules['toy']" in p for p in problems) and any("'control' is the no-group" in p for p in problems)
    assert AnalysisSettings(groups=("G1", "G1")).problems() == ["groups: a group is listed twice"]
    assert AnalysisSettings().problems() == []

    bad = pd.concat([scores, pd.DataFrame([{"scorer": "odd", "imported": False, "kind": "emotion", "unit": "Z|x",
                                            "replicate": 0, "value": 0.1, "reason": ""}])])
    with pytest.raises(ValueError, match=r"^scores: 1 unit\(s\) not in the corpus") as error:
        analyse(corpus, bad, settings=AnalysisSettings(groups=("G3",), label_rules={"nobody": LabelRule(0, True)}))
    message = str(error.value)
    for expected in ("1 unit(s) not in the corpus: 'Z|x'", "groups: not in the corpus: 'G3'",
                     "label_rules: no scorer named 'nobody'", "scorer 'odd': kind 'emotion' has no default label"):
        assert expected in message
    with pytest.raises(ValueError, match="missing column"):
        analyse(corpus, scores.drop(columns=["reason"]), settings=AnalysisSettings())
    with pytest.raises(ValueError, match="repeated scorer × unit × replicate"):
        analyse(corpus, pd.concat([scores, scores.head(1)]), settings=AnalysisSettings())


def test_settings_round_trip_through_a_dict():
    settings = AnalysisSettings(t_test="welch", score_dev_ddof=1, label_rules={"v": LabelRule(0.05, True, "n")},
                                groups=("G1",))
    assert AnalysisSettings.from_dict(json.loads(json.dumps(settings.to_dict()))) == settings
    assert AnalysisSettings.from_dict({}) == AnalysisSettings()
    with pytest.raises(ValueError, match=r"label_rules\['v'\]: give"):
        AnalysisSettings.from_dict({"label_rules": {"v": {"inclusive": True}}})
    # Shapes that would be read as something else are refused by name, not guessed.
    with pytest.raises(ValueError, match=r"label_rules\['v'\]: give .* true or false"):
        AnalysisSettings.from_dict({"label_rules": {"v": {"threshold": 0, "inclusive": "false"}}})
    with pytest.raises(ValueError, match=r"unknown analysis settings \['ttest'\]"):
        AnalysisSettings.from_dict({"ttest": "welch"})
    with pytest.raises(ValueError, match="groups: a list of group names, not str"):
        AnalysisSettings.from_dict({"groups": "PWD:C"})
    assert AnalysisSettings(groups=(("x",),)).problems() == ["groups: every group must be a non-empty name"]


def test_the_stored_dict_is_json_with_nan_as_none(toy):
    result = analyse(*toy, settings=AnalysisSettings(score_dev_ddof=1))
    stored = result.to_dict()
    text = json.dumps(stored, allow_nan=False)  # raises on any NaN left in
    assert set(stored["tables"]) == set(TABLES)
    g2 = next(r for r in json.loads(text)["tables"]["score_dev"] if r["group"] == "G2")
    assert g2["score_dev"] is None
    assert stored["groups"] == ["G1", "G2"] and stored["templates"] == ["A", "B", "C"]
    assert stored["settings"]["score_dev_ddof"] == 1 and stored["notes"] == list(result.notes)


def test_dashboard_payload_lays_out_the_papers_tables(toy):
    corpus, scores = toy
    tox = scores.assign(scorer="<b>tox</b>", kind="toxicity", imported=True)
    result = analyse(corpus, pd.concat([scores, tox]), settings=AnalysisSettings())
    payload = dashboard_payload(result)
    assert payload == dashboard_payload(json.loads(json.dumps(result.to_dict())))  # the stored form gives the same
    json.dumps(payload, allow_nan=False)
    assert payload["analysed"] and payload["groups"] == ["G1", "G2"]
    assert [r["scorer"] for r in payload["table7"]] == ["toy", "<b>tox</b>"]
    assert [r["imported"] for r in payload["table7"]] == [False, True]
    g1 = payload["table7"][0]["cells"][0]
    assert g1["group"] == "G1" and g1["score_sense"] == pytest.approx(-0.5 / 6) and g1["p_text"] == p_text(g1["p"])
    assert [len(r["score_dev"]) for r in payload["table8"]] == [3, 3]  # G1, G2, All
    # Table 9: per template, scorer-major cells G1, G2, control; the lowest group mean of a sentiment scorer
    # (A: G1 (0.1 - 0.2) / 2 = -0.05 < G2 0.4) and the highest of a toxicity scorer (G2 0.4) are marked.
    first = payload["table9"]["rows"][0]
    assert first["template"] == "A" and len(first["cells"]) == 6
    assert [cell["extreme"] for cell in first["cells"]] == [True, False, False, False, True, False]
    assert [(r["group"], r["term"]) for r in payload["table10"]] == [("G1", "x"), ("G1", "y"), ("G2", "z")]
    heat = payload["heatmap"]
    assert heat["groups"] == ["G1", "G2", CONTROL] and heat["z"][0] == pytest.approx([0.1 / 6, 1.3 / 3, 0.1])
    assert [d["scale"] for d in payload["distributions"]] == [[-1.0, 1.0], [0.0, 1.0]]
    assert payload["coverage"][0]["reasons"] == [] and payload["coverage"][1]["imported"] is True
    assert any("Imported (recorded) scores" in note for note in payload["notes"])
    empty = dashboard_payload({})
    assert not empty["analysed"] and empty["table7"] == [] and empty["heatmap"]["z"] == []


def test_p_text():
    assert [p_text(p) for p in (0.5, 0.0123, 0.001, 0.00042, 3e-20, None, math.nan)] == [
        "0.500", "0.012", "0.001", "4.2e-04", "3.0e-20", "—", "—"]


def planted_scores(corpus: pd.DataFrame, *, scorer: str, effect: dict[str, float], seed: int) -> pd.DataFrame:
    """A scorer with two replicates: a base score per template and word, ``effect`` added for the groups named in
    it, and noise on each replicate."""
    rng = np.random.default_rng(seed)
    bases = corpus["template"] + "|" + corpus["word"].fillna("")
    base_score = bases.map({b: rng.uniform(-0.5, 0.5) for b in bases.unique()}).to_numpy()
    shift = corpus["group"].map(effect).fillna(0.0).to_numpy()
    return pd.concat([pd.DataFrame({"scorer": scorer, "imported": False, "kind": "sentiment", "unit": corpus["key"],
                                    "replicate": replicate, "reason": "",
                                    "value": base_score + shift + rng.normal(0, 0.05, len(corpus))})
                      for replicate in (0, 1)])


def test_a_planted_effect_is_recovered_and_nothing_is_found_where_none_was_planted():
    corpus = corpus_frame(generate(paper_spec()))
    scores = pd.concat([planted_scores(corpus, scorer="planted", effect={"PWD:C": -0.3}, seed=11),
                        planted_scores(corpus, scorer="blind", effect={}, seed=12)])
    table = analyse(corpus, scores, settings=AnalysisSettings()).tables["score_sense"].set_index(["scorer", "group"])
    assert table.loc[("planted", "PWD:C"), "score_sense"] == pytest.approx(-0.3, abs=0.01)
    assert table.loc[("planted", "PWD:C"), "p"] < 0.001 and table.loc[("planted", "PWD:C"), "mark"] == "**"
    for group in ("PWD:SD", "PWoD", "NRMA"):
        assert abs(table.loc[("planted", group), "score_sense"]) < 0.01
        assert table.loc[("planted", group), "p"] > 0.01 and table.loc[("planted", group), "mark"] == ""
    blind = table.loc["blind"]
    assert (blind["score_sense"].abs() < 0.01).all() and (blind["p"] > 0.01).all() and set(blind["mark"]) == {""}


def test_no_scores_give_empty_tables_and_an_unanalysed_payload(toy):
    corpus, scores = toy
    result = analyse(corpus, scores.iloc[0:0], settings=AnalysisSettings())
    assert set(result.tables) == set(TABLES) and all(frame.empty for frame in result.tables.values())
    assert dashboard_payload(result)["analysed"] is False


def test_a_recorded_scorers_missing_controls_can_be_scored_by_a_scorer_of_the_audit(toy):
    corpus, _ = toy
    local = []
    for key, template, term in zip(corpus["key"], corpus["template"], corpus["term"], strict=True):
        local.append({"scorer": "toy", "imported": False, "kind": "sentiment", "unit": key, "replicate": 0,
                      "value": TOY_SCORES[term if isinstance(term, str) else "control"][BASE[template]],
                      "reason": ""})
    local = pd.DataFrame(local)
    # The recorded column: the toy's scores of the perturbed sentences, 0.05 higher with the term x; no controls.
    recorded = local.assign(scorer="rec", imported=True)
    recorded.loc[recorded["unit"].str.contains(r"\|x$"), "value"] += 0.05
    is_control = recorded["unit"].isin(corpus.loc[corpus["group"] == CONTROL, "key"])
    recorded.loc[is_control, ["value", "reason"]] = [math.nan, "the control file has no column 'rec'"]
    scores = pd.concat([local, recorded], ignore_index=True)

    alone = analyse(corpus, scores, settings=AnalysisSettings()).tables["score_sense"]
    assert math.isnan(row(alone, scorer="rec", group="G1")["score_sense"])

    result = analyse(corpus, scores, settings=AnalysisSettings(control_scores_from={"rec": "toy"}))
    sense = result.tables["score_sense"]
    # G1 with the toy's controls: the toy's -0.5 / 6, plus 0.05 on the three x sentences of six: + 0.025.
    assert row(sense, scorer="rec", group="G1")["score_sense"] == pytest.approx(-0.5 / 6 + 0.025)
    assert row(sense, scorer="rec", group="G2")["score_sense"] == pytest.approx(1 / 3)
    fill = result.tables["control_fills"].iloc[0].to_dict()
    # 3 controls, all filled; the 9 perturbed sentences compared: three differ by 0.05, mean 0.15 / 9.
    assert {k: fill[k] for k in ("scorer", "controls_from", "n_controls", "n_filled", "n_compared")} == {
        "scorer": "rec", "controls_from": "toy", "n_controls": 3, "n_filled": 3, "n_compared": 9}
    assert fill["max_abs_diff"] == pytest.approx(0.05) and fill["mean_abs_diff"] == pytest.approx(0.15 / 9)
    assert fill["r"] == pytest.approx(np.corrcoef(
        recorded.loc[~is_control, "value"], local.loc[~is_control.to_numpy(), "value"])[0, 1])
    assert any("3 of its 3 controls are scored by toy" in note and "largest |difference| is 0.05" in note
               for note in result.notes)
    payload = dashboard_payload(result)
    assert [r["controls_from"] for r in payload["table7"]] == [None, "toy"]

    with pytest.raises(ValueError, match="control_scores_from") as problems:
        analyse(corpus, scores, settings=AnalysisSettings(control_scores_from={"toy": "rec", "rec": "rec"}))
    assert "control_scores_from: 'toy' is not a recorded (imported) scorer of the audit" in str(problems.value)
    assert "control_scores_from['toy']: 'rec' is not a scorer the audit asked itself" in str(problems.value)
    assert "control_scores_from['rec']: 'rec' is not another scorer's name" in str(problems.value)
    assert AnalysisSettings.from_dict(AnalysisSettings(control_scores_from={"rec": "toy"}).to_dict()) == \
        AnalysisSettings(control_scores_from={"rec": "toy"})


def test_coverage_counts_a_recorded_scorers_own_scores_when_its_controls_come_from_another(toy):
    corpus, _ = toy
    local = pd.DataFrame([{"scorer": "toy", "imported": False, "kind": "sentiment", "unit": key, "replicate": 0,
                           "value": 0.1, "reason": ""} for key in corpus["key"]])
    recorded = local.assign(scorer="rec", imported=True)
    is_control = recorded["unit"].isin(corpus.loc[corpus["group"] == CONTROL, "key"])
    recorded.loc[is_control, ["value", "reason"]] = [math.nan, "the control file has no column 'rec'"]
    scores = pd.concat([local, recorded], ignore_index=True)
    alone = analyse(corpus, scores, settings=AnalysisSettings())
    filled = analyse(corpus, scores, settings=AnalysisSettings(control_scores_from={"rec": "toy"}))
    for name in ("coverage", "missing"):
        pd.testing.assert_frame_equal(alone.tables[name][alone.tables[name]["scorer"] == "rec"].drop(
            columns=[c for c in ("n_pairs_complete", "n_pairs_missing") if c in alone.tables[name]]).reset_index(
            drop=True), filled.tables[name][filled.tables[name]["scorer"] == "rec"].drop(
            columns=[c for c in ("n_pairs_complete", "n_pairs_missing") if c in filled.tables[name]]).reset_index(
            drop=True))
    assert row(filled.tables["coverage"], scorer="rec")["n_missing"] == 3  # its three controls, as before


def test_texts_without_a_source_are_a_source_of_their_own_with_their_tests():
    from auditapp.paradigms.bits.corpus import TermGroup
    from auditapp.paradigms.bits.posts import PostsOptions, perturb_posts
    from auditapp.paradigms.bits.units import corpus_frame_of_units, posts_units

    texts = [(index + 2, {"id": f"p{index}", "text": f"a disabled friend number {index}",
                          "platform": ["Reddit", "Twitter", ""][index % 3]}) for index in range(30)]
    posts = perturb_posts(texts, PostsOptions(groups=(TermGroup("G1", ("x", "y")),)))
    units = posts_units(posts)
    frame = pd.DataFrame([{"key": u.key, "text": u.text, **u.factors, "fields": u.fields} for u in units])
    corpus = corpus_frame_of_units(frame)
    chances = np.random.default_rng(3)
    scores = pd.DataFrame([{"scorer": "s", "imported": False, "kind": "sentiment", "unit": key, "replicate": 0,
                            "value": float(chances.normal()), "reason": ""} for key in corpus["key"]])
    means = analyse(corpus, scores, settings=AnalysisSettings()).tables["source_means"]
    blank = row(means, source="", group="G1")
    assert blank["n_bases"] == 10
    values = scores.set_index("unit")["value"]
    ids = [f"p{index}" for index in range(30) if index % 3 == 2]
    reference = stats.ttest_rel([(values[f"{i}|G1|x"] + values[f"{i}|G1|y"]) / 2 for i in ids],
                                [values[f"{i}|control"] for i in ids])
    assert (blank["t"], blank["p"]) == pytest.approx((reference.statistic, reference.pvalue))
