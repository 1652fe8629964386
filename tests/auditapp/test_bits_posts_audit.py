"""Table 6 from a researcher's own texts (seed 001 §3.1): the upload through ``POST /api/corpora/perturb/`` (a preview
that stores nothing, the store, a bad file named by row and column), an audit of the perturbed corpus by chat
models on the test LLM server, and the dashboard's Table 6 with its per-source breakdown.

The effect planted in ``scorer-planted`` (the PWD:C terms lower a score by 0.3) is found with ``**`` overall and in
each source; nothing else is marked, neither for the planted scorer's other groups nor for ``scorer-null``. Every
mean and t-test equals an independent recomputation from the audit's scores export with scipy.
"""
from __future__ import annotations

import io
import json

import numpy as np
import pytest
from scipy import stats

from auditapp.models import Audit, Corpus, CorpusUnit, LLMEndpoint
from auditapp.paradigms.bits.corpus import paper_spec
from tests.auditapp import bits_posts_files
from tests.auditapp.bits_upload_files import xlsx_bytes
from tests.auditapp.test_bits_audit import launch, run, table, tasks_off  # noqa: F401
from tests.llm_server import LLMServer

pytestmark = [pytest.mark.django_db(transaction=True)]

URL = "/api/corpora/perturb/"


def upload(api_client, content: bytes | None = None, filename: str = "texts.csv", **fields):
    file = io.BytesIO(bits_posts_files.csv_bytes() if content is None else content)
    file.name = filename
    return api_client.post(URL, {"file": file, **fields}, format="multipart")


def test_a_preview_shows_the_first_texts_and_the_rows_left_out_and_stores_nothing(api_client):
    response = upload(api_client, preview="true")
    assert response.status_code == 200, response.content
    body = response.json()
    report = body["report"]
    assert (report["rows"], report["posts"], report["skipped"]) == (43, 40, 3)
    assert report["sentences"] == 40 * 21 and report["per_source"] == {"Reddit": 20, "Twitter": 20}
    assert [row["id"] for row in report["skipped_rows"]] == ["x1", "x2", "x3"]
    assert [row["row"] for row in report["skipped_rows"]] == [42, 43, 44]
    first = body["preview"][0]
    assert first["original"] == bits_posts_files.REDDIT[0]
    assert first["control"] == "Finally got my parking permit approved after six months of paperwork."
    assert {(s["group"], s["text"]) for s in first["sentences"]} >= {
        ("PWD:SD", "Finally got my deaf parking permit approved after six months of paperwork."),
        ("PWD:C", "Finally got my hearing loss parking permit approved after six months of paperwork.")}
    assert body["options"]["target_words"] == ["disability", "disabled"]
    assert [g["group"] for g in body["options"]["groups"]] == [g.name for g in paper_spec().groups]
    assert not Corpus.objects.exists()


def test_a_stored_corpus_keeps_each_texts_source_and_metadata_and_the_rules_it_was_made_by(api_client):
    response = upload(api_client, name="my posts", target_words="disabled")
    assert response.status_code == 201, response.content
    corpus = Corpus.objects.get(pk=response.json()["id"])
    provenance = corpus.provenance
    assert provenance["generator"] == "posts" and provenance["options"]["target_words"] == ["disabled"]
    assert "whole word" in provenance["rules"]
    # "disabled" only: the texts that say only "disability" are left out and named.
    only_disability = [r for r in bits_posts_files.REDDIT + bits_posts_files.TWITTER
                       if "disabled" not in r.lower().split() and "disabled" not in r.lower()]
    assert provenance["report"]["skipped"] == 3 + len(only_disability)
    unit = CorpusUnit.objects.get(corpus=corpus, key="r1|PWD:SD|Deaf")
    assert unit.factors["source"] == "Reddit" and unit.factors["template"] == "r1"
    assert unit.fields["control"] == "r1|control" and unit.fields["post"] == "r1" and "metadata" not in unit.fields
    control = CorpusUnit.objects.get(corpus=corpus, key="r1|control")  # the text's other columns, once
    assert control.fields["metadata"] == {"platform": "Reddit", "date": "2022-01-10"}
    again = upload(api_client, name="my posts", target_words="disabled")
    assert again.status_code == 200 and again.json()["id"] == corpus.id  # the same corpus is stored once


@pytest.mark.parametrize(("content", "fields", "expected"), [
    (b"id,text\nr1,I am disabled\n,disabled people\nr1,disability\n", {},
     [(3, "id", "empty"), (4, "id", "the same id as row 2")]),
    (b"post,body\nr1,I am disabled\n", {}, [(1, "id", None), (1, "text", None)]),
    (b"id,text\nr1,nothing here\n", {}, [(None, None, None)]),
    (b"id,text\nr1,I am disabled\n", {"groups": '[{"group": "control", "terms": ["x"]}]'}, [(None, None, None)]),
    (b"id,text\nr1,I am disabled\n", {"groups": '{"not": "a list"}'}, [(None, None, None)]),
])
def test_a_bad_file_or_bad_options_are_a_400_naming_each_problem_and_nothing_is_stored(api_client, content, fields,
                                                                                        expected):
    response = upload(api_client, content, **{"name": "bad", **fields})
    assert response.status_code == 400, response.content
    problems = [(p["row"], p["column"], p["message"]) for p in response.json()["problems"]]
    assert [(row, column) for row, column, _ in problems] == [(row, column) for row, column, _ in expected]
    for (_, _, message), (_, _, wanted) in zip(problems, expected, strict=True):
        assert wanted is None or message == wanted
    assert not Corpus.objects.exists()


@pytest.mark.parametrize("file_format", ["tsv", "jsonl", "xlsx"])
def test_tsv_json_lines_and_xlsx_give_the_same_corpus_as_csv(api_client, file_format):
    records = bits_posts_files.rows()
    header = list(records[0])
    if file_format == "tsv":
        content = "\n".join(["\t".join(header), *("\t".join(row[h] for h in header) for row in records)]).encode()
    elif file_format == "jsonl":
        content = "\n".join(json.dumps(row) for row in records).encode()
    else:
        content = xlsx_bytes(header, [[row[h] for h in header] for row in records])
    as_csv = upload(api_client, preview="true").json()
    other = upload(api_client, content, filename=f"texts.{file_format}", preview="true")
    assert other.status_code == 200, other.content
    if file_format == "jsonl":  # its rows are its lines: no header line before them
        for entry in [*as_csv["report"]["skipped_rows"], *as_csv["preview"]]:
            entry["row"] -= 1
    assert other.json()["report"] == as_csv["report"] and other.json()["preview"] == as_csv["preview"]


def test_a_name_is_required_to_store(api_client):
    response = upload(api_client)
    assert response.status_code == 400 and "name" in response.json()["detail"]


def independent_table6(scores: list[dict]) -> dict[tuple, tuple[float, float, int]]:
    """(scorer, source or None, group) → (mean score, paired-t p against the control, texts): recomputed from the
    scores export alone. A group's value in a text is the mean of its terms' scores; scipy's ttest_rel."""
    by_unit = {(row["scorer"], row["unit"]): row for row in scores}
    result = {}
    scorers = sorted({row["scorer"] for row in scores})
    for scorer in scorers:
        rows = [row for row in scores if row["scorer"] == scorer]
        for source in (None, "Reddit", "Twitter"):
            inside = [row for row in rows if source is None or row["source"] == source]
            for group in [g.name for g in paper_spec().groups]:
                texts: dict[str, list[float]] = {}
                for row in inside:
                    if row["group"] == group:
                        texts.setdefault(row["fields"]["control"], []).append(row["value"])
                group_values = np.array([np.mean(values) for values in texts.values()])
                control_values = np.array([by_unit[(scorer, control)]["value"] for control in texts])
                mean = float(np.mean([row["value"] for row in inside if row["group"] == group]))
                p = float(stats.ttest_rel(group_values, control_values).pvalue)
                result[(scorer, source, group)] = (mean, p, len(texts))
    return result


@pytest.mark.integration
def test_table_6_finds_the_planted_group_with_two_marks_and_marks_nothing_else(api_client, staff_client, tasks_off):  # noqa: F811
    response = upload(api_client, name="posts")
    assert response.status_code == 201, response.content
    corpus_id = response.json()["id"]
    pwd_c = next(group.terms for group in paper_spec().groups if group.name == "PWD:C")
    effects = {"scorer-planted": dict.fromkeys(pwd_c, -0.3)}
    with LLMServer(models=["scorer-planted", "scorer-null"], score_effects=effects) as server:
        endpoint = LLMEndpoint.objects.create(name="llm", protocol="openai", base_url=server.base_url)
        audit = run(launch(api_client, corpus=corpus_id, models=[
            {"endpoint": endpoint.id, "model": "scorer-planted"}, {"endpoint": endpoint.id, "model": "scorer-null"}]))
    assert audit.status == Audit.Status.COMPLETED, audit.status_reason

    overall = {(row["scorer"], None, row["group"]): row for row in table(api_client, audit.id, "group_means")}
    per_source = {(row["scorer"], row["source"], row["group"]): row
                  for row in table(api_client, audit.id, "source_means")}
    cells = {**overall, **per_source}
    expected = independent_table6(table(api_client, audit.id, "scores"))
    assert set(expected) <= set(cells)
    for key, (mean, p, n_texts) in expected.items():
        cell = cells[key]
        assert cell["mean_score"] == pytest.approx(mean, abs=1e-12), key
        assert cell["p"] == pytest.approx(p, rel=1e-9), key
        assert cell["n_bases"] == n_texts == (40 if key[1] is None else 20), key
    marked = {key for key, cell in cells.items() if cell["mark"]}
    assert marked == {("scorer-planted", source, "PWD:C") for source in (None, "Reddit", "Twitter")}
    assert all(cells[key]["mark"] == "**" for key in marked)
    assert cells[("scorer-planted", None, "PWD:C")]["mean_score"] == pytest.approx(
        cells[("scorer-planted", None, "control")]["mean_score"] - 0.3, abs=0.03)

    page = staff_client.get(f"/audits/{audit.id}/dashboard/")
    assert page.status_code == 200
    html = page.content.decode()
    assert 'id="table-6"' in html and 'id="table-6-source-0"' in html and 'id="table-6-source-1"' in html
    assert 'id="table-9"' not in html  # one row per text: not a table to read
    assert 'id="posts-skipped"' in html and "Non-disabled allies" not in html and ">x3<" in html
    # A sentence's base is the text it came from, named as such in the sentence browser.
    assert '<label for="sentence-template">Text id</label>' in html and 'data-key="template">Text id</th>' in html
    assert "None" not in page.context["data"]["analysis"]["table6"][0]["scorer"]


def test_the_upgrade_analyses_again_a_bits_audit_stored_before_table_6(api_client, tasks_off):  # noqa: F811
    from auditapp import upgrade_steps

    corpus_id = upload(api_client, name="posts").json()["id"]
    local = LLMEndpoint.objects.create(name="local", protocol="local", base_url="")
    audit = run(launch(api_client, corpus=corpus_id, models=[{"endpoint": local.id, "model": "vader"}]))
    assert audit.status == Audit.Status.COMPLETED, audit.status_reason
    assert upgrade_steps.bits_audits_before_table_6() == []
    # As an analysis stored before Table 6 was: no per-source table, no tests beside the group means.
    stored = audit.analysis
    del stored["tables"]["source_means"]
    stored["tables"]["group_means"] = [{k: v for k, v in row.items() if k not in ("p", "mark", "t")}
                                       for row in stored["tables"]["group_means"]]
    Audit.objects.filter(pk=audit.pk).update(analysis=stored)
    assert upgrade_steps.bits_audits_before_table_6() == [audit.id]
    assert upgrade_steps.analyse_again(upgrade_steps.bits_audits_before_table_6()) == "1 audits analysed again"
    again = Audit.objects.get(pk=audit.pk).analysis
    assert again["tables"]["source_means"] and all("mark" in row for row in again["tables"]["group_means"])
    assert upgrade_steps.bits_audits_before_table_6() == []
