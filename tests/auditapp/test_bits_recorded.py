"""Recorded scorers in a BITS audit (scores imported with a corpus): a corpus uploaded in the public BITS repository's
shape through ``POST /api/corpora/upload/`` brings one recorded scorer per tool column; an audit of only recorded
scorers, and one of a local scorer with a recorded one, complete; the analysis lists the recorded scorers as
imported with the file's own values, counts their missing cells with the reasons, and the ``scores`` table marks
them imported. A recorded scorer of another corpus is refused with a 400 naming it. A sentence without a control
and a scorer whose controls have no scores are named on the upload's answer, the dashboard and the corpus page.

The file's rows are tests/auditapp/bits_upload_files.py's (copied in the comments where the arithmetic uses them).
"""
from __future__ import annotations

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse
from textblob import TextBlob

from auditapp.models import Audit, AuditRequest, LLMEndpoint, RecordedScorer
from tests.auditapp.bits_upload_files import PERTURBED_ROWS, public_shape_files
from tests.auditapp.test_bits_audit import launch, run, table, tasks_off  # noqa: F401 (tasks_off is a fixture)
from tests.auditapp.test_self_report_dashboard_view import page_text

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


def test_unpaired_rows_and_undefined_cells_are_named_on_every_page(api_client, staff_client, tasks_off):  # noqa: F811
    # T6 has a control for Anger only: this row's Neutral has none (the public files' T6 "<emotion state>" rows).
    neutral = ["4", "T6", "They were <emotion state> because of the Blind neighbour.", "Neutral", "Disable", "Blind",
               "0.0", "-0.2", "0.0"]
    corpus = upload(api_client, perturbed_rows=[*PERTURBED_ROWS, neutral])
    pairing = corpus["provenance"]["summary"]["pairing"]
    # Rows 2-5 (T1 ×3, T6 Anger ×1) find their control by its text; row 6 (the header is row 1) none.
    assert {rule["rule"]: rule["n"] for rule in pairing["rules"]} == {
        "control column": 0, "exact": 4, "typo": 0, "position": 0, "unpaired": 1}
    assert pairing["unpaired"] == [{"reason": "template T6 has no control with emotion Neutral", "n": 1, "rows": [6],
                                    "templates": ["T6"], "per_group": {"Disable": 1}}]
    assert corpus["warnings"] == ["the control file has no Google scores: its pairs' ScoreSense is undefined"]

    audit = run(launch(api_client, corpus=corpus["id"], recorded_scorers=recorded_ids(corpus, "Google", "VADER")))
    assert audit.status == Audit.Status.COMPLETED, audit.status_reason
    sense = {(row["scorer"], row["group"]): row for row in table(api_client, audit.id, "score_sense")}
    # VADER, Disable: the three T1/T6 pairs as worked above (-0.7 / 3); the Neutral row is counted apart.
    vader = sense[("VADER", "Disable")]
    assert (vader["n"], vader["n_missing"], vader["n_unpaired"]) == (3, 0, 1)
    assert vader["score_sense"] == pytest.approx(-0.7 / 3)
    # Google: no control has a score; of Disable's 3 pairs, Blind's cell is empty too.
    google = sense[("Google", "Disable")]
    assert (google["n"], google["n_missing"], google["n_unpaired"], google["mark"]) == (0, 3, 1, "")
    assert google["note"] == ("undefined: no pair has both scores: 3 of its 3 pairs lack the control's score (the "
                              "control file has no column 'Google': 2 controls); 1 of its 3 pairs lacks the sentence's "
                              "score (empty cell in the file: 1 sentence)")
    coverage = {row["scorer"]: row for row in table(api_client, audit.id, "coverage")}
    assert [coverage["VADER"][key] for key in ("n_missing", "n_pairs_complete", "n_pairs_missing", "n_unpaired")] == [
        0, 4, 0, 1]
    assert [coverage["Google"][key] for key in ("n_pairs_complete", "n_pairs_missing", "n_unpaired")] == [0, 4, 1]

    html = staff_client.get(reverse("audit-dashboard", args=[audit.id])).content.decode()
    assert "None" not in html
    page = page_text(html)
    rows = {attrs.get("data-scorer"): cells for attrs, cells in page.rows["table-7"] if attrs.get("data-scorer")}
    assert rows["VADER"][1].endswith("1 without a control")
    assert rows["Google"][1].startswith("— p = —3 missing a score1 without a controlundefined: no pair has both")
    assert page.rows["unpaired-table"][1][1] == ["template T6 has no control with emotion Neutral", "1", "Disable: 1",
                                                 "6"]
    assert page.text("corpus-warnings") == "the control file has no Google scores: its pairs' ScoreSense is undefined"
    coverage_rows = {attrs.get("data-scorer"): cells for attrs, cells in page.rows["coverage-table"]
                     if attrs.get("data-scorer")}
    assert coverage_rows["VADER"][5:8] == ["4", "0", "1"]

    admin = page_text(staff_client.get(reverse("admin:auditapp_corpus_change", args=[corpus["id"]])).content.decode())
    rules = {attrs.get("data-rule"): cells for attrs, cells in admin.rows["pairing-table"] if attrs.get("data-rule")}
    assert rules["exact"][2:] == ["4", "T1: 3, T6: 1"] and rules["unpaired"][2:] == ["1", "T6: 1"]
    assert admin.rows["unpaired-table"][1][1][3] == "6"


def test_a_recorded_column_without_control_scores_takes_them_from_a_scorer_of_the_audit(api_client, tasks_off):  # noqa: F811
    from vaderSentiment.vaderSentiment import SentimentIntensityAnalyzer

    corpus = upload(api_client)
    local = LLMEndpoint.objects.create(name="local", protocol="local", base_url="")
    bad = api_client.post("/api/audits/", {
        "paradigm": "bits", "name": "bad", "corpus": corpus["id"], "models": [{"endpoint": local.id, "model": "vader"}],
        "recorded_scorers": recorded_ids(corpus, "Google"),
        "analysis": {"control_scores_from": {"vader": "Google", "Google": "textblob"}}}, format="json")
    assert bad.status_code == 400
    assert "'vader' is not one of the audit's recorded scorers" in bad.content.decode()
    assert "'textblob' is not a scorer the audit asks" in bad.content.decode()
    for value in (["textblob"], {"a": 1}, 3):
        odd = api_client.post("/api/audits/", {
            "paradigm": "bits", "name": "odd", "corpus": corpus["id"], "recorded_scorers": recorded_ids(corpus, "Google"),
            "models": [{"endpoint": local.id, "model": "vader"}],
            "analysis": {"control_scores_from": {"Google": value}}}, format="json")
        assert odd.status_code == 400 and "control_scores_from" in odd.content.decode(), value

    audit = run(launch(api_client, corpus=corpus["id"], models=[{"endpoint": local.id, "model": "vader"}],
                       recorded_scorers=recorded_ids(corpus, "Google"),
                       analysis={"control_scores_from": {"Google": "vader"}}))
    assert audit.status == Audit.Status.COMPLETED, audit.status_reason
    vader = SentimentIntensityAnalyzer()
    t1, t6 = (vader.polarity_scores(text)["compound"] for text in ("They are parents of a child.",
                                                                   "They were vexing because of the neighbour."))
    sense = {(row["scorer"], row["group"]): row for row in table(api_client, audit.id, "score_sense")}
    # Google's Disable pairs: Autistic 0.2 against T1's control, Deaf -0.9 against T6's; Blind has no Google score.
    assert sense[("Google", "Disable")]["score_sense"] == pytest.approx(((0.2 - t1) + (-0.9 - t6)) / 2)
    assert (sense[("Google", "Disable")]["n"], sense[("Google", "Disable")]["n_missing"]) == (2, 1)
    fills = table(api_client, audit.id, "control_fills")
    assert [(f["scorer"], f["controls_from"], f["n_controls"], f["n_filled"]) for f in fills] == [
        ("Google", "vader", 2, 2)]
    assert fills[0]["n_compared"] == 3  # the perturbed sentences both scored: Blind has no Google score
    manifest = api_client.get(f"/api/audits/{audit.id}/manifest/").json()
    found = [value for value in _walk(manifest) if isinstance(value, dict) and "control_scores_from" in value]
    assert found and all(value["control_scores_from"] == {"Google": "vader"} for value in found)


def _walk(value):
    yield value
    children = value.values() if isinstance(value, dict) else value if isinstance(value, list) else ()
    for child in children:
        yield from _walk(child)
