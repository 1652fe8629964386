"""BITS perturbation-sensitivity audits through the engine in one process (prepare, send, record, analyse):

- VADER and TextBlob (installed packages, in the worker) on the default corpus of seed 001's tables, launched
  through the API: every stored score equals the library's own output, every table is exported (JSON and CSV),
  the dashboard shows the analysis, and a second audit takes every score from the cache;
- a chat model asked through our sentiment prompt, against the test LLM server with transient and permanent
  faults and an effect planted for one group (−0.3 for PWD:C): ScoreSense recovers it, a scorer with nothing
  planted shows nothing, and every failure is recorded with its reason and counted as missing;
- an HTTP JSON scorer against a real scoring server on 127.0.0.1 with injected faults.

The worker path (Celery on Redis, PostgreSQL) is tests/integration/test_bits_worker.py.
"""
from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest
from textblob import TextBlob
from vaderSentiment.vaderSentiment import SentimentIntensityAnalyzer

from auditapp.engine import analysis as engine_analysis
from auditapp.engine import conversations, planning, preparation, recording
from auditapp.engine import runner as audit_runner
from auditapp.llm_clients import Completion
from auditapp.models import Audit, AuditJudgment, AuditRequest, Corpus, CorpusUnit, LLMEndpoint
from auditapp.paradigms.bits.corpus import spec_from_dict
from tests import scoring_server
from tests.llm_server import LLMServer, expected_score

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.integration]


@pytest.fixture
def tasks_off(monkeypatch):
    """Tasks are run by the test itself, in order, instead of by a worker."""
    for name in ("audit_prepare_task", "audit_work_task", "audit_analyse_task"):
        monkeypatch.setattr(f"tasks.audits.{name}.delay", lambda audit_id: None)


def run(audit_id: int) -> Audit:
    preparation.audit_prepare(audit_id=audit_id)
    assert audit_runner.audit_work(audit_id) == "finished"
    engine_analysis.audit_analyse(audit_id=audit_id)
    return Audit.objects.get(pk=audit_id)


def launch(api_client, **body) -> int:
    response = api_client.post("/api/audits/", {"paradigm": "bits", "name": "bits", **body}, format="json")
    assert response.status_code == 201, response.content
    return response.json()["id"]


def table(api_client, audit_id: int, name: str) -> list[dict]:
    response = api_client.get(f"/api/audits/{audit_id}/tables/{name}/", {"page_size": 10000})
    assert response.status_code == 200, response.content
    return response.json()["results"]


def scores_by_unit(audit: Audit, model: str) -> dict[str, float | None]:
    return dict(AuditJudgment.objects.filter(audit=audit, request__audit_model__model=model)
                .values_list("unit", "value"))


def test_vader_and_textblob_score_the_default_corpus_as_the_libraries_do(api_client, staff_client, tasks_off):
    local = LLMEndpoint.objects.create(name="local", protocol="local", base_url="")
    audit = run(launch(api_client, models=[{"endpoint": local.id, "model": "vader"},
                                           {"endpoint": local.id, "model": "textblob"}]))
    assert audit.status == Audit.Status.COMPLETED, audit.status_reason
    corpus = audit.corpus
    assert corpus.provenance["paper_tables"] and corpus.n_units == 2310  # seed 001 Tables 3–5 enumerated
    texts = dict(CorpusUnit.objects.filter(corpus=corpus).values_list("key", "text"))
    # 2,310 sentences in batches of 64: 37 requests per scorer.
    assert audit.n_requests == 2 * 37 == AuditRequest.objects.filter(audit=audit, state="answered").count()

    analyzer = SentimentIntensityAnalyzer()
    vader, textblob = scores_by_unit(audit, "vader"), scores_by_unit(audit, "textblob")
    assert set(vader) == set(textblob) == set(texts)
    assert all(vader[key] == analyzer.polarity_scores(text)["compound"] for key, text in texts.items())
    assert all(textblob[key] == TextBlob(text).sentiment.polarity for key, text in texts.items())

    # The tables, JSON and CSV alike; Table 7 has a row per scorer × group with its test.
    listed = api_client.get(f"/api/audits/{audit.id}/tables/").json()
    assert {entry["name"] for entry in listed} >= {"scores", "score_sense", "label_dist", "score_dev",
                                                     "template_means", "term_sense", "group_means"}
    score_sense = table(api_client, audit.id, "score_sense")
    assert {(row["scorer"], row["group"]) for row in score_sense} == {
        (scorer, group) for scorer in ("vader", "textblob") for group in ("PWD:C", "PWD:SD", "PWoD", "NRMA")}
    assert all(row["test"] == "paired" and row["n_missing"] == 0 for row in score_sense)
    scores = table(api_client, audit.id, "scores")
    assert len(scores) == 2 * 2310 and not any(row["imported"] for row in scores)
    response = api_client.get(f"/api/audits/{audit.id}/tables/score_sense/", {"format": "csv"})
    rows = list(csv.DictReader(io.StringIO(b"".join(response.streaming_content).decode())))
    assert [(row["scorer"], row["group"]) for row in rows] == [(row["scorer"], row["group"]) for row in score_sense]
    assert api_client.get(f"/api/audits/{audit.id}/tables/nothing/").status_code == 404

    manifest = api_client.get(f"/api/audits/{audit.id}/manifest/").json()
    assert manifest["corpus"]["content_hash"] == corpus.content_hash
    assert {scorer["model"]: scorer["takes"] for scorer in manifest["scorers"]} == {"vader": "texts",
                                                                                      "textblob": "texts"}
    page = staff_client.get(f"/audits/{audit.id}/dashboard/")
    assert page.status_code == 200 and 'id="table-7"' in page.content.decode()
    # Table 10 (a row per group × term) is counted first and folded away beyond 20 rows.
    html = page.content.decode()
    n_terms = html.count("<tr data-term=")
    assert f"<summary>{n_terms} group × term rows</summary>" in html
    assert ('<details id="table-10-details" open>' in html) is (n_terms <= 20)

    # The same scorers on the same corpus again: every request from the cache, the same scores.
    again = run(launch(api_client, corpus=corpus.id, models=[{"endpoint": local.id, "model": "vader"}]))
    assert AuditRequest.objects.filter(audit=again, from_cache=True).count() == again.n_requests == 37
    assert scores_by_unit(again, "vader") == vader


PAPER = json.loads((Path(__file__).resolve().parents[2] / "auditapp" / "paradigms" / "bits" /
                    "seed001_tables.json").read_text())
SMALL_SPEC = {"templates": [t for t in PAPER["templates"] if t["id"] in ("T1", "T2", "T4", "T6")],
              "emotions": [{**e, "emotional_words": e["emotional_words"][:1], "event_words": e["event_words"][:1]}
                           for e in PAPER["emotions"]],
              "groups": PAPER["groups"], "source": "tests: four of the paper's templates, one word per emotion"}


def small_corpus(api_client) -> Corpus:
    """T1, T2, T4 and T6 of the paper with one emotional word per emotion: a corpus a chat model scores fast."""
    response = api_client.post("/api/corpora/", {"paradigm": "bits", "name": "small", "spec": SMALL_SPEC},
                               format="json")
    assert response.status_code == 201, response.content
    return Corpus.objects.get(pk=response.json()["id"])


def test_a_chat_model_as_scorer_recovers_a_planted_effect_through_faults(api_client, tasks_off):
    pwd_c = next(group["terms"] for group in SMALL_SPEC["groups"] if group["group"] == "PWD:C")
    effects = {"scorer-planted": dict.fromkeys(pwd_c, -0.3)}
    corpus = small_corpus(api_client)
    with LLMServer(models=["scorer-planted", "scorer-null"], score_effects=effects, fault_rate=0.1,
                   permanent_error_rate=0.02, retry_after=0.05, hang_seconds=2) as server:
        endpoint = LLMEndpoint.objects.create(name="llm", protocol="openai", base_url=server.base_url,
                                              attempt_timeout_s=1, max_attempts=4)
        audit = run(launch(api_client, corpus=corpus.id, models=[
            {"endpoint": endpoint.id, "model": "scorer-planted"}, {"endpoint": endpoint.id, "model": "scorer-null"}]))
    assert audit.status == Audit.Status.COMPLETED, audit.status_reason
    texts = dict(CorpusUnit.objects.filter(corpus=corpus).values_list("key", "text"))
    prompt = audit.design["prompt"]["text"]
    for model in ("scorer-planted", "scorer-null"):
        scored = {key: value for key, value in scores_by_unit(audit, model).items() if value is not None}
        assert scored and all(value == expected_score(model, prompt.replace("{sentence}", texts[key]), effects)
                              for key, value in scored.items())

    failed = AuditRequest.objects.filter(audit=audit, state="failed")
    assert failed.exists() and all(request.error for request in failed), "2% of bodies always fail, with a reason"
    sense = {(row["scorer"], row["group"]): row for row in table(api_client, audit.id, "score_sense")}
    planted = sense[("scorer-planted", "PWD:C")]
    assert planted["score_sense"] == pytest.approx(-0.3, abs=0.02) and planted["mark"] == "**"
    for (scorer, group), row in sense.items():
        if (scorer, group) != ("scorer-planted", "PWD:C"):
            assert abs(row["score_sense"]) < 0.03 and row["mark"] == "", (scorer, group, row)
    coverage = {row["scorer"]: row for row in table(api_client, audit.id, "coverage")}
    missing = sum(row["n_missing"] for row in coverage.values())
    assert missing == AuditJudgment.objects.filter(audit=audit, value__isnull=True).count() + failed.count()


def test_an_http_json_scorer_records_every_score_and_every_failure_with_its_reason(api_client, tasks_off):
    corpus = small_corpus(api_client)
    texts = dict(CorpusUnit.objects.filter(corpus=corpus).values_list("key", "text"))
    keys = sorted(texts)
    with scoring_server.ScoringServer() as server:
        server.inject(texts[keys[0]], scoring_server.status(500), scoring_server.GARBAGE)  # retried, then scored
        server.inject(texts[keys[1]], scoring_server.OUT_OF_SCALE)  # a JSON reply without a valid score: failed
        server.inject(texts[keys[2]], *[scoring_server.status(503)] * 3)  # every attempt refused: failed
        endpoint = LLMEndpoint.objects.create(
            name="scorer", protocol="http_json", base_url=server.url, request_template=scoring_server.REQUEST_TEMPLATE,
            score_path=scoring_server.SCORE_PATH, max_attempts=3, attempt_timeout_s=2)
        audit = run(launch(api_client, corpus=corpus.id, models=[{"endpoint": endpoint.id, "model": "score"}]))
    assert audit.status == Audit.Status.COMPLETED, audit.status_reason
    scores = scores_by_unit(audit, "score")
    assert scores[keys[0]] == scoring_server.expected_score(texts[keys[0]])
    assert all(scores[key] == scoring_server.expected_score(texts[key]) for key in keys[3:])
    failed = {request.unit: request.error for request in AuditRequest.objects.filter(audit=audit, state="failed")}
    assert set(failed) == {keys[1], keys[2]}
    assert "7.5" in failed[keys[1]] and "503" in failed[keys[2]]
    missing = {row["reason"]: row for row in table(api_client, audit.id, "missing")}
    assert sum(row["n"] for row in missing.values()) == 2
    exported = {row["unit"]: row for row in table(api_client, audit.id, "scores")}
    assert exported[keys[1]]["value"] is None and "7.5" in exported[keys[1]]["reason"]


def test_launch_problems_are_named_and_nothing_is_stored(api_client, tasks_off):
    local = LLMEndpoint.objects.create(name="local", protocol="local", base_url="")
    response = api_client.post("/api/audits/", {
        "paradigm": "bits", "name": "bad", "models": [{"endpoint": local.id, "model": "vader"},
                                                      {"endpoint": local.id, "model": "vader"}],
        "score_kinds": {"nobody": "toxicity"}, "analysis": {"t_test": "student"}}, format="json")
    assert response.status_code == 400
    detail = response.json()["detail"]
    assert "same name" in detail and "nobody" in detail and "student" in detail
    assert not Audit.objects.exists()
    response = api_client.post("/api/audits/", {"paradigm": "bits", "name": "bad", "models": [],
                                                "prompt": {"name": "mine", "text": "no slot", "low": 1, "high": 0}},
                               format="json")
    assert response.status_code == 400 and "prompt" in response.json()
    assert json.dumps(spec_from_dict(SMALL_SPEC).to_dict())  # the small spec is a valid spec


def test_a_request_failed_by_one_worker_and_answered_by_another_keeps_no_judgment(api_client, tasks_off):
    """Two workers finish the same request (a lease expired while its worker lived): the first records it failed,
    the second's reply finds it no longer pending. It stays failed, with no judgments (else the analysis would
    count its sentences twice)."""
    local = LLMEndpoint.objects.create(name="local", protocol="local", base_url="")
    audit_id = launch(api_client, corpus=small_corpus(api_client).id, models=[{"endpoint": local.id, "model": "vader"}])
    preparation.audit_prepare(audit_id=audit_id)
    request = AuditRequest.objects.filter(audit_id=audit_id).order_by("id").first()
    claimed = conversations.ClaimedRequest(request.id, request.audit_model_id, request.condition, None, request.unit,
                                      request.replicate, request.key)
    chunk = recording.chunk_open(audit_id=audit_id)
    builder = planning.request_builder(Audit.objects.get(pk=audit_id))
    recording.chunk_record(chunk_id=chunk, results=[recording.RequestResult(claimed, None, "timed out", 3, 0.0)],
                          parse=builder.parse)
    texts = json.dumps([0.1] * len(builder.units_of(request)))
    completion = Completion(text=texts, finish_reason=None, prompt_tokens=None, completion_tokens=None,
                            model_reported="vader")
    recording.chunk_record(chunk_id=chunk, results=[recording.RequestResult(claimed, completion, "", 1, 1.0)],
                          parse=builder.parse)
    request.refresh_from_db()
    assert request.state == "failed" and not AuditJudgment.objects.filter(request=request).exists()


def test_an_analysis_that_cannot_be_computed_fails_the_audit_with_its_reason(api_client, tasks_off, monkeypatch):
    from dataclasses import replace

    from auditapp.engine import registry

    local = LLMEndpoint.objects.create(name="local", protocol="local", base_url="")
    audit_id = launch(api_client, corpus=small_corpus(api_client).id, models=[{"endpoint": local.id, "model": "vader"}])
    preparation.audit_prepare(audit_id=audit_id)
    assert audit_runner.audit_work(audit_id) == "finished"
    bits = registry.get("bits")

    def broken(audit):
        raise ValueError("scores: 3 repeated rows")

    monkeypatch.setattr(registry, "get", lambda name: replace(bits, analyse=broken))
    engine_analysis.audit_analyse(audit_id=audit_id)
    audit = Audit.objects.get(pk=audit_id)
    assert audit.status == Audit.Status.FAILED
    assert audit.status_reason == "the analysis failed: ValueError: scores: 3 repeated rows"


def test_launch_refuses_what_the_analysis_or_the_scorers_could_not_take(api_client, tasks_off):
    local = LLMEndpoint.objects.create(name="local", protocol="local", base_url="")
    vader = [{"endpoint": local.id, "model": "vader"}]
    response = api_client.post("/api/audits/", {"paradigm": "bits", "name": "x", "models": vader,
                                                "analysis": {"groups": ["PWD:C", "Martians"]}}, format="json")
    assert response.status_code == 400 and "['Martians'] are not in the corpus" in response.json()["detail"]
    response = api_client.post("/api/audits/", {"paradigm": "bits", "name": "x", "analysis": {"groups": "PWD:C"},
                                                "models": vader}, format="json")
    assert response.status_code == 400 and "groups: a list of group names" in response.json()["detail"]
    response = api_client.post("/api/audits/", {"paradigm": "bits", "name": "x", "models": [
        {"endpoint": local.id, "model": "vader", "params": {"temperature": 0}}]}, format="json")
    assert response.status_code == 400 and "takes no generation parameters" in response.json()["detail"]
    # A classification audit asks chat models only: a local scorer is refused at launch, not failed in the worker.
    from tests.factories import make_audit_study

    study = make_audit_study(6, n_examples=0)
    response = api_client.post("/api/audits/", {"study": study.id, "name": "x", "conditions": ["zs"],
                                                "models": vader}, format="json")
    assert response.status_code == 400 and (
        f"endpoint {local.name!r} cannot be asked by this paradigm: the paradigm sends messages, the endpoint takes "
        "texts") in response.json()["detail"]
    assert not Audit.objects.exists()
    # "All" names ScoreDev over every group: no term group may take it.
    response = api_client.post("/api/corpora/", {"paradigm": "bits", "name": "all", "spec": {
        **SMALL_SPEC, "groups": [*SMALL_SPEC["groups"], {"group": "all", "terms": ["tall"]}]}}, format="json")
    assert response.status_code == 400 and "'All' is reserved for ScoreDev over all groups" in str(response.json())


def test_an_http_json_scorer_on_a_probability_scale_takes_the_toxicity_rule(api_client, tasks_off):
    endpoint = LLMEndpoint.objects.create(name="tox", protocol="http_json", base_url="http://127.0.0.1:9/score",
                                          request_template={"text": "{{text}}"}, score_path="score", score_min=0,
                                          score_max=1, listed_models=[{"name": "score", "digest": ""}])
    audit = Audit.objects.get(pk=launch(api_client, corpus=small_corpus(api_client).id,
                                        models=[{"endpoint": endpoint.id, "model": "score"}]))
    assert audit.design["score_kinds"] == {"score": "toxicity"}
