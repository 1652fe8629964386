"""The planning of counterfactual requests: seeded, balanced name pairs; shuffled numbered texts; dialect batches;
and the bulk readers of judgment unit keys."""
from itertools import pairwise

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from auditapp.paradigms.counterfactual.material import PersonName, Vignette
from auditapp.paradigms.counterfactual.plan import (
    NamePair,
    PlannedText,
    dialect_texts,
    dialect_unit_parts,
    name_texts,
    name_unit_parts,
    plan_name_pairs,
)

GROUPS = ("White", "Black", "Hispanic", "Asian", "Arab")
GENDERS = ("Female", "Male")
NAMES = [PersonName(f"{group[:2]}{gender[0]}{k}", group, gender)
         for group in GROUPS for gender in GENDERS for k in range(5)]
VIGNETTES = [Vignette(f"v{k:02d}", f"Hi, I'm {{NAME}}. Sentence {k}.") for k in range(40)]
BY_KEY = {vignette.key: vignette for vignette in VIGNETTES}
GROUP_OF = {person.name: person.group for person in NAMES}
GENDER_OF = {person.name: person.gender for person in NAMES}
TASKS = ("intelligent", "trustworthy", "lazy")


def test_the_same_seed_and_iteration_give_the_same_pairs_and_the_order_of_the_material_does_not_matter():
    first = plan_name_pairs(7, 3, VIGNETTES, NAMES)
    assert plan_name_pairs(7, 3, VIGNETTES[::-1], NAMES[::-1]) == first
    assert plan_name_pairs(8, 3, VIGNETTES, NAMES) != first
    assert plan_name_pairs(7, 4, VIGNETTES, NAMES) != first
    assert all(isinstance(pair, NamePair) for pair in first) and [p.pair_no for p in first] == list(range(30))


@pytest.mark.parametrize("iteration", range(6))
def test_pairs_are_balanced_within_gender_and_never_reuse_a_vignette(iteration):
    pairs = plan_name_pairs(11, iteration, VIGNETTES, NAMES)
    assert pd.Series([p.gender for p in pairs]).value_counts().to_dict() == {"Female": 15, "Male": 15}
    by_group = pd.Series([p.group for p in pairs]).value_counts()
    # 30 pairs over 4 groups: 8, 8, 7, 7
    assert set(by_group.index) == {"Black", "Hispanic", "Asian", "Arab"} and sorted(by_group) == [7, 7, 8, 8]
    # within a gender too: 15 over 4 groups is 4, 4, 4, 3
    by_cell = pd.DataFrame([(p.gender, p.group) for p in pairs]).value_counts()
    assert by_cell.max() - by_cell.min() <= 1
    assert len({p.vignette_key for p in pairs}) == 30
    for pair in pairs:
        assert GROUP_OF[pair.minority_name] == pair.group and GROUP_OF[pair.reference_name] == "White"
        assert GENDER_OF[pair.minority_name] == GENDER_OF[pair.reference_name] == pair.gender


def test_genders_alternate_and_groups_cycle():
    pairs = plan_name_pairs(5, 0, VIGNETTES, NAMES)
    genders = [p.gender for p in pairs]
    assert all(a != b for a, b in pairwise(genders))
    female_groups = [p.group for p in pairs if p.gender == genders[0]]
    assert len(set(female_groups[:4])) == 4 and female_groups[4:8] == female_groups[:4]


def test_the_balance_holds_for_other_sizes_and_an_odd_number_of_groups():
    three_groups = [person for person in NAMES if person.group != "Arab"]
    pairs = plan_name_pairs(1, 0, VIGNETTES, three_groups, n_pairs=25)
    genders = pd.Series([p.gender for p in pairs]).value_counts()
    groups = pd.Series([p.group for p in pairs]).value_counts()
    assert sorted(genders) == [12, 13] and sorted(groups) == [8, 8, 9]


def test_only_genders_every_group_has_are_used_and_impossible_plans_are_errors():
    nonbinary = [PersonName("Alex", "Black", "Nonbinary"), PersonName("Sam", "White", "Nonbinary")]
    assert {p.gender for p in plan_name_pairs(1, 0, VIGNETTES, NAMES + nonbinary)} == set(GENDERS)
    with pytest.raises(ValueError, match="30 pairs need 30 different vignettes; there are 29"):
        plan_name_pairs(1, 0, VIGNETTES[:29], NAMES)
    with pytest.raises(ValueError, match="reference group 'White'"):
        plan_name_pairs(1, 0, VIGNETTES, [p for p in NAMES if p.group != "White"])
    with pytest.raises(ValueError, match="no gender has names"):
        plan_name_pairs(1, 0, VIGNETTES, [p for p in NAMES if (p.group == "White") == (p.gender == "Female")])
    with pytest.raises(ValueError, match="no names of any group"):
        plan_name_pairs(1, 0, VIGNETTES, [p for p in NAMES if p.group == "White"])


def test_every_task_of_an_iteration_sees_the_same_texts_in_its_own_order():
    pairs = plan_name_pairs(3, 2, VIGNETTES, NAMES)
    requests = {task: name_texts(3, 2, task, pairs, BY_KEY) for task in TASKS}
    for texts in requests.values():
        assert [t.index for t in texts] == list(range(1, 61))
        assert all(isinstance(t, PlannedText) for t in texts)
        assert len({t.unit for t in texts}) == 60
        parts = name_unit_parts(pd.Series([t.unit for t in texts]))
        assert parts["index"].tolist() == list(range(1, 61))
        assert sorted(parts["pair_no"]) == sorted(list(range(30)) * 2)
    assert len({frozenset((t.unit.split(":", 1)[1], t.text) for t in texts) for texts in requests.values()}) == 1
    assert len({tuple(t.text for t in texts) for texts in requests.values()}) == 3
    assert name_texts(3, 2, "lazy", pairs, BY_KEY) == requests["lazy"]
    assert name_texts(4, 2, "lazy", pairs, BY_KEY) != requests["lazy"]


def test_a_names_text_is_its_vignette_with_the_name_of_its_side():
    pairs = plan_name_pairs(3, 0, VIGNETTES, NAMES)
    texts = name_texts(3, 0, "lazy", pairs, BY_KEY)
    for text in texts:
        _, pair_no, side = text.unit.split(":")
        pair = pairs[int(pair_no)]
        name = pair.minority_name if side == "minority" else pair.reference_name
        assert text.text == BY_KEY[pair.vignette_key].text(name)


DIALECT_TEXTS = {f"intro{k}": {"SAE": f"I am {k}.", "AAVE": f"I be {k}."} for k in range(6)}


def test_a_dialect_batch_is_seeded_by_seed_iteration_and_task():
    batch = dialect_texts(9, 0, "intelligent", DIALECT_TEXTS)
    assert [t.index for t in batch] == list(range(1, 11))
    assert dialect_texts(9, 0, "intelligent", dict(reversed(DIALECT_TEXTS.items()))) == batch
    assert dialect_texts(9, 1, "intelligent", DIALECT_TEXTS) != batch
    assert dialect_texts(9, 0, "lazy", DIALECT_TEXTS) != batch
    for text in batch:
        _, key, dialect = text.unit.split(":")
        assert text.text == DIALECT_TEXTS[key][dialect]
    assert len({t.unit for t in batch}) == 10
    with pytest.raises(ValueError, match="no text pairs"):
        dialect_texts(9, 0, "toxic", {})


def test_each_dialect_slot_is_aave_with_probability_one_half_and_pairs_are_uniform():
    batches = [dialect_texts(2024, iteration, task, DIALECT_TEXTS) for iteration in range(200) for task in TASKS]
    parts = dialect_unit_parts(pd.Series([t.unit for batch in batches for t in batch]))
    n_aave, n = int((parts["dialect"] == "AAVE").sum()), len(parts)
    assert n == 6000
    assert stats.binomtest(n_aave, n, 0.5).pvalue > 0.001
    pair_counts = parts["pair_key"].value_counts().reindex(sorted(DIALECT_TEXTS)).to_numpy()
    assert stats.chisquare(pair_counts).pvalue > 0.001


def test_the_unit_readers_parse_four_million_categorical_rows_by_their_distinct_keys():
    rng = np.random.default_rng(0)
    name_parts = pd.DataFrame([(index, pair_no, side) for index in range(1, 61) for pair_no in range(30)
                               for side in ("minority", "reference")], columns=["index", "pair_no", "side"])
    keys = (name_parts["index"].astype(str) + ":" + name_parts["pair_no"].astype(str) + ":" + name_parts["side"])
    # the expected parts of each row are those the key was made from, picked by the same draw
    draw = rng.integers(0, len(keys), 4_000_000)
    rows = pd.Series(pd.Categorical.from_codes(draw, categories=keys))
    parts = name_unit_parts(rows)
    assert parts.index.equals(rows.index) and parts["index"].dtype == np.int64
    assert list(parts["side"].cat.categories) == ["minority", "reference"]
    for column in ("index", "pair_no", "side"):
        assert (np.asarray(parts[column]) == name_parts[column].to_numpy()[draw]).all()

    dialect_parts = pd.DataFrame([(index, key, dialect) for index in range(1, 11) for key in ("a:1", "b", "c")
                                  for dialect in ("SAE", "AAVE")], columns=["index", "pair_key", "dialect"])
    keys = (dialect_parts["index"].astype(str) + ":" + dialect_parts["pair_key"] + ":" + dialect_parts["dialect"])
    draw = rng.integers(0, len(keys), 4_000_000)
    rows = pd.Series(pd.Categorical.from_codes(draw, categories=keys), index=np.arange(4_000_000) * 2)
    parts = dialect_unit_parts(rows)
    assert parts.index.equals(rows.index)
    for column in ("index", "pair_key", "dialect"):
        assert (np.asarray(parts[column]) == dialect_parts[column].to_numpy()[draw]).all()
    small = pd.Series(["3:a:1:AAVE", "2:b:SAE", "3:a:1:AAVE"])
    assert dialect_unit_parts(small).astype(str).values.tolist() == [["3", "a:1", "AAVE"], ["2", "b", "SAE"],
                                                                     ["3", "a:1", "AAVE"]]


def test_a_unit_reader_names_keys_it_cannot_read():
    with pytest.raises(ValueError, match=r"1 judgment unit\(s\) not of the form.*'3:x:minority'"):
        name_unit_parts(pd.Categorical(["1:0:minority", "3:x:minority"]))
    with pytest.raises(ValueError, match="missing"):
        dialect_unit_parts(pd.Series(["1:a:SAE", None]))
