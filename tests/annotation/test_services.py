"""Item imports through the services: bulk writes, all or nothing, idempotent runs, study-level checks."""
from __future__ import annotations

from collections import Counter

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from annotation.models import Item, ItemImport, Label, Participant, Study
from annotation.services import item_import_create, item_import_run, items_import_file
from tests.factories import autalic_like_csv, make_study

pytestmark = pytest.mark.django_db


def test_2400_sentences_with_three_label_columns_give_2400_items_and_7200_labels():
    study = make_study()
    content = autalic_like_csv(2400)
    with CaptureQueriesContext(connection) as queries:
        item_import = items_import_file(study=study, filename="autalic.csv", content=content)
    assert item_import.status == ItemImport.Status.SUCCEEDED, item_import.errors
    assert (item_import.n_items, item_import.n_labels, item_import.n_participants) == (2400, 7200, 3)
    assert Item.objects.filter(study=study).count() == 2400
    assert Label.objects.filter(item__study=study).count() == 7200
    assert list(Participant.objects.filter(study=study).values_list("pseudonym", "status")) == [
        ("A1", "imported"), ("A2", "imported"), ("A3", "imported")]
    # Bulk writes: no query per row. SQLite caps a statement at 999 parameters, so a batch there holds
    # ~110 items or ~200 labels: 22 + 36 batches; PostgreSQL needs fewer.
    assert len(queries) < 100
    # Each annotator's labels cycle 1, 0, -1 (see autalic_like_csv): 800 of each value. Read in one query of the
    # study: three queries joined on the pseudonym alone took 100 s on PostgreSQL after earlier tests had left the
    # tables' statistics stale, the same queries 0.1 s on their own.
    counts = Counter(Label.objects.filter(item__study=study).values_list("participant__pseudonym", "value"))
    assert counts == {(pseudonym, value): 800 for pseudonym in ("A1", "A2", "A3") for value in (-1, 0, 1)}
    item = Item.objects.get(study=study, external_id="s00007")
    assert (item.target, item.preceding, item.following, item.position) == (
        "Target sentence number 7, with a comma.", "Before 7.", "After 7.", 7)
    assert Label.objects.get(item=item, participant__pseudonym="A2").value == (1, 0, -1)[(7 + 1) % 3]
    assert item_import.sha256 == __import__("hashlib").sha256(content).hexdigest()


def test_one_malformed_row_imports_nothing_and_names_the_row():
    study = make_study()
    lines = autalic_like_csv(2400).decode().splitlines()
    lines[1500] = lines[1500] + ",extra"  # row 1501 in spreadsheet numbering (header is row 1)
    item_import = items_import_file(study=study, filename="bad.csv", content="\n".join(lines).encode())
    assert item_import.status == ItemImport.Status.FAILED
    assert item_import.errors == [{"row": 1501, "column": None,
                                   "message": "8 fields where the header has 7 (a missing or extra delimiter, "
                                              "or an unquoted comma?)"}]
    assert not Item.objects.filter(study=study).exists()
    assert not Label.objects.exists()
    assert not Participant.objects.filter(study=study).exists()


def test_running_an_import_twice_changes_nothing():
    study = make_study()
    item_import = item_import_create(study=study, filename="a.csv", content=autalic_like_csv(10))
    assert item_import_run(item_import_id=item_import.id).status == ItemImport.Status.SUCCEEDED
    again = item_import_run(item_import_id=item_import.id)
    assert again.status == ItemImport.Status.SUCCEEDED
    assert Item.objects.count() == 10 and Label.objects.count() == 30


def test_ids_already_in_the_study_are_reported_and_nothing_is_added():
    study = make_study()
    items_import_file(study=study, filename="a.csv", content=autalic_like_csv(5))
    second = items_import_file(study=study, filename="b.csv", content=b"id,sentence\nnew-1,New\ns00003,Again\n")
    assert second.status == ItemImport.Status.FAILED
    assert second.errors == [{"row": 3, "column": "id", "message": f"item 's00003' is already in study '{study.slug}'"}]
    assert Item.objects.count() == 5


def test_a_second_file_appends_items_and_reuses_imported_annotators():
    study = make_study()
    items_import_file(study=study, filename="a.csv", content=autalic_like_csv(5))
    second = items_import_file(study=study, filename="b.csv", content=b"id,sentence,A1_Score\nz1,More,1\n")
    assert second.status == ItemImport.Status.SUCCEEDED, second.errors
    assert Participant.objects.filter(study=study).count() == 3
    assert Item.objects.get(external_id="z1").position == 5
    assert Label.objects.filter(participant__pseudonym="A1").count() == 6


def test_label_columns_may_not_take_over_an_invited_participant():
    study = make_study()
    Participant.objects.create(study=study, pseudonym="A1")
    item_import = items_import_file(study=study, filename="a.csv", content=autalic_like_csv(3))
    assert item_import.status == ItemImport.Status.FAILED
    assert item_import.errors[0]["column"] == "A1_Score"
    assert "not imported (status: invited)" in item_import.errors[0]["message"]
    assert not Item.objects.exists()


def test_binary_study_rejects_unrelated_labels():
    study = make_study(label_scheme=Study.LabelScheme.BINARY)
    item_import = items_import_file(study=study, filename="a.csv", content=autalic_like_csv(3))
    assert item_import.status == ItemImport.Status.FAILED
    assert {e["column"] for e in item_import.errors} == {"A1_Score", "A2_Score", "A3_Score"}


def test_unexpected_error_marks_the_import_failed_and_is_raised(monkeypatch):
    study = make_study()
    item_import = item_import_create(study=study, filename="a.csv", content=autalic_like_csv(3))

    def broken(*args, **kwargs):
        raise RuntimeError("disk on fire")

    monkeypatch.setattr("annotation.services._write_parsed_file", broken)
    with pytest.raises(RuntimeError):
        item_import_run(item_import_id=item_import.id)
    item_import.refresh_from_db()
    assert item_import.status == ItemImport.Status.FAILED
    assert "disk on fire" in item_import.errors[0]["message"]
    assert not Item.objects.exists()
