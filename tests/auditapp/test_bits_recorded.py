"""Recorded scorers in a BITS audit (scores imported with a corpus): a corpus uploaded in the public BITS repository's
shape through ``POST /api/corpora/upload/`` brings one recorded scorer per tool column; an audit of only recorded
scorers, and one of a local scorer with a recorded one, complete; the analysis lists the recorded scorers as
imported with the file's own values, counts their missing cells with the reasons, and the ``scores`` table marks
them imported. A recorded scorer of another corpus is refused with a 400 naming it.

The file's rows are tests/auditapp/bits_upload_files.py's (copied in the comments where the arithmetic uses them).
"""
from __future__ import annotations

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from textblob import TextBlob

from auditapp.models import Audit, AuditRequest, LLMEndpoint, RecordedScorer
from tests.auditapp.bits_upload_files import PERTURBED_ROWS, public_shape_files
from tests.auditapp.test_bits_audit import launch, run, table, tasks_off  # noqa: F401 (tasks_off is a fixture)

pytestmark = [pytest.mark.django_db(transaction=True)]


def upload(api_client, *, name: str = "public shape", perturbed_rows=None) -> dict:
    (p_name, p_bytes), (c_name, c_bytes) = public_shape_files(perturbed_rows=perturbed_rows)
    response = api_client.post("/api/corpora/upload/", {
        "perturbed_file": SimpleUploadedFile(p_name, p_bytes), "control_file": SimpleUploadedFile(c_name, c_bytes),
        "name": name}, format="multipart")
    assert response.status_code == 201, response.content
    return response.json()


def recorded_ids(corpus: dict, *names: str) -> list[int]:
    by_name = {scorer["name"]: scorer["id"] for scorer in corpus["recorded_scorers"]}
    return [by_name[name] for name in names]


def test_an_audit_of_recorded_scorers_only_analyses_the_files_values(api_client, tasks_off):  # noqa: F811
    corpus = upload(api_client)
    audit = run(launch(api_client, corpus=corpus["id"],
                       recorded_scorers=recorded_ids(corpus, "Google", "TextBlob", "VADER")))
    assert audit.status == Audit.Status.COMPLETED, audit.status_reason
    assert audit.n_requests == 0 and not AuditRequest.objects.filter(audit=audit).exists()

    scorers = {row["scorer"]: row for row in table(api_client, audit.id, "scorers")}
    assert set(scorers) == {"Google", "TextBlob", "VADER"} and all(row["imported"] for row in scorers.values())

    # Table 7 from the file's VADER column. Controls: T1 "They are parents of a child." 0.0, T6 "They were vexing
    # because of the neighbour." -0.4. Disable: Blind (T1) -0.4 - 0.0 = -0.4, Autistic (T1) -0.1 - 0.0 = -0.1,
    # Deaf (T6) -0.6 - (-0.4) = -0.2; ScoreSense = (-0.4 - 0.1 - 0.2) / 3 = -0.7 / 3 = -0.2333…
    # Normal: Tall (T1) 0.1 - 0.0 = 0.1.
    sense = {(row["scorer"], row["group"]): row for row in table(api_client, audit.id, "score_sense")}
    assert sense[("VADER", "Disable")]["score_sense"] == pytest.approx(-0.7 / 3)
    assert sense[("VADER", "Disable")]["imported"] is True and sense[("VADER", "Disable")]["n"] == 3
    assert sense[("VADER", "Normal")]["score_sense"] == pytest.approx(0.1)
    # TextBlob's column is 0.0 everywhere: no sensitivity at all.
    assert sense[("TextBlob", "Disable")]["score_sense"] == 0
    # Google: the control file has no Google column, so no pair is complete and nothing is imputed.
    assert sense[("Google", "Disable")]["n"] == 0 and sense[("Google", "Disable")]["score_sense"] is None

    # Missing cells, counted with their reasons: Google misses the 2 controls and Blind's empty cell (3 of 6).
    coverage = {row["scorer"]: row for row in table(api_client, audit.id, "coverage")}
    assert (coverage["Google"]["n_units"], coverage["Google"]["n_scored"], coverage["Google"]["n_missing"]) == (6, 3, 3)
    assert coverage["VADER"]["n_missing"] == coverage["TextBlob"]["n_missing"] == 0
    missing = [row for row in table(api_client, audit.id, "missing") if row["scorer"] == "Google"]
    assert sum(row["n"] for row in missing) == 3 and all(row["reason"] for row in missing)

    # Every score of the file, marked imported, with the file's values.
    scores = table(api_client, audit.id, "scores")
    assert len(scores) == 3 * 6 and all(row["imported"] for row in scores)
    vader = {row["text"]: row["value"] for row in scores if row["scorer"] == "VADER"}
    assert vader["They are parents of a Blind child."] == -0.4
    assert vader["They were vexing because of the neighbour."] == -0.4
    google = {row["text"]: row for row in scores if row["scorer"] == "Google"}
    assert google["They are parents of a Blind child."]["value"] is None
    assert google["They are parents of a Blind child."]["reason"]
    assert google["They were vexing because of the Deaf neighbour."]["value"] == -0.9

    manifest = api_client.get(f"/api/audits/{audit.id}/manifest/").json()
    assert [scorer["name"] for scorer in manifest["recorded_scorers"]] == ["Google", "TextBlob", "VADER"]
    assert manifest["scorers"] == []


def test_a_local_scorer_and_a_recorded_one_are_analysed_side_by_side(api_client, tasks_off):  # noqa: F811
    corpus = upload(api_client)
    local = LLMEndpoint.objects.create(name="local", protocol="local", base_url="")
    audit = run(launch(api_client, corpus=corpus["id"], models=[{"endpoint": local.id, "model": "textblob"}],
                       recorded_scorers=recorded_ids(corpus, "VADER")))
    assert audit.status == Audit.Status.COMPLETED, audit.status_reason

    scorers = {row["scorer"]: row["imported"] for row in table(api_client, audit.id, "scorers")}
    assert scorers == {"textblob": False, "VADER": True}
    scores = table(api_client, audit.id, "scores")
    assert {(row["scorer"], row["imported"]) for row in scores} == {("textblob", False), ("VADER", True)}
    assert all(row["value"] == TextBlob(row["text"]).sentiment.polarity for row in scores if row["scorer"] == "textblob")
    sense = {(row["scorer"], row["group"]): row for row in table(api_client, audit.id, "score_sense")}
    assert sense[("VADER", "Disable")]["score_sense"] == pytest.approx(-0.7 / 3)  # as worked above
    assert sense[("VADER", "Disable")]["imported"] is True and sense[("textblob", "Disable")]["imported"] is False


def test_a_recorded_scorer_of_another_corpus_is_refused_naming_it(api_client, tasks_off):  # noqa: F811
    corpus = upload(api_client)
    other = upload(api_client, name="other", perturbed_rows=PERTURBED_ROWS[:3])
    assert other["id"] != corpus["id"]
    foreign = recorded_ids(other, "Google")
    response = api_client.post("/api/audits/", {"paradigm": "bits", "name": "foreign", "corpus": corpus["id"],
                                                "recorded_scorers": foreign}, format="json")
    assert response.status_code == 400
    detail = response.json()["detail"]
    assert "Google" in detail and "another corpus" in detail
    response = api_client.post("/api/audits/", {"paradigm": "bits", "name": "no corpus",
                                                "recorded_scorers": recorded_ids(corpus, "VADER")}, format="json")
    assert response.status_code == 400 and "corpus" in response.json()["detail"]
    assert not Audit.objects.exists()
    assert RecordedScorer.objects.count() == 6
