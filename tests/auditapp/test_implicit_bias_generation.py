"""Generation of seed 003 §3.3.3: 4,500 WABT and 1,500 AAT instances with the defaults, their distribution over
combinations, dimensions and templates, the recorded options, and seeding."""
from collections import Counter

import numpy as np
import pytest

from auditapp.paradigms.implicit_bias.generation import generate_aat, generate_wabt, seed_sequence
from auditapp.paradigms.implicit_bias.lexicons import DIMENSIONS, paper_lexicon
from auditapp.paradigms.implicit_bias.templates import AAT_TEMPLATES, WABT_TEMPLATES, wabt_prompt


@pytest.fixture(scope="module")
def wabt():
    return generate_wabt()


@pytest.fixture(scope="module")
def aat():
    return generate_aat()


def test_wabt_counts_and_distribution(wabt):
    # 10 combinations × 50 samples × 3 dimensions × 3 templates = 4,500 (§3.3.3).
    assert len(wabt) == 4500
    assert len({i.key for i in wabt}) == 4500
    by_combination = Counter(i.factors["combination"] for i in wabt)
    assert len(by_combination) == 10 and set(by_combination.values()) == {450}
    assert by_combination["African vs. American"] == 450
    assert Counter(i.factors["dimension"] for i in wabt) == dict.fromkeys(DIMENSIONS, 1500)
    assert Counter(i.factors["template"] for i in wabt) == {"1": 1500, "2": 1500, "3": 1500}
    cells = Counter((i.factors["combination"], i.factors["dimension"], i.factors["template"]) for i in wabt)
    assert set(cells.values()) == {50}
    assert {i.factors["word_order"] for i in wabt} == {"shuffled"}
    assert {i.factors["dimension_draw"] for i in wabt} == {"every"}
    assert all(isinstance(value, str) for i in wabt for value in i.factors.values())


def test_each_wabt_instance_is_one_pair_of_its_groups_and_five_plus_five_words_of_its_dimension(wabt):
    lexicon = paper_lexicon()
    groups = lexicon.identifier_groups()
    for instance in wabt:
        f = instance.factors
        assert groups[f["s_a"]].group == f["advantaged_group"] and groups[f["s_a"]].label == "S_a"
        assert groups[f["s_b"]].group == f["social_group"] and groups[f["s_b"]].label == "S_b"
        x_a, x_b = lexicon.attribute_words(f["dimension"], "X_a"), lexicon.attribute_words(f["dimension"], "X_b")
        assert len(set(instance.words)) == 10
        assert set(instance.x_a_words) <= set(x_a) and len(instance.x_a_words) == 5
        assert set(instance.words) - set(instance.x_a_words) <= set(x_b)
        prompt = instance.texts[0]
        assert f"{f['s_a']} or {f['s_b']}" in prompt and ", ".join(instance.words) in prompt
    # A sample's three templates send the same words; its three dimensions share one identifier pair.
    first = [i for i in wabt if i.key.startswith("wabt:c01:s001:")]
    assert len(first) == 9 and len({(i.factors["s_a"], i.factors["s_b"]) for i in first}) == 1
    assert len({i.words for i in first if i.factors["dimension"] == "Morality"}) == 1
    competence = [i for i in first if i.factors["dimension"] == "Competence"]
    assert [i.texts[0] for i in competence] == [
        wabt_prompt(t, s_a=competence[0].factors["s_a"], s_b=competence[0].factors["s_b"], words=competence[0].words)
        for t in WABT_TEMPLATES]


def test_shuffling_moves_negative_words_forward_and_paper_order_keeps_them_last(wabt):
    # Shuffled: the first five slots hold a negative word in most instances (5 of 10 words are negative).
    assert np.mean([set(i.words[:5]) != set(i.x_a_words) for i in wabt]) > 0.9
    literal = generate_wabt(word_order="paper")
    assert all(i.words[:5] == i.x_a_words for i in literal)
    assert {i.factors["word_order"] for i in literal} == {"paper"}


def test_dimension_draw_balanced_and_uniform():
    balanced = generate_wabt(dimension_draw="balanced")
    assert len(balanced) == 1500
    # 500 samples: 167/167/166 per dimension (× 3 templates); 17/17/16 within each combination.
    assert sorted(Counter(i.factors["dimension"] for i in balanced).values()) == [498, 501, 501]
    per_combination = Counter((i.factors["combination"], i.factors["dimension"]) for i in balanced
                              if i.factors["template"] == "1")
    assert set(per_combination.values()) == {16, 17}
    uniform = generate_wabt(dimension_draw="uniform", seed=3)
    assert len(uniform) == 1500 and {i.factors["dimension_draw"] for i in uniform} == {"uniform"}
    with pytest.raises(ValueError, match="dimension_draw"):
        generate_wabt(dimension_draw="random")
    with pytest.raises(ValueError, match="word_order"):
        generate_wabt(word_order="sorted")


def test_aat_counts_and_distribution(aat):
    # 500 distinct (S_e, S_n) combinations × 3 templates = 1,500 (§3.3.3).
    assert len(aat) == 1500 and len({i.key for i in aat}) == 1500
    assert len({(i.factors["s_e"], i.factors["s_n"]) for i in aat}) == 500
    assert Counter(i.factors["template"] for i in aat) == {"1": 500, "2": 500, "3": 500}
    groups = paper_lexicon().identifier_groups()
    assert all(groups[i.factors["s_e"]].label == i.factors["group_label"] for i in aat)
    assert {i.factors["s_n"] for i in aat} <= set(paper_lexicon().neutral_words())
    # Identifiers drawn uniformly over Table 1's 64: 22 are S_a, so about 22/64 of the combinations.
    share_sa = Counter(i.factors["group_label"] for i in aat)["S_a"] / 1500
    assert abs(share_sa - 22 / 64) < 0.06
    first = aat[0]
    q1, q2 = first.texts
    assert q1 == AAT_TEMPLATES[0].q1.replace("{S_e}", first.factors["s_e"]).replace("{S_n}", first.factors["s_n"])
    assert q2 == AAT_TEMPLATES[0].q2


def test_aat_single_prompt_form():
    single = generate_aat(form="single_prompt", combinations=10)
    assert len(single) == 30 and all(len(i.texts) == 1 for i in single)
    assert {i.factors["form"] for i in single} == {"single_prompt"}
    assert single[0].key.endswith(":single_prompt")
    two_turn = generate_aat(combinations=10)
    assert [i.factors["s_e"] for i in two_turn] == [i.factors["s_e"] for i in single]
    with pytest.raises(ValueError, match="1 to 1920"):
        generate_aat(combinations=1921)


def test_same_seed_same_instances_and_other_seeds_differ(wabt, aat):
    assert generate_wabt() == wabt and generate_aat() == aat
    assert generate_wabt(seed="study-7") == generate_wabt(seed="study-7")
    assert generate_wabt(seed=1) != wabt and generate_aat(seed="study-7") != aat
    # Strings are hashed with SHA-256 (stable across processes), never hash().
    assert seed_sequence("x", "wabt").entropy == seed_sequence("x", "wabt").entropy
    assert seed_sequence(5, "wabt").entropy != seed_sequence(5, "aat").entropy
    for bad in (-1, 1.5, True, None):
        with pytest.raises(ValueError, match="seed"):
            seed_sequence(bad, "wabt")
