"""The ways into annotator data imports: the study's admin page ("Import annotator data…"), the API
(``/api/studies/{id}/annotator-imports/``), ``manage.py import_annotator_data``; and the dashboard's marker of
imported scores."""
from __future__ import annotations

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import CommandError, call_command

from annotation.models import AnalysisState
from annotation.services import items_import_file
from annotation.study_analysis import study_analysis_compute
from psychometrics.annotator_imports import annotator_import_submit
from psychometrics.models import AnnotatorImport, IATSession, InstrumentScore, StudyInstrument
from tests.factories import make_participant_user, make_study
from tests.psychometrics.test_annotator_imports import SCORES, autalic_file, csv_bytes

pytestmark = pytest.mark.django_db

BAD_SCORES = csv_bytes(["annotator", "aq", "iat_d"], [["A9", 20, 0.1], ["A1", "high", 0.1], ["A1", 20, 0.1]])
BAD_PROBLEMS = [
    {"row": 2, "column": "annotator", "message": "annotator 'A9' is not in this study: an import never creates "
     "annotators; import the items with their labels first (columns like A1_Score create annotator A1), or invite "
     "the participant"},
    {"row": 3, "column": "aq", "message": "AQ total 'high' is not a number"},
    {"row": 4, "column": "annotator", "message": "annotator 'A1' appears twice (first on row 3)"},
]


@pytest.fixture
def study(shipped_instruments):
    study = make_study(slug="autalic")
    StudyInstrument.objects.create(study=study, instrument=shipped_instruments["aq50"], role="aq", position=0)
    StudyInstrument.objects.create(study=study, instrument=shipped_instruments["sata_partial"], role="sata",
                                   position=1)
    items_import_file(study=study, filename="autalic.csv", content=autalic_file())
    return study


@pytest.fixture
def sent(monkeypatch) -> list[int]:
    """Study ids handed to the analysis task (the worker's side is tested in tests/annotation)."""
    ids: list[int] = []
    monkeypatch.setattr("tasks.analysis.study_analysis_compute_task.delay", ids.append)
    return ids


def test_the_study_page_links_to_the_upload_and_lists_the_imports(staff_client, study):
    annotator_import = AnnotatorImport.objects.create(study=study, kind="scores", filename="earlier.csv",
                                                      file_format="csv", content=b"x", sha256="0" * 64)
    page = staff_client.get(f"/admin/annotation/study/{study.pk}/change/").content.decode()
    assert f"/admin/annotation/study/{study.pk}/import-annotator-data/" in page and "Import annotator data…" in page
    assert f"/admin/psychometrics/annotatorimport/{annotator_import.pk}/change/" in page


def test_an_admin_upload_imports_and_asks_for_the_analysis(staff_client, study, sent,
                                                           django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        response = staff_client.post(f"/admin/annotation/study/{study.pk}/import-annotator-data/",
                                     {"kind": "scores", "file": SimpleUploadedFile("scores.csv", SCORES)})
    annotator_import = AnnotatorImport.objects.get()
    assert response.status_code == 302
    assert response["Location"] == f"/admin/psychometrics/annotatorimport/{annotator_import.pk}/change/"
    assert InstrumentScore.objects.filter(source_import=annotator_import).count() == 6
    assert sent == [study.pk] and AnalysisState.objects.get(study=study).status == AnalysisState.Status.QUEUED
    page = staff_client.get(response["Location"]).content.decode()
    assert annotator_import.sha256 in page and "scores.csv" in page
    download = staff_client.get(f"/admin/psychometrics/annotatorimport/{annotator_import.pk}/download/")
    assert download.content == SCORES


def test_an_admin_upload_of_a_bad_file_lists_every_problem_and_stores_nothing(staff_client, study, sent):
    response = staff_client.post(f"/admin/annotation/study/{study.pk}/import-annotator-data/",
                                 {"kind": "scores", "file": SimpleUploadedFile("bad.csv", BAD_SCORES),
                                  "columns": "aq=aq"})
    page = response.content.decode()
    assert response.status_code == 200 and "3 problems found; nothing was imported." in page
    assert "annotator &#x27;A9&#x27; is not in this study" in page and "appears twice (first on row 3)" in page
    assert not AnnotatorImport.objects.exists() and not InstrumentScore.objects.exists() and sent == []


def test_non_staff_cannot_reach_the_admin_upload(client, study):
    client.force_login(make_participant_user())
    response = client.get(f"/admin/annotation/study/{study.pk}/import-annotator-data/")
    assert response.status_code == 302 and "/admin/login/" in response["Location"]


def test_the_api_imports_lists_and_shows_an_import(api_client, study, sent, django_capture_on_commit_callbacks):
    url = f"/api/studies/{study.pk}/annotator-imports/"
    with django_capture_on_commit_callbacks(execute=True):
        response = api_client.post(url, {"kind": "scores", "file": SimpleUploadedFile("scores.csv", SCORES),
                                         "columns": "aq=AQ_total"}, format="multipart")
    assert response.status_code == 201, response.json()
    body = response.json()
    assert body["counts"] == {"aq50": 3, "sata_partial": 3, "iat": 3} and body["options"] == {
        "columns": {"aq": "AQ_total"}}
    assert sent == [study.pk]
    listed = api_client.get(url).json()
    assert [row["id"] for row in listed["results"]] == [body["id"]]
    assert api_client.get(f"/api/annotator-imports/{body['id']}/").json()["sha256"] == body["sha256"]


def test_the_api_refuses_a_bad_file_with_every_problem(api_client, study, sent):
    url = f"/api/studies/{study.pk}/annotator-imports/"
    response = api_client.post(url, {"kind": "scores", "file": SimpleUploadedFile("bad.csv", BAD_SCORES)},
                               format="multipart")
    assert response.status_code == 400 and response.json()["problems"] == BAD_PROBLEMS
    response = api_client.post(url, {"kind": "grades", "file": SimpleUploadedFile("s.csv", SCORES)}, format="multipart")
    assert response.status_code == 400 and response.json()["problems"][0]["column"] == "kind"
    assert not AnnotatorImport.objects.exists() and sent == []


def test_the_api_needs_a_researcher(client, study):
    assert client.get(f"/api/studies/{study.pk}/annotator-imports/").status_code in (401, 403)


def test_the_command_imports_a_file(study, tmp_path, capsys, sent):
    path = tmp_path / "trials.csv"
    path.write_bytes(csv_bytes(["who", "aq"], [["A1", 40], ["A2", 12]]))
    call_command("import_annotator_data", str(path), study="autalic", kind="scores", column=["annotator=who"])
    out = capsys.readouterr().out
    assert "imported scores of 2 annotators into 'autalic' (aq50 2;" in out
    assert dict(InstrumentScore.objects.values_list("participant__pseudonym", "total")) == {"A1": 40, "A2": 12}


def test_the_command_reports_every_problem_and_imports_nothing(study, tmp_path, capsys):
    path = tmp_path / "bad.csv"
    path.write_bytes(BAD_SCORES)
    with pytest.raises(CommandError, match=r"bad\.csv: 3 problem"):
        call_command("import_annotator_data", str(path), study="autalic", kind="scores")
    err = capsys.readouterr().err
    assert "row 3, column 'aq': AQ total 'high' is not a number" in err
    assert not AnnotatorImport.objects.exists()
    with pytest.raises(CommandError, match="no study with slug 'nope'"):
        call_command("import_annotator_data", str(path), study="nope", kind="scores")


def test_the_dashboard_says_which_scores_were_imported(staff_client, study):
    from psychometrics.annotator_imports import annotator_import_submit

    annotator_import_submit(study=study, kind="scores", filename="s.csv",
                            content=csv_bytes(["annotator", "aq", "iat_d"], [["A1", 30, 0.2], ["A2", 20, 0.5]]))
    IATSession.objects.filter(participant__pseudonym="A2").update(source_import=None)  # as if taken in the app
    study_analysis_compute(study_id=study.pk)
    page = staff_client.get(f"/studies/{study.pk}/dashboard/").content.decode()
    assert '<span id="n-imported">2 with scores imported from a file</span>' in page
    assert '<td class="source">imported: AQ, IAT D</td>' in page
    assert '<td class="source">imported: AQ</td>' in page
    assert '<td class="source">—</td>' in page   # A3: labels only, no score


def test_deleting_an_import_in_the_admin_restores_its_teams_and_recomputes_the_analysis(
        staff_client, study, monkeypatch, django_capture_on_commit_callbacks):
    from annotation.models import Participant, ParticipantWeight
    from annotation.study_analysis import study_analysis_run

    monkeypatch.setattr("tasks.analysis.study_analysis_compute_task.delay",
                        lambda study_id: study_analysis_run(study_id=study_id))
    with django_capture_on_commit_callbacks(execute=True):
        annotator_import = annotator_import_submit(study=study, kind="scores", filename="scores.csv", content=SCORES)
    assert set(Participant.objects.filter(study=study).values_list("team", flat=True)) == {"t"}
    assert ParticipantWeight.objects.filter(participant__study=study, weight__isnull=False).count() == 3
    Participant.objects.filter(study=study, pseudonym="A3").update(team="moved since")   # the researcher's change

    with django_capture_on_commit_callbacks(execute=True):
        response = staff_client.post(f"/admin/psychometrics/annotatorimport/{annotator_import.pk}/delete/",
                                     {"post": "yes"})
    assert response.status_code == 302 and not AnnotatorImport.objects.exists()
    assert not InstrumentScore.objects.exists() and not IATSession.objects.exists()
    teams = dict(Participant.objects.filter(study=study).values_list("pseudonym", "team"))
    assert teams == {"A1": "default", "A2": "default", "A3": "moved since"}
    assert not ParticipantWeight.objects.filter(participant__study=study, weight__isnull=False).exists(), \
        "the analysis was recomputed without the deleted scores"


def test_deleting_imports_from_the_admin_list_goes_through_the_same_service(staff_client, study, sent,
                                                                            django_capture_on_commit_callbacks):
    annotator_import_submit(study=study, kind="scores", filename="scores.csv", content=SCORES)
    AnalysisState.objects.filter(study=study).delete()   # the import's own request is not what is tested here
    with django_capture_on_commit_callbacks(execute=True):
        response = staff_client.post("/admin/psychometrics/annotatorimport/", {
            "action": "delete_selected", "_selected_action": list(AnnotatorImport.objects.values_list("pk", flat=True)),
            "post": "yes"})
    assert response.status_code == 302 and not AnnotatorImport.objects.exists()
    assert sent == [study.pk]
    assert set(study.participants.values_list("team", flat=True)) == {"default"}


def test_a_script_attaches_instruments_through_the_api_then_imports_scores(api_client, shipped_instruments, sent,
                                                                           django_capture_on_commit_callbacks):
    """No admin needed: the study's instruments are set with PUT, listed, and fixed once scores are imported."""
    study = make_study(slug="scripted")
    items_import_file(study=study, filename="autalic.csv", content=autalic_file())
    url = f"/api/studies/{study.pk}/instruments/"
    aq, sata = shipped_instruments["aq50"], shipped_instruments["sata_partial"]
    refused = api_client.put(url, {"instruments": [{"instrument": aq.pk, "role": "aq"},
                                                   {"instrument": sata.pk, "role": "aq"}, {"instrument": aq.pk}]},
                             format="json")
    assert refused.status_code == 400
    assert refused.json() == {"instruments": {
        "1": ["SATA (partial: 5 published items, demo only) is a SATA instrument (slug 'sata_partial'): it cannot have "
              "the role AQ, the weights would read it as the AQ score",
              "SATA (partial: 5 published items, demo only): a second instrument with the role AQ (Autism-Spectrum "
              "Quotient (AQ-50) has it); the weights read one AQ score"],
        "2": ["Autism-Spectrum Quotient (AQ-50) is listed twice",
              "Autism-Spectrum Quotient (AQ-50): a second instrument with the role AQ (Autism-Spectrum Quotient "
              "(AQ-50) has it); the weights read one AQ score"]}}
    unknown = api_client.put(url, {"instruments": [{"instrument": 999999}]}, format="json")
    assert unknown.status_code == 400 and "instruments" in unknown.json()
    assert api_client.put(url, {"instruments": "aq"}, format="json").status_code == 400
    assert not StudyInstrument.objects.filter(study=study).exists()

    stored = api_client.put(url, {"instruments": [{"instrument": aq.pk, "role": "aq"},
                                                  {"instrument": sata.pk, "role": "sata", "randomise_items": True}]},
                            format="json")
    assert stored.status_code == 200, stored.content
    listed = api_client.get(url).json()
    assert [(row["slug"], row["role"], row["position"], row["randomise_items"]) for row in listed["results"]] == [
        ("aq50", "aq", 0, False), ("sata_partial", "sata", 1, True)] == [
        (row["slug"], row["role"], row["position"], row["randomise_items"]) for row in stored.json()["instruments"]]

    with django_capture_on_commit_callbacks(execute=True):
        imported = api_client.post(f"/api/studies/{study.pk}/annotator-imports/",
                                   {"kind": "scores", "file": SimpleUploadedFile("scores.csv", SCORES),
                                    "columns": "aq=AQ_total"}, format="multipart")
    assert imported.status_code == 201, imported.content
    fixed = api_client.put(url, {"instruments": [{"instrument": aq.pk, "role": "aq"}]}, format="json")
    assert fixed.status_code == 409 and "fixed" in fixed.json()["detail"]
    assert StudyInstrument.objects.filter(study=study).count() == 2
