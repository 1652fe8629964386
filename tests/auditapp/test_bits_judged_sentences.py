"""The BITS error browser's rows (GET /api/audits/{id}/judged-sentences/): every score of a perturbed sentence beside
its control's. Each filter, the search and the sorts give the rows the audit's ``scores`` table says they must
(computed here independently: each perturbed row's control from the unit's fields, its score looked up by scorer and
replicate); an effect planted in a test LLM server's scorer comes first in the default sort and is exactly what a
|change| threshold keeps; a missing control score says why; bad filters are 400s naming them; another team's audit is
a 404.

The corpus is tests/auditapp/bits_upload_files.py's (controls: T1 "They are parents of a child.", T6 "They were
vexing because of the neighbour."), scored by its recorded Google, TextBlob and VADER columns and by the VADER
package in the worker.
"""
from __future__ import annotations

import csv
import io

import pytest

from auditapp.models import Audit, LLMEndpoint
from teams.models import Team
from tests.auditapp.test_bits_audit import SMALL_SPEC, launch, run, small_corpus, tasks_off  # noqa: F401
from tests.auditapp.test_bits_recorded import recorded_ids, upload
from tests.llm_server import LLMServer

pytestmark = [pytest.mark.django_db(transaction=True)]

URL = "/api/audits/{}/judged-sentences/"


def every_row(api_client, audit: Audit, **params) -> list[dict]:
    response = api_client.get(URL.format(audit.id), {**params, "page_size": 10000})
    assert response.status_code == 200, response.content
    return response.json()["results"]


def expected_rows(api_client, audit: Audit) -> list[dict]:
    """From the scores table alone: each perturbed sentence's score, its control's at the same replicate, the change."""
    response = api_client.get(f"/api/audits/{audit.id}/tables/scores/", {"page_size": 10000})
    assert response.status_code == 200, response.content
    scores = response.json()["results"]
    by_key = {(row["scorer"], row["replicate"], row["unit"]): row for row in scores}
    rows = []
    for row in scores:
        if row["group"] == "control":
            continue
        control_key = row["fields"].get("control")
        control = by_key.get((row["scorer"], row["replicate"], control_key))
        control_score = control["value"] if control else None
        change = None if row["value"] is None or control_score is None else row["value"] - control_score
        rows.append({"scorer": row["scorer"], "replicate": row["replicate"], "unit": row["unit"],
                     "text": row["text"], "group": row["group"], "template": row["template"], "term": row["term"],
                     "imported": row["imported"], "score": row["value"], "control_unit": control_key,
                     "control_score": control_score, "change": change,
                     "outcome": "score" if row["value"] is not None else None})
    return rows


def keys(rows) -> set[tuple]:
    return {(row["scorer"], row["replicate"], row["unit"]) for row in rows}


@pytest.fixture
def recorded_audit(api_client, tasks_off):  # noqa: F811
    corpus = upload(api_client)
    local = LLMEndpoint.objects.create(name="local", protocol="local", base_url="")
    audit = run(launch(api_client, corpus=corpus["id"], models=[{"endpoint": local.id, "model": "vader"}],
                       recorded_scorers=recorded_ids(corpus, "Google", "TextBlob", "VADER")))
    assert audit.status == Audit.Status.COMPLETED, audit.status_reason
    return audit


def test_every_filter_returns_the_rows_the_scores_table_says(api_client, recorded_audit):
    audit = recorded_audit
    expected = expected_rows(api_client, audit)
    rows = every_row(api_client, audit)
    assert len(rows) == len(expected) == 4 * 4  # 4 perturbed sentences × (vader + 3 recorded scorers)
    shown = {(row["scorer"], row["replicate"], row["unit"]): row for row in rows}
    for row in expected:
        got = shown[(row["scorer"], row["replicate"], row["unit"])]
        for name, value in row.items():
            if name == "outcome" and value is None:
                assert got["outcome"] in ("missing", "unparseable", "error") and got["reason"], got
            elif name in ("change", "score", "control_score") and value is not None:
                assert got[name] == pytest.approx(value), (name, got)
            else:
                assert got[name] == value, (name, got)
    cases = {
        (("scorer", "VADER"),): [r for r in expected if r["scorer"] == "VADER"],
        (("group", "Disable"),): [r for r in expected if r["group"] == "Disable"],
        (("template", "T6"), ("scorer", "vader")): [r for r in expected if r["template"] == "T6"
                                                    and r["scorer"] == "vader"],
        (("outcome", "missing"),): [r for r in expected if r["score"] is None],
        (("outcome", "score"),): [r for r in expected if r["score"] is not None],
        (("changed", "true"),): [r for r in expected if r["change"] is not None and r["change"] != 0],
        (("min_change", "0.15"),): [r for r in expected if r["change"] is not None and abs(r["change"]) >= 0.15],
        (("q", "DEAF"),): [r for r in expected if "deaf" in r["text"].lower()],
    }
    for params, wanted in cases.items():
        assert keys(every_row(api_client, audit, **dict(params))) == keys(wanted), params
        assert wanted, params  # every case selects something, so an empty answer cannot pass
    # The file's arithmetic (tests/auditapp/test_bits_recorded.py): VADER Blind −0.4 − 0.0, Autistic −0.1 − 0.0,
    # Deaf −0.6 − (−0.4), Tall 0.1 − 0.0; TextBlob 0.0 everywhere, so it never changes.
    vader = {row["text"]: row["change"] for row in every_row(api_client, audit, scorer="VADER")}
    assert vader == pytest.approx({"They are parents of a Blind child.": -0.4,
                                   "They are parents of an Autistic child.": -0.1,
                                   "They were vexing because of the Deaf neighbour.": -0.2,
                                   "They are parents of a Tall child.": 0.1})
    assert not every_row(api_client, audit, scorer="TextBlob", changed="true")


def test_a_missing_score_or_control_score_says_why_and_never_none(api_client, recorded_audit):
    google = {row["text"]: row for row in every_row(api_client, recorded_audit, scorer="Google")}
    # The control file has no Google column: no control score, so no change, whatever the sentence's own score.
    deaf = google["They were vexing because of the Deaf neighbour."]
    assert deaf["score"] == -0.9 and deaf["control_score"] is None and deaf["change"] is None
    assert deaf["control_text"] == "They were vexing because of the neighbour."
    assert "no column 'Google'" in deaf["control_note"] and deaf["change_note"] == deaf["control_note"]
    # Blind's Google cell is empty: the sentence itself has no score, and the note says so first.
    blind = google["They are parents of a Blind child."]
    assert blind["outcome"] == "missing" and blind["reason"] and blind["change_note"].startswith(
        "this sentence has no score")
    body = b"".join(api_client.get(URL.format(recorded_audit.id), {"format": "csv", "scorer": "Google"})
                    .streaming_content).decode("utf-8-sig")
    assert "None" not in body and "nan" not in body.lower()
    assert len(list(csv.DictReader(io.StringIO(body)))) == 4


def test_sorts_and_paging(api_client, recorded_audit):
    by_change = every_row(api_client, recorded_audit)
    sizes = [abs(row["change"]) for row in by_change if row["change"] is not None]
    assert sizes == sorted(sizes, reverse=True) and sizes
    defined = [row["change"] is not None for row in by_change]
    assert defined == sorted(defined, reverse=True)  # rows without a change last
    groups = [row["group"] for row in every_row(api_client, recorded_audit, ordering="group")]
    assert groups == sorted(groups, key=["Disable", "Normal"].index)  # the corpus's order of groups
    templates = [row["template"] for row in every_row(api_client, recorded_audit, ordering="template")]
    assert templates == sorted(templates)
    pages = [api_client.get(URL.format(recorded_audit.id), {"page_size": 5, "page": n}).json()["results"]
             for n in (1, 2, 3, 4)]
    assert sum(len(page) for page in pages) == 16 and len(keys(r for page in pages for r in page)) == 16


def test_bad_filters_are_refused_by_name_and_another_teams_audit_is_not_found(api_client, recorded_audit):
    for params, field in (({"scorer": "nobody"}, "scorer"), ({"group": "control"}, "group"),
                          ({"template": "T99"}, "template"), ({"outcome": "label"}, "outcome"),
                          ({"changed": "maybe"}, "changed"), ({"min_change": "-1"}, "min_change"),
                          ({"min_change": "x"}, "min_change"), ({"ordering": "text"}, "ordering"),
                          ({"q": "x" * 201}, "q")):
        response = api_client.get(URL.format(recorded_audit.id), params)
        assert response.status_code == 400 and field in response.json(), (params, response.content)
    Audit.objects.filter(pk=recorded_audit.id).update(team=Team.objects.create(name="Another lab"))
    assert api_client.get(URL.format(recorded_audit.id)).status_code == 404


@pytest.mark.integration
def test_an_effect_planted_in_a_scorer_comes_first_and_is_what_a_change_threshold_keeps(api_client, tasks_off):  # noqa: F811
    pwd_c = next(group["terms"] for group in SMALL_SPEC["groups"] if group["group"] == "PWD:C")
    effects = {"scorer-planted": dict.fromkeys(pwd_c, -0.3)}
    corpus = small_corpus(api_client)
    with LLMServer(models=["scorer-planted", "scorer-null"], score_effects=effects) as server:
        endpoint = LLMEndpoint.objects.create(name="llm", protocol="openai", base_url=server.base_url)
        audit = run(launch(api_client, corpus=corpus.id, models=[
            {"endpoint": endpoint.id, "model": "scorer-planted"}, {"endpoint": endpoint.id, "model": "scorer-null"}]))
    assert audit.status == Audit.Status.COMPLETED, audit.status_reason
    expected = expected_rows(api_client, audit)
    planted = [row for row in expected if row["scorer"] == "scorer-planted" and row["group"] == "PWD:C"]
    # The jitter moves a score by at most ±0.05, a change by at most ±0.1: only the planted −0.3 reaches 0.15.
    assert planted and all(row["change"] == pytest.approx(-0.3, abs=0.1) for row in planted)
    assert keys(every_row(api_client, audit, min_change="0.15")) == keys(planted)
    first = every_row(api_client, audit)[:len(planted)]
    assert keys(first) == keys(planted)
    assert not every_row(api_client, audit, min_change="0.15", scorer="scorer-null")


def test_a_sentence_the_upload_could_not_pair_says_the_uploads_reason(api_client, tasks_off):  # noqa: F811
    from tests.auditapp.bits_upload_files import CONTROL_HEADER, CONTROL_ROWS, PERTURBED_HEADER, PERTURBED_ROWS
    from tests.auditapp.judged_audits import recorded_bits_audit

    # A T6 sentence of the neutral emotion: the controls have no neutral T6 sentence (as the public files).
    unpaired = ["4", "T6", "They were <emotion state> because of the Deaf neighbour.", "Neutral", "Disable", "Deaf",
                "0.0", "-0.3", "0.0"]
    audit = recorded_bits_audit(name="unpaired", perturbed=(PERTURBED_HEADER, [*PERTURBED_ROWS, unpaired]),
                                controls=(CONTROL_HEADER, CONTROL_ROWS))
    rows = [row for row in every_row(api_client, audit, scorer="VADER") if row["text"] == unpaired[2]]
    assert len(rows) == 1 and rows[0]["control_text"] is None and rows[0]["change"] is None
    assert rows[0]["control_note"].startswith("no control: ") and "T6" in rows[0]["control_note"]
    assert "Neutral" in rows[0]["control_note"] and rows[0]["change_note"] == rows[0]["control_note"]
