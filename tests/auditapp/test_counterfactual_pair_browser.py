"""The counterfactual error browser's rows (GET /api/audits/{id}/judged-pairs/, seed 002): one row per request × pair
of a model × task. Every filter is checked against pairs assembled here, independently, from the audit's
``judgments`` table export (one row per text, its pair and side rebuilt from the design there); the planted
annotators make the pairs whose answers differ known in advance:

- names: ``annotator-planted`` says yes to a text exactly when it holds a Black name of Table 2 and hedges every
  7th text, so "answers differ" is exactly the Black pairs with neither text's number a multiple of 7;
  ``annotator-refuses`` refuses the hiring task, so its pairs there have both sides refused;
- dialect: ``annotator-aave`` says yes to every AAVE text and no to every SAE text, so "answers differ" is exactly
  the pairs whose batch drew both sides.

Bad filters are 400s naming the parameter; another team's audit, and an audit of another paradigm, are 404s; the
CSV holds the filtered rows.
"""
from __future__ import annotations

import csv
import html
import io
import re
from collections import defaultdict

import pytest

from auditapp.engine import preparation
from auditapp.models import Audit
from auditapp.paradigms.counterfactual.dialect_texts import DEFAULT_PAIRS, strip_features
from auditapp.paradigms.counterfactual.names import TABLE_2
from tests.auditapp.test_audit_dashboard_view import COMPLETED_PLAN, build_audit
from tests.auditapp.test_counterfactual_audit import endpoint, launch, run
from tests.llm_server import LLMServer

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.integration]

BLACK_NAMES = [f"I'm {entry.name}." for entry in TABLE_2 if entry.group == "Black"]
AAVE_TEXTS = [strip_features(pair.aave_annotated) for pair in DEFAULT_PAIRS]
HEDGE_EVERY = 7
ANNOTATORS = {
    "annotator-planted": {"base": 0.0, "effects": [{"contains": BLACK_NAMES, "delta": 1.0}],
                          "hedge_every": HEDGE_EVERY},
    "annotator-refuses": {"base": 0.5, "refuse_tasks": ["someone an employer would want to hire"]},
    "annotator-aave": {"base": 0.0, "effects": [{"contains": AAVE_TEXTS, "delta": 1.0}]},
}
NAMES_TASKS = ["self_disciplined", "hireable"]
DIALECT_TASKS = ["professional_tone", "toxic"]
ANSWER = {"1": "yes", "0": "no", "": None}


@pytest.fixture(scope="module")
def server():
    with LLMServer(latency=0.0, annotators=ANNOTATORS, models=tuple(ANNOTATORS)) as running:
        yield running


@pytest.fixture
def source(server):
    return endpoint(server)


@pytest.fixture
def names_audit(api_client, source, audit_tasks_off) -> Audit:
    audit = run(launch(api_client, "names", [{"endpoint": source.id, "model": model}
                                             for model in ("annotator-planted", "annotator-refuses")],
                       material={"tasks": NAMES_TASKS}, iterations=3, seed=3))
    assert audit.status == Audit.Status.COMPLETED, audit.status_reason
    return audit


@pytest.fixture
def dialect_audit(api_client, source, audit_tasks_off) -> Audit:
    audit = run(launch(api_client, "dialect", [{"endpoint": source.id, "model": "annotator-aave"}],
                       material={"tasks": DIALECT_TASKS}, iterations=6, seed=5))
    assert audit.status == Audit.Status.COMPLETED, audit.status_reason
    return audit


def judgments(api_client, audit: Audit) -> list[dict]:
    response = api_client.get(f"/api/audits/{audit.id}/tables/judgments/", {"format": "csv"})
    assert response.status_code == 200
    return list(csv.DictReader(io.StringIO(b"".join(response.streaming_content).decode("utf-8-sig"))))


def rows(api_client, audit: Audit, **params) -> list[dict]:
    response = api_client.get(f"/api/audits/{audit.id}/judged-pairs/", {**params, "page_size": 10000})
    assert response.status_code == 200, response.content
    return response.json()["results"]


def keys(found) -> set[tuple]:
    return {(row["request_id"], str(row["pair"])) for row in found}


def side_of(texts: list[dict]) -> tuple[str | None, str]:
    """A side's answer and state from its texts in the judgments export (one text, or several in a dialect
    batch)."""
    if not texts:
        return None, "unasked"
    missing = [text for text in texts if text["label"] == ""]
    if missing:
        return None, missing[0]["outcome"]
    answers = {text["label"] for text in texts}
    return (ANSWER[answers.pop()], "label") if len(answers) == 1 else (None, "inconsistent")


def expected_pairs(judged: list[dict], *, pair: str, side: str, sides: tuple[str, str]) -> dict[tuple, dict]:
    """Per (request, pair): the cell, each side's answer and state, whether they differ and the rest of the first
    text's design columns."""
    texts = defaultdict(lambda: {name: [] for name in sides})
    for text in judged:
        texts[(int(text["request"]), text[pair])][text[side]].append(text)
    expected = {}
    for (request, key), by_side in texts.items():
        first = next(text for name in sides for text in by_side[name])
        answers = [side_of(by_side[name]) for name in sides]
        labels = [answer for answer, _ in answers]
        expected[(request, key)] = {
            "model": first["model"], "task": first["task"], "iteration": int(first["iteration"]), "row": first,
            "labels": labels, "states": [state for _, state in answers],
            "differs": None if None in labels else labels[0] != labels[1]}
    return expected


def test_names_rows_and_every_filter_match_the_judgments_export(api_client, names_audit):
    audit = names_audit
    expected = expected_pairs(judgments(api_client, audit), pair="pair_no", side="side",
                              sides=("minority", "reference"))
    assert len(expected) == 2 * 2 * 3 * 30
    models = {model.label or model.model: model.id for model in audit.models.all()}
    seen = set()
    for model, model_id in models.items():
        for task in NAMES_TASKS:
            cell = {key: pair for key, pair in expected.items() if pair["model"] == model and pair["task"] == task}
            found = rows(api_client, audit, model=model_id, task=task)
            assert len(found) == len(cell) == 3 * 30
            # Default order: iterations in turn, each request's pairs in the order of its texts.
            assert [row["iteration"] for row in found] == sorted(row["iteration"] for row in found)
            for row in found:
                want = cell[(row["request_id"], str(row["pair"]))]
                text = want["row"]
                assert (row["model"], row["model_id"], row["task"], row["iteration"]) == (model, model_id, task,
                                                                                          want["iteration"])
                assert [row["minority_label"], row["reference_label"]] == want["labels"]
                assert [row["minority_outcome"], row["reference_outcome"]] == want["states"]
                assert row["differs"] is want["differs"]
                assert (row["group"], row["gender"], row["vignette"]) == (text["group"], text["gender"],
                                                                          text["vignette"])
                assert {row["minority_name"], row["reference_name"]} >= {text["name"]}
                assert f"I'm {row['minority_name']}." in row["minority_text"]
                assert f"I'm {row['reference_name']}." in row["reference_text"]
                assert row["minority_text"].replace(row["minority_name"], "{NAME}") == \
                    row["reference_text"].replace(row["reference_name"], "{NAME}")
                for prefix in ("minority", "reference"):
                    assert (row[f"{prefix}_label"] is None) is (row[f"{prefix}_missing"] is not None)
            seen |= keys(found)
            cases = {
                (("differs", "true"),): [k for k, p in cell.items() if p["differs"] is True],
                (("differs", "false"),): [k for k, p in cell.items() if p["differs"] is False],
                (("outcome", "complete"),): [k for k, p in cell.items() if p["states"] == ["label", "label"]],
                (("outcome", "missing"),): [k for k, p in cell.items() if p["states"] != ["label", "label"]],
                (("outcome", "unparseable"),): [k for k, p in cell.items() if "unparseable" in p["states"]],
                (("outcome", "refusal"),): [k for k, p in cell.items() if "refusal" in p["states"]],
                (("group", "Black"),): [k for k, p in cell.items() if p["row"]["group"] == "Black"],
                (("group", "Asian"), ("differs", "false")): [k for k, p in cell.items()
                                                             if p["row"]["group"] == "Asian" and p["differs"] is False],
            }
            for params, wanted in cases.items():
                got = rows(api_client, audit, model=model_id, task=task, **dict(params))
                assert keys(got) == {(request, str(pair)) for request, pair in wanted}, (model, task, params)
            by_group = rows(api_client, audit, model=model_id, task=task, ordering="group")
            assert [row["group"] for row in by_group] == sorted(row["group"] for row in by_group)
            reverse = rows(api_client, audit, model=model_id, task=task, ordering="-iteration")
            assert [row["iteration"] for row in reverse] == sorted((row["iteration"] for row in found), reverse=True)
    assert len(seen) == len(expected)


def test_names_planted_differences_are_exactly_the_differing_pairs(api_client, names_audit):
    audit = names_audit
    planted = audit.models.get(model="annotator-planted").id
    judged = [text for text in judgments(api_client, audit) if text["model"] == "annotator-planted"]
    indices = defaultdict(list)
    for text in judged:
        indices[(int(text["request"]), text["pair_no"])].append(int(text["index"]))
    black = {key for key, pair in expected_pairs(judged, pair="pair_no", side="side",
                                                 sides=("minority", "reference")).items()
             if pair["row"]["group"] == "Black"}
    for task in NAMES_TASKS:
        differ = rows(api_client, audit, model=planted, task=task, differs="true")
        task_requests = {row["request_id"] for row in rows(api_client, audit, model=planted, task=task)}
        wanted = {key for key in black if key[0] in task_requests
                  and not any(index % HEDGE_EVERY == 0 for index in indices[key])}
        assert wanted and keys(differ) == wanted, task
        assert {(row["minority_label"], row["reference_label"]) for row in differ} == {("yes", "no")}
        hedged = rows(api_client, audit, model=planted, task=task, outcome="unparseable")
        assert hedged and all("hedged" in (row["minority_missing"] or row["reference_missing"]) for row in hedged)
    # The refused task: every pair, both sides refused, none compared.
    refuses = audit.models.get(model="annotator-refuses").id
    refused = rows(api_client, audit, model=refuses, task="hireable")
    assert len(refused) == 90 and {(row["minority_outcome"], row["reference_outcome"], row["differs"])
                                   for row in refused} == {("refusal", "refusal", None)}
    assert {row["minority_missing"] for row in refused} == {"refusal: refused"}
    assert rows(api_client, audit, model=refuses, task="hireable", outcome="complete") == []


def test_search_paging_and_the_csv(api_client, staff_client, names_audit):
    audit = names_audit
    model = audit.models.get(model="annotator-planted").id
    every = rows(api_client, audit, model=model, task="self_disciplined")
    name = every[5]["minority_name"]
    found = rows(api_client, audit, model=model, task="self_disciplined", q=name.upper())
    assert found and all(name.lower() in (row["minority_text"] + row["reference_text"]).lower() for row in found)
    assert keys(found) == {(row["request_id"], str(row["pair"])) for row in every
                           if name.lower() in (row["minority_text"] + row["reference_text"]).lower()}
    pages = [api_client.get(f"/api/audits/{audit.id}/judged-pairs/", {"model": model, "task": "self_disciplined",
                                                                       "page_size": 40, "page": n}).json()
             for n in (1, 2, 3)]
    assert [len(page["results"]) for page in pages] == [40, 40, 10] and pages[0]["count"] == 90
    assert [row for page in pages for row in page["results"]] == every
    response = api_client.get(f"/api/audits/{audit.id}/judged-pairs/", {"model": model, "task": "self_disciplined",
                                                                         "differs": "true", "format": "csv"})
    exported = list(csv.DictReader(io.StringIO(b"".join(response.streaming_content).decode("utf-8-sig"))))
    differ = rows(api_client, audit, model=model, task="self_disciplined", differs="true")
    assert [(int(row["request_id"]), row["pair"]) for row in exported] == [(row["request_id"], str(row["pair"]))
                                                                           for row in differ]
    assert list(exported[0]) == list(differ[0]) and {row["differs"] for row in exported} == {"True"}
    # The page's "these rows (CSV)" link, before any script runs, names the model and task shown first.
    page = staff_client.get(f"/audits/{audit.id}/dashboard/").content.decode()
    [href] = re.findall(r'id="pair-export" class="judged-export" href="([^"]+)"', page)
    first = api_client.get(html.unescape(href))
    assert first.status_code == 200 and first["Content-Type"].startswith("text/csv")


def test_dialect_rows_and_filters_match_the_judgments_export(api_client, dialect_audit):
    audit = dialect_audit
    model = audit.models.get().id
    expected = expected_pairs(judgments(api_client, audit), pair="pair", side="dialect", sides=("SAE", "AAVE"))
    both = 0
    for task in DIALECT_TASKS:
        cell = {key: pair for key, pair in expected.items() if pair["task"] == task}
        found = rows(api_client, audit, model=model, task=task)
        assert keys(found) == set(cell)
        for row in found:
            want = cell[(row["request_id"], row["pair"])]
            assert [row["sae_label"], row["aave_label"]] == want["labels"]
            assert [row["sae_outcome"], row["aave_outcome"]] == want["states"]
            assert row["sae_label"] in ("no", None) and row["aave_label"] in ("yes", None)
            assert row["sae_text"] and row["aave_text"] and row["sae_text"] != row["aave_text"]
            for prefix in ("sae", "aave"):
                if row[f"{prefix}_outcome"] == "unasked":
                    assert row[f"{prefix}_missing"] == "not in this request's batch"
        # Planted: the answers differ exactly where the batch drew both sides.
        drawn_both = {key for key, pair in cell.items() if "unasked" not in pair["states"]}
        assert keys(rows(api_client, audit, model=model, task=task, differs="true")) == drawn_both
        both += len(drawn_both)
        assert rows(api_client, audit, model=model, task=task, differs="false") == []
        unasked = rows(api_client, audit, model=model, task=task, outcome="unasked")
        assert keys(unasked) == set(cell) - drawn_both
        by_pair = rows(api_client, audit, model=model, task=task, ordering="pair")
        assert [row["pair"] for row in by_pair] == sorted(row["pair"] for row in found)
        text = found[0]["aave_text"].split()[2]
        assert keys(rows(api_client, audit, model=model, task=task, q=text)) == {
            (row["request_id"], row["pair"]) for row in found
            if text.lower() in (row["sae_text"] + row["aave_text"] + row["pair"]).lower()}
    assert both  # some batch drew both sides of a pair, so "differs" selected something


def test_bad_filters_are_refused_by_name(api_client, names_audit, dialect_audit):
    model = names_audit.models.first().id
    cell = {"model": model, "task": "hireable"}
    for params, field in (({"task": "hireable"}, "model"), ({"model": model}, "task"),
                          ({**cell, "model": "x"}, "model"), ({**cell, "model": dialect_audit.models.get().id}, "model"),
                          ({**cell, "task": "warm"}, "task"), ({**cell, "ordering": "text"}, "ordering"),
                          ({**cell, "ordering": "pair"}, "ordering"), ({**cell, "outcome": "maybe"}, "outcome"),
                          ({**cell, "differs": "perhaps"}, "differs"), ({**cell, "group": "Martian"}, "group"),
                          ({**cell, "q": "x" * 201}, "q"), ({**cell, "page": "0"}, "page")):
        response = api_client.get(f"/api/audits/{names_audit.id}/judged-pairs/", params)
        assert response.status_code == 400 and field in response.json(), (params, response.content)
    dialect = {"model": dialect_audit.models.get().id, "task": "toxic"}
    for params, field in (({**dialect, "group": "Black"}, "group"), ({**dialect, "ordering": "-group"}, "ordering")):
        response = api_client.get(f"/api/audits/{dialect_audit.id}/judged-pairs/", params)
        assert response.status_code == 400 and field in response.json(), (params, response.content)


def test_another_teams_audit_and_another_paradigm_are_not_found(api_client, names_audit):
    from teams.models import Team

    params = {"model": names_audit.models.first().id, "task": "hireable"}
    assert api_client.get(f"/api/audits/{names_audit.id}/judged-pairs/", params).status_code == 200
    Audit.objects.filter(pk=names_audit.pk).update(team=Team.objects.create(name="Another lab"))
    response = api_client.get(f"/api/audits/{names_audit.id}/judged-pairs/", params)
    assert response.status_code == 404 and b"annotator" not in response.content
    # A classification audit is not a counterfactual one: not found either.
    classification = build_audit(COMPLETED_PLAN)
    response = api_client.get(f"/api/audits/{classification.id}/judged-pairs/",
                              {"model": classification.models.first().id, "task": "zs"})
    assert response.status_code == 404


def test_an_audit_not_yet_answered_shows_every_pair_pending(api_client, source, audit_tasks_off):
    audit_id = launch(api_client, "names", [{"endpoint": source.id, "model": "annotator-planted"}],
                      material={"tasks": ["warm"]}, iterations=2, seed=1)
    preparation.audit_prepare(audit_id=audit_id)
    audit = Audit.objects.get(pk=audit_id)
    found = rows(api_client, audit, model=audit.models.get().id, task="warm")
    assert len(found) == 60 and {(row["minority_outcome"], row["reference_missing"]) for row in found} == {
        ("pending", "not answered yet")}
