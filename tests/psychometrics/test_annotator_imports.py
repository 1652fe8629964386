"""Annotator data imports (psychometrics.annotator_imports): per-annotator scores, raw questionnaire answers and
raw IAT trials land where the app stores its own, so the weights, ground truth, groups and item sets compute as
for annotators who took the instruments in the app; a bad file stores nothing and names every problem."""
from __future__ import annotations

import csv
import io
import random
import re

import pytest
from django.test import Client

from annotation.item_files import ItemFileError
from annotation.models import ItemGroundTruth, Participant, ParticipantWeight, Study
from annotation.participation import participant_decline, participants_invite
from annotation.selectors import study_iat_trials_export, study_instrument_responses_export
from annotation.services import items_import_file
from annotation.study_analysis import study_analysis_compute, study_analysis_run
from psychometrics.annotator_imports import annotator_import_submit
from psychometrics.models import (
    AnnotatorImport,
    IATSession,
    IATTrial,
    Instrument,
    InstrumentResponse,
    InstrumentScore,
    QuestionnaireSession,
    StudyInstrument,
)
from tests.factories import make_study
from tests.participant.helpers import page_config

pytestmark = pytest.mark.django_db


def csv_bytes(header: list[str], rows: list[list]) -> bytes:
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(header)
    writer.writerows(rows)
    return buffer.getvalue().encode()


def autalic_file(n_items: int = 40, *, seed: int = 7) -> bytes:
    """The AUTALIC shape: id, sentence and three annotator columns A1_Score..A3_Score with 0 / 1 labels."""
    rng = random.Random(seed)
    return csv_bytes(["id", "sentence", "A1_Score", "A2_Score", "A3_Score"],
                     [[f"s{i}", f"Sentence {i}.", *(rng.randint(0, 1) for _ in range(3))] for i in range(n_items)])


@pytest.fixture
def study(shipped_instruments) -> Study:
    study = make_study()
    StudyInstrument.objects.create(study=study, instrument=shipped_instruments["aq50"], role="aq", position=0)
    StudyInstrument.objects.create(study=study, instrument=shipped_instruments["sata_partial"], role="sata",
                                   position=1)
    return study


@pytest.fixture
def imported_study(study) -> Study:
    assert items_import_file(study=study, filename="autalic.csv", content=autalic_file()).status == "succeeded"
    return study


SCORES = csv_bytes(["annotator", "team", "AQ_total", "SATA_total", "IAT_D"],
                   [["A1", "t", 36, 18, 0.20], ["A2", "t", 20, 10, 0.80], ["A3", "t", 28, 16, -0.40]])


def test_autalic_and_a_score_file_give_the_weights_of_eqs_1_to_5_and_a_ground_truth_without_another_step(
        imported_study, monkeypatch, django_capture_on_commit_callbacks):
    # The worker's side of a request runs at once where the task would be sent.
    monkeypatch.setattr("tasks.analysis.study_analysis_compute_task.delay",
                        lambda study_id: study_analysis_run(study_id=study_id))
    with django_capture_on_commit_callbacks(execute=True):
        annotator_import_submit(study=imported_study, kind="scores", filename="scores.csv", content=SCORES)

    # Seed 000, Appendix B, by hand for the three annotators (one team "t"):
    # eq. 1  AQ 36, 20, 28: min 20, max 36      → x̂_AQ   = 1, 0, 8/16 = 0.5
    # eq. 2  SATA 18, 10, 16: min 10, max 18    → x̂_SATA = 1, 0, 6/8 = 0.75
    # eq. 3  D 0.2, 0.8, −0.4: min −0.4, max 0.8 → x̂_IAT = 1 − 0.6/1.2 = 0.5, 1 − 1.2/1.2 = 0, 1 − 0 = 1
    # eq. 4  R = (1 + 1 + 0.5)/3 = 2.5/3, (0 + 0 + 0)/3 = 0, (0.5 + 0.75 + 1)/3 = 2.25/3
    # eq. 5  mean R of team t = (2.5/3 + 0 + 2.25/3)/3 = 4.75/9
    #        W = (2.5/3)/(4.75/9) = 7.5/4.75 = 30/19, 0, (2.25/3)/(4.75/9) = 6.75/4.75 = 27/19
    expected = {"A1": (1, 1, 0.5, 2.5 / 3, 30 / 19), "A2": (0, 0, 0, 0, 0), "A3": (0.5, 0.75, 1, 0.75, 27 / 19)}
    for pseudonym, (aq_norm, sata_norm, iat_norm, r, w) in expected.items():
        weight = ParticipantWeight.objects.get(participant__study=imported_study, participant__pseudonym=pseudonym)
        assert (weight.aq_norm, weight.sata_norm) == pytest.approx((aq_norm, sata_norm))
        assert weight.iat_norm == pytest.approx(iat_norm)
        assert (weight.trust_raw, weight.weight) == pytest.approx((r, w))

    # eq. 6 on every item: ŷ = (30/19·y1 + 0·y2 + 27/19·y3) / (30/19 + 0 + 27/19); majority of three 0/1 labels.
    rows = list(csv.DictReader(io.StringIO(autalic_file().decode())))
    truth = {t.item.external_id: t for t in ItemGroundTruth.objects.filter(item__study=imported_study)
             .select_related("item")}
    assert len(truth) == len(rows) == 40
    for row in rows:
        y1, y2, y3 = (int(row[f"A{k}_Score"]) for k in (1, 2, 3))
        score = (30 / 19 * y1 + 0 * y2 + 27 / 19 * y3) / (57 / 19)
        item = truth[row["id"]]
        assert item.weighted_score == pytest.approx(score)
        assert item.weighted_label == (1 if score >= 0.5 else 0)
        assert item.majority_label == (1 if y1 + y2 + y3 >= 2 else 0)


def test_a_score_import_is_stored_like_the_apps_scores_and_marked_with_its_provenance(imported_study):
    annotator_import = annotator_import_submit(study=imported_study, kind="scores", filename="scores.csv",
                                               content=SCORES)
    stored = AnnotatorImport.objects.get()
    assert bytes(stored.content) == SCORES and len(stored.sha256) == 64
    assert stored.columns == {"annotator": "annotator", "team": "team", "aq": "AQ_total", "sata": "SATA_total",
                              "iat_d": "IAT_D"}
    assert (stored.n_rows, stored.n_annotators) == (3, 3)
    assert stored.counts == {"aq50": 3, "sata_partial": 3, "iat": 3}
    aq = InstrumentScore.objects.get(participant__pseudonym="A1", instrument__slug="aq50")
    assert (aq.total, aq.tier, aq.source_import) == (36, "clinical range (≥ 32)", annotator_import)
    assert IATSession.objects.get(participant__pseudonym="A2").d_score == 0.8
    assert set(Participant.objects.filter(study=imported_study).values_list("team", flat=True)) == {"t"}


def test_subscales_and_iat_details_are_kept(imported_study):
    content = csv_bytes(
        ["annotator", "aq", "aq_social_skill", "aq_attention_switching", "aq_attention_to_detail", "aq_communication",
         "aq_imagination", "iat_d", "iat_d600", "iat_flagged_fast"],
        [["A1", 30, 6, 6, 6, 6, 6, 0.3, 0.35, "true"]])
    annotator_import_submit(study=imported_study, kind="scores", filename="s.csv", content=content)
    assert InstrumentScore.objects.get(participant__pseudonym="A1").subscales["imagination"] == 6
    session = IATSession.objects.get(participant__pseudonym="A1")
    assert (session.d_score, session.d600_score, session.flagged_fast, session.condition_index) == (0.3, 0.35, True, None)


def problems(study, content: bytes, kind: str = "scores", **options) -> list[str]:

    with pytest.raises(ItemFileError) as caught:
        annotator_import_submit(study=study, kind=kind, filename="bad.csv", content=content, options=options)
    assert not AnnotatorImport.objects.exists() and not InstrumentScore.objects.exists()
    assert not IATSession.objects.exists() and not IATTrial.objects.exists()
    return [str(p) for p in caught.value.problems]


def test_a_bad_score_file_imports_nothing_and_names_each_problem(imported_study):
    content = csv_bytes(["annotator", "aq", "sata", "iat_d"],
                        [["A1", 30, 12, 0.1], ["A9", 30, 12, 0.1], ["A2", "thirty", 12, 0.1], ["A1", 31, 12, 0.2],
                         ["A3", 51, 4, 2.5]])
    assert problems(imported_study, content) == [
        "row 3, column 'annotator': annotator 'A9' is not in this study: an import never creates annotators; import "
        "the items with their labels first (columns like A1_Score create annotator A1), or invite the participant",
        "row 4, column 'aq': AQ total 'thirty' is not a number",
        "row 5, column 'annotator': annotator 'A1' appears twice (first on row 2)",
        "row 6, column 'aq': AQ total 51 is outside 0–50, the range of the study's aq50",
        "row 6, column 'sata': SATA total 4 is outside 5–20, the range of the study's sata_partial",
        "row 6, column 'iat_d': 2.5 is not a D score (D lies between −2 and 2)",
    ]
    assert not Participant.objects.filter(pseudonym="A9").exists()


@pytest.mark.parametrize(("header", "rows", "expected"), [
    (["who", "aq"], [["A1", 3]], ["row 1: no annotator column: name one of annotator, participant, pseudonym, "
                                  "annotator_id, participant_id, or choose the column in the mapping"]),
    (["annotator", "team"], [["A1", "t"]], ["row 1: no score column: name at least one of aq, sata, iat_d (or "
                                            "choose them in the mapping)"]),
    (["annotator", "aq", "sata"], [["A1", "", ""]], ["row 2: no score for annotator 'A1': every score cell is empty"]),
    (["annotator", "aq"], [], ["the file has a header and no rows"]),
    (["annotator", "aq", "aq_imagination", "aq_social_skill", "aq_attention_switching", "aq_attention_to_detail",
      "aq_communication"], [["A1", 30, 5, 5, 5, 5, 5]],
     ["row 2, column 'aq': the AQ subscales add up to 25, not to the total 30"]),
    (["annotator", "aq", "aq_imagination"], [["A1", 30, 11]],
     ["row 2, column 'aq_imagination': 11 is outside 0–10, the range of subscale imagination"]),
    (["annotator", "iat_d", "iat_d600"], [["A1", "", 0.3]], ["row 2, column 'iat_d': IAT details (iat_d600) without "
                                                             "a D score"]),
    (["annotator", "aq", "aq_imagination"], [["A1", 30.5, 4.5]],
     ["row 2, column 'aq': AQ total 30.5 is not a whole number (AQ totals add up whole item scores)"]),
    (["annotator", "aq", "aq_imagination"], [["A1", 30, 4.5]],
     ["row 2, column 'aq_imagination': AQ subscale 4.5 is not a whole number"]),
    (["annotator", "aq", "sata"], [["A1", "2_0", "1_0"]],
     ["row 2, column 'aq': AQ total '2_0' is not a number", "row 2, column 'sata': SATA total '1_0' is not a number"]),
])
def test_each_bad_score_file_is_refused_with_its_reason(imported_study, header, rows, expected):
    assert problems(imported_study, csv_bytes(header, rows)) == expected


def test_a_score_the_annotator_already_has_is_refused_until_its_import_is_deleted(imported_study):
    first = annotator_import_submit(study=imported_study, kind="scores", filename="first.csv",
                                    content=csv_bytes(["annotator", "aq"], [["A1", 20]]))
    with pytest.raises(ItemFileError, match="annotator 'A1' already has AQ score") as caught:
        annotator_import_submit(study=imported_study, kind="scores", filename="again.csv",
                                content=csv_bytes(["annotator", "aq"], [["A1", 21]]))
    assert str(caught.value.problems[0]) == (
        f"row 2, column 'aq': annotator 'A1' already has AQ score (aq50) (imported by annotator import #{first.pk} "
        "'first.csv'); delete that first to import another")
    first.delete()
    assert not InstrumentScore.objects.exists()
    annotator_import_submit(study=imported_study, kind="scores", filename="again.csv",
                            content=csv_bytes(["annotator", "aq"], [["A1", 21]]))
    assert InstrumentScore.objects.get().total == 21


def test_withdrawn_annotators_and_studies_without_the_instrument_are_refused(imported_study):
    Participant.objects.filter(pseudonym="A2").update(status=Participant.Status.WITHDRAWN)
    StudyInstrument.objects.filter(study=imported_study, role="sata").delete()
    assert problems(imported_study, csv_bytes(["annotator", "aq", "sata"], [["A2", 20, 10]])) == [
        "row 1, column 'sata': the study has no instrument with the role SATA: add the instrument these totals come "
        "from to the study (its instruments, role SATA), then import again"]
    assert problems(imported_study, csv_bytes(["annotator", "aq"], [["A2", 20]])) == [
        "row 2, column 'annotator': annotator 'A2' has withdrawn from this study: their data was deleted and cannot "
        "be imported"]


def test_a_participant_who_declined_consent_gets_no_imported_scores(imported_study):
    (participant,) = participants_invite(study=imported_study, count=1)
    participant_decline(participant=participant)
    assert problems(imported_study, csv_bytes(["annotator", "aq"], [[participant.pseudonym, 20]])) == [
        f"row 2, column 'annotator': annotator '{participant.pseudonym}' declined consent to this study: nothing "
        "of theirs can be stored"]


def test_an_xlsx_score_file_with_a_column_mapping_imports(imported_study):
    from openpyxl import Workbook

    workbook = Workbook()
    sheet = workbook.active
    sheet.append(["Rater", "Autism Quotient", "Notes"])
    sheet.append(["A1", 33, "first wave"])
    buffer = io.BytesIO()
    workbook.save(buffer)
    annotator_import = annotator_import_submit(study=imported_study, kind="scores", filename="scores.xlsx",
                                               content=buffer.getvalue(),
                                               options={"columns": {"annotator": "Rater", "aq": "Autism Quotient"}})
    assert annotator_import.warnings == ["Columns not read: Notes."]
    assert InstrumentScore.objects.get().total == 33


# ------------------------------------------------------------------------------- raw answers and trials


@pytest.fixture
def in_app_and_imported(imported_study) -> tuple[Study, Participant]:
    """The study with its imported annotators A1–A3 and an invited participant who takes the flow in the app."""
    imported_study.status = Study.Status.OPEN
    imported_study.iat_enabled = True
    imported_study.save()
    StudyInstrument.objects.filter(study=imported_study, role="aq").update(randomise_items=True)
    from annotation.participation import participants_invite

    return imported_study, participants_invite(study=imported_study, count=1)[0]


def take_questionnaires_in_the_browser(client: Client, participant: Participant) -> None:
    """Consent, then answer the AQ-50 with the autosave endpoint (varied answers) and the SATA with the form."""
    rng = random.Random(3)
    base = f"/p/{participant.invite_token}/"
    assert client.post(base + "consent/", {"consent": "yes"}).status_code == 302
    aq = Instrument.objects.get(slug="aq50")
    url = f"{base}questionnaire/{aq.pk}/"
    numbers = [int(n) for n in re.findall(r'data-item="(\d+)"', client.get(url).content.decode())]
    for n in numbers:
        answer = client.post(url + "answer/", {"item": n, "response": rng.randrange(4), "rt_ms": 900},
                             content_type="application/json")
        assert answer.status_code == 200
    assert client.post(url).status_code == 302
    sata = Instrument.objects.get(slug="sata_partial")
    url = f"{base}questionnaire/{sata.pk}/"
    assert client.post(url, {f"item-{item.number}": rng.randrange(4) for item in sata.parsed.items}).status_code == 302


def export_as_file(export, *, rename: dict[str, str]) -> bytes:
    rows = [list(row) for row in export.iterate(chunk_size=500)]
    for row in rows:
        row[0] = rename[row[0]]
    return csv_bytes(export.columns, rows)


def test_raw_aq50_and_sata_answers_give_the_scores_the_browser_gives(in_app_and_imported):
    study, participant = in_app_and_imported
    take_questionnaires_in_the_browser(Client(), participant)
    content = export_as_file(study_instrument_responses_export(study=study), rename={participant.pseudonym: "A1"})
    annotator_import = annotator_import_submit(study=study, kind="answers", filename="answers.csv", content=content)
    assert annotator_import.counts == {"aq50": 1, "sata_partial": 1, "answers": 55}
    for slug in ("aq50", "sata_partial"):
        in_app = InstrumentScore.objects.get(participant=participant, instrument__slug=slug)
        imported = InstrumentScore.objects.get(participant__pseudonym="A1", instrument__slug=slug)
        assert (imported.total, imported.subscales, imported.tier) == (in_app.total, in_app.subscales, in_app.tier)
        assert in_app.source_import is None and imported.source_import == annotator_import
    assert InstrumentResponse.objects.filter(source_import=annotator_import).count() == 55


def test_answers_given_as_labels_or_one_based_numbers_and_by_role_score_alike(imported_study):
    sata = Instrument.objects.get(slug="sata_partial").parsed
    labels = csv_bytes(["participant", "instrument", "item", "response"],
                       [["A1", "sata", item.number, sata.response_options[2].upper()] for item in sata.items])
    numbers = csv_bytes(["participant", "instrument", "item", "response"],
                        [["A2", "sata_partial", item.number, 3] for item in sata.items])
    annotator_import_submit(study=imported_study, kind="answers", filename="labels.csv", content=labels)
    annotator_import_submit(study=imported_study, kind="answers", filename="numbers.csv", content=numbers)
    totals = dict(InstrumentScore.objects.values_list("participant__pseudonym", "total"))
    assert totals["A1"] == totals["A2"] and set(InstrumentResponse.objects.values_list("response_index", flat=True)) == {2}


def test_a_bad_answers_file_imports_nothing_and_names_each_problem(imported_study):
    sata = Instrument.objects.get(slug="sata_partial").parsed
    numbers = list(sata.item_numbers)
    rows = [["A1", "sata_partial", n, 1] for n in numbers[1:]]        # A1 skips the first item
    rows += [["A2", "sata_partial", numbers[0], 1], ["A2", "sata_partial", numbers[0], 2], ["A2", "sata_partial", 99, 1],
             ["A3", "bdi", 1, 1], ["A3", "sata_partial", numbers[0], "maybe"]]
    content = csv_bytes(["annotator", "instrument", "item_number", "response_index"], rows)
    assert problems(imported_study, content, kind="answers") == [
        f"row {len(numbers) + 2}, column 'item_number': annotator 'A2' answers sata_partial item {numbers[0]} twice "
        f"(first on row {len(numbers) + 1})",
        f"row {len(numbers) + 3}, column 'item_number': item number: sata_partial has no item 99",
        f"row {len(numbers) + 4}, column 'instrument': 'bdi' is not an instrument of this study (known: aq50, "
        "sata_partial, aq, sata)",
        f"row {len(numbers) + 5}, column 'response_index': 'maybe' is not a number",
        f"row 2, column 'item_number': annotator 'A1' has no answer to 1 item(s) of sata_partial: {numbers[0]} "
        "(scores are defined only on complete answers)",
        f"row {len(numbers) + 1}, column 'item_number': annotator 'A2' has no answer to {len(numbers) - 1} item(s) "
        f"of sata_partial: {', '.join(map(str, numbers[1:]))} (scores are defined only on complete answers)",
    ]


def take_the_iat_in_the_browser(client: Client, participant: Participant) -> None:
    """Every block posted as the browser does, with seeded latencies, some errors, and some very fast trials."""
    rng = random.Random(11)
    base = f"/p/{participant.invite_token}/"
    config = page_config(client.get(base + "iat/").content.decode())
    for block in config["blocks"]:
        slower = 180 if block["pairing"] == "inconsistent" else 0
        trials = []
        for trial in block["trials"]:
            first = rng.uniform(250, 900) + slower
            wrong = rng.random() < 0.1
            other = "i" if trial["correct_key"] == "e" else "e"
            trials.append({"index": trial["index"], "stimulus": trial["stimulus"],
                           "first_key": other if wrong else trial["correct_key"], "modality": "keyboard",
                           "latency_first_ms": first,
                           "latency_correct_ms": first + (rng.uniform(200, 600) if wrong else 0)})
        post = {"block": block["number"], "trials": trials}
        assert client.post(base + "iat/block/", post, content_type="application/json").status_code == 200


def test_raw_iat_trials_give_the_d_score_the_browser_gives(in_app_and_imported):
    study, participant = in_app_and_imported
    client = Client()
    take_questionnaires_in_the_browser(client, participant)
    take_the_iat_in_the_browser(client, participant)
    in_app = IATSession.objects.get(participant=participant)
    assert in_app.d_score is not None and in_app.completed_at is not None
    content = export_as_file(study_iat_trials_export(study=study), rename={participant.pseudonym: "A1"})
    annotator_import = annotator_import_submit(study=study, kind="iat", filename="trials.csv", content=content)
    imported = IATSession.objects.get(participant__pseudonym="A1")
    fields = ("d_score", "d_practice", "d_test", "d600_score", "error_rate", "fast_fraction", "flagged_fast",
              "n_dropped_slow")
    assert [getattr(imported, f) for f in fields] == [getattr(in_app, f) for f in fields]
    assert imported.source_import == annotator_import and annotator_import.counts == {"iat": 1, "trials": 200}
    assert list(IATTrial.objects.filter(participant__pseudonym="A1").values_list("stimulus", "pairing", "error")) == \
        list(IATTrial.objects.filter(participant=participant).values_list("stimulus", "pairing", "error"))
    # The imported annotator's D enters the analysis as the app's does.
    study_analysis_compute(study_id=study.id)
    assert ParticipantWeight.objects.get(participant__pseudonym="A1").iat_d == in_app.d_score


def test_trials_without_a_pairing_column_take_the_order_given_and_without_first_latencies_skip_d600(imported_study):
    rng = random.Random(5)
    rows = []
    for block in range(1, 8):
        for trial in range(20):
            latency = rng.uniform(400, 800) + (150 if block in (6, 7) else 0)
            rows.append(["A1", block, trial, int(rng.random() < 0.1), round(latency, 1)])
    content = csv_bytes(["subject", "blocknum", "trialnum", "correct_error", "latency"], rows)
    mapping = {"annotator": "subject", "error": "correct_error"}
    assert problems(imported_study, content, kind="iat", columns=mapping) == [
        "row 1: no pairing column: add one (consistent / inconsistent for blocks 3, 4, 6 and 7), or say whether "
        "blocks 3–4 had the consistent pairing (option consistent_first)"]
    annotator_import = annotator_import_submit(study=imported_study, kind="iat", filename="inquisit.csv",
                                               content=content,
                                               options={"columns": mapping, "consistent_first": True})
    session = IATSession.objects.get()
    assert session.d_score > 0 and session.d600_score is None
    # The first key's latency is unknown, not a copy of the correct key's.
    assert set(IATTrial.objects.values_list("latency_first_ms", flat=True)) == {None}
    assert set(IATTrial.objects.filter(block=3).values_list("pairing", flat=True)) == {"consistent"}
    assert "No latency_first_ms column" in annotator_import.warnings[-1]


def test_a_bad_trials_file_imports_nothing_and_names_each_problem(imported_study):
    header = ["annotator", "block", "trial", "pairing", "error", "latency_first_ms", "latency_correct_ms"]
    good = [["A1", block, 0, "consistent" if block in (3, 4) else "inconsistent" if block in (6, 7) else "", 0, 500,
             500] for block in range(1, 8)]
    rows = [*good, ["A1", 3, 0, "consistent", 0, 510, 510], ["A1", 8, 1, "", 0, 500, 500],
            ["A1", 4, 2, "sideways", "x", 700, 600], ["A2", 3, 0, "consistent", 0, 500, 500]]
    assert problems(imported_study, csv_bytes(header, rows), kind="iat") == [
        "row 9, column 'trial': annotator 'A1' has block 3 trial 0 twice (first on row 4)",
        "row 10, column 'block': block 8 is not one of 1–7",
        "row 11, column 'error': error: 'x' is not 0 / 1 (or true / false)",
        "row 11, column 'latency_first_ms': the first key cannot come after the correct key",
        "row 11, column 'pairing': block 4 is a combined block: its pairing must be 'consistent' or 'inconsistent', "
        "not 'sideways'",
        "row 2, column 'block': annotator 'A1': no D score can be computed from these trials (blocks 3 and 6, or 4 "
        "and 7, need trials of both pairings under 10,000 ms with latencies that vary)",
        "row 12, column 'block': annotator 'A2': no D score can be computed from these trials (blocks 3 and 6, or 4 "
        "and 7, need trials of both pairings under 10,000 ms with latencies that vary)",
    ]


# --------------------------------------------------------------------- imported scores and the participant flow


def test_an_imported_score_is_a_finished_questionnaire_the_flow_does_not_ask_again(in_app_and_imported):
    from annotation.participation import next_step

    study, participant = in_app_and_imported
    annotator_import = annotator_import_submit(
        study=study, kind="scores", filename="scores.csv",
        content=csv_bytes(["annotator", "aq"], [[participant.pseudonym, 36]]))
    client = Client()
    base = f"/p/{participant.invite_token}/"
    assert client.post(base + "consent/", {"consent": "yes"}).status_code == 302
    participant.refresh_from_db()
    sata = Instrument.objects.get(slug="sata_partial")
    assert next_step(participant).instrument_id == sata.pk, "the AQ is not asked again; the SATA is next"
    # Even a post to the AQ's page (the flow is at a questionnaire step) leaves the imported score as it was.
    aq = Instrument.objects.get(slug="aq50")
    client.post(f"{base}questionnaire/{aq.pk}/", {"item-1": 0})
    score = InstrumentScore.objects.get(participant=participant, instrument=aq)
    assert (score.total, score.source_import) == (36, annotator_import)
    assert not InstrumentResponse.objects.filter(participant=participant, instrument=aq).exists()
    annotator_import.delete()
    participant.refresh_from_db()
    assert next_step(participant).instrument_id == aq.pk, "deleting the import asks for the AQ again"


def test_a_score_the_app_writes_is_its_own_and_outlives_an_import(in_app_and_imported):
    """A score written by questionnaire_finish drops any import's mark (as an import stored before imported
    scores had a finished questionnaire could have left), so deleting that import keeps the in-app score."""
    from psychometrics.services import answer_save, questionnaire_finish

    study, participant = in_app_and_imported
    annotator_import = annotator_import_submit(
        study=study, kind="scores", filename="scores.csv",
        content=csv_bytes(["annotator", "aq"], [[participant.pseudonym, 36]]))
    aq = Instrument.objects.get(slug="aq50")
    QuestionnaireSession.objects.filter(participant=participant, instrument=aq).delete()   # the state before
    for number in aq.parsed.item_numbers:
        answer_save(participant=participant, instrument=aq, item_number=number, response_index=0)
    score = questionnaire_finish(participant=participant, instrument=aq)
    assert score.source_import is None
    annotator_import.delete()
    assert InstrumentScore.objects.get(participant=participant, instrument=aq).pk == score.pk


# ------------------------------------------------------------------------------------------------------ teams


def test_a_team_is_set_only_for_annotators_in_the_default_team_and_the_change_is_recorded(imported_study):
    Participant.objects.filter(study=imported_study, pseudonym="A1").update(team="x")
    content = csv_bytes(["annotator", "team", "aq"], [["A1", "t", 30], ["A2", "t", 20]])
    assert problems(imported_study, content) == [
        "row 2, column 'team': annotator 'A1' is in team 'x', not 't': the weights are normalised within a team "
        "(seed 000 eq. 5), so change the annotator's team in the admin first if the file is right"]
    annotator_import = annotator_import_submit(
        study=imported_study, kind="scores", filename="s.csv",
        content=csv_bytes(["annotator", "team", "aq"], [["A1", "x", 30], ["A2", "t", 20], ["A3", "", 25]]))
    assert annotator_import.team_changes == {"A2": {"from": "default", "to": "t"}}
    teams = dict(Participant.objects.filter(study=imported_study).values_list("pseudonym", "team"))
    assert teams == {"A1": "x", "A2": "t", "A3": "default"}


def test_a_score_given_by_a_formula_without_its_computed_value_is_a_problem(imported_study):
    from openpyxl import Workbook


    workbook = Workbook()
    workbook.active.append(["annotator", "aq", "sata"])
    workbook.active.append(["A1", "=10+5", 12])
    buffer = io.BytesIO()
    workbook.save(buffer)
    with pytest.raises(ItemFileError) as caught:
        annotator_import_submit(study=imported_study, kind="scores", filename="s.xlsx", content=buffer.getvalue())
    assert [str(p) for p in caught.value.problems] == [
        "row 2, column 'aq': cell B2 holds the formula =10+5 with no computed value saved in the file: open and save "
        "the workbook in a spreadsheet application (which computes it), or write the value itself"]
    assert not InstrumentScore.objects.exists()


def test_a_workbook_inflating_to_a_million_empty_rows_is_refused_without_reading_them(imported_study, inflated):
    from tests.xlsx_files import empty_rows_xlsx

    content = empty_rows_xlsx(1_000_000)   # 6 MB of <row/> in 10 KB: under the 16 MB an annotator file may hold
    inflated.clear()
    with pytest.raises(ItemFileError) as caught:
        annotator_import_submit(study=imported_study, kind="scores", filename="s.xlsx", content=content)
    [problem] = caught.value.problems
    assert problem.message.startswith("the first sheet ('Sheet') (xl/worksheets/sheet1.xml) inflates from ")
    assert "may inflate at most 100 times" in problem.message
    assert sum(inflated) < 10_000
    assert not AnnotatorImport.objects.exists() and not InstrumentScore.objects.exists()


def test_columns_that_differ_only_in_case_or_spaces_are_a_header_problem_naming_both(imported_study):
    content = csv_bytes(["annotator", "AQ", "aq", "Sata Total", "sata_total"], [["A1", 20, 30, 10, 11]])
    assert problems(imported_study, content) == [
        "row 1, column 'aq': the columns 'AQ' and 'aq' differ only in case, spaces or hyphens, so they cannot be "
        "told apart: rename or delete one",
        "row 1, column 'sata_total': the columns 'Sata Total' and 'sata_total' differ only in case, spaces or "
        "hyphens, so they cannot be told apart: rename or delete one"]
