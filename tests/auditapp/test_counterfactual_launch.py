"""Launching a counterfactual audit with input it cannot run: a 400 naming the problem, nothing stored (seed 002
material as a researcher might give it wrong)."""
from __future__ import annotations

import pytest

from auditapp.models import Audit, Corpus, LLMEndpoint
from auditapp.paradigms.counterfactual.names import TABLE_2

pytestmark = pytest.mark.django_db


@pytest.fixture
def models() -> list[dict]:
    endpoint = LLMEndpoint.objects.create(name="annotators", base_url="http://127.0.0.1:9/v1")
    return [{"endpoint": endpoint.id, "model": "annotator-fair"}]


def refused(api_client, body: dict) -> str:
    response = api_client.post("/api/audits/", {"name": "bad", **body}, format="json")
    assert response.status_code == 400, response.content
    assert not Audit.objects.exists() and not Corpus.objects.exists()
    return response.content.decode()


def names(*rows) -> list[dict]:
    return [{"name": name, "group": group, "gender": gender} for name, group, gender in rows]


@pytest.mark.parametrize(("material", "expected"), [
    ({"names": 5}, "must be CSV text or a list"),
    ({"names": None}, "must be CSV text or a list"),
    ({"vignettes": 5}, "must be text (one a line) or a list"),
    ({"pools": {"a": 5}}, "must be text (one a line) or a list"),
    ({"pools": {"a": [f"I hum tune {n}." for n in range(501)]}}, "at most 500 per pool"),
    ({"names": "name,group,gender\nAnn,White,Female,extra\n"}, "row 2: 1 cell(s) beyond the header"),
    ({"names": names(("x", "A:B", "C"), ("y", "White", "C"))}, "may not hold ':'"),
])
def test_names_material_that_cannot_be_read_is_a_400(api_client, models, material, expected):
    assert expected in refused(api_client, {"paradigm": "names", "models": models, "material": material})


def test_dialect_pairs_that_are_not_a_list_are_a_400(api_client, models):
    assert "must be CSV text or a list" in refused(api_client, {"paradigm": "dialect", "models": models,
                                                                "material": {"pairs": 5}})


def test_names_without_a_gender_shared_by_every_group_are_a_400(api_client, models):
    # White has both genders, Arab only women, Black only men: no within-gender pair has every group.
    material = {"names": names(("Ann", "White", "Female"), ("Tom", "White", "Male"), ("Amal", "Arab", "Female"),
                               ("Omar", "Black", "Male"))}
    assert "no gender has names in the reference group 'White' and in every other group" in refused(
        api_client, {"paradigm": "names", "models": models, "material": material})


def test_two_models_with_one_name_are_a_400(api_client, models):
    twice = [models[0], {**models[0], "params": {"temperature": 1}}]
    assert "two models have the same name (annotator-fair)" in refused(
        api_client, {"paradigm": "names", "models": twice})


def test_the_default_names_are_table_2(api_client, models, monkeypatch):
    monkeypatch.setattr("tasks.audits.audit_prepare_task.delay", lambda audit_id: None)
    response = api_client.post("/api/audits/", {"paradigm": "names", "name": "ok", "models": models,
                                                "iterations": 1}, format="json")
    assert response.status_code == 201, response.content
    corpus = Audit.objects.get().corpus
    stored = list(corpus.units.filter(factors__role="name").order_by("position").values_list(
        "text", "factors__group", "factors__gender"))
    assert stored == [(entry.name, entry.group, entry.gender) for entry in TABLE_2] and len(stored) == 200


def test_a_queued_audits_dashboard_shows_the_settings_it_was_launched_with(api_client, staff_client, models,
                                                                            audit_tasks_off):
    """Before a worker prepares the audit (and writes the design into the manifest) the dashboard's header reads
    the launch's settings, not blanks or the defaults."""
    for body, shown in (({"paradigm": "names", "pairs_per_iteration": 5, "reference_group": "Asian"},
                         "of 5 pairs;\n    reference group Asian; seed 0"),
                        ({"paradigm": "dialect", "batch_size": 7}, "of 7 texts; seed 0")):
        response = api_client.post("/api/audits/", {"name": "queued", "models": models, **body}, format="json")
        assert response.status_code == 201, response.content
        page = staff_client.get(f"/audits/{response.json()['id']}/dashboard/").content.decode()
        assert shown in page
