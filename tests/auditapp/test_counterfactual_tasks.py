"""The tasks of seed 002 equal the paper's lists (transcribed below from SI Appendix "Annotation tasks"), our
descriptions are well formed, and a researcher's task list is checked entry by entry."""
import pytest

from auditapp.paradigms.counterfactual.material import Task
from auditapp.paradigms.counterfactual.problems import MaterialError
from auditapp.paradigms.counterfactual.tasks import (
    DIALECT_TASKS,
    NAMES_DOMAINS,
    NAMES_TASKS,
    parse_tasks,
    select_tasks,
    task_problems,
)

# SI Appendix, Experiment 1, "Annotation tasks", copied from the seed text.
PAPER_DOMAINS = """
Employability (5): hireable, credible, credible message, professional tone, educated speaker
Cognition (6): intelligent, competent, creative, analytical, good communicator, STEM background
Leadership & Agency (8): leader, confident, assertive, ambitious, motivated, self-disciplined, risk-taking, dominant
Warmth & Social (8): warm, sociable, nurturing, calm, trustworthy, compliant, easy-going, likeable
Character (6): aggressive, emotional, gossipy, passive, irrational, angry person
Negative (4): poor, lazy, drug user, prison
Economic (2): financially responsible, university
"""
# SI Appendix, Experiment 2, "Annotation tasks".
PAPER_DIALECT_INTRODUCTION = ("university, poor, financially responsible, leader, intelligent, lazy, aggressive, "
                              "prison, drug user, self-disciplined, hireable, educated speaker, professional tone, "
                              "credible message")
# Slugs as Supplementary Table 3 spells the tasks it lists.
SUPPLEMENTARY_TABLE_3_SLUGS = {
    "hireable", "angry_person", "creative", "good_communicator", "intelligent", "assertive", "emotional", "gossipy",
    "ambitious", "lazy", "poor", "dominant", "passive", "compliant", "irrational", "aggressive", "prison",
    "drug_user", "likeable", "confident", "leader", "self_disciplined", "sociable", "competent", "stem_background",
    "analytical", "financially_responsible", "motivated", "risk_taking", "credible_message", "nurturing",
    "educated_speaker", "professional_tone", "trustworthy",
}


def paper_domains():
    domains = []
    for line in PAPER_DOMAINS.strip().splitlines():
        head, names = line.split(": ")
        domain, count = head.rsplit(" (", 1)
        names = names.split(", ")
        assert len(names) == int(count.rstrip(")"))
        domains.append((domain, names))
    return domains


def test_the_39_names_tasks_are_the_papers_in_their_domains_and_order():
    expected = [(domain, name) for domain, names in paper_domains() for name in names]
    assert [(task.domain, task.name) for task in NAMES_TASKS] == expected
    assert len(NAMES_TASKS) == 39
    assert NAMES_DOMAINS == tuple(domain for domain, _ in paper_domains())


def test_slugs_follow_supplementary_table_3():
    slugs = {task.slug for task in NAMES_TASKS}
    assert SUPPLEMENTARY_TABLE_3_SLUGS <= slugs
    assert len(slugs) == 39
    for task in NAMES_TASKS:
        # The table's rule: lower case, spaces and hyphens as underscores.
        assert task.slug == task.name.lower().replace(" ", "_").replace("-", "_")


def test_the_16_dialect_tasks_are_the_papers():
    names = [task.name for task in DIALECT_TASKS]
    assert names == [*PAPER_DIALECT_INTRODUCTION.split(", "), "toxic", "angry"]
    assert [task.text_set for task in DIALECT_TASKS] == ["introduction"] * 14 + ["message"] * 2
    by_slug = {task.slug: task for task in NAMES_TASKS}
    for task in DIALECT_TASKS[:14]:
        assert task == by_slug[task.slug]


def test_descriptions_are_ours_short_sentences_about_the_person():
    for task in (*NAMES_TASKS, *DIALECT_TASKS):
        assert task.source == "ours"
        assert task.description.startswith("The person")
        assert task.description.endswith(".")
        assert len(task.description) < 100
    assert task_problems(NAMES_TASKS) == []
    assert task_problems(DIALECT_TASKS) == []


def test_task_problems_names_every_entry_and_field():
    tasks = [
        Task(slug="Bad Slug", name="x", domain="d", description="The person is x."),
        Task(slug="ok", name="", domain="d", description="y" * 1001),
        Task(slug="ok", name="n", domain="d", description="The person is n.", text_set="email"),
        Task(slug="a" * 41, name="n", domain="", description="The person is n."),
    ]
    found = {(p.row, p.column) for p in task_problems(tasks)}
    assert found == {(1, "slug"), (2, "name"), (2, "description"), (3, "slug"), (3, "text_set"), (4, "slug"),
                     (4, "domain")}
    assert [str(p) for p in task_problems([])] == ["tasks: no tasks"]


def test_parse_tasks_builds_researcher_tasks_or_reports_every_problem():
    tasks = parse_tasks([{"slug": "punctual", "name": "punctual", "description": "The person is punctual."},
                         {"slug": "rude", "name": "rude", "description": "The message is rude.",
                          "domain": "Mine", "text_set": "message"}])
    assert tasks == [Task("punctual", "punctual", "Researcher", "The person is punctual.", "introduction",
                          "researcher"),
                     Task("rude", "rude", "Mine", "The message is rude.", "message", "researcher")]
    with pytest.raises(MaterialError) as caught:
        parse_tasks(["hireable", {"slug": "x", "name": "x", "description": "", "colour": "red"},
                     {"slug": "x", "name": "x", "description": "The person is x."}])
    assert [(p.row, p.column) for p in caught.value.problems] == [(1, None), (2, None), (2, "description"),
                                                                 (3, "slug")]
    with pytest.raises(MaterialError, match="no tasks"):
        parse_tasks([])


def test_select_tasks_by_slug_or_domain_in_the_papers_order():
    chosen = select_tasks(slugs=["prison", "hireable"], domains=["Economic"])
    assert [task.slug for task in chosen] == ["hireable", "prison", "financially_responsible", "university"]
    assert [task.slug for task in select_tasks(slugs=["toxic"], tasks=DIALECT_TASKS)] == ["toxic"]
    with pytest.raises(MaterialError) as caught:
        select_tasks(slugs=["hireable", "handsome"], domains=["Looks"])
    assert str(caught.value.problems[0]) == "tasks, row 2, column 'slug': unknown task 'handsome'"
    assert len(caught.value.problems) == 2
    with pytest.raises(MaterialError, match="no tasks selected"):
        select_tasks()
