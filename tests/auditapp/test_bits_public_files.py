"""The public BITS repository's own files, uploaded unchanged through ``POST /api/corpora/upload/``, pair every
sentence the paper could pair and reproduce seed 001's Table 7 for VADER (scored here by the local scorer), and for
TextBlob from the files' own TEXTBLOB column with the controls scored by today's TextBlob.

The files are not committed (the repository states no licence): tests/data/bits_public/README.md says where they
come from and how to fetch them; without them, or with other bytes, the test is skipped and says why.
"""
from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from auditapp.models import Audit, LLMEndpoint
from auditapp.paradigms.bits.comparability import PUBLIC_DISABILITY_FACET
from tests.auditapp.test_bits_audit import launch, run, table, tasks_off  # noqa: F401 (tasks_off is a fixture)
from tests.auditapp.test_self_report_dashboard_view import page_text

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.integration]

FOLDER = Path(os.environ.get("BITS_PUBLIC_DIR") or Path(__file__).parents[1] / "data" / "bits_public")
FILES = {  # commit 762bc00878c444fccffdde4a90de528d2f1cfcdc of github.com/PranavNV/BITS
    "Disablility_Facet_Results.csv": PUBLIC_DISABILITY_FACET["perturbed"],
    "Standard_Corpus.csv": PUBLIC_DISABILITY_FACET["control"],
}
# Seed 001 Table 7, VADER: ScoreSense and mark per group. The files name the groups by their classes: Disable holds
# the clinical terms (PWD:C), Disable_Social the social-discourse ones (PWD:SD), Non-Disable PWoD, Normal NRM.
PAPER_VADER = {"Disable": (-0.25, "**"), "Disable_Social": (-0.05, "**"), "Non-Disable": (0.01, ""),
               "Normal": (0.04, "")}
# Table 7, TextBlob: the repository's TEXTBLOB column scores only the perturbed sentences; the control sentences
# are scored by today's TextBlob (the setting control_scores_from).
PAPER_TEXTBLOB = {"Disable": (0.00, ""), "Disable_Social": (-0.21, "**"), "Non-Disable": (0.00, ""),
                  "Normal": (-0.04, "")}
TOLERANCE = 0.03


def public_file(name: str) -> bytes:
    path = FOLDER / name
    if not path.is_file():
        pytest.skip(f"{path} is absent: the public BITS files are fetched, not committed "
                    "(tests/data/bits_public/README.md)")
    content = path.read_bytes()
    if hashlib.sha256(content).hexdigest() != FILES[name]:
        pytest.skip(f"{path} is not the file of commit 762bc00 (its sha256 differs): "
                    "tests/data/bits_public/README.md")
    return content


def upload_public_files(api_client) -> dict:
    response = api_client.post("/api/corpora/upload/", {
        "perturbed_file": SimpleUploadedFile("Disablility_Facet_Results.csv",
                                             public_file("Disablility_Facet_Results.csv")),
        "control_file": SimpleUploadedFile("Standard_Corpus.csv", public_file("Standard_Corpus.csv")),
        "name": "BITS disability facet"}, format="multipart")
    assert response.status_code == 201, response.content
    return response.json()


def test_the_recorded_textblob_column_with_todays_textblob_controls_gives_table_7s_textblob_row(
        api_client, tasks_off):  # noqa: F811
    corpus = upload_public_files(api_client)
    textblob_column = next(s for s in corpus["recorded_scorers"] if s["name"] == "TEXTBLOB")
    local = LLMEndpoint.objects.create(name="local", protocol="local", base_url="")
    audit = run(launch(api_client, corpus=corpus["id"], models=[{"endpoint": local.id, "model": "textblob"}],
                       recorded_scorers=[textblob_column["id"]],
                       analysis={"control_scores_from": {"TEXTBLOB": "textblob"}}))
    assert audit.status == Audit.Status.COMPLETED, audit.status_reason
    sense = {(row["scorer"], row["group"]): row for row in table(api_client, audit.id, "score_sense")}
    for group, (paper, mark) in PAPER_TEXTBLOB.items():
        cell = sense[("TEXTBLOB", group)]
        assert cell["score_sense"] == pytest.approx(paper, abs=TOLERANCE), group
        assert cell["mark"] == mark, (group, cell["p"])
    # Today's TextBlob alone misses Table 7's PWD:SD value (-0.149): its lexicon changed since the paper.
    assert sense[("textblob", "Disable_Social")]["score_sense"] == pytest.approx(-0.149, abs=0.005)
    [fill] = table(api_client, audit.id, "control_fills")
    assert (fill["n_controls"], fill["n_filled"], fill["n_compared"]) == (78, 78, 1560)
    assert fill["r"] == pytest.approx(0.967, abs=0.001)


def test_the_public_files_pair_by_rule_and_give_table_7_for_vader(api_client, staff_client, tasks_off):  # noqa: F811
    corpus = upload_public_files(api_client)
    assert corpus["n_units"] == 1560 + 78

    # 1,560 perturbed rows = 20 terms × 78 sentence slots: T1–T5 one each (5), T6 15 (14 emotional words and
    # "<emotion state>"), T7 15, T8 14 (event words), T9 15, T10 14 (event words).
    #   exact:    T1, T2, T4: 3 × 20 = 60; T7: 15 × 20 = 300; T10: 14 × 20 = 280          → 640
    #   typo:     T3 "There was a person" → control "The was a person" (2 edits),
    #             T5 "butterfly garden" → control "butterfly garder" (1 edit): 2 × 20       → 40
    #   position: T6 (controls: the event words, 2 per emotion) 14 × 20 = 280; T8 (controls: the emotional
    #             words, 2 per emotion; its Neutral control is used by nobody) 14 × 20 = 280; T9 ("which made
    #             them aggravated" against "which aggravated them", Neutral 1 and 1) 15 × 20 = 300  → 860
    #   unpaired: T6's "<emotion state>" sentences, one per term: T6 has no Neutral control    → 20
    #   640 + 40 + 860 + 20 = 1,560; before these rules 40 + 860 + 20 = 920 rows (59%) had no control.
    pairing = corpus["provenance"]["summary"]["pairing"]
    assert {rule["rule"]: rule["n"] for rule in pairing["rules"]} == {
        "control column": 0, "exact": 640, "typo": 40, "position": 860, "unpaired": 20}
    assert {rule["rule"]: rule["per_template"] for rule in pairing["rules"]}["position"] == {
        "T6": 280, "T8": 280, "T9": 300}
    assert [(typo["template"], typo["edits"], typo["n"]) for typo in pairing["typo_pairs"]] == [
        ("T3", 2, 20), ("T5", 1, 20)]
    # The four classes are blocks of 390 rows; T6's Neutral rows are the block's indices 95–99 (the file's own
    # index column), spreadsheet rows 97–101 (the header is row 1), then 390 rows on for each class.
    [unpaired] = pairing["unpaired"]
    assert unpaired["reason"] == "template T6 has no control with emotion Neutral"
    assert unpaired["rows"] == [start + offset for start in (97, 487, 877, 1267) for offset in range(5)]
    assert unpaired["per_group"] == {"Disable_Social": 5, "Disable": 5, "Non-Disable": 5, "Normal": 5}
    # The control file has no score columns at all: each of the 20 tools is named.
    assert len(corpus["warnings"]) == 20
    assert "the control file has no TEXTBLOB scores: its pairs' ScoreSense is undefined" in corpus["warnings"]
    textblob_column = next(s for s in corpus["recorded_scorers"] if s["name"] == "TEXTBLOB")
    assert textblob_column["n_missing"] == 78

    local = LLMEndpoint.objects.create(name="local", protocol="local", base_url="")
    audit = run(launch(api_client, corpus=corpus["id"], models=[{"endpoint": local.id, "model": "vader"}],
                       recorded_scorers=[textblob_column["id"]]))
    assert audit.status == Audit.Status.COMPLETED, audit.status_reason

    sense = {(row["scorer"], row["group"]): row for row in table(api_client, audit.id, "score_sense")}
    for group, (paper, mark) in PAPER_VADER.items():
        cell = sense[("vader", group)]
        assert cell["score_sense"] == pytest.approx(paper, abs=TOLERANCE), group
        assert cell["mark"] == mark, (group, cell["p"])
        # 390 sentences per group: 385 pairs, the 5 T6 "<emotion state>" sentences without a control.
        assert (cell["n"], cell["n_missing"], cell["n_unpaired"]) == (385, 0, 5)
    undefined = sense[("TEXTBLOB", "Disable")]
    assert undefined["score_sense"] is None and undefined["mark"] == "" and undefined["n"] == 0
    assert (undefined["n_missing"], undefined["n_unpaired"]) == (385, 5)
    assert "the control file has no column 'TEXTBLOB'" in undefined["note"]

    # Coverage counts what Table 7's cells count, summed over the groups.
    coverage = {row["scorer"]: row for row in table(api_client, audit.id, "coverage")}
    for scorer in ("vader", "TEXTBLOB"):
        cells = [row for (name, _), row in sense.items() if name == scorer]
        assert coverage[scorer]["n_pairs_complete"] == sum(cell["n"] for cell in cells)
        assert coverage[scorer]["n_pairs_missing"] == sum(cell["n_missing"] for cell in cells)
        assert coverage[scorer]["n_unpaired"] == sum(cell["n_unpaired"] for cell in cells) == 20
    assert coverage["vader"]["n_missing"] == 0 and coverage["vader"]["n_pairs_missing"] == 0
    assert (coverage["TEXTBLOB"]["n_missing"], coverage["TEXTBLOB"]["n_pairs_complete"]) == (78, 0)

    html = staff_client.get(reverse("audit-dashboard", args=[audit.id])).content.decode()
    page = page_text(html)
    assert "None" not in html
    assert page.text("comparability").startswith("Comparable with the paper's Table 7.")
    rows = {attrs.get("data-scorer"): cells for attrs, cells in page.rows["table-7"] if attrs.get("data-scorer")}
    assert rows["vader"][1].endswith("5 without a control") and "missing" not in rows["vader"][1]
    # The undefined cell: no value, no mark, the counts, and why (the 385 pairs use 77 controls: all but T8's
    # Neutral one, which no sentence pairs with).
    assert rows["TEXTBLOB"][1] == (
        "— p = —385 missing a score5 without a controlundefined: no pair has both scores: 385 of its 385 pairs lack "
        "the control's score (the control file has no column 'TEXTBLOB': 77 controls)")
    rules = {attrs.get("data-rule"): cells for attrs, cells in page.rows["pairing-table"] if attrs.get("data-rule")}
    assert rules["typo"][2] == "40" and rules["position"][3] == "T6: 280, T8: 280, T9: 300"
    assert page.rows["unpaired-table"][1][1][0] == "template T6 has no control with emotion Neutral"
    assert "the control file has no TEXTBLOB scores" in page.text("corpus-warnings")

    admin = staff_client.get(reverse("admin:auditapp_corpus_change", args=[corpus["id"]])).content.decode()
    assert 'id="pairing-table"' in admin and "97, 98, 99, 100, 101, 487" in admin
