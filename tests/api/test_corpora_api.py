"""Corpora through the REST API: generated from seed 001's tables or a spec, uploaded in the public BITS
repository's shape with recorded scorers, listed and exported as JSON and CSV; every problem a 400 that names it
and stores nothing."""
from __future__ import annotations

import csv
import io
import json

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import override_settings
from rest_framework.test import APIClient

from auditapp.models import Corpus, CorpusUnit, RecordedScore
from auditapp.paradigms.bits.corpus import PAPER_TABLES, corpus_counts, generate, paper_spec
from tests.auditapp.bits_upload_files import PERTURBED_ROWS, public_shape_files

pytestmark = pytest.mark.django_db


def upload_body(fmt: str = "csv", *, perturbed_rows=None, name: str = "BITS upload") -> dict:
    (p_name, p_bytes), (c_name, c_bytes) = public_shape_files(fmt=fmt, perturbed_rows=perturbed_rows)
    return {"perturbed_file": SimpleUploadedFile(p_name, p_bytes), "control_file": SimpleUploadedFile(c_name, c_bytes),
            "name": name}


def csv_rows(response) -> list[dict]:
    return list(csv.DictReader(io.StringIO(b"".join(response.streaming_content).decode("utf-8"))))


def test_the_paper_corpus_is_generated_once_and_described(api_client):
    response = api_client.post("/api/corpora/", {"name": "BITS (seed 001)"}, format="json")
    assert response.status_code == 201, response.json()
    body = response.json()
    assert (body["paradigm"], body["n_units"], body["generator"], body["reused"]) == ("bits", 2310, "bits", False)
    expected = corpus_counts(generate(paper_spec()))
    assert body["provenance"]["counts"]["per_group"] == {g: int(n) for g, n in expected.loc["total"].drop("total")
                                                         .items()}
    factors = {f["name"]: f for f in body["factors"]}
    assert list(factors) == ["template", "emotion", "word", "group", "term", "is_control"]
    assert {c["value"]: c["n"] for c in factors["group"]["counts"]} == {
        g: int(n) for g, n in expected.loc["total"].drop("total").items()}
    assert {c["value"]: c["n"] for c in factors["is_control"]["counts"]} == {"0": 2200, "1": 110}
    assert body["recorded_scorers"] == []

    again = api_client.post("/api/corpora/", {"name": "again", "paradigm": "bits",
                                              "spec": json.loads(PAPER_TABLES.read_text())}, format="json")
    assert again.status_code == 200 and again.json()["id"] == body["id"] and again.json()["reused"] is True
    assert Corpus.objects.count() == 1
    assert api_client.get(f"/api/corpora/{body['id']}/").json()["content_hash"] == body["content_hash"]


def test_a_bad_spec_is_a_400_naming_every_problem_and_nothing_is_stored(api_client):
    spec = json.loads(PAPER_TABLES.read_text())
    spec["templates"] = [{"id": "T1", "text": "No slot."}]
    spec["groups"].append({"group": "control", "terms": ["x"]})
    response = api_client.post("/api/corpora/", {"name": "bad", "spec": spec}, format="json")
    assert response.status_code == 400
    assert [p["message"] for p in response.json()["problems"]] == [
        "spec: templates[0] (T1): needs exactly one <group> slot, has 0",
        "spec: groups[4] (control): 'control' is reserved for the no-group control sentences"]
    missing = api_client.post("/api/corpora/", {"paradigm": "classification"}, format="json")
    assert missing.status_code == 400
    assert {p["column"] for p in missing.json()["problems"]} == {"paradigm", "name"}
    assert not Corpus.objects.exists()


def test_the_list_and_units_answer_json_and_csv_with_formulas_neutralised(api_client):
    spec = {"templates": [{"id": "T1", "text": "+<group> person."}], "emotions": [],
            "groups": [{"group": "Tall", "terms": ["tall", "very tall"]}]}
    corpus_id = api_client.post("/api/corpora/", {"name": "=mine", "spec": spec}, format="json").json()["id"]

    listing = api_client.get("/api/corpora/").json()
    assert [(c["id"], c["name"], c["n_units"]) for c in listing["results"]] == [(corpus_id, "=mine", 3)]
    listed = csv_rows(api_client.get("/api/corpora/?format=csv"))
    assert listed[0]["name"] == "'=mine" and listed[0]["n_units"] == "3"

    units = api_client.get(f"/api/corpora/{corpus_id}/units/?page_size=2").json()
    assert units["count"] == 3 and units["next"]
    assert units["results"][1] == {
        "position": 1, "key": "T1|Tall|tall", "text": "+tall person.", "template": "T1", "emotion": "", "word": "",
        "group": "Tall", "term": "tall", "is_control": "0", "fields": {"control": "T1|control"}, "pair": ""}
    rows = csv_rows(api_client.get(f"/api/corpora/{corpus_id}/units/?format=csv"))
    assert list(rows[0]) == ["position", "key", "text", "template", "emotion", "word", "group", "term",
                             "is_control", "fields", "pair"]
    assert [r["text"] for r in rows] == ["'+ person.", "'+tall person.", "'+very tall person."]
    assert json.loads(rows[2]["fields"]) == {"control": "T1|control"}
    assert api_client.get("/api/corpora/999999/units/").status_code == 404
    assert api_client.get("/api/corpora/999999/").status_code == 404


@pytest.mark.parametrize("fmt", ["csv", "xlsx"])
def test_an_upload_in_the_public_shape_is_stored_with_recorded_scorers(api_client, fmt):
    response = api_client.post("/api/corpora/upload/", upload_body(fmt), format="multipart")
    assert response.status_code == 201, response.json()
    body = response.json()
    assert (body["n_units"], body["generator"]) == (6, "upload")
    assert body["provenance"]["files"]["perturbed"]["file"] == f"Disability_Corpus.{fmt}"
    scorers = {s["name"]: s for s in body["recorded_scorers"]}
    assert list(scorers) == ["Google", "TextBlob", "VADER"]
    # Google: the control file has no column (2 units) and one perturbed cell is empty: 3 missing of 6.
    assert (scorers["Google"]["n_scores"], scorers["Google"]["n_missing"], scorers["Google"]["imported"]) == (6, 3,
                                                                                                               True)
    assert scorers["VADER"]["n_missing"] == 0
    assert scorers["VADER"]["provenance"]["column"] == "VADER"
    groups = {f["name"]: {c["value"]: c["n"] for c in f["counts"]} for f in body["factors"]}["group"]
    assert groups == {"Disable": 3, "Normal": 1, "control": 2}
    again = api_client.post("/api/corpora/upload/", upload_body(fmt), format="multipart")
    assert again.status_code == 200 and again.json()["id"] == body["id"]
    assert RecordedScore.objects.count() == 18


def test_a_bad_row_is_a_400_naming_file_row_and_column_and_nothing_is_stored(api_client):
    rows = [*PERTURBED_ROWS, ["4", "T1", "They are parents of a Short child.", "Neutral", "Normal", "Long", "0", "0",
                              "x"]]
    response = api_client.post("/api/corpora/upload/", upload_body(perturbed_rows=rows), format="multipart")
    assert response.status_code == 400
    assert response.json()["problems"] == [
        {"file": "Disability_Corpus.csv", "row": 6, "column": "SubClass",
         "message": "the term 'Long' is not in the sentence"}]
    assert not Corpus.objects.exists() and not CorpusUnit.objects.exists() and not RecordedScore.objects.exists()


def test_an_upload_without_its_files_names_them(api_client):
    response = api_client.post("/api/corpora/upload/", {"name": "x"}, format="multipart")
    assert response.status_code == 400
    assert {p["column"] for p in response.json()["problems"]} == {"perturbed_file", "control_file"}


@override_settings(CORPUS_UPLOAD_MAX_BYTES=200)
def test_an_upload_over_the_size_bound_is_a_400(api_client):
    response = api_client.post("/api/corpora/upload/", upload_body(), format="multipart")
    assert response.status_code == 400
    problem = response.json()["problems"][0]
    assert problem["file"] == "Disability_Corpus.csv"
    assert problem["message"].endswith("bytes; at most 200 are read (CORPUS_UPLOAD_MAX_BYTES)")
    assert not Corpus.objects.exists()


def test_corpora_are_for_researchers_only(db):
    assert APIClient().get("/api/corpora/").status_code == 401
    assert APIClient().post("/api/corpora/", {"name": "x"}, format="json").status_code == 401
