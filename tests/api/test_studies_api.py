"""The researcher REST API: authentication, studies, items and labels as JSON pages and streamed CSV."""
from __future__ import annotations

import csv
import io
import re

import pytest
from django.http import StreamingHttpResponse
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from annotation.models import Label, Participant
from annotation.services import items_import_file
from tests.factories import autalic_like_csv, make_participant_user, make_study

pytestmark = pytest.mark.django_db

DEMO_FILE = (b"id,preceding,sentence,following,source,A1_Score,A2_Score\n"
             b"i1,Before,\"Target, one\",After,reddit,1,0\n"
             b"i2,,Target two,,,-1,\n")


@pytest.fixture
def study():
    study = make_study(name="API study", slug="api-study")
    assert items_import_file(study=study, filename="f.csv", content=DEMO_FILE).status == "succeeded"
    Label.objects.filter(participant__pseudonym="A1", item__external_id="i1").update(rationale="slur, in context")
    return study


def read_csv(response) -> list[dict]:
    assert isinstance(response, StreamingHttpResponse)
    assert response["Content-Type"] == "text/csv; charset=utf-8"
    text = b"".join(response.streaming_content).decode("utf-8")
    return list(csv.DictReader(io.StringIO(text)))


@pytest.mark.parametrize("path", ["/api/studies/", "/api/studies/1/", "/api/studies/1/items/",
                                  "/api/studies/1/participants/", "/api/studies/1/imports/", "/api/imports/1/",
                                  "/api/studies/1/labels/", "/api/studies/1/labels/?format=csv"])
def test_anonymous_gets_401_and_non_staff_403(path, study):
    response = APIClient().get(path)
    assert response.status_code == 401
    assert response["WWW-Authenticate"] == "Token"
    user = make_participant_user()
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.create(user=user).key}")
    assert client.get(path).status_code == 403


def test_session_auth_works_for_staff(researcher, study):
    user, _ = researcher
    client = APIClient()
    client.force_login(user)
    assert client.get("/api/studies/").status_code == 200


def test_study_list_and_detail_with_counts(api_client, study):
    listing = api_client.get("/api/studies/").json()
    assert listing["count"] == 1
    row = listing["results"][0]
    assert (row["id"], row["slug"], row["n_items"], row["n_participants"], row["n_labels"]) == (
        study.id, "api-study", 2, 2, 3)
    detail = api_client.get(f"/api/studies/{study.id}/").json()
    assert detail["name"] == "API study" and detail["n_labels"] == 3
    assert api_client.get("/api/studies/9999/").status_code == 404


def test_labels_json_and_csv_have_the_same_columns_and_rows(api_client, study):
    page = api_client.get(f"/api/studies/{study.id}/labels/").json()
    assert page["count"] == 3
    rows = page["results"]
    assert list(rows[0]) == ["participant", "item", "value", "rationale", "created_at", "updated_at", "n_changes",
                             "first_value"]
    # Imported labels were never changed: their first value is their value.
    assert all(r["n_changes"] == 0 and r["first_value"] == r["value"] for r in rows)
    assert [(r["participant"], r["item"], r["value"], r["rationale"]) for r in rows] == [
        ("A1", "i1", 1, "slur, in context"), ("A2", "i1", 0, ""), ("A1", "i2", -1, "")]
    csv_rows = read_csv(api_client.get(f"/api/studies/{study.id}/labels/?format=csv"))
    assert [(r["participant"], r["item"], r["value"], r["rationale"]) for r in csv_rows] == [
        ("A1", "i1", "1", "slur, in context"), ("A2", "i1", "0", ""), ("A1", "i2", "-1", "")]
    assert [r["created_at"] for r in csv_rows] == [r["created_at"] for r in rows]
    assert csv_rows[0]["created_at"].endswith("Z") and list(csv_rows[0]) == list(rows[0])


def test_csv_by_accept_header(api_client, study):
    response = api_client.get(f"/api/studies/{study.id}/labels/", HTTP_ACCEPT="text/csv")
    assert len(read_csv(response)) == 3
    assert response["Content-Disposition"] == 'attachment; filename="api-study-labels.csv"'


def test_items_export(api_client, study):
    rows = api_client.get(f"/api/studies/{study.id}/items/").json()["results"]
    assert [(r["item"], r["target"], r["preceding"], r["following"], r["metadata"]) for r in rows] == [
        ("i1", "Target, one", "Before", "After", {"source": "reddit"}), ("i2", "Target two", "", "", {})]
    csv_rows = read_csv(api_client.get(f"/api/studies/{study.id}/items/?format=csv"))
    assert csv_rows[0]["item"] == "i1" and csv_rows[0]["metadata"] == '{"source": "reddit"}'
    assert csv_rows[1]["metadata"] == "{}"


def test_exports_join_on_participant_and_item(api_client, study):
    labels = read_csv(api_client.get(f"/api/studies/{study.id}/labels/?format=csv"))
    items = {r["item"]: r for r in read_csv(api_client.get(f"/api/studies/{study.id}/items/?format=csv"))}
    pseudonyms = set(Participant.objects.filter(study=study).values_list("pseudonym", flat=True))
    assert all(r["item"] in items and r["participant"] in pseudonyms for r in labels)


def test_json_pages_and_full_csv(api_client):
    study = make_study()
    items_import_file(study=study, filename="big.csv", content=autalic_like_csv(1200))
    first = api_client.get(f"/api/studies/{study.id}/labels/").json()
    assert first["count"] == 3600 and len(first["results"]) == 1000 and first["next"].endswith("page=2")
    small = api_client.get(f"/api/studies/{study.id}/labels/?page_size=7&page=3").json()
    assert len(small["results"]) == 7 and small["results"][0]["item"] == "s00004"
    rows = read_csv(api_client.get(f"/api/studies/{study.id}/labels/?format=csv"))
    assert len(rows) == 3600
    assert rows[-1] == {**rows[-1], "participant": "A3", "item": "s01199"}


def test_detail_as_csv(api_client, study):
    response = api_client.get(f"/api/studies/{study.id}/?format=csv")
    assert response.status_code == 200
    row = next(csv.DictReader(io.StringIO(response.content.decode())))
    assert row["slug"] == "api-study" and row["n_items"] == "2"


def test_schema_and_docs_are_public(client):
    schema = client.get("/api/schema/")
    assert schema.status_code == 200
    text = schema.content.decode()
    for path in ("/api/studies/", "/api/studies/{id}/items/", "/api/studies/{id}/labels/"):
        assert path in text
    assert "text/csv" in text
    docs = client.get("/api/docs/")
    assert docs.status_code == 200 and b"swagger-ui" in docs.content
    # Its scripts and styles are served here, none from a CDN (the page also holds a random CSRF token, which may
    # happen to spell "cdn", so only the addresses it loads are read).
    loaded = re.findall(rb"""(?:src|href)\s*=\s*["']([^"']+)""", docs.content, flags=re.IGNORECASE)
    assert loaded and not [url for url in loaded if re.match(rb"(?:https?:)?//", url)], loaded


def test_participants_export_by_pseudonym_with_label_counts(api_client, study):
    Participant.objects.create(study=study, pseudonym="P0001", team="b")
    rows = api_client.get(f"/api/studies/{study.id}/participants/").json()["results"]
    assert [(r["participant"], r["team"], r["status"], r["n_labels"]) for r in rows] == [
        ("A1", "default", "imported", 2), ("A2", "default", "imported", 1), ("P0001", "b", "invited", 0)]
    csv_rows = read_csv(api_client.get(f"/api/studies/{study.id}/participants/?format=csv"))
    assert [r["participant"] for r in csv_rows] == ["A1", "A2", "P0001"]
    assert csv_rows[2]["consented_at"] == "" and csv_rows[2]["aq"] == ""
    token = Participant.objects.get(pseudonym="P0001").invite_token
    assert token not in str(rows) and "invite_token" not in csv_rows[0]


def test_csv_of_a_list_is_never_paginated(api_client, study):
    make_study(slug="second")
    response = api_client.get("/api/studies/?format=csv&page_size=1")
    rows = list(csv.DictReader(io.StringIO(response.content.decode())))
    assert sorted(r["slug"] for r in rows) == ["api-study", "second"]
    assert len(api_client.get("/api/studies/?page_size=1").json()["results"]) == 1
