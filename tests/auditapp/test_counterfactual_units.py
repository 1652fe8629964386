"""The material as corpus units in the design's shape and back exactly, and launch/corpus specs turned into
material with every problem collected."""
import pytest

from auditapp.engine.protocol import Unit
from auditapp.paradigms.counterfactual.dialect_texts import DEFAULT_PAIRS
from auditapp.paradigms.counterfactual.material import DialectPair, PersonName, Task, Vignette
from auditapp.paradigms.counterfactual.names import TABLE_2
from auditapp.paradigms.counterfactual.problems import MaterialError
from auditapp.paradigms.counterfactual.tasks import DIALECT_TASKS, NAMES_TASKS
from auditapp.paradigms.counterfactual.units import (
    DialectMaterial,
    NamesMaterial,
    dialect_material,
    dialect_spec_material,
    dialect_units,
    names_material,
    names_spec_material,
    names_units,
)
from auditapp.paradigms.counterfactual.vignettes import POOL_A, POOL_B, generate_vignettes

HIREABLE = NAMES_TASKS[0]


def researcher_names():
    return [{"name": "Amal", "group": "Arab", "gender": "Female"}, {"name": "Omar", "group": "Arab", "gender": "Male"},
            {"name": "Jane", "group": "White", "gender": "Female"}, {"name": "John", "group": "White", "gender": "Male"}]


def templates(n):
    return [f"Hi, I'm {{NAME}}. I hum tune {number}." for number in range(n)]


def test_names_units_take_the_designs_shape():
    vignette = Vignette("v001", "Hi, I'm {NAME}. I hum.")
    units = names_units([HIREABLE], [TABLE_2[0]], [vignette])
    assert units == [
        Unit(key="task:hireable", text="The person is someone an employer would want to hire.",
             factors={"role": "task", "task": "hireable", "domain": "Employability", "group": "", "gender": ""},
             fields={"name": "hireable", "text_set": "introduction", "source": "ours"}),
        Unit(key="name:Arab:Female:Farah", text="Farah",
             factors={"role": "name", "task": "", "domain": "", "group": "Arab", "gender": "Female"},
             fields={"source": "paper"}),
        Unit(key="vignette:v001", text="Hi, I'm {NAME}. I hum.",
             factors={"role": "vignette", "task": "", "domain": "", "group": "", "gender": ""},
             fields={"source": "ours"}),
    ]
    for unit in units:
        assert all(isinstance(value, str) for value in unit.factors.values())


def test_names_material_round_trips_exactly():
    material = NamesMaterial(tasks=NAMES_TASKS, names=TABLE_2, vignettes=tuple(generate_vignettes(POOL_A, POOL_B)))
    units = names_units(material.tasks, material.names, material.vignettes)
    assert len(units) == 39 + 200 + 211 and len({unit.key for unit in units}) == len(units)
    assert names_material(units) == material
    with pytest.raises(MaterialError, match="role 'other'"):
        names_material([Unit(key="x", text="x", factors={"role": "other"})])


def test_dialect_units_take_the_designs_shape():
    pair = DialectPair("p1", "message", "You are late.", "You [CD] late.")
    units = dialect_units([DIALECT_TASKS[-1]], [pair])
    assert units[0].key == "task:angry" and units[0].fields["text_set"] == "message"
    assert units[1:] == [
        Unit(key="pair:p1:SAE", text="You are late.", factors={"role": "text", "task": "", "domain": "", "dialect": "SAE",
                                                       "text_set": "message"},
             fields={"source": "ours"}, pair="p1"),
        Unit(key="pair:p1:AAVE", text="You late.", factors={"role": "text", "task": "", "domain": "", "dialect": "AAVE",
                                                   "text_set": "message"},
             fields={"annotated": "You [CD] late.", "features": ["CD"], "source": "ours"}, pair="p1"),
    ]


def test_dialect_material_round_trips_exactly_and_refuses_half_a_pair():
    material = DialectMaterial(tasks=DIALECT_TASKS, pairs=DEFAULT_PAIRS)
    units = dialect_units(material.tasks, material.pairs)
    assert len(units) == 16 + 70 and len({unit.key for unit in units}) == len(units)
    assert dialect_material(units) == material
    with pytest.raises(MaterialError, match="pair 'intro01' has only \\['SAE'\\]"):
        dialect_material([unit for unit in units if unit.key != "pair:intro01:AAVE"])


def test_no_spec_gives_the_papers_tasks_and_names_and_our_vignettes_and_pairs():
    names = names_spec_material(None)
    assert names.tasks == NAMES_TASKS and names.names == TABLE_2
    assert names.vignettes == tuple(generate_vignettes(POOL_A, POOL_B, n=211, seed=0))
    assert names.provenance() == {"tasks": ["paper"], "task_descriptions": ["ours"], "names": ["paper"],
                                  "vignettes": ["ours"]}
    assert names_spec_material({}) == names
    dialect = dialect_spec_material(None)
    assert dialect.tasks == DIALECT_TASKS and dialect.pairs == DEFAULT_PAIRS
    assert dialect.provenance() == {"tasks": ["paper"], "task_descriptions": ["ours"], "pairs": ["ours"]}


def test_names_spec_picks_tasks_and_takes_the_researchers_names_and_vignettes():
    own = {"slug": "punctual", "name": "punctual", "description": "The person is punctual."}
    material = names_spec_material({"tasks": ["prison", own], "domains": ["Economic"], "names": researcher_names(),
                                    "vignettes": templates(30)})
    assert [task.slug for task in material.tasks] == ["prison", "punctual", "financially_responsible",
                                                      "university"]
    assert material.names[0] == PersonName("Amal", "Arab", "Female", "researcher")
    assert [v.key for v in material.vignettes][:2] == ["v001", "v002"]
    assert material.provenance() == {"tasks": ["paper", "researcher"], "task_descriptions": ["ours", "researcher"],
                                     "names": ["researcher"], "vignettes": ["researcher"]}
    assert [t.slug for t in names_spec_material({"domains": ["Negative"]}).tasks] == ["poor", "lazy", "drug_user",
                                                                                      "prison"]


def test_names_spec_pools_generate_vignettes_from_the_researchers_sentences():
    pool = [f"I hum tune {number}." for number in range(6)]
    material = names_spec_material({"pools": {"a": pool, "n": 40, "seed": 3}})
    assert material.vignettes == tuple(generate_vignettes(pool, POOL_B, n=40, seed=3, source="researcher"))
    assert names_spec_material({"pools": {"n": 211}}).vignettes[0].source == "ours"


def test_names_spec_collects_every_problem_of_every_part():
    with pytest.raises(MaterialError) as caught:
        names_spec_material({
            "tasks": ["hireable", "handsome", {"slug": "Bad", "name": "x", "description": "The person is x."}],
            "domains": ["Looks"],
            "names": [{"name": "Amal", "group": "Arab", "gender": "Female"},
                      {"name": "Jane", "group": "White", "gender": "Male"}],
            "pools": {"a": ["no ending"], "n": 0, "colour": 1},
        })
    found = {(p.part, p.row, p.column) for p in caught.value.problems}
    assert found == {("tasks", 2, "slug"), ("tasks", 3, "slug"), ("domains", 1, None), ("names", None, "gender"),
                     ("pools", None, "colour"), ("pools.a", 1, "sentence"), ("pools", None, "n")}
    with pytest.raises(MaterialError) as caught:
        names_spec_material({"vignettes": templates(29), "pools": {}})
    assert "not both" in str(caught.value)
    with pytest.raises(MaterialError, match="29 vignettes; an iteration draws 30"):
        names_spec_material({"vignettes": templates(29)})
    with pytest.raises(MaterialError, match="column 'size': unknown key"):
        names_spec_material({"size": 3})
    with pytest.raises(MaterialError, match="repeats entry 1"):
        names_spec_material({"tasks": ["hireable", {"slug": "hireable", "name": "h", "description": "The person."}]})
    assert len(names_spec_material({"vignettes": templates(5)}, pairs_per_iteration=5).vignettes) == 5


def test_dialect_spec_takes_tasks_and_pairs_and_checks_each_text_set_has_pairs():
    pairs = [{"key": "p1", "text_set": "message", "sae": "You are late.", "aave": "You [CD] late."}]
    material = dialect_spec_material({"tasks": ["toxic", "angry"], "pairs": pairs})
    assert [task.slug for task in material.tasks] == ["toxic", "angry"]
    assert material.pairs == (DialectPair("p1", "message", "You are late.", "You [CD] late.", "researcher"),)
    assert material.provenance()["pairs"] == ["researcher"]
    with pytest.raises(MaterialError) as caught:
        dialect_spec_material({"pairs": pairs})
    [problem] = caught.value.problems
    assert problem.message.startswith("no introduction pairs for the tasks ['university', 'poor'")
    with pytest.raises(MaterialError) as caught:
        dialect_spec_material({"tasks": ["stem_background"], "domains": ["Cognition"], "pairs": "key,sae\n"})
    assert {(p.part, p.column) for p in caught.value.problems} == {
        ("spec", "domains")}
    with pytest.raises(MaterialError) as caught:
        dialect_spec_material({"tasks": ["stem_background"], "pairs": "key,sae\n"})
    assert {(p.part, p.row, p.column) for p in caught.value.problems} == {
        ("tasks", 1, "slug"), ("pairs", None, "text_set"), ("pairs", None, "aave")}
    own = {"slug": "rude", "name": "rude", "description": "The person's message is rude.", "text_set": "message"}
    assert dialect_spec_material({"tasks": [own]}).tasks == (
        Task("rude", "rude", "Researcher", "The person's message is rude.", "message", "researcher"),)
