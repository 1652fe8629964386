"""Scripts create studies and upload item files through the API; bad files are refused with every problem."""
from __future__ import annotations

import io
import time

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from rest_framework.test import APIClient

from annotation import services, xlsx_input
from annotation.models import Item, ItemImport, Study
from annotation.services import item_import_run
from tests.factories import autalic_like_csv, make_study, pathological_xlsx
from tests.xlsx_files import empty_rows_xlsx

pytestmark = pytest.mark.django_db



def test_create_a_study(api_client):
    response = api_client.post("/api/studies/", {"name": "Pilot", "slug": "pilot", "label_scheme": "binary",
                                                 "annotators_per_item": 5, "status": "open"}, format="json")
    assert response.status_code == 201, response.json()
    body = response.json()
    assert (body["slug"], body["n_items"], body["annotators_per_item"], body["status"]) == ("pilot", 0, 5, "draft")
    assert Study.objects.get(slug="pilot").label_scheme == "binary"
    again = api_client.post("/api/studies/", {"name": "Other", "slug": "pilot"}, format="json")
    assert again.status_code == 400 and "slug" in again.json()


def test_upload_is_validated_queued_and_then_imported(api_client, queued, django_capture_on_commit_callbacks):
    study = make_study()
    with django_capture_on_commit_callbacks(execute=True):
        response = api_client.post(f"/api/studies/{study.id}/imports/",
                                   {"file": SimpleUploadedFile("autalic.csv", autalic_like_csv(20))},
                                   format="multipart")
    assert response.status_code == 202, response.json()
    body = response.json()
    assert body["status"] == "pending" and queued == [body["id"]]
    item_import_run(item_import_id=body["id"])
    done = api_client.get(f"/api/imports/{body['id']}/").json()
    assert (done["status"], done["n_items"], done["n_labels"], done["n_participants"]) == ("succeeded", 20, 60, 3)
    listing = api_client.get(f"/api/studies/{study.id}/imports/").json()
    assert [i["id"] for i in listing["results"]] == [body["id"]]


def test_bad_upload_is_refused_with_rows_and_columns_and_nothing_stored(api_client, queued):
    study = make_study()
    content = b"id,sentence,A1_Score\na,One,1\nb,Two,5\nc,,0\n"
    response = api_client.post(f"/api/studies/{study.id}/imports/",
                               {"file": SimpleUploadedFile("bad.csv", content)}, format="multipart")
    assert response.status_code == 400
    assert response.json()["problems"] == [
        {"row": 3, "column": "A1_Score", "message": "label '5' is not one of -1, 0, 1"},
        {"row": 4, "column": "sentence", "message": "empty target sentence"}]
    assert not ItemImport.objects.exists() and not Item.objects.exists() and queued == []


def test_upload_without_a_file(api_client, queued):
    response = api_client.post(f"/api/studies/{make_study().id}/imports/", {}, format="multipart")
    assert response.status_code == 400
    assert response.json()["problems"][0]["column"] == "file"


def test_upload_mapping_fields(api_client, queued, django_capture_on_commit_callbacks):
    study = make_study()
    with django_capture_on_commit_callbacks(execute=True):
        response = api_client.post(f"/api/studies/{study.id}/imports/", {
            "file": SimpleUploadedFile("plain.csv", b"body,r1\nOne,1\n"), "target_column": "body",
            "label_columns": "r1", "use_row_numbers_as_ids": "true"}, format="multipart")
    assert response.status_code == 202, response.json()
    item_import_run(item_import_id=response.json()["id"])
    assert list(Item.objects.values_list("external_id", "target")) == [("2", "One")]


def test_imports_need_a_researcher(queued):
    study = make_study()
    assert APIClient().post(f"/api/studies/{study.id}/imports/", {}).status_code == 401
    assert APIClient().get("/api/imports/1/").status_code == 401


@pytest.mark.parametrize(("filename", "content", "row", "column"), [
    ("nul.csv", b"id,sentence,A1_Score\na,One,1\nb,T\x00wo,0\n", 3, "sentence"),
    ("nul.tsv", b"id\tsentence\tnote\na\tOne\t\x00\n", 2, "note"),
    ("nul.jsonl", b'{"id": "a", "sentence": "One"}\n{"id": "b", "sentence": "T\\u0000wo"}\n', 2, "sentence"),
])
def test_a_nul_character_is_refused_at_once_naming_the_row(api_client, queued, filename, content, row, column):
    study = make_study()
    response = api_client.post(f"/api/studies/{study.id}/imports/",
                               {"file": SimpleUploadedFile(filename, content)}, format="multipart")
    assert response.status_code == 400, response.json()
    [problem] = response.json()["problems"]
    assert (problem["row"], problem["column"]) == (row, column)
    assert problem["message"].startswith("contains a NUL character (byte 0)")
    assert not ItemImport.objects.exists() and not Item.objects.exists() and queued == []


def test_a_json_lines_row_nested_100000_deep_is_refused_naming_the_row(api_client, queued):
    study = make_study()
    deep = b"[" * 100_000 + b"]" * 100_000
    content = b'{"id": "a", "sentence": "One"}\n{"id": "b", "sentence": "Two", "meta": ' + deep + b"}\n"
    response = api_client.post(f"/api/studies/{study.id}/imports/",
                               {"file": SimpleUploadedFile("deep.jsonl", content)}, format="multipart")
    assert response.status_code == 400, response.json()
    assert response.json()["problems"] == [
        {"row": 2, "column": None,
         "message": "JSON nested more than 64 levels deep (arrays and objects within each other)"}]
    assert not ItemImport.objects.exists() and not Item.objects.exists() and queued == []


def test_a_workbook_declaring_16384_columns_is_refused_at_once(api_client, queued):
    study = make_study()
    started = time.monotonic()
    response = api_client.post(f"/api/studies/{study.id}/imports/",
                               {"file": SimpleUploadedFile("bomb.xlsx", pathological_xlsx())}, format="multipart")
    assert time.monotonic() - started < 2
    assert response.status_code == 400, response.json()
    [problem] = response.json()["problems"]
    assert "declares 1,048,576 rows × 16,384 columns (A1:XFD1048576)" in problem["message"]
    assert not ItemImport.objects.exists() and queued == []


def test_a_large_upload_gets_quick_checks_here_and_is_validated_by_the_worker(api_client, queued, monkeypatch,
                                                                               django_capture_on_commit_callbacks):
    monkeypatch.setattr(services, "SYNC_VALIDATION_MAX_BYTES", 1_000)
    study = make_study()
    content = autalic_like_csv(50) + b"bad,,Last sentence,,7,0,1\n"
    nul = api_client.post(f"/api/studies/{study.id}/imports/",
                          {"file": SimpleUploadedFile("nul.csv", content + b"x,\x00,,,1,1,1\n")}, format="multipart")
    assert nul.status_code == 400
    assert nul.json()["problems"][0]["message"].startswith("line 53 contains a NUL character")
    with django_capture_on_commit_callbacks(execute=True):
        response = api_client.post(f"/api/studies/{study.id}/imports/",
                                   {"file": SimpleUploadedFile("large.csv", content)}, format="multipart")
    assert response.status_code == 202, response.json()
    assert queued == [response.json()["id"]]
    item_import_run(item_import_id=response.json()["id"])
    done = api_client.get(f"/api/imports/{response.json()['id']}/").json()
    assert done["status"] == "failed" and not Item.objects.exists()
    assert done["errors"] == [{"row": 52, "column": "A1_Score", "message": "label '7' is not one of -1, 0, 1"}]


def test_a_workbook_inflating_to_millions_of_empty_rows_is_refused_without_reading_them(api_client, queued,
                                                                                        inflated):
    # The probe's shape, smaller: no <dimension>, then 2 million <row/> deflated to 18 KB (read whole by openpyxl:
    # 10 s and 200 MB in the web process, then again in the worker).
    content = empty_rows_xlsx(2_000_000)
    study = make_study()
    inflated.clear()
    response = api_client.post(f"/api/studies/{study.id}/imports/",
                               {"file": SimpleUploadedFile("empty-rows.xlsx", content)}, format="multipart")
    assert response.status_code == 400, response.json()
    [problem] = response.json()["problems"]
    assert problem["message"].startswith("the first sheet ('Sheet') (xl/worksheets/sheet1.xml) inflates from ")
    assert "may inflate at most 100 times" in problem["message"]
    assert sum(inflated) < 10_000   # the content types, the workbook and its relationships: no sheet XML
    assert not ItemImport.objects.exists() and queued == []


def test_a_workbook_past_a_limit_found_only_by_reading_fails_in_the_worker_naming_it(api_client, queued, monkeypatch):
    monkeypatch.setattr(services, "SYNC_VALIDATION_MAX_BYTES", 1_000)
    monkeypatch.setattr(xlsx_input, "MAX_ROWS", 1_000)
    study = make_study()
    content = empty_rows_xlsx(5_000, numbered=True, dimension="A1:B2")   # its dimension lies
    response = api_client.post(f"/api/studies/{study.id}/imports/",
                               {"file": SimpleUploadedFile("lying.xlsx", content)}, format="multipart")
    assert response.status_code == 202, response.json()
    item_import_run(item_import_id=response.json()["id"])
    done = api_client.get(f"/api/imports/{response.json()['id']}/").json()
    assert done["status"] == "failed" and not Item.objects.exists()
    assert done["errors"] == [{"row": 1_001, "column": None, "message": (
        "reading stopped at row 1,001 of the first sheet ('Sheet'): at most 1,000 rows are read. Delete the empty "
        "rows and columns after your data, or save the sheet as CSV.")}]


def test_a_normal_workbook_still_imports(api_client, queued, django_capture_on_commit_callbacks):
    from openpyxl import Workbook

    workbook = Workbook()
    for row in [["id", "sentence", "A1_Score"], ["a", "One.", 1], ["b", "Two.", 0]]:
        workbook.active.append(row)
    buffer = io.BytesIO()
    workbook.save(buffer)
    study = make_study()
    with django_capture_on_commit_callbacks(execute=True):
        response = api_client.post(f"/api/studies/{study.id}/imports/",
                                   {"file": SimpleUploadedFile("items.xlsx", buffer.getvalue())}, format="multipart")
    assert response.status_code == 202, response.json()
    assert item_import_run(item_import_id=response.json()["id"]).status == "succeeded"
    assert list(Item.objects.filter(study=study).values_list("external_id", "target")) == [("a", "One."),
                                                                                             ("b", "Two.")]
