"""The REST API of self-report audits: launching one, and its answers, scores and validity exports."""
from __future__ import annotations

import csv
import io

import pytest
from rest_framework.test import APIClient

from auditapp.engine import analysis, preparation
from auditapp.engine import runner as audit_runner
from auditapp.models import Audit, LLMEndpoint
from tests.factories import make_participant_user
from tests.llm_server import LLMServer

pytestmark = pytest.mark.django_db(transaction=True)


def rows_of(response) -> list[dict]:
    assert response.status_code == 200, response.content
    return list(csv.DictReader(io.StringIO(b"".join(response.streaming_content).decode())))


def test_the_instruments_are_listed_for_researchers_only(api_client, shipped_instruments):
    listed = {row["slug"]: row for row in api_client.get("/api/instruments/").json()["results"]}
    assert listed["aq50"]["n_items"] == 50 and listed["aq50"]["id"] == shipped_instruments["aq50"].id
    assert listed["sata_partial"]["partial"] is True
    other = APIClient()
    other.force_authenticate(make_participant_user())
    assert other.get("/api/instruments/").status_code == 403
    assert APIClient().get("/api/audits/1/answers/").status_code == 401


def test_launch_validation_names_every_problem(api_client, audit_tasks_off, shipped_instruments):
    endpoint = LLMEndpoint.objects.create(name="e", protocol="openai", base_url="http://127.0.0.1:9")
    response = api_client.post("/api/audits/", {
        "paradigm": "self_report", "name": "x", "models": [{"endpoint": endpoint.id, "model": "m"}],
        "instruments": [999999], "forms": ["sideways"], "mode": "stream", "validity": {"action": "ignore"}},
        format="json")
    assert response.status_code == 400
    errors = response.json()
    assert set(errors) == {"instruments", "forms", "mode", "validity"}
    assert "action" in errors["validity"]
    response = api_client.post("/api/audits/", {
        "paradigm": "self_report", "name": "x", "models": [], "instruments": [shipped_instruments["aq50"].id],
        "mode": "batch", "labels": "letters"}, format="json")
    assert response.status_code == 400
    assert response.json()["detail"] == ("choose at least one model; a batch writes its options out: labels must "
                                         "be 'text'")
    assert not Audit.objects.exists()


@pytest.mark.integration
def test_a_launched_audit_exports_its_answers_scores_and_validity(api_client, audit_tasks_off, shipped_instruments):
    with LLMServer(models=["persona-key", "persona-refuse"]) as server:
        endpoint = LLMEndpoint.objects.create(name="personas", protocol="ollama", base_url=server.base_url,
                                              max_concurrency=4, attempt_timeout_s=5, max_attempts=2)
        response = api_client.post("/api/audits/", {
            "paradigm": "self_report", "name": "SATA self-report", "instruments": [shipped_instruments["sata_partial"].id],
            "models": [{"endpoint": endpoint.id, "model": "persona-key"},
                       {"endpoint": endpoint.id, "model": "persona-refuse", "label": "refuser"}],
            "forms": ["original", "masked"], "mode": "item", "seed": 5,
            "validity": {"max_refusal_share": 0.25, "action": "exclude"}}, format="json")
        assert response.status_code == 201, response.content
        created = response.json()
        assert created["paradigm"] == "self_report" and created["study"] is None
        assert created["design"]["mode"] == "item" and created["design"]["forms"] == ["original", "masked"]
        assert created["design"]["validity"] == {"max_refusal_share": 0.25, "max_dummy_endorsed": 26,
                                                 "action": "exclude"}
        assert "questionnaires" not in created["design"]
        audit_id = created["id"]
        preparation.audit_prepare(audit_id=audit_id)
        assert audit_runner.audit_work(audit_id) == "finished"
        analysis.audit_analyse(audit_id=audit_id)

    assert api_client.get(f"/api/audits/{audit_id}/").json()["status"] == "completed"
    answers = rows_of(api_client.get(f"/api/audits/{audit_id}/answers/?format=csv"))
    # 2 models × (5 original items + 5 + 50 fillers + 52 dummies masked), one row per presented item.
    assert len(answers) == 2 * (5 + 107)
    assert {row["outcome"] for row in answers if row["model"] == "refuser"} == {"refusal"}
    assert {row["outcome"] for row in answers if row["model"] == "persona-key"} == {"answer"}
    sata_rows = [row for row in answers if row["kind"] == "instrument"]
    assert {row["source"] for row in sata_rows} == {"sata_partial"}
    assert {row["keying"] for row in sata_rows} == {"forward", "reverse"}
    page = api_client.get(f"/api/audits/{audit_id}/answers/").json()
    assert page["count"] == len(answers) and set(page["results"][0]) == set(answers[0])

    scores = rows_of(api_client.get(f"/api/audits/{audit_id}/scores/?format=csv"))
    assert [(row["model"], row["form"]) for row in scores] == [("persona-key", "original"), ("persona-key", "masked"),
                                                                ("refuser", "original"), ("refuser", "masked")]
    assert scores[0]["total"] == scores[1]["total"] == "12"  # the fixed key's SATA score (worked by hand there)
    assert scores[2]["total"] == scores[3]["total"] == ""  # no total without every answer

    validity = rows_of(api_client.get(f"/api/audits/{audit_id}/validity/?format=csv"))
    by = {(row["model"], row["form"]): row for row in validity}
    assert by[("refuser", "masked")]["flagged"] == "True"
    assert by[("refuser", "masked")]["flag_reasons"] == "refused 100% of the items"
    assert by[("refuser", "masked")]["refusals"] == "107" and by[("refuser", "masked")]["dummy_items"] == "52"
    assert {row["rule"] for row in validity} == {
        "On a form, a model is flagged and left out of the paired comparison when it refuses more than 25% of the "
        "form's items, or (masked form) endorses more than 26 of the dummy items."}
    manifest = api_client.get(f"/api/audits/{audit_id}/manifest/").json()
    assert manifest["paradigm"] == "self_report" and manifest["forms"] == ["original:sata_partial", "masked"]
    assert [entry["slug"] for entry in manifest["instruments"]] == ["sata_partial"]
    assert len(manifest["masked"]["0"]["order"]) == 107

    # Every request is in the responses export, named by its form and unit.
    responses = api_client.get(f"/api/audits/{audit_id}/responses/").json()
    assert responses["count"] == 2 * (5 + 107)
    first = responses["results"][0]
    assert first["item"] is None and first["condition"] in ("original:sata_partial", "masked")
    assert first["unit"].startswith("item:")
    # Progress is counted per model × form.
    progress = api_client.get(f"/api/audits/{audit_id}/progress/").json()
    assert {(cell["model"], cell["condition"]): cell["answered"] for cell in progress["cells"]} == {
        ("persona-key", "original:sata_partial"): 5, ("persona-key", "masked"): 107,
        ("refuser", "original:sata_partial"): 5, ("refuser", "masked"): 107}
    # And a classification audit has no self-report exports.
    assert api_client.get("/api/audits/999999/scores/").status_code == 404


@pytest.mark.integration
def test_the_admin_launches_a_self_report_audit_from_listed_models(client, researcher, shipped_instruments,
                                                                   django_capture_on_commit_callbacks, monkeypatch):
    prepared = []
    monkeypatch.setattr("tasks.audits.audit_prepare_task.delay", prepared.append)
    client.force_login(researcher[0])
    with LLMServer(models=["persona-key"]) as server:
        endpoint = LLMEndpoint.objects.create(name="local", protocol="ollama", base_url=server.base_url)
        client.post("/admin/auditapp/llmendpoint/", {"action": "list_models", "_selected_action": [endpoint.id]})
    page = client.get("/admin/auditapp/audit/add/?paradigm=self_report").content.decode()
    assert f"{endpoint.id}:persona-key" in page and "Masked (one questionnaire" in page
    form = {"name": "admin self-report", "models": [f"{endpoint.id}:persona-key"], "params": "{}",
            "instruments": [shipped_instruments["aq50"].id], "administered_forms": ["original", "masked"], "mode": "item",
            "labels": "letters", "replicates": 2, "seed": 4, "max_refusal_share": 0.3, "max_dummy_endorsed": 40,
            "validity_action": "exclude", "use_cache": "on", "error_budget": 0.2, "parallel_tasks": 1}
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post("/admin/auditapp/audit/add/?paradigm=self_report", form)
    assert response.status_code == 302, response.content.decode()[-3000:]
    audit = Audit.objects.get(name="admin self-report")
    assert audit.paradigm == "self_report" and audit.replicates == 2 and audit.seed == 4
    assert audit.design["mode"] == "item" and audit.design["labels"] == "letters"
    assert audit.design["validity"] == {"max_refusal_share": 0.3, "max_dummy_endorsed": 40, "action": "exclude"}
    assert sorted(audit.design["questionnaires"]) == ["0", "1"]
    assert prepared == [audit.id]
    listed = client.get("/admin/auditapp/audit/?paradigm__exact=self_report").content.decode()
    assert "admin self-report" in listed
    # A batch with lettered options is refused, with the reason.
    response = client.post("/admin/auditapp/audit/add/?paradigm=self_report", {**form, "name": "bad", "mode": "batch"})
    assert response.status_code == 200 and "labels must be &#x27;text&#x27;" in response.content.decode()
    assert not Audit.objects.filter(name="bad").exists()


def test_the_admin_edits_phrasing_variants_of_known_items_and_shows_the_licence_note(client, researcher, shipped_instruments):
    from auditapp.models import ItemVariant

    client.force_login(researcher[0])
    response = client.post("/admin/auditapp/itemvariant/add/", {"source": "aq50", "number": 51, "text": "x",
                                                                 "active": "on"})
    assert response.status_code == 200 and "aq50 has no item 51" in response.content.decode()
    response = client.post("/admin/auditapp/itemvariant/add/", {"source": "aq5O", "number": 1, "text": "x",
                                                                 "active": "on"})
    assert "no instrument or item pool &#x27;aq5O&#x27;" in response.content.decode()
    response = client.post("/admin/auditapp/itemvariant/add/", {
        "source": "aq50", "number": 1, "text": "I would rather do things with others.", "note": "masking",
        "active": "on"})
    assert response.status_code == 302
    variant = ItemVariant.objects.get()
    assert variant.created_by == researcher[0]
    page = client.get(f"/admin/auditapp/itemvariant/{variant.id}/change/").content.decode()
    aq = shipped_instruments["aq50"].parsed
    assert aq.item(1).text in page
    assert aq.licence_note.split(".")[0] in page
