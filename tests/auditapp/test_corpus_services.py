"""Corpora stored once with their provenance: the paper's BITS corpus, a researcher's spec, an upload in the
public repository's shape with its recorded scorers; every problem named and nothing stored."""
import hashlib
import json
import math

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import override_settings

from auditapp.corpora import RecordedColumn, units_hash
from auditapp.corpus_services import CorpusError, corpus_store, corpus_units_frame, recorded_scores_frame
from auditapp.engine.protocol import Unit
from auditapp.models import Corpus, CorpusUnit, RecordedScore, RecordedScorer
from auditapp.paradigms.bits.corpora import bits_corpus_generate, bits_corpus_upload
from auditapp.paradigms.bits.corpus import PAPER_TABLES, corpus_counts, corpus_frame, generate, paper_spec
from auditapp.paradigms.bits.units import sentence_units
from tests.auditapp.bits_upload_files import PERTURBED_ROWS, public_shape_files

pytestmark = pytest.mark.django_db


def paper_tables() -> dict:
    """Seed 001's tables in the JSON shape the API takes (``seed001_tables.json``)."""
    return json.loads(PAPER_TABLES.read_text(encoding="utf-8"))


def uploads(fmt: str = "csv", **kwargs):
    (p_name, p_bytes), (c_name, c_bytes) = public_shape_files(fmt=fmt, **kwargs)
    return SimpleUploadedFile(p_name, p_bytes), SimpleUploadedFile(c_name, c_bytes)


def test_the_paper_corpus_is_stored_with_the_counts_of_its_tables(django_assert_max_num_queries):
    sentences = generate(paper_spec())
    expected = corpus_counts(sentences)
    # 2,310 units in bulk INSERTs: two on PostgreSQL (batches of 2,000), about 15 on SQLite (which caps a
    # statement at 999 parameters); never one per unit.
    with django_assert_max_num_queries(30):
        corpus = bits_corpus_generate(spec=None, name="BITS (seed 001)")
    assert corpus.reused is False
    assert corpus.paradigm == "bits" and corpus.n_units == len(sentences) == 2310
    assert corpus.content_hash == units_hash(sentence_units(sentences))
    counts = corpus.provenance["counts"]
    assert counts["total"] == expected.loc["total", "total"] == 2310
    assert counts["controls"] == expected.loc["total", "control"] == 110
    assert counts["per_template"] == {t: int(n) for t, n in expected["total"].drop("total").items()}
    assert counts["per_group"] == {g: int(n) for g, n in expected.loc["total"].drop("total").items()}
    assert counts["per_template_group"]["T6"]["PWD:SD"] == expected.loc["T6", "PWD:SD"]
    assert corpus.provenance["paper_tables"] is True
    assert corpus.provenance["spec_hash"] == paper_spec().content_hash()
    assert corpus.provenance["spec"] == paper_spec().to_dict()

    frame = corpus_units_frame(corpus)
    reference = corpus_frame(sentences)
    assert list(frame.columns) == ["key", "text", "template", "emotion", "word", "group", "term", "is_control",
                                   "fields", "pair"]
    assert frame["key"].tolist() == reference["key"].tolist()
    assert frame["text"].tolist() == reference["text"].tolist()
    assert frame["group"].tolist() == reference["group"].tolist()
    assert frame["term"].tolist() == reference["term"].fillna("").tolist()
    assert [f["control"] for f in frame["fields"]] == reference["control_key"].replace({math.nan: None}).tolist()


def test_an_identical_corpus_is_reused_not_stored_twice():
    first = bits_corpus_generate(spec=None, name="BITS")
    again = bits_corpus_generate(spec=paper_tables(), name="another name")
    assert again.pk == first.pk and again.reused is True and again.name == "BITS"
    assert Corpus.objects.count() == 1 and CorpusUnit.objects.count() == 2310


def test_a_researchers_spec_is_a_new_corpus_with_its_provenance():
    spec = {**paper_tables(), "groups": [{"group": "Mine", "terms": ["tall", "short"]}]}
    corpus = bits_corpus_generate(spec=spec, name="mine")
    assert corpus.provenance["paper_tables"] is False
    assert corpus.provenance["counts"]["per_group"] == {"control": 110, "Mine": 220}
    assert corpus.n_units == 330


def test_a_bad_spec_names_every_problem_and_stores_nothing():
    spec = paper_tables()
    spec["templates"] = [{"id": "T1", "text": "No slot here."}, {"id": "T1", "text": "A <group> <colour>."}]
    spec["groups"] = [{"group": "control", "terms": ["x"]}]
    spec["term_case"] = "upper"
    with pytest.raises(CorpusError) as error:
        bits_corpus_generate(spec=spec, name="bad")
    assert [str(p) for p in error.value.problems] == [
        "spec: term_case: 'upper' is not one of lower, as_printed",
        "spec: templates[0] (T1): needs exactly one <group> slot, has 0",
        "spec: templates[1] (T1): the id 'T1' is used twice",
        "spec: templates[1] (T1): unknown slot(s) <colour>; the slots are <group>, <emotional word>, <event word>",
        "spec: groups[0] (control): 'control' is reserved for the no-group control sentences",
    ]
    with pytest.raises(CorpusError, match="spec: not a BITS spec"):
        bits_corpus_generate(spec={"templates": []}, name="bad")
    assert not Corpus.objects.exists() and not CorpusUnit.objects.exists()


def test_corpus_store_refuses_bad_units_and_names():
    with pytest.raises(CorpusError) as error:
        corpus_store(paradigm="nope", name="", units=[Unit(key="a", text="x"), Unit(key="a", text="y")],
                     provenance={})
    assert [str(p) for p in error.value.problems] == [
        "paradigm: unknown paradigm 'nope'", "name: the corpus needs a name", "unit 2 ('a'): the same key as unit 1"]
    assert not Corpus.objects.exists()


@pytest.mark.parametrize("fmt", ["csv", "xlsx", "jsonl"])
def test_an_upload_in_the_public_shape_is_stored_with_its_recorded_scorers(fmt):
    # The hash is of the very bytes uploaded: a workbook built twice differs in its save time.
    (p_name, p_bytes), (c_name, c_bytes) = public_shape_files(fmt=fmt)
    corpus = bits_corpus_upload(perturbed_file=SimpleUploadedFile(p_name, p_bytes),
                                control_file=SimpleUploadedFile(c_name, c_bytes), name="BITS upload")
    assert corpus.n_units == 6
    files = corpus.provenance["files"]
    assert files["perturbed"]["file"] == p_name
    assert files["perturbed"]["sha256"] == hashlib.sha256(p_bytes).hexdigest()
    assert files["control"]["file"] == f"Standard_Corpus.{fmt}"
    # T1's three sentences find "They are parents of a child.", T6's "They were vexing because of the neighbour.".
    rules = {rule["rule"]: rule["n"] for rule in corpus.provenance["summary"]["pairing"]["rules"]}
    assert rules == {"control column": 0, "exact": 4, "typo": 0, "position": 0, "unpaired": 0}
    assert corpus.provenance["warnings"] == ["the control file has no Google scores: its pairs' ScoreSense is "
                                             "undefined"]

    scorers = list(corpus.recorded_scorers.order_by("name"))
    assert [s.name for s in scorers] == ["Google", "TextBlob", "VADER"]
    google = scorers[0]
    assert google.provenance == {"imported": True, "column": "Google",
                                 "files": [{"file": p_name, "sha256": hashlib.sha256(p_bytes).hexdigest()}]}
    assert [f["file"] for f in scorers[2].provenance["files"]] == [p_name, f"Standard_Corpus.{fmt}"]

    scores = recorded_scores_frame(scorers)
    assert list(scores.columns) == ["scorer", "key", "value", "reason"]
    assert len(scores) == 3 * 6
    vader = scores[scores["scorer"] == "VADER"].set_index("key")
    assert vader.loc["T6|They were vexing because of the Deaf neighbour.", "value"] == -0.6
    assert vader.loc["T6|control|They were vexing because of the neighbour.", "value"] == -0.4
    by_key = scores[scores["scorer"] == "Google"].set_index("key")
    # An empty cell and a file without the column are both missing, each with its reason; never zero.
    blind = by_key.loc["T1|They are parents of a Blind child."]
    assert math.isnan(blind["value"]) and blind["reason"] == "empty cell in the file"
    assert by_key.loc["T1|control|They are parents of a child.", "reason"] == (
        "the control file has no column 'Google'")
    assert by_key.loc["T1|They are parents of an Autistic child.", "value"] == 0.2

    frame = corpus_units_frame(corpus).set_index("key")
    assert frame.loc["T1|They are parents of a Tall child.", "group"] == "Normal"
    # The row as the file numbers it: a spreadsheet's header is row 1, a JSON Lines file has no header line.
    assert frame.loc["T1|They are parents of a Tall child.", "fields"] == {
        "control": "T1|control|They are parents of a child.", "row": 4 if fmt == "jsonl" else 5, "pairing": "exact"}


def test_the_same_upload_twice_is_one_corpus_and_a_column_with_other_scores_is_refused():
    first = bits_corpus_upload(perturbed_file=uploads()[0], control_file=uploads()[1], name="one")
    again = bits_corpus_upload(perturbed_file=uploads()[0], control_file=uploads()[1], name="two")
    assert again.pk == first.pk and again.reused
    # The same scores saved as a workbook (another file, another sha256): the same columns, nothing added.
    workbook = bits_corpus_upload(perturbed_file=uploads("xlsx")[0], control_file=uploads("xlsx")[1], name="three")
    assert workbook.pk == first.pk
    assert RecordedScorer.objects.count() == 3 and RecordedScore.objects.count() == 18
    # VADER's score of one sentence changed: the column is refused, naming it and how many units differ.
    rows = [list(row) for row in PERTURBED_ROWS]
    rows[0][7] = "-0.5"
    with pytest.raises(CorpusError, match=r"recorded scorer 'VADER': .* other scores \(1 unit\(s\) differ\)"):
        bits_corpus_upload(perturbed_file=uploads(perturbed_rows=rows)[0], control_file=uploads()[1], name="four")
    assert RecordedScorer.objects.count() == 3 and Corpus.objects.count() == 1
    assert RecordedScore.objects.filter(scorer__name="VADER", unit__key__contains="Blind").get().value == -0.4


def test_a_bad_row_names_file_row_and_column_and_nothing_is_stored():
    rows = [*PERTURBED_ROWS,
            ["4", "T1", "They are parents of a Short child.", "Neutral", "Normal", "Short", "0.0", "high", ""],
            ["5", "", "They are parents of a Lame child.", "Neutral", "Disable", "Lame", "0.0", "0.0", ""]]
    perturbed, control = uploads(perturbed_rows=rows)
    with pytest.raises(CorpusError) as error:
        bits_corpus_upload(perturbed_file=perturbed, control_file=control, name="bad")
    assert [p.as_dict() for p in error.value.problems] == [
        {"file": "Disability_Corpus.csv", "row": 6, "column": "VADER",
         "message": "a score must be a finite number, not 'high'"},
        {"file": "Disability_Corpus.csv", "row": 7, "column": "Template", "message": "empty"},
    ]
    assert not Corpus.objects.exists() and not RecordedScore.objects.exists()


def test_unreadable_files_are_named_each():
    perturbed = SimpleUploadedFile("corpus.json", b"{}")
    control = SimpleUploadedFile("controls.csv", b"Template,Sentence\nT1,\"a,b\nT2")
    with pytest.raises(CorpusError) as error:
        bits_corpus_upload(perturbed_file=perturbed, control_file=control, name="bad")
    messages = [str(p) for p in error.value.problems]
    assert messages[0].startswith("corpus.json: unknown file type '.json'")
    assert messages[1].startswith("controls.csv, row 2: malformed CSV")


@override_settings(CORPUS_UPLOAD_MAX_BYTES=100)
def test_an_upload_larger_than_the_bound_is_refused_before_reading():
    perturbed, control = uploads()
    with pytest.raises(CorpusError) as error:
        bits_corpus_upload(perturbed_file=perturbed, control_file=control, name="big")
    assert str(error.value.problems[0]) == (
        f"Disability_Corpus.csv: the file is {perturbed.size:,} bytes; at most 100 are read (CORPUS_UPLOAD_MAX_BYTES)")
    assert not Corpus.objects.exists()


@override_settings(CORPUS_UPLOAD_MAX_BYTES=20_000)
def test_a_workbook_is_bounded_by_what_it_inflates_to():
    rows = [[str(n), "T1", f"They are parents of a Tall{n} child.", "Neutral", "Normal", f"Tall{n}", "0", "0", ""]
            for n in range(400)]
    perturbed, control = uploads("xlsx", perturbed_rows=rows)
    assert perturbed.size < 20_000
    with pytest.raises(CorpusError, match="bytes to read; at most 20,000 are read"):
        bits_corpus_upload(perturbed_file=perturbed, control_file=control, name="big")


def test_a_workbook_inflating_to_a_million_empty_rows_is_refused_without_reading_them(inflated):
    from tests.xlsx_files import empty_rows_xlsx

    _, control = uploads("xlsx")
    perturbed = SimpleUploadedFile("Disability_Corpus.xlsx", empty_rows_xlsx(1_000_000))   # 6 MB of <row/>
    inflated.clear()
    with pytest.raises(CorpusError) as error:
        bits_corpus_upload(perturbed_file=perturbed, control_file=control, name="empty rows")
    message = str(error.value.problems[0])
    assert message.startswith("Disability_Corpus.xlsx: the first sheet ('Sheet') (xl/worksheets/sheet1.xml) "
                              "inflates from ")
    assert "may inflate at most 100 times" in message
    assert sum(inflated) < 20_000   # the sizes of the two files' parts, and the control file read in full
    assert not Corpus.objects.exists()


def test_recorded_columns_with_unknown_units_are_refused():
    units = [Unit(key="a", text="x", factors={"g": "1"})]
    with pytest.raises(CorpusError, match="scores 'b', which is not a unit"):
        corpus_store(paradigm="bits", name="n", units=units, provenance={},
                     recorded=[RecordedColumn(name="tool", scores=(("b", 1.0, ""),))])
    assert not Corpus.objects.exists()
