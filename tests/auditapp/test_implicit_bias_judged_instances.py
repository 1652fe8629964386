"""The seed 003 error browser's rows (GET /api/audits/{id}/judged-instances/), one route for the word association
and the affective attribution audits: one row per model × instance (a two-turn AAT: per conversation, its second
turn with the first turn's description). Each filter, the search and the sorts give the rows the ``replies`` export
says they must (computed here independently: the judged turn's rows, eq. 1's counts from the parse, "consistent"
as seed 003 defines the biased direction); the personas' planted bias is what the consistent filter finds; the
prompt is the one the drill-down shows as sent; bad filters are 400s naming them; another team's audit is a 404.

The audits run in this process against the test LLM server's personas (tests/implicit_bias_personas.py) with
refusals and malformed replies injected, so every outcome has rows.
"""
from __future__ import annotations

import json

import pytest

from auditapp.models import Audit, AuditRequest, LLMEndpoint
from teams.models import Team
from tests.auditapp.test_implicit_bias_audit import MODELS, launch, run, table
from tests.implicit_bias_personas import expected_aat_answer
from tests.llm_server import LLMServer

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.integration]

URL = "/api/audits/{}/judged-instances/"
CONSISTENT = {("S_a", "comedy"), ("S_b", "tragedy")}
"""Seed 003's biased direction in the AAT: the answers FAR (eq. 2) and UAR (eq. 3) count."""


@pytest.fixture(scope="module")
def server():
    with LLMServer(latency=0.0, models=MODELS, fault_rate=0.15, fault_kinds=("refusal", "malformed")) as running:
        yield running


@pytest.fixture
def personas(server) -> LLMEndpoint:
    return LLMEndpoint.objects.create(name="personas", protocol="openai", base_url=server.base_url,
                                      max_concurrency=8, attempt_timeout_s=5, deadline_s=60, max_attempts=1)


def every_row(api_client, audit: Audit, **params) -> list[dict]:
    response = api_client.get(URL.format(audit.id), {**params, "page_size": 10000})
    assert response.status_code == 200, response.content
    return response.json()["results"]


def ids(rows) -> set[int]:
    return {int(row["request_id"] if "request_id" in row else row["request"]) for row in rows}


def wabt_audit(api_client, personas) -> Audit:
    response = launch(api_client, "word_association",
                      [{"endpoint": personas.id, "model": model} for model in ("wabt-consistent", "wabt-neutral")],
                      samples_per_combination=1, seed=11, error_budget=1.0)
    assert response.status_code == 201, response.content
    audit = run(response.json()["id"])
    assert audit.status == Audit.Status.COMPLETED, audit.status_reason
    return audit


def expected_wabt(api_client, audit: Audit) -> list[dict]:
    """From the replies export: each reply, its score and counts (a valid reply's), consistent when above 0."""
    rows = []
    for row in table(api_client, audit.id, "replies").to_dict("records"):
        score = float(row["bias_score"]) if row["bias_score"] else None
        counts = json.loads(row["parse"])["counts"] if row["outcome"] == "score" else {}
        rows.append({"request": int(row["request"]), "model": row["model"], "instance": row["instance"],
                     "condition": row["dimension"], "outcome": row["outcome"], "bias_score": score,
                     "reason": row["reason"], "consistent": None if score is None else score > 0,
                     **{name: counts.get(name) for name in ("n_sa_xa", "n_sa_xb", "n_sb_xa", "n_sb_xb")}})
    return rows


def test_wabt_filters_match_the_replies_export_and_find_the_planted_bias(api_client, personas, audit_tasks_off):
    audit = wabt_audit(api_client, personas)
    expected = expected_wabt(api_client, audit)
    rows = every_row(api_client, audit)
    assert len(rows) == len(expected) == 2 * 90  # 10 combinations × 1 sample × 3 dimensions × 3 templates, 2 models
    shown = {row["request_id"]: row for row in rows}
    for row in expected:
        got = shown[row["request"]]
        for name, value in row.items():
            if name != "request":
                assert got[name] == (pytest.approx(value) if isinstance(value, float) else value), (name, got)
    assert "description" not in rows[0] and "answer" not in rows[0]  # the AAT's columns are not the WABT's
    consistent_model, neutral_model = (audit.models.get(model=name) for name in ("wabt-consistent", "wabt-neutral"))
    cases = {
        (("consistent", "true"),): [r for r in expected if r["consistent"] is True],
        (("consistent", "false"),): [r for r in expected if r["consistent"] is False],
        (("model", neutral_model.id), ("condition", "Morality")): [
            r for r in expected if r["model"] == "wabt-neutral" and r["condition"] == "Morality"],
        **{(("outcome", outcome),): [r for r in expected if r["outcome"] == outcome]
           for outcome in {r["outcome"] for r in expected}},
    }
    assert {r["outcome"] for r in expected} >= {"score", "refusal", "error"}  # the faults injected
    for params, wanted in cases.items():
        assert ids(every_row(api_client, audit, **dict(params))) == ids(wanted), params
        assert wanted, params  # every case selects something, so an empty answer cannot pass
    # The planted bias: every reply of wabt-consistent that was read scores +1, so all of them are consistent; the
    # fair coin of wabt-neutral is consistent about as often as not.
    read = [r for r in expected if r["model"] == "wabt-consistent" and r["outcome"] == "score"]
    found = every_row(api_client, audit, consistent="true", model=consistent_model.id)
    assert ids(found) == ids(read) and all(row["bias_score"] == 1 for row in found) and len(read) > 50
    neutral = [r for r in expected if r["model"] == "wabt-neutral" and r["consistent"] is not None]
    assert 0.2 < sum(r["consistent"] for r in neutral) / len(neutral) < 0.8
    # The prompt is the request's as sent (rebuilt, never stored), and the search reads the reply.
    request = AuditRequest.objects.filter(audit=audit, state="answered").select_related("reply").first()
    detail = api_client.get(f"/api/audits/{audit.id}/requests/{request.id}/").json()
    assert shown[request.id]["prompt"] in json.dumps(detail, ensure_ascii=False)
    assert shown[request.id]["reply"] == request.reply.text
    word = request.reply.text.split()[0]
    assert ids(every_row(api_client, audit, q=word.upper())) == {
        r.id for r in AuditRequest.objects.filter(audit=audit, reply__text__icontains=word)}
    by_score = [row["bias_score"] for row in every_row(api_client, audit, ordering="bias_score")]
    defined = [score for score in by_score if score is not None]
    assert defined == sorted(defined, reverse=True) and by_score[:len(defined)] == defined
    conditions = [row["condition"] for row in every_row(api_client, audit, ordering="condition")]
    assert conditions == sorted(conditions)
    pages = [api_client.get(URL.format(audit.id), {"page_size": 50, "page": n}).json()["results"] for n in (1, 2, 3, 4)]
    assert sum(len(page) for page in pages) == 180 and len(ids(r for page in pages for r in page)) == 180


def test_aat_two_turn_rows_are_conversations_and_the_consistent_filter_finds_the_planted_answers(
        api_client, personas, audit_tasks_off):
    response = launch(api_client, "affective_attribution", [{"endpoint": personas.id, "model": "aat-stereotyped"}],
                      combinations=30, seed=4, error_budget=1.0)
    assert response.status_code == 201, response.content
    audit = run(response.json()["id"])
    assert audit.status == Audit.Status.COMPLETED, audit.status_reason
    replies = table(api_client, audit.id, "replies")
    judged = replies[replies.turn == "1"]
    expected = [{"request": int(row["request"]), "instance": row["instance"], "condition": row["group_label"],
                 "outcome": row["outcome"], "answer": row["answer"] or None, "reason": row["reason"],
                 "consistent": None if not row["answer"] else (row["group_label"], row["answer"]) in CONSISTENT} for row in judged.to_dict("records")]
    rows = every_row(api_client, audit)
    assert len(rows) == len(expected) == 90  # 30 combinations × 3 templates: conversations, not requests
    shown = {row["request_id"]: row for row in rows}
    for row in expected:
        got = shown[row["request"]]
        assert {name: got[name] for name in row if name != "request"} == {
            name: value for name, value in row.items() if name != "request"}
    # A conversation's row shows the description its first turn got and the second question asked after it.
    first_turns = {r.id: r for r in AuditRequest.objects.filter(audit=audit, turn=1).select_related(
        "previous__reply", "reply")}
    for row in rows:
        request = first_turns[row["request_id"]]
        described = request.previous.reply.text if request.previous.reply_id else None
        assert row["description"] == described and "comedy" in row["question"].lower()
        assert row["reply"] == (request.reply.text if request.reply_id else None)
    ended = [row for row in rows if row["outcome"] == "error"]
    assert ended and all(row["reason"] and row["consistent"] is None for row in ended)  # refused descriptions
    # The planted answers (the persona's rule, from each instance's S_e, S_n and template in the export): every
    # answer read is the persona's, and consistent exactly where that answer is comedy for S_a or tragedy for S_b.
    rule = {int(row["request"]): expected_aat_answer("aat-stereotyped", row["s_e"], row["s_n"], int(row["template"]))
            for row in judged.to_dict("records")}
    answered = [r for r in expected if r["answer"] is not None]
    assert answered and all(r["answer"] == rule[r["request"]] for r in answered)
    planted = {r["request"] for r in answered if (r["condition"], rule[r["request"]]) in CONSISTENT}
    assert ids(every_row(api_client, audit, consistent="true")) == planted
    assert ids(every_row(api_client, audit, consistent="false")) == {r["request"] for r in answered} - planted
    assert ids(every_row(api_client, audit, condition="S_b", outcome="label")) == {
        r["request"] for r in expected if r["condition"] == "S_b" and r["outcome"] == "label"}
    answers = [row["answer"] for row in every_row(api_client, audit, ordering="answer")]
    assert answers == sorted(answers, key=lambda answer: ("neutral", "comedy", "tragedy", None).index(answer))


def test_bad_filters_are_refused_by_name_and_another_teams_audit_is_not_found(api_client, personas,
                                                                               audit_tasks_off):
    audit = wabt_audit(api_client, personas)
    other_model = audit.models.order_by("-id").first().id + 1000
    for params, field in (({"model": other_model}, "model"), ({"model": "x"}, "model"),
                          ({"condition": "S_a"}, "condition"), ({"outcome": "maybe"}, "outcome"),
                          ({"consistent": "perhaps"}, "consistent"), ({"ordering": "answer"}, "ordering"),
                          ({"ordering": "text"}, "ordering"), ({"q": "x" * 201}, "q")):
        response = api_client.get(URL.format(audit.id), params)
        assert response.status_code == 400 and field in response.json(), (params, response.content)
    Audit.objects.filter(pk=audit.id).update(team=Team.objects.create(name="Another lab"))
    assert api_client.get(URL.format(audit.id)).status_code == 404
