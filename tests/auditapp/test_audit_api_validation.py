"""The audit API's answers to unusual but legitimate objects and to bad query values (found by tests/api/test_schema.py)."""
from __future__ import annotations

import pytest

from auditapp.engine import launch
from auditapp.models import LLMEndpoint
from auditapp.paradigms.self_report.services import self_report_audit_create
from tests.auditapp.test_audit_dashboard_view import COMPLETED_PLAN, build_audit

pytestmark = pytest.mark.django_db


def test_a_self_report_audit_has_a_null_study_slug_in_the_list_and_detail(api_client, audit_tasks_off,
                                                                          shipped_instruments):
    endpoint = LLMEndpoint.objects.create(name="e", base_url="http://127.0.0.1:9")
    audit = self_report_audit_create(name="no study", instruments=[shipped_instruments["aq50"]],
                                     models=[launch.ModelChoice(endpoint=endpoint, model="m")])
    listed = api_client.get("/api/audits/").json()["results"][0]
    assert listed["study"] is None and listed["study_slug"] is None
    assert api_client.get(f"/api/audits/{audit.id}/").json()["study_slug"] is None


@pytest.mark.parametrize(("query", "name"), [("model=abc", "model"), ("model=", "model"), ("model=0", "model"),
                                             ("model=9223372036854775808", "model"),
                                             ("outcome=maybe", "outcome"), ("outcome=", "outcome"),
                                             ("condition=", "condition"), ("condition=z%00s", "condition")])
def test_a_bad_responses_filter_is_a_400_naming_it_instead_of_every_row(api_client, query, name):
    audit = build_audit(COMPLETED_PLAN)
    response = api_client.get(f"/api/audits/{audit.id}/responses/?{query}")
    assert response.status_code == 400, response.content
    assert list(response.json()) == [name]


def test_the_responses_filters_still_narrow_the_rows(api_client):
    audit = build_audit(COMPLETED_PLAN)
    model = audit.models.get(model="model-a")
    rows = api_client.get(f"/api/audits/{audit.id}/responses/?model={model.id}&condition=zs&outcome=refusal"
                          ).json()["results"]
    assert [(row["model"], row["condition"], row["outcome"]) for row in rows] == [("model-a", "zs", "refusal")]
    assert api_client.get(f"/api/audits/{audit.id}/responses/?outcome=pending").json()["count"] == 0


@pytest.mark.parametrize("action", ["AAA", "null,null", "pause.me"])
def test_an_unknown_action_is_a_json_404_naming_the_actions(api_client, action):
    audit = build_audit(COMPLETED_PLAN)
    response = api_client.post(f"/api/audits/{audit.id}/{action}/")
    assert response.status_code == 404
    assert response["Content-Type"] == "application/json"
    assert response.json()["detail"] == (f"unknown action {action!r}; use one of: pause, resume, cancel, "
                                         "retry-failed, reparse.")


def test_a_seed_beyond_what_the_database_stores_is_a_400(api_client, audit_tasks_off):
    audit = build_audit(COMPLETED_PLAN)
    endpoint = audit.models.first().endpoint
    body = {"study": audit.study_id, "name": "too big", "conditions": ["zs"], "seed": 2**63,
            "models": [{"endpoint": endpoint.id, "model": "model-a"}]}
    response = api_client.post("/api/audits/", body, format="json")
    assert response.status_code == 400 and list(response.json()) == ["seed"]
    assert "seed" not in api_client.post("/api/audits/", {**body, "seed": 2**63 - 1}, format="json").json()


def test_two_models_that_tables_would_name_alike_are_refused_until_labelled():
    """The same model under two parameter sets (or on two endpoints) without labels would be one name in every
    table and export; with labels both are taken."""
    one = LLMEndpoint.objects.create(name="one", base_url="http://127.0.0.1:9")
    two = LLMEndpoint.objects.create(name="two", base_url="http://127.0.0.1:8")
    alike = [launch.ModelChoice(endpoint=one, model="m", params={"temperature": 0}),
             launch.ModelChoice(endpoint=one, model="other"),
             launch.ModelChoice(endpoint=two, model="m")]
    assert launch.launch_problems(models=alike, replicates=1, error_budget=0.1) == [
        "models 1 and 3 would both be named 'm' in tables and exports: give each a label"]
    # A label that repeats another model's name is refused too; distinct labels are taken.
    assert launch.launch_problems(models=[alike[1], launch.ModelChoice(endpoint=two, model="m", label="other")],
                                    replicates=1, error_budget=0.1) == [
        "models 1 and 2 would both be named 'other' in tables and exports: give each a label"]
    labelled = [launch.ModelChoice(endpoint=one, model="m", params={"temperature": 0}, label="m at T=0"),
                alike[1], launch.ModelChoice(endpoint=two, model="m", label="m on two")]
    assert launch.launch_problems(models=labelled, replicates=1, error_budget=0.1) == []
