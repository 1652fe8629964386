"""The codebook API (coding/api_codebooks.py) and admin: list, create from JSON or a .qdc upload, edit (a used
version answers 201 with the new version's Location), versions, the .qdc export; 4xx cases store nothing."""
from __future__ import annotations

from pathlib import Path

import pytest
import xmlschema
from django.core.files.uploadedfile import SimpleUploadedFile
from rest_framework.test import APIClient

from auditapp.models import Audit
from coding.models import Codebook, CodingRound, RoundLens
from tests.factories import make_participant_user

pytestmark = pytest.mark.django_db

SCHEMA = xmlschema.XMLSchema(Path(__file__).parents[1] / "data" / "refi-qda" / "Codebook.xsd")
LENS = {"name": "My lens", "description": "What to look at.", "source": "Ours.",
        "codes": [{"name": "A", "definition": "first", "examples": ["a"]}, {"name": "B", "shortcut": "b"}]}


def upload(content: bytes, name: str = "lens.qdc") -> SimpleUploadedFile:
    return SimpleUploadedFile(name, content, content_type="application/xml")


def test_the_list_has_the_latest_version_of_each_codebook_shipped_ones_included(api_client):
    body = api_client.get("/api/codebooks/").json()
    assert {row["name"] for row in body["results"]} == {"Thematic content and error type",
                                                       "Disability-studies linguistic features", "Reasoning structure"}
    assert all(row["shipped"] and row["version"] == 1 for row in body["results"])
    csv = api_client.get("/api/codebooks/?format=csv")
    assert csv.status_code == 200 and b"Reasoning structure" in b"".join(csv.streaming_content)


def test_create_from_json_then_edit_in_place_then_as_a_new_version_once_a_round_uses_it(api_client):
    created = api_client.post("/api/codebooks/", LENS, format="json")
    assert created.status_code == 201, created.content
    body = created.json()
    assert [(c["name"], c["shortcut"]) for c in body["codes"]] == [("A", "1"), ("B", "b")]
    assert (body["version"], body["in_use"], body["n_codes"]) == (1, False, 2)
    pk = body["id"]

    edited = api_client.put(f"/api/codebooks/{pk}/", {**LENS, "name": "Renamed"}, format="json")
    assert edited.status_code == 200 and edited.json()["id"] == pk and edited.json()["name"] == "Renamed"

    RoundLens.objects.create(round=CodingRound.objects.create(audit=Audit.objects.create(name="a"), name="r"),
                             codebook_id=pk)
    assert api_client.get(f"/api/codebooks/{pk}/").json()["in_use"] is True
    again = api_client.put(f"/api/codebooks/{pk}/", {**LENS, "codes": [{"name": "C"}]}, format="json")
    assert again.status_code == 201, again.content
    new = again.json()
    assert again["Location"] == f"/api/codebooks/{new['id']}/"
    assert (new["version"], new["lineage"], [c["name"] for c in new["codes"]]) == (2, body["lineage"], ["C"])
    assert [c["name"] for c in api_client.get(f"/api/codebooks/{pk}/").json()["codes"]] == ["A", "B"]
    versions = api_client.get(f"/api/codebooks/{pk}/versions/").json()["results"]
    assert [(v["version"], v["in_use"]) for v in versions] == [(2, False), (1, True)]
    latest = [row for row in api_client.get("/api/codebooks/").json()["results"] if row["lineage"] == body["lineage"]]
    assert [row["id"] for row in latest] == [new["id"]]


def test_the_qdc_export_is_an_attachment_that_validates_and_imports_back(api_client):
    shipped = Codebook.objects.get(name="Thematic content and error type", version=1)
    response = api_client.get(f"/api/codebooks/{shipped.pk}/qdc/")
    assert response.status_code == 200
    assert response["Content-Type"].startswith("application/xml")
    assert response["Content-Disposition"] == 'attachment; filename="thematic-content-and-error-type-v1.qdc"'
    SCHEMA.validate(response.content.decode())
    assert b'origin="auditapp ' in response.content
    imported = api_client.post("/api/codebooks/", {"file": upload(response.content)}, format="multipart")
    assert imported.status_code == 201, imported.content
    assert [c["name"] for c in imported.json()["codes"]] == [
        "WORDING", "STEREOTYPES", "TONE", "INTENT", "FOCUS", "IDENTITY", "INTRACOMMUNITY"]
    assert imported.json()["name"] == "Thematic content and error type"
    assert api_client.get("/api/codebooks/999999/qdc/").status_code == 404


@pytest.mark.parametrize(("body", "path"), [
    ({**LENS, "codes": [{"name": "A"}, {"name": "a"}]}, "codes[1].name"),
    ({**LENS, "codes": [{"name": "A", "shortcut": "n"}]}, "codes[0].shortcut"),
    ({**LENS, "name": ""}, "name"),
    ({**LENS, "codes": []}, "codes"),
    ({**LENS, "codes": [{"name": "A", "examples": [1]}]}, "codes[0].examples[0]"),
])
def test_a_bad_json_codebook_is_a_400_naming_the_path_and_nothing_is_stored(api_client, body, path):
    count = Codebook.objects.count()
    response = api_client.post("/api/codebooks/", body, format="json")
    assert response.status_code == 400
    assert path in [problem["path"] for problem in response.json()["problems"]]
    pk = Codebook.objects.first().pk
    assert api_client.put(f"/api/codebooks/{pk}/", body, format="json").status_code == 400
    assert Codebook.objects.count() == count


BOMB = (b'<?xml version="1.0"?><!DOCTYPE x [<!ENTITY a "aaaaaaaaaa"><!ENTITY b "&a;&a;&a;&a;&a;&a;&a;&a;">]>'
        b'<CodeBook xmlns="urn:QDA-XML:codebook:1.0"><Codes><Code guid="1FF58B12-6F6F-4B0C-8BE5-BBDC91F55294" '
        b'name="&b;" isCodable="true"/></Codes></CodeBook>')
DUPLICATES = (b'<CodeBook xmlns="urn:QDA-XML:codebook:1.0"><Codes>'
              b'<Code guid="1FF58B12-6F6F-4B0C-8BE5-BBDC91F55294" name="A" isCodable="true"/>'
              b'<Code guid="1FF58B12-6F6F-4B0C-8BE5-BBDC91F55295" name="A" isCodable="true"/></Codes></CodeBook>')


@pytest.mark.parametrize(("content", "path", "message"), [
    (BOMB, "", "the file declares a DOCTYPE or entities, refused (a .qdc needs none)"),
    (b"not xml", "", "not well-formed XML: syntax error: line 1, column 0"),
    (DUPLICATES, "/CodeBook/Codes/Code[2]@name", 'duplicate "A" (also codes[0])'),
])
def test_a_bad_qdc_upload_is_a_400_naming_every_problem(api_client, content, path, message):
    count = Codebook.objects.count()
    response = api_client.post("/api/codebooks/", {"file": upload(content)}, format="multipart")
    assert response.status_code == 400
    assert {"path": path, "message": message} in response.json()["problems"]
    assert Codebook.objects.count() == count


def test_an_upload_without_a_file_or_a_body_that_is_not_an_object_is_a_400(api_client):
    response = api_client.post("/api/codebooks/", {"name": "x"}, format="multipart")
    assert response.status_code == 400 and response.json()["problems"][0]["path"] == "file"
    assert api_client.post("/api/codebooks/", "[]", content_type="application/json").status_code == 400


def test_researchers_only(api_client):
    assert APIClient().get("/api/codebooks/").status_code == 401
    participant = APIClient()
    participant.force_authenticate(make_participant_user())
    assert participant.get("/api/codebooks/").status_code == 403
    assert participant.post("/api/codebooks/", LENS, format="json").status_code == 403
    assert api_client.get("/api/codebooks/999999/").status_code == 404
    assert api_client.put("/api/codebooks/999999/", LENS, format="json").status_code == 404


def test_the_admin_saves_an_edit_of_a_shipped_version_as_the_next_version(staff_client, researcher):
    researcher[0].is_superuser = True
    researcher[0].save()
    shipped = Codebook.objects.get(name="Reasoning structure", version=1)
    codes = list(shipped.codes.all())
    form = {"name": shipped.name, "description": "Edited.", "source": shipped.source,
            "codes-TOTAL_FORMS": str(len(codes) + 1), "codes-INITIAL_FORMS": str(len(codes)),
            "codes-MIN_NUM_FORMS": "0", "codes-MAX_NUM_FORMS": "1000"}
    for index, code in enumerate(codes):
        form.update({f"codes-{index}-id": code.pk, f"codes-{index}-codebook": shipped.pk,
                     f"codes-{index}-position": code.position, f"codes-{index}-name": code.name,
                     f"codes-{index}-shortcut": code.shortcut, f"codes-{index}-definition": code.definition,
                     f"codes-{index}-examples": '["e"]', f"codes-{index}-definition_is_ours": "on"})
    form.update({"codes-4-codebook": shipped.pk, "codes-4-name": "NEW", "codes-4-examples": "[]",
                 "codes-4-position": "0"})
    response = staff_client.post(f"/admin/coding/codebook/{shipped.pk}/change/", form)
    assert response.status_code == 302, response.content.decode()[:3000]
    new = Codebook.objects.get(lineage=shipped.lineage, version=2)
    assert response["Location"] == f"/admin/coding/codebook/{new.pk}/change/"
    assert new.description == "Edited." and [c.name for c in new.codes.all()][-1] == "NEW"
    assert [c.shortcut for c in new.codes.all()] == ["1", "2", "3", "4", "5"]
    assert Codebook.objects.get(pk=shipped.pk).description != "Edited."

    form["codes-0-shortcut"] = "p"
    refused = staff_client.post(f"/admin/coding/codebook/{new.pk}/change/", form)
    assert refused.status_code == 200 and "shortcut reserved" in refused.content.decode()


def test_the_admin_adds_a_codebook_through_the_same_rules(staff_client, researcher):
    researcher[0].is_superuser = True
    researcher[0].save()
    form = {"name": "Admin lens", "description": "", "source": "", "codes-TOTAL_FORMS": "2",
            "codes-INITIAL_FORMS": "0", "codes-MIN_NUM_FORMS": "0", "codes-MAX_NUM_FORMS": "1000",
            "codes-0-name": "X", "codes-0-position": "0", "codes-0-examples": '["an example"]',
            "codes-1-name": "", "codes-1-position": "0", "codes-1-examples": "[]",
            # The admin renders a callable default's initial value as a hidden field: the empty row is unchanged.
            "initial-codes-1-examples": "[]"}
    response = staff_client.post("/admin/coding/codebook/add/", form)
    assert response.status_code == 302, response.content.decode()[:3000]
    created = Codebook.objects.get(name="Admin lens")
    assert list(created.codes.values_list("name", "shortcut", "examples")) == [("X", "1", ["an example"])]
