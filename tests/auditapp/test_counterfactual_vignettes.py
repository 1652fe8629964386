"""Our vignette pools pass the screen, vignettes are made in the paper's form (its example among them), the
draw is seeded and distinct, and a researcher's pools and vignettes are read with every problem by row."""
import pytest

from auditapp.paradigms.counterfactual.material import Vignette
from auditapp.paradigms.counterfactual.problems import MaterialError
from auditapp.paradigms.counterfactual.vignettes import (
    POOL_A,
    POOL_B,
    SCREENED_STEMS,
    generate_vignettes,
    parse_pool,
    parse_vignettes,
    pool_screening,
    screening_problems,
    vignette_template,
)

PAPER_EXAMPLE = "Hi, I'm {NAME}. I enjoy quiet moments at home. Routine suits me fine."


def test_every_pool_sentence_passes_the_screen():
    assert 20 <= len(POOL_A) <= 25 and 20 <= len(POOL_B) <= 25
    for sentence in (*POOL_A, *POOL_B):
        assert screening_problems(sentence) == [], sentence
        assert sentence.endswith(".") and len(sentence) < 60
    assert len(set(POOL_A) | set(POOL_B)) == len(POOL_A) + len(POOL_B)
    assert pool_screening([*POOL_A, *POOL_B]) == {}


def test_the_screen_finds_task_and_identity_vocabulary_by_stem_or_whole_word():
    assert screening_problems("I got my degree and a job at the bank.") == [
        "degree (education)", "job (work ethic)", "bank (finance and money)"]
    assert screening_problems("My mom leads a team at church.") == [
        "mom (gender and family roles)", "leads (leadership and management)",
        "team (leadership and management)", "church (race, ethnicity, religion and nationality)"]
    # Whole-word stems do not catch longer words: "moments" is not "mom", "herbs" not "her".
    assert screening_problems("I enjoy quiet moments with my herbs.") == []
    assert screening_problems("The police made me ANGRY.") == ["police (crime, drugs and police)",
                                                               "angry (emotion and anger)"]
    assert {"education", "finance and money", "leadership and management", "work ethic", "crime, drugs and police",
            "intelligence", "emotion and anger", "race, ethnicity, religion and nationality",
            "gender and family roles"} <= set(SCREENED_STEMS)


def test_vignettes_take_the_papers_form_and_its_example_is_among_them():
    assert vignette_template("I enjoy quiet moments at home.", "Routine suits me fine.") == PAPER_EXAMPLE
    made = generate_vignettes(POOL_A, POOL_B, n=len(POOL_A) * len(POOL_B) * 2)
    assert PAPER_EXAMPLE in {vignette.template for vignette in made}
    assert Vignette("v001", PAPER_EXAMPLE).text("Emily") == ("Hi, I'm Emily. I enjoy quiet moments at home. "
                                                            "Routine suits me fine.")


def test_generate_vignettes_is_seeded_distinct_and_randomises_the_order():
    vignettes = generate_vignettes(POOL_A, POOL_B)
    assert len(vignettes) == 211
    assert [v.key for v in vignettes[:2]] == ["v001", "v002"] and vignettes[-1].key == "v211"
    assert len({v.template for v in vignettes}) == 211
    assert {v.source for v in vignettes} == {"ours"}
    assert generate_vignettes(POOL_A, POOL_B) == vignettes
    assert generate_vignettes(POOL_A, POOL_B, seed=1) != vignettes
    a_first = 0
    for vignette in vignettes:
        assert vignette.template.startswith("Hi, I'm {NAME}. ") and vignette.template.count("{NAME}") == 1
        body = vignette.template.removeprefix("Hi, I'm {NAME}. ")
        first = next(s for s in (*POOL_A, *POOL_B) if body.startswith(s))
        second = body.removeprefix(first + " ")
        assert (first in POOL_A and second in POOL_B) or (first in POOL_B and second in POOL_A)
        a_first += first in POOL_A
    # Both orders occur, in roughly equal numbers (a fair coin over 211: 105.5 ± 7.3).
    assert 80 < a_first < 131


def test_generate_vignettes_says_when_the_pools_are_too_small():
    # Two and one sentences make 2 × 1 × 2 = 4 distinct vignettes.
    assert len(generate_vignettes(["A.", "B."], ["C."], n=4)) == 4
    with pytest.raises(MaterialError, match="make only 4 distinct"):
        generate_vignettes(["A.", "B."], ["C."], n=5)
    with pytest.raises(MaterialError, match="at least 1"):
        generate_vignettes(["A."], ["C."], n=0)
    assert len(generate_vignettes(["A."], ["C."], n=2, source="researcher")) == 2
    # 25 × 25 × 2 = 1250 combinations: a thousand vignettes need four-digit keys.
    many = generate_vignettes([f"A{i}." for i in range(25)], [f"B{i}." for i in range(25)], n=1000)
    assert many[0].key == "v0001" and many[-1].key == "v1000"


def test_parse_pool_reads_lines_or_lists_and_names_every_problem():
    assert parse_pool("I hum.\n\n  I sing!  \n") == ["I hum.", "I sing!"]
    assert parse_pool(["I hum.", "Do I?"]) == ["I hum.", "Do I?"]
    with pytest.raises(MaterialError) as caught:
        parse_pool(["I hum.", "", "no ending", "I {NAME}.", "I hum.", "x" * 301, 7])
    assert [(p.row, p.column) for p in caught.value.problems] == [
        (2, "sentence"), (3, "sentence"), (4, "sentence"), (5, "sentence"), (6, "sentence"), (7, "sentence")]
    assert "repeats row 1" in str(caught.value.problems[3])
    with pytest.raises(MaterialError, match="no sentences"):
        parse_pool("\n")


def test_parse_vignettes_reads_templates_and_names_every_problem():
    assert parse_vignettes(["Hi, I'm {NAME}. I hum.", "{NAME} sings."]) == [
        Vignette("v001", "Hi, I'm {NAME}. I hum.", "researcher"), Vignette("v002", "{NAME} sings.", "researcher")]
    assert parse_vignettes("key,template\nhum,\"Hi, I'm {NAME}. I hum.\"\n") == [
        Vignette("hum", "Hi, I'm {NAME}. I hum.", "researcher")]
    with pytest.raises(MaterialError) as caught:
        parse_vignettes([{"template": "No name here."},                      # 1: no {NAME}
                         {"template": "{NAME} and {NAME}."},                 # 2: twice
                         {"template": "Hi, I'm {name}. {NAME} hums."},       # 3: other braces
                         {"template": "{NAME} walks.", "key": "bad key"},    # 4: key
                         {"template": "{NAME} hums.", "key": "v006"},        # 5: fine
                         {"template": "{NAME} hums."},                       # 6: repeats 5's key and template
                         {"template": "{NAME}" + "x" * 2000}])               # 7: too long
    assert [(p.row, p.column) for p in caught.value.problems] == [
        (1, "template"), (2, "template"), (3, "template"), (4, "key"), (6, "key"), (6, "template"),
        (7, "template")]
    with pytest.raises(MaterialError, match="no vignettes"):
        parse_vignettes([])
