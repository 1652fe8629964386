"""Launching a BITS audit from the admin (Audits → Add → Perturbation sensitivity): the form offers the corpora, their
recorded scorers, the prompt, the t-test and the batch size; a local endpoint created in the admin lists VADER
and TextBlob at once; the form launches an audit that runs to completion with the settings chosen; a form with no
scorer at all shows the problem and stores nothing."""
from __future__ import annotations

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from auditapp.models import Audit, AuditModel, LLMEndpoint
from tests.auditapp.bits_upload_files import public_shape_files
from tests.auditapp.test_bits_audit import run, table

pytestmark = [pytest.mark.django_db(transaction=True)]

LAUNCH = "/admin/auditapp/audit/add/?paradigm=bits"


def local_endpoint_from_the_admin(client) -> LLMEndpoint:
    response = client.post("/admin/auditapp/llmendpoint/add/", {
        "name": "in the worker", "protocol": "local", "base_url": "", "api_key_env": "", "max_concurrency": 4,
        "attempt_timeout_s": 60, "deadline_s": 600, "max_attempts": 3, "request_template": "null",
        "score_path": "", "score_min": -1, "score_max": 1})
    assert response.status_code == 302, response.content.decode()[-3000:]
    return LLMEndpoint.objects.get(name="in the worker")


def uploaded_corpus(api_client) -> dict:
    (p_name, p_bytes), (c_name, c_bytes) = public_shape_files()
    response = api_client.post("/api/corpora/upload/", {
        "perturbed_file": SimpleUploadedFile(p_name, p_bytes), "control_file": SimpleUploadedFile(c_name, c_bytes),
        "name": "uploaded"}, format="multipart")
    assert response.status_code == 201, response.content
    return response.json()


def form(**changes) -> dict:
    return {"name": "admin bits", "corpus": "", "models": [], "params": "{}", "prompt": "sentiment",
            "t_test": "welch", "batch_size": 128, "replicates": 1, "seed": 3, "use_cache": "on", "error_budget": 0.2,
            "parallel_tasks": 1, **changes}


def test_the_admin_shows_the_bits_form_and_launches_an_audit_with_the_local_vader(
        staff_client, api_client, monkeypatch, django_capture_on_commit_callbacks):
    prepared = []
    monkeypatch.setattr("tasks.audits.audit_prepare_task.delay", prepared.append)
    for name in ("audit_work_task", "audit_analyse_task"):
        monkeypatch.setattr(f"tasks.audits.{name}.delay", lambda audit_id: None)
    endpoint = local_endpoint_from_the_admin(staff_client)
    assert {model["name"] for model in endpoint.listed_models} == {"vader", "textblob"}
    corpus = uploaded_corpus(api_client)

    page = staff_client.get(LAUNCH).content.decode()
    assert "Perturbation sensitivity" in page
    for field in ("corpus", "recorded_scorers", "prompt", "t_test", "batch_size"):
        assert f'name="{field}"' in page, field
    assert f'value="{endpoint.id}:vader"' in page and f'value="{endpoint.id}:textblob"' in page
    assert "the default corpus (seed 001 Tables 3–5)" in page and "uploaded" in page
    assert all(f'value="{scorer["id"]}"' in page for scorer in corpus["recorded_scorers"])

    with django_capture_on_commit_callbacks(execute=True):
        response = staff_client.post(LAUNCH, form(models=[f"{endpoint.id}:vader"]))
    assert response.status_code == 302, response.content.decode()[-3000:]
    audit = Audit.objects.get(name="admin bits")
    assert (audit.paradigm, audit.seed, audit.corpus.n_units) == ("bits", 3, 2310)  # no corpus chosen: the paper's
    assert audit.design["batch_size"] == 128 and audit.design["analysis"] == {
        "t_test": "welch", "score_dev_ddof": 0, "label_rules": {}, "groups": [],
        "control_scores_from": {}}
    assert audit.design["prompt"]["name"] == "sentiment" and audit.design["recorded_scorers"] == []
    assert list(AuditModel.objects.filter(audit=audit).values_list("endpoint_id", "model")) == [(endpoint.id,
                                                                                                   "vader")]
    assert prepared == [audit.id]

    # The audit runs to its tables with the t-test chosen.
    audit = run(audit.id)
    assert audit.status == Audit.Status.COMPLETED, audit.status_reason
    assert audit.n_requests == 19  # 2,310 sentences in batches of 128
    sense = table(api_client, audit.id, "score_sense")
    assert {row["scorer"] for row in sense} == {"vader"} and all(row["test"] == "welch" for row in sense)


def test_a_form_without_a_scorer_shows_the_problem_and_stores_nothing(staff_client, api_client):
    endpoint = local_endpoint_from_the_admin(staff_client)
    corpus = uploaded_corpus(api_client)
    response = staff_client.post(LAUNCH, form(corpus=corpus["id"]))
    assert response.status_code == 200 and "choose at least one model" in response.content.decode()
    # Recorded scorers with the default corpus: they belong to the uploaded one.
    response = staff_client.post(LAUNCH, form(recorded_scorers=[corpus["recorded_scorers"][0]["id"]]))
    assert response.status_code == 200
    assert "recorded scorers need the corpus they were imported with" in response.content.decode()
    # A batch outside its bounds is named by its field.
    response = staff_client.post(LAUNCH, form(models=[f"{endpoint.id}:vader"], batch_size=0))
    assert response.status_code == 200 and "greater than or equal to 1" in response.content.decode()
    assert not Audit.objects.exists() and not AuditModel.objects.exists()
