"""Property-based tests of the whole REST API against its own OpenAPI schema (schemathesis).

Every operation of ``/api/schema/`` is called with generated requests (valid and invalid ones), as a staff user
with a token, on a database seeded with a small study (items, imported participants and their labels, a ground
truth, an item import), an LLM endpoint served by the test LLM server on 127.0.0.1, a completed classification
audit, a self-report audit, a BITS audit of recorded scores and a word association audit. Path ids are those of the seeded objects, so ``{id}`` paths reach real rows.
Each response must not be a 5xx and must match the schema (status code, content type, body, headers).
Nothing is excluded: the one operation that makes the server fetch a URL (an endpoint's models) only ever
reaches the seeded endpoint, i.e. the test LLM server on 127.0.0.1, because path ids are fixed.
"""
from __future__ import annotations

import pytest
import schemathesis
from django.core.management import call_command
from django.core.signals import request_finished, request_started
from django.core.wsgi import get_wsgi_application
from django.db import close_old_connections
from hypothesis import HealthCheck, assume, settings
from schemathesis.config import SchemathesisConfig
from schemathesis.specs.openapi.checks import positive_data_acceptance

from annotation.models import ItemImport
from annotation.services import items_import_file
from auditapp.engine import registry
from auditapp.models import LLMEndpoint
from auditapp.paradigms.bits.corpora import bits_corpus_generate
from auditapp.paradigms.self_report.services import self_report_audit_create
from coding.codebook_services import codebooks_sync_shipped
from coding.round_services import coder_add, round_create
from tests.auditapp.judged_audits import recorded_bits_audit, unprepared_wabt_audit
from tests.factories import autalic_like_csv, make_audit_study, make_researcher
from tests.llm_server import LLMServer

pytestmark = [pytest.mark.slow, pytest.mark.django_db]

# Bounded so the whole run stays well under a few minutes on a 2-core machine; CI runs it with the suite.
EXAMPLES_PER_OPERATION = 25

# Unknown query parameters are ignored, as HTTP APIs usually do: not generated as "invalid" requests.
schema = schemathesis.openapi.from_wsgi("/api/schema/", get_wsgi_application(), config=SchemathesisConfig.from_dict(
    {"generation": {"allow-extra-parameters": False}}))

# "A request valid by the schema is accepted" cannot hold where a valid body needs more than a schema can say. The
# schema states every other rule (lengths, ranges, patterns, enums, required and dependent fields); what is left, per
# operation, is database state, a file's content, or a rule across a list's items:
POSITIVE_ACCEPTANCE_UNKNOWABLE = {
    ("POST", "/api/audits/"): "the study, endpoints, instruments, corpus and recorded scorers named must exist (a "
                              "classification study with a ground truth); a BITS prompt, a spec's material",
    ("POST", "/api/studies/"): "the slug must not be taken (an earlier example may have taken it); a team named "
                               "must be one where the user is an editor",
    ("PUT", "/api/studies/{id}/"): "the slug must not be another study's; a team named must be the study's own",
    ("PATCH", "/api/studies/{id}/"): "the slug must not be another study's; a team named must be the study's own",
    ("POST", "/api/endpoints/"): "the name must not be taken; the base URL's host must not resolve to a refused "
                                 "address; an HTTP JSON scorer's template and JMESPath must be valid, score_min < "
                                 "score_max",
    ("PUT", "/api/endpoints/{id}/"): "the name must not be another endpoint's; the base URL's host must not resolve "
                                     "to a refused address; no audit may still have requests to send with its old "
                                     "kind, base URL or scoring settings",
    ("PATCH", "/api/endpoints/{id}/"): "the name must not be another endpoint's; the base URL's host must not resolve "
                                       "to a refused address; no audit may still have requests to send with its old "
                                       "kind, base URL or scoring settings",
    ("GET", "/api/model-card/"): "the model's name must hold no NUL character (no database stores one)",
    ("POST", "/api/studies/{id}/imports/"): "the file must be a readable item file",
    ("POST", "/api/studies/{id}/annotator-imports/"): "the file must be readable annotator data of the study's "
                                                       "annotators",
    ("POST", "/api/corpora/"): "the spec must be a valid one for the paradigm's generator",
    ("POST", "/api/corpora/upload/"): "both files must be readable BITS corpus files",
    ("POST", "/api/corpora/perturb/"): "the file must be a readable table of texts, at least one mentioning a target "
                                       "word",
    ("POST", "/api/audits/{id}/extractions/"): "model mode: the endpoint must exist and be a chat model's",
    ("POST", "/api/codebooks/"): "a .qdc upload must be a readable codebook; JSON: code names distinct "
                                 "(case-insensitively) and shortcuts distinct, rules across items",
    ("PUT", "/api/codebooks/{id}/"): "code names distinct (case-insensitively) and shortcuts distinct, rules across "
                                     "items",
    ("POST", "/api/coding-rounds/"): "the audit must exist, be completed and give explained replies; the codebooks "
                                     "and models must exist; the sample must fit the eligible replies",
    ("POST", "/api/coding-rounds/{id}/coders/"): "the lens must be the round's, the user a staff account not "
                                                 "coding in it, the name not taken; the round must be open",
    ("PUT", "/api/coding-rounds/{id}/mappings/"): "the codes must exist in at least two of the round's lenses; "
                                                  "mapping names distinct",
    ("PUT", "/api/studies/{id}/instruments/"): "the instruments must exist, each once, one aq and one sata at most, "
                                               "an AQ or SATA never with the other's role",
    ("POST", "/api/teams/"): "the name must not be taken (an earlier example may have taken it)",
    ("PATCH", "/api/teams/{id}/"): "the name must not be another team's",
    ("DELETE", "/api/teams/{id}/"): "the team must hold no study, audit, corpus, endpoint, codebook or round",
    ("POST", "/api/teams/{id}/members/"): "the username must be an active researcher's who is not yet a member",
    ("PATCH", "/api/teams/{id}/members/{user_id}/"): "the team's last owner keeps the owner role",
    ("DELETE", "/api/teams/{id}/members/{user_id}/"): "the team's last owner stays",
    ("GET", "/api/audits/compare/"): "the audits must exist, be the user's, have results and measure the same thing",
    ("GET", "/api/audits/{id}/judged-replies/"): "disagrees=group needs a group",
    ("GET", "/api/audits/{id}/judged-sentences/"): "the scorer, group and template must be the audit's",
    ("GET", "/api/audits/{id}/judged-instances/"): "the model and condition must be the audit's, the sort one of its "
                                                   "paradigm's",
    ("GET", "/api/audits/{id}/judged-items/"): "the model, form and instrument must be the audit's",
    ("GET", "/api/audits/{id}/judged-pairs/"): "the model and task must be the audit's, a group one of its groups; "
                                               "which sorts and whether groups exist depend on its paradigm",
}
# Those operations are still checked for everything else (no 5xx, every answer as documented, invalid data refused).


@pytest.fixture(scope="module")
def seeded(django_db_setup, django_db_blocker):
    """The seeded objects' ids by kind, committed once for the module and flushed after it."""
    from auditapp.engine import launch as engine_launch
    from psychometrics.services import instruments_sync_shipped
    from tests.auditapp.test_audit_dashboard_view import COMPLETED_PLAN, build_audit

    with (django_db_blocker.unblock(), pytest.MonkeyPatch.context() as patch,
          LLMServer(models=("model-a", "persona-key")) as server):
        # Committed here, so a launch would queue its tasks at once: the seeded audits are never run.
        for name in ("audit_prepare_task", "audit_work_task", "audit_analyse_task"):
            patch.setattr(f"tasks.audits.{name}.delay", lambda audit_id: None)
        researcher, token = make_researcher("schema-researcher")
        study = make_audit_study(12, n_examples=3, slug="schema-study")
        labelled = items_import_file(study=study, filename="labels.csv", content=autalic_like_csv(6))
        assert labelled.status == ItemImport.Status.SUCCEEDED, labelled.errors
        endpoint = LLMEndpoint.objects.create(name="schema endpoint", base_url=server.base_url, max_attempts=1,
                                              attempt_timeout_s=2, deadline_s=5)
        classification = build_audit(COMPLETED_PLAN, name="schema audit")
        instrument = instruments_sync_shipped()[0]
        self_report = self_report_audit_create(
            name="schema self-report", instruments=[instrument],
            models=[engine_launch.ModelChoice(endpoint=endpoint, model="persona-key")])
        corpus = bits_corpus_generate(spec=None, name="schema corpus")
        recorded = recorded_bits_audit(name="schema BITS")
        wabt = unprepared_wabt_audit(endpoint, name="schema WABT")
        names = registry.get("names").launch({
            "name": "schema names", "iterations": 1, "pairs_per_iteration": 30, "reference_group": "White",
            "corpus": None, "material": {"tasks": ["warm"]}, "analysis": {},
            "models": [{"endpoint": endpoint, "model": "persona-key", "label": "", "params": {}}]})
        codebook = codebooks_sync_shipped()[0]
        coding_round = round_create(audit=classification, codebooks=[codebook.id], sample_size=8, seed=1)
        coder = coder_add(coding_round=coding_round, lens_id=coding_round.lenses.get().id, name="schema coder")
        yield {"token": token, "study": study.id, "import": labelled.id, "endpoint": endpoint.id,
               "audit": classification.id, "self_report_audit": self_report.id, "names_audit": names.id,
               "corpus": corpus.id, "codebook": codebook.id, "coding_round": coding_round.id, "coder": coder.id,
               "team": study.team_id, "member": researcher.id, "bits_audit": recorded.id, "implicit_bias_audit": wabt.id,
               "request": classification.requests.order_by("id").values_list("id", flat=True).first()}
        call_command("flush", interactive=False, verbosity=0)


@pytest.fixture
def keep_test_connection():
    """Schemathesis calls the WSGI application itself, whose request signals would close the test's database
    connection (and its transaction); Django's own test client disconnects them the same way."""
    request_started.disconnect(close_old_connections)
    request_finished.disconnect(close_old_connections)
    yield
    request_started.connect(close_old_connections)
    request_finished.connect(close_old_connections)


def seeded_id(path: str, ids: dict) -> int:
    """The id of the seeded object a templated path names."""
    if path.startswith("/api/studies/"):
        return ids["study"]
    if path.startswith("/api/imports/"):
        return ids["import"]
    if path.startswith("/api/endpoints/"):
        return ids["endpoint"]
    if path.startswith("/api/corpora/"):
        return ids["corpus"]
    if path.startswith("/api/codebooks/"):
        return ids["codebook"]
    if path.startswith("/api/coding-rounds/"):
        return ids["coding_round"]
    if path.startswith("/api/teams/"):
        return ids["team"]
    if path.rstrip("/").rsplit("/", 1)[-1] in ("answers", "scores", "validity", "judged-items"):
        return ids["self_report_audit"]
    if path.endswith("/judged-sentences/"):
        return ids["bits_audit"]
    if path.endswith("/judged-instances/"):
        return ids["implicit_bias_audit"]
    if path.endswith("/judged-pairs/"):
        return ids["names_audit"]
    return ids["audit"]


@schema.parametrize()
@settings(max_examples=EXAMPLES_PER_OPERATION, deadline=None, derandomize=True,
          suppress_health_check=list(HealthCheck))
def test_api_conforms_to_its_schema(case, seeded, keep_test_connection, audit_tasks_off, queued):
    # ?format=api is DRF's browsable API: HTML pages for people, which the schema (for scripts) leaves out.
    assume((case.query or {}).get("format") != "api")
    if case.path_parameters and "id" in case.path_parameters:
        case.path_parameters["id"] = seeded_id(case.path, seeded)
    if case.path_parameters and "request_id" in case.path_parameters:
        case.path_parameters["request_id"] = seeded["request"]
    if case.path_parameters and "coder_id" in case.path_parameters:
        case.path_parameters["coder_id"] = seeded["coder"]
    if case.path_parameters and "user_id" in case.path_parameters:
        case.path_parameters["user_id"] = seeded["member"]
    excluded = [positive_data_acceptance] if (case.method, case.path) in POSITIVE_ACCEPTANCE_UNKNOWABLE else []
    case.call_and_validate(headers={"Authorization": f"Token {seeded['token']}"}, excluded_checks=excluded)


@pytest.mark.parametrize("body", ["[null, null]", "[]", "3", '"audit"', "null"])
def test_launching_with_a_non_object_body_is_a_400(api_client, body):
    response = api_client.post("/api/audits/", body, content_type="application/json")
    assert response.status_code == 400, response.content


def test_the_schema_generates_without_warnings(tmp_path):
    call_command("spectacular", "--validate", "--fail-on-warn", "--file", str(tmp_path / "schema.yaml"))


def test_the_schema_documents_the_error_answers(client):
    paths = client.get("/api/schema/?format=json").json()["paths"]
    study = paths["/api/studies/{id}/labels/"]["get"]["responses"]
    assert {"200", "400", "401", "403", "404", "406"} <= set(study)
    assert set(study["404"]["content"]) == {"application/json", "text/csv"}
    assert {"201", "400", "401", "403", "406"} <= set(paths["/api/audits/"]["post"]["responses"])
    assert "404" not in paths["/api/"]["get"]["responses"]  # no id in its path, no pages
    assert "404" in paths["/api/instruments/"]["get"]["responses"]  # paginated: no such page
    action = paths["/api/audits/{id}/{action}/"]["post"]
    assert action["operationId"] == "audits_action" and "409" in action["responses"]
    assert [sorted(p["schema"].get("enum", [])) for p in action["parameters"] if p["name"] == "action"] == [
        ["cancel", "pause", "reparse", "resume", "retry-failed"]]
