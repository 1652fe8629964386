"""The admin upload: validation shown at once with rows and columns, valid files queued for a worker; the study
page's "Recompute the analysis" button and the analysis state it shows."""
from __future__ import annotations

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client

from annotation import study_analysis
from annotation.models import AnalysisState, Item, ItemImport, Label
from annotation.services import item_import_run
from annotation.study_analysis import study_analysis_run
from tests.factories import autalic_like_csv, make_participant_user, make_study

pytestmark = pytest.mark.django_db



@pytest.fixture
def logged_in(client, researcher):
    client.force_login(researcher[0])
    return client


def upload(client, study, name: str, content: bytes, **fields):
    return client.post(f"/admin/annotation/study/{study.pk}/import-items/",
                       {"file": SimpleUploadedFile(name, content), **fields})


def test_valid_upload_is_recorded_and_queued_after_commit(logged_in, queued, django_capture_on_commit_callbacks):
    study = make_study()
    with django_capture_on_commit_callbacks(execute=True):
        response = upload(logged_in, study, "autalic.csv", autalic_like_csv(50))
    item_import = ItemImport.objects.get()
    assert response.status_code == 302
    assert response["Location"] == f"/admin/annotation/itemimport/{item_import.pk}/change/"
    assert queued == [item_import.pk]
    assert item_import.status == ItemImport.Status.PENDING and not Item.objects.exists()
    assert item_import_run(item_import_id=item_import.pk).status == ItemImport.Status.SUCCEEDED
    assert (Item.objects.count(), Label.objects.count()) == (50, 150)
    page = logged_in.get(response["Location"]).content.decode()
    assert "Imported" in page and "autalic.csv" in page
    download = logged_in.get(f"/admin/annotation/itemimport/{item_import.pk}/download/")
    assert download.content == autalic_like_csv(50)


def test_invalid_upload_lists_problems_and_stores_nothing(logged_in, queued):
    study = make_study()
    response = upload(logged_in, study, "bad.csv", b"id,sentence,A1_Score\na,One,1\na,Two,x\n")
    page = response.content.decode()
    assert response.status_code == 200
    assert "1 problem found; nothing was imported" in page
    assert "<td>3</td><td>id</td><td>duplicate id &#x27;a&#x27; (first on row 2)</td>" in page
    assert "<td>3</td><td>A1_Score</td>" not in page  # a row's first problem stops its checks
    assert not ItemImport.objects.exists() and queued == []


def test_mapping_fields_reach_the_import(logged_in, queued, django_capture_on_commit_callbacks):
    study = make_study()
    with django_capture_on_commit_callbacks(execute=True):
        upload(logged_in, study, "plain.csv", b"body,r1\nOne,1\n", target_column="body", label_columns="r1",
               use_row_numbers_as_ids="on")
    item_import = ItemImport.objects.get()
    assert item_import.options == {"target": "body", "label_columns": ["r1"], "use_row_numbers_as_ids": True}
    item_import_run(item_import_id=item_import.pk)
    assert list(Item.objects.values_list("external_id", "target")) == [("2", "One")]


def test_unknown_file_type_is_reported(logged_in, queued):
    response = upload(logged_in, make_study(), "paper.pdf", b"%PDF")
    assert "unknown file type &#x27;.pdf&#x27;" in response.content.decode()


def test_non_staff_cannot_reach_the_upload(client):
    study = make_study()
    client.force_login(make_participant_user())
    response = upload(client, study, "a.csv", b"id,sentence\na,b\n")
    assert response.status_code == 302 and "/admin/login/" in response["Location"]
    assert not ItemImport.objects.exists()


def test_study_pages_show_counts_and_the_import_link(logged_in):
    study = make_study(name="Counted")
    from annotation.services import items_import_file

    items_import_file(study=study, filename="a.csv", content=autalic_like_csv(4))
    listing = logged_in.get("/admin/annotation/study/").content.decode()
    assert "Counted" in listing and '<td class="field-n_labels">12</td>' in listing
    change = logged_in.get(f"/admin/annotation/study/{study.pk}/change/").content.decode()
    assert f"/admin/annotation/study/{study.pk}/import-items/" in change


@pytest.fixture
def analyses_sent(monkeypatch) -> list[int]:
    """Study ids handed to the analysis task (not run: a test runs the worker's side itself)."""
    sent: list[int] = []
    monkeypatch.setattr("tasks.analysis.study_analysis_compute_task.delay", sent.append)
    return sent


def recompute_url(study) -> str:
    return f"/admin/annotation/study/{study.pk}/recompute-analysis/"


@pytest.mark.django_db(transaction=True)  # the task is sent when the request's transaction commits
def test_the_recompute_button_queues_one_run_and_the_page_shows_its_state(logged_in, analyses_sent):
    study = make_study()
    page = logged_in.get(f"/admin/annotation/study/{study.pk}/change/").content.decode()
    assert f'<form id="recompute-analysis" method="post" action="{recompute_url(study)}">' in page
    assert "Recompute the analysis</button>" in page and "not computed yet" in page
    assert logged_in.get(recompute_url(study)).status_code == 405 and analyses_sent == []

    response = logged_in.post(recompute_url(study))
    assert response.status_code == 302 and response["Location"] == f"/admin/annotation/study/{study.pk}/change/"
    assert analyses_sent == [study.id]
    page = logged_in.get(response["Location"]).content.decode()
    assert "Recomputation of the analysis queued" in page
    assert "a recomputation is waiting for a worker" in page
    logged_in.post(recompute_url(study))
    assert analyses_sent == [study.id], "a second press while the first run waits sends nothing more"

    study_analysis_run(study_id=study.id)
    assert AnalysisState.objects.get(study=study).status == AnalysisState.Status.IDLE
    page = logged_in.get(response["Location"]).content.decode()
    assert "last computed" in page and "waiting for a worker" not in page


@pytest.mark.django_db(transaction=True)
def test_a_failed_run_is_named_on_the_study_page(logged_in, analyses_sent, monkeypatch):
    def broken(*, study_id):
        raise RuntimeError("out of memory")

    study = make_study()
    monkeypatch.setattr(study_analysis, "study_analysis_compute", broken)
    logged_in.post(recompute_url(study))
    with pytest.raises(RuntimeError):
        study_analysis_run(study_id=study.id)
    page = logged_in.get(f"/admin/annotation/study/{study.pk}/change/").content.decode()
    assert "the last recomputation failed: RuntimeError: out of memory" in page


def test_the_recompute_button_needs_staff_and_the_csrf_token(client, researcher, analyses_sent):
    study = make_study()
    client.force_login(make_participant_user())
    response = client.post(recompute_url(study))
    assert response.status_code == 302 and response["Location"].startswith("/admin/login/")
    strict = Client(enforce_csrf_checks=True)
    strict.force_login(researcher[0])
    assert strict.post(recompute_url(study)).status_code == 403
    assert analyses_sent == [] and not AnalysisState.objects.exists()
    logged = Client()
    logged.force_login(researcher[0])
    assert logged.post("/admin/annotation/study/999999/recompute-analysis/").status_code == 404
