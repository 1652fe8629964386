"""The audit REST API and admin: endpoints and their models, launching, controlling, exporting."""
from __future__ import annotations

import pytest
from rest_framework.test import APIClient

from auditapp.engine import launch
from auditapp.models import Audit, AuditRequest, LLMEndpoint, PromptTemplate
from auditapp.paradigms.classification import services as classification_services
from tests.factories import make_audit_study, make_participant_user, make_study
from tests.integration.support import free_port
from tests.llm_server import LLMServer

pytestmark = pytest.mark.django_db


@pytest.fixture
def prepare_sent(monkeypatch):
    """The audit ids handed to the prepare and work tasks, which are not run."""
    sent = []
    monkeypatch.setattr("tasks.audits.audit_prepare_task.delay", sent.append)
    monkeypatch.setattr("tasks.audits.audit_work_task.delay", lambda audit_id: sent.append(("work", audit_id)))
    return sent


@pytest.fixture(scope="module")
def server():
    with LLMServer(models=("model-a", "llama3:8b")) as running:
        yield running


def test_audits_need_a_researcher(api_client):
    assert APIClient().get("/api/audits/").status_code == 401
    other = APIClient()
    other.force_authenticate(make_participant_user())
    assert other.get("/api/audits/").status_code == 403
    assert api_client.get("/api/audits/").status_code == 200


@pytest.mark.integration
def test_endpoint_models_are_listed_from_the_server_for_both_protocols(api_client, server):
    for protocol in ("openai", "ollama"):
        endpoint = LLMEndpoint.objects.create(name=protocol, protocol=protocol, base_url=server.base_url)
        response = api_client.get(f"/api/endpoints/{endpoint.id}/models/")
        assert response.status_code == 200
        assert [m["name"] for m in response.json()] == ["model-a", "llama3:8b"]
        endpoint.refresh_from_db()
        assert [m["name"] for m in endpoint.listed_models] == ["model-a", "llama3:8b"]
    assert all(m["digest"] for m in endpoint.listed_models), "Ollama reports digests"


def test_an_unreachable_endpoint_gives_502_with_the_reason(api_client):
    endpoint = LLMEndpoint.objects.create(name="down", base_url=f"http://127.0.0.1:{free_port()}", max_attempts=1)
    response = api_client.get(f"/api/endpoints/{endpoint.id}/models/")
    assert response.status_code == 502
    assert "down" in response.json()["detail"]


def test_launching_an_audit_checks_the_study_and_names_every_problem(api_client, prepare_sent,
                                                                     django_capture_on_commit_callbacks):
    endpoint = LLMEndpoint.objects.create(name="e", base_url="http://127.0.0.1:1")
    bare = make_study()
    response = api_client.post("/api/audits/", {"study": bare.id, "name": "x", "conditions": ["zs", "icl_a"],
                                                "models": [{"endpoint": endpoint.id, "model": "m"}]}, format="json")
    assert response.status_code == 400
    assert "no ground truth" in response.json()["detail"] and "icl_a" in response.json()["detail"]
    assert "has no labels yet" in response.json()["detail"]  # the cause, not only the missing analysis
    assert not Audit.objects.exists() and not prepare_sent

    study = make_audit_study(12, n_examples=3)
    with django_capture_on_commit_callbacks(execute=True):
        response = api_client.post("/api/audits/", {"study": study.id, "name": "ok",
                                                    "models": [{"endpoint": endpoint.id, "model": "m"}]}, format="json")
    assert response.status_code == 201, response.content
    body = response.json()
    assert body["status"] == "queued" and body["conditions"] == list(classification_services.CONDITIONS)
    assert prepare_sent == [body["id"]]
    assert Audit.objects.get(pk=body["id"]).items.count() == 12, "ICL examples are not evaluated"


def test_pause_resume_cancel_follow_the_status(api_client, prepare_sent, django_capture_on_commit_callbacks):
    study = make_audit_study(6, n_examples=2)
    endpoint = LLMEndpoint.objects.create(name="e", base_url="http://127.0.0.1:1")
    audit = classification_services.audit_create(study=study, name="a", conditions=["zs"],
                                  models=[launch.ModelChoice(endpoint=endpoint, model="m")])
    Audit.objects.filter(pk=audit.pk).update(status="running", n_requests=6)
    assert api_client.post(f"/api/audits/{audit.id}/pause/").json()["status"] == "paused"
    assert api_client.post(f"/api/audits/{audit.id}/pause/").status_code == 409
    with django_capture_on_commit_callbacks(execute=True):
        assert api_client.post(f"/api/audits/{audit.id}/resume/").json()["status"] == "running"
    assert ("work", audit.id) in prepare_sent
    assert api_client.post(f"/api/audits/{audit.id}/cancel/").json()["status"] == "cancelled"
    assert api_client.post(f"/api/audits/{audit.id}/resume/").status_code == 409
    assert api_client.post(f"/api/audits/{audit.id}/nonsense/").status_code == 404


def test_responses_export_has_the_documented_columns(api_client, prepare_sent):
    study = make_audit_study(4, n_examples=2)
    endpoint = LLMEndpoint.objects.create(name="e", base_url="http://127.0.0.1:1")
    audit = classification_services.audit_create(study=study, name="a", conditions=["zs"],
                                  models=[launch.ModelChoice(endpoint=endpoint, model="m")])
    AuditRequest.objects.bulk_create([AuditRequest(audit=audit, audit_model=audit.models.get(), condition="zs",
                                                   item_id=i.item_id, order=n, key=f"k{n}")
                                      for n, i in enumerate(audit.items.all())])
    response = api_client.get(f"/api/audits/{audit.id}/responses/", {"format": "csv"})
    header = b"".join(response.streaming_content).decode().splitlines()[0].split(",")
    for column in ("key", "model", "condition", "item", "replicate", "reply", "outcome", "label", "explanation",
                   "finish_reason", "latency_ms", "prompt_tokens", "completion_tokens", "attempts", "error"):
        assert column in header
    rows = api_client.get(f"/api/audits/{audit.id}/responses/").json()["results"]
    assert {row["outcome"] for row in rows} == {"pending"}


def test_editing_a_template_in_the_admin_saves_a_new_version(client, researcher):
    client.force_login(researcher[0])
    current = classification_services.template_current("zs")
    response = client.post(f"/admin/auditapp/prompttemplate/{current.id}/change/", {
        "paradigm": "classification", "condition": "zs", "name": current.name, "text": current.text + "\nBe brief.",
        "note": "shorter", "source": current.source})
    assert response.status_code == 302
    assert PromptTemplate.objects.filter(condition="zs").count() == 2
    assert PromptTemplate.objects.get(pk=current.id).text == current.text, "the old version is unchanged"
    assert classification_services.template_current("zs").text.endswith("Be brief.")


@pytest.mark.integration
def test_admin_launches_an_audit_from_listed_models(client, researcher, server, prepare_sent,
                                                    django_capture_on_commit_callbacks):
    client.force_login(researcher[0])
    study = make_audit_study(5, n_examples=2)
    endpoint = LLMEndpoint.objects.create(name="local", protocol="ollama", base_url=server.base_url)
    client.post("/admin/auditapp/llmendpoint/", {"action": "list_models", "_selected_action": [endpoint.id]})
    page = client.get("/admin/auditapp/audit/add/").content.decode()
    assert f"{endpoint.id}:llama3:8b" in page
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post("/admin/auditapp/audit/add/", {
        "name": "from the admin", "study": study.id, "models": [f"{endpoint.id}:llama3:8b"],
        "params": '{"temperature": 0}', "conditions": ["zs", "cot"], "replicates": 1, "seed": 7, "use_cache": "on", "error_budget": 0.2,
        "unparsed": "exclude", "n_resamples": 500, "parallel_tasks": 1})
    assert response.status_code == 302, response.content.decode()[-3000:]
    audit = Audit.objects.get(name="from the admin")
    assert audit.models.get().model == "llama3:8b" and audit.seed == 7
    assert audit.models.get().params == {"temperature": 0}
    assert prepare_sent == [audit.id]
    bare = make_study()
    response = client.post("/admin/auditapp/audit/add/", {
        "name": "no truth", "study": bare.id, "models": [f"{endpoint.id}:llama3:8b"], "conditions": ["zs"],
        "replicates": 1, "seed": 0, "error_budget": 0.2, "unparsed": "exclude", "n_resamples": 500,
        "parallel_tasks": 1})
    assert response.status_code == 200 and "no ground truth" in response.content.decode()


def test_a_labelled_study_without_its_analysis_is_asked_to_compute_it(api_client, prepare_sent):
    from annotation.models import ItemGroundTruth, Label, Participant

    endpoint = LLMEndpoint.objects.create(name="e", base_url="http://127.0.0.1:1")
    study = make_audit_study(6, n_examples=0)
    ItemGroundTruth.objects.filter(item__study=study).delete()
    annotator = Participant.objects.create(study=study, pseudonym="A1", status="completed")
    Label.objects.create(participant=annotator, item=study.items.first(), value=1)
    response = api_client.post("/api/audits/", {"study": study.id, "name": "x", "conditions": ["zs"],
                                                "models": [{"endpoint": endpoint.id, "model": "m"}]}, format="json")
    assert response.status_code == 400
    assert "has no ground truth yet: compute its analysis first" in response.json()["detail"]
    assert not Audit.objects.exists() and not prepare_sent
