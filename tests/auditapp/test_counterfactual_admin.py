"""The admin's launch forms of the counterfactual paradigms (Audits → Add → Counterfactual names / dialect): the
page shows their fields, a valid form launches an audit over the default material, an invalid one names the
problem and stores nothing."""
from __future__ import annotations

import pytest

from auditapp.models import Audit, Corpus, LLMEndpoint

pytestmark = pytest.mark.django_db


@pytest.fixture
def endpoint() -> LLMEndpoint:
    return LLMEndpoint.objects.create(name="annotators", base_url="http://127.0.0.1:9/v1",
                                      listed_models=[{"name": "annotator-fair", "digest": None, "details": {}}])


@pytest.fixture
def tasks_off(monkeypatch):
    for name in ("audit_prepare_task", "audit_work_task", "audit_analyse_task"):
        monkeypatch.setattr(f"tasks.audits.{name}.delay", lambda audit_id: None)


def form(endpoint, **changes) -> dict:
    return {"name": "admin launch", "corpus": "", "models": [f"{endpoint.id}:annotator-fair"], "params": "{}",
            "iterations": 3, "alpha": 0.05, "seed": 4, "use_cache": "on", "error_budget": 0.2, "parallel_tasks": 1,
            **changes}


def test_the_names_form_launches_an_audit_over_the_default_material(staff_client, endpoint, tasks_off):
    page = staff_client.get("/admin/auditapp/audit/add/?paradigm=names").content.decode()
    assert "Counterfactual names (seed 002, Experiment 1)" in page
    for field in ("corpus", "models", "iterations", "pairs_per_iteration", "reference_group", "alpha"):
        assert f'name="{field}"' in page, field
    response = staff_client.post("/admin/auditapp/audit/add/?paradigm=names",
                                 form(endpoint, pairs_per_iteration=30, reference_group="White"))
    assert response.status_code == 302, response.content.decode()[-2000:]
    audit = Audit.objects.get(name="admin launch")
    assert (audit.paradigm, audit.seed, audit.design["iterations"], audit.design["pairs_per_iteration"]) == (
        "names", 4, 3, 30)
    # The paper's 39 tasks and 200 names with our 211 vignettes.
    assert audit.corpus.n_units == 39 + 200 + 211 and len(audit.design["tasks"]) == 39


def test_the_names_form_names_a_problem_and_stores_nothing(staff_client, endpoint):
    response = staff_client.post("/admin/auditapp/audit/add/?paradigm=names",
                                 form(endpoint, pairs_per_iteration=30, reference_group="Martian"))
    assert response.status_code == 200
    assert "Martian" in response.content.decode()
    assert not Audit.objects.exists() and not Corpus.objects.exists()


def test_the_dialect_form_launches_an_audit(staff_client, endpoint, tasks_off):
    page = staff_client.get("/admin/auditapp/audit/add/?paradigm=dialect").content.decode()
    assert 'name="batch_size"' in page
    response = staff_client.post("/admin/auditapp/audit/add/?paradigm=dialect", form(endpoint, batch_size=10))
    assert response.status_code == 302, response.content.decode()[-2000:]
    audit = Audit.objects.get(name="admin launch")
    assert audit.paradigm == "dialect" and len(audit.design["tasks"]) == 16 and audit.design["batch_size"] == 10
