"""Word association (WABT) and affective attribution (AAT) audits (seed 003) through the engine in one process
(prepare, send, record, analyse), launched through the API against the test LLM server's implicit bias personas
(tests/implicit_bias_personas.py):

- WABT: ``wabt-consistent`` scores +1 on every valid reply, so Table 4's t and p are undefined (no variance);
  ``wabt-neutral`` has a mean near 0 that is not significant; Table 4 equals scipy recomputed from the exported
  replies, the radar's means equal the replies' means, the replies export equals the stored judgments;
- AAT (single prompt): ``aat-stereotyped`` gives the planted answers, so FAR and UAR equal the persona's;
- AAT (two turns, the default): each instance a conversation of two requests, the persona answering Q2 with its own
  description in the conversation; FAR and UAR are the planted ones, counted over conversations from the second
  turn's answers only; the exports and the drill-down say the turn; a re-run with the cache sends nothing again;
- with refusals injected by the server, a conversation refused at its description ends there (no second turn sent)
  and one described then refused at Q2 are each counted once, under their reasons;
- the launch names every bad field.

The worker path (Celery on Redis, PostgreSQL) is tests/integration/test_implicit_bias_worker.py.
"""
from __future__ import annotations

import csv
import io
import json

import numpy as np
import pandas as pd
import pytest
from scipy import stats as scipy_stats

from auditapp import upgrade_steps
from auditapp.engine import conversations as engine_conversations
from auditapp.engine import planning, preparation, recording, registry
from auditapp.engine import selectors as audit_selectors
from auditapp.engine.protocol import is_multi_turn
from auditapp.models import Audit, AuditJudgment, AuditModel, AuditRequest, Corpus, LLMEndpoint, LLMReply
from tests.auditapp.test_counterfactual_audit import run
from tests.implicit_bias_personas import expected_aat_answer
from tests.llm_server import REFUSAL, LLMServer

pytestmark = [pytest.mark.django_db(transaction=True)]

MODELS = ("wabt-consistent", "wabt-neutral", "aat-stereotyped")


@pytest.fixture(scope="module")
def server():
    with LLMServer(latency=0.0, models=MODELS) as running:
        yield running


def endpoint(server) -> LLMEndpoint:
    return LLMEndpoint.objects.create(name="personas", protocol="openai", base_url=server.base_url,
                                      max_concurrency=8, attempt_timeout_s=5, deadline_s=60, max_attempts=2)


def launch(api_client, paradigm: str, models: list[dict], **body):
    return api_client.post("/api/audits/", {"paradigm": paradigm, "name": paradigm, "models": models, **body},
                           format="json")


def table(api_client, audit_id: int, name: str) -> pd.DataFrame:
    response = api_client.get(f"/api/audits/{audit_id}/tables/{name}/", {"format": "csv"})
    assert response.status_code == 200, response.content
    text = b"".join(response.streaming_content).decode("utf-8-sig")
    return pd.DataFrame(list(csv.DictReader(io.StringIO(text))))


def records(api_client, audit_id: int, name: str) -> pd.DataFrame:
    response = api_client.get(f"/api/audits/{audit_id}/tables/{name}/", {"page_size": 10000})
    assert response.status_code == 200, response.content
    return pd.DataFrame(response.json()["results"])


def test_wabt_audit_gives_the_planted_scores_and_table_4_equals_scipy(api_client, server, audit_tasks_off):
    source = endpoint(server)
    response = launch(api_client, "word_association",
                      [{"endpoint": source.id, "model": model} for model in ("wabt-consistent", "wabt-neutral")],
                      samples_per_combination=5, seed=7)
    assert response.status_code == 201, response.content
    audit = run(response.json()["id"])
    assert audit.status == Audit.Status.COMPLETED, audit.status_reason
    # 10 combinations × 5 samples × 3 dimensions × 3 templates = 450 instances, for each of 2 models.
    assert audit.n_requests == 900 and AuditJudgment.objects.filter(audit=audit).count() == 900
    manifest = audit.manifest
    assert manifest["n_instances"] == 450 and manifest["seed"] == 7
    assert manifest["generation"] == {"samples_per_combination": 5, "word_order": "shuffled",
                                      "dimension_draw": "every"}
    assert manifest["corpus"]["lexicon_hash"] and manifest["corpus"]["templates_hash"]
    assert manifest["instances_by"]["dimension"] == {"Competence": 150, "Sociability": 150, "Morality": 150}

    table4 = records(api_client, audit.id, "table4").set_index(["model", "dimension"])
    for dimension in ("Competence", "Sociability", "Morality"):
        consistent = table4.loc[("wabt-consistent", dimension)]
        assert consistent["mean"] == 1.0 and consistent["n"] == 150
        assert pd.isna(consistent["t"]) and pd.isna(consistent["p"])  # no variance: t undefined, as stats says
        assert "no variance" in consistent["note"]
        neutral = table4.loc[("wabt-neutral", dimension)]
        assert abs(neutral["mean"]) < 0.1 and neutral["p"] > 0.05

    # The replies export is the stored judgments, one row per instance reply with its factors.
    replies = table(api_client, audit.id, "replies")
    assert len(replies) == 900
    stored = pd.DataFrame(list(AuditJudgment.objects.filter(audit=audit).values("request_id", "value", "reason")))
    merged = replies.assign(request=replies.request.astype(int)).merge(stored, left_on="request",
                                                                       right_on="request_id")
    scores = pd.to_numeric(merged.bias_score, errors="coerce")
    assert np.allclose(scores.fillna(9), merged.value.astype(float).fillna(9))
    assert (merged.reason_x.fillna("") == merged.reason_y.fillna("")).all()
    assert {"combination", "dimension", "social_group", "s_a", "s_b", "template", "word_order"} <= set(replies)

    # Table 4 and the radar recomputed from the export with scipy.
    replies["score"] = scores
    for (model, dimension), rows in replies.groupby(["model", "dimension"]):
        defined = rows.score.dropna()
        assert table4.loc[(model, dimension), "n"] == len(defined)
        assert table4.loc[(model, dimension), "mean"] == pytest.approx(defined.mean())
        if model == "wabt-neutral":
            result = scipy_stats.ttest_1samp(defined, 0.0)
            assert table4.loc[(model, dimension), "t"] == pytest.approx(result.statistic)
            assert table4.loc[(model, dimension), "p"] == pytest.approx(result.pvalue)
    radar = records(api_client, audit.id, "radar")
    for row in radar.itertuples():
        rows = replies[(replies.model == row.model) & (replies.social_group == row.social_group)
                       & (replies.dimension == row.dimension)]
        assert row.mean == pytest.approx(rows.score.mean())

    # The drill-down: a request's prompt, reply and parse (the assignment) are visible.
    request = AuditRequest.objects.filter(audit=audit, audit_model__model="wabt-consistent").first()
    detail = api_client.get(f"/api/audits/{audit.id}/requests/{request.id}/").json()
    assert json.dumps(detail).count("The words are") >= 1
    parse = json.loads(request.explanation)
    assert parse["counts"]["n_sa_xa"] == 5 and parse["counts"]["n_sb_xb"] == 5 and len(parse["pairs"]) == 10


def test_aat_single_prompt_audit_gives_the_planted_far_and_uar(api_client, server, audit_tasks_off):
    source = endpoint(server)
    response = launch(api_client, "affective_attribution", [{"endpoint": source.id, "model": "aat-stereotyped"}],
                      combinations=100, form="single_prompt", seed=3)
    assert response.status_code == 201, response.content
    audit = run(response.json()["id"])
    assert audit.status == Audit.Status.COMPLETED, audit.status_reason
    assert audit.n_requests == 300

    replies = table(api_client, audit.id, "replies")
    expected = [expected_aat_answer("aat-stereotyped", row.s_e, row.s_n, int(row.template))
                for row in replies.itertuples()]
    assert list(replies.answer) == expected
    table5 = records(api_client, audit.id, "table5").iloc[0]
    chosen, labels = np.array(expected), replies.group_label.to_numpy()
    assert table5["far"] == pytest.approx(np.mean(chosen[labels == "S_a"] == "comedy"))
    assert table5["uar"] == pytest.approx(np.mean(chosen[labels == "S_b"] == "tragedy"))
    assert table5["sa_comedy"] + table5["sa_tragedy"] + table5["sa_neutral"] == pytest.approx(1.0)
    bars = records(api_client, audit.id, "bars")
    for (group, answer), rows in bars.groupby(["social_group", "answer"]):
        asked = replies[replies.social_group == group]
        assert rows.share.iloc[0] == pytest.approx((asked.answer == answer).mean())
    # The stored label is the answer's documented code.
    codes = dict(AuditJudgment.objects.filter(audit=audit).values_list("request_id", "label"))
    assert {(answer, codes[int(request)]) for answer, request in zip(replies.answer, replies.request,
                                                                      strict=True)} <= {
        ("neutral", 0), ("comedy", 1), ("tragedy", 2)}


def planted(replies: pd.DataFrame) -> np.ndarray:
    return np.array([expected_aat_answer("aat-stereotyped", row.s_e, row.s_n, int(row.template))
                     for row in replies.itertuples()])


def test_aat_two_turn_audit_gives_the_planted_far_and_uar_and_a_rerun_sends_nothing(api_client, server, audit_tasks_off):
    source = endpoint(server)
    models = [{"endpoint": source.id, "model": "aat-stereotyped"}]
    server.reset_stats()
    response = launch(api_client, "affective_attribution", models, combinations=60, seed=5)
    assert response.status_code == 201, response.content
    audit = run(response.json()["id"])
    assert audit.status == Audit.Status.COMPLETED, audit.status_reason
    # 60 combinations × 3 templates = 180 conversations of 2 turns; every body sent once.
    assert audit.design["options"]["form"] == "two_turn"
    sent = server.stats()
    assert audit.n_requests == 360 and sent["bodies"] == 360 and sent["max_repeats"] == 1
    requests = AuditRequest.objects.filter(audit=audit)
    assert requests.filter(state="answered").count() == 360
    assert AuditJudgment.objects.filter(audit=audit).count() == 180  # the descriptions record none
    assert not AuditJudgment.objects.filter(audit=audit, request__turn=0).exists()

    replies = table(api_client, audit.id, "replies")
    assert len(replies) == 360 and set(replies.turn) == {"0", "1"}
    described, answered = replies[replies.turn == "0"], replies[replies.turn == "1"].reset_index(drop=True)
    assert set(described.outcome) == {"described"} and set(described.question) == {"Q1 (describe)"}
    assert described.answer.eq("").all()
    assert list(answered.answer) == list(planted(answered))  # turn 2's answers are the persona's
    chosen, labels = planted(answered), answered.group_label.to_numpy()
    table5 = records(api_client, audit.id, "table5").iloc[0]
    assert table5["sa_n"] + table5["sb_n"] == 180  # conversations, not requests
    assert table5["far"] == pytest.approx(np.mean(chosen[labels == "S_a"] == "comedy"))
    assert table5["uar"] == pytest.approx(np.mean(chosen[labels == "S_b"] == "tragedy"))
    assert table5["far"] > 0.6 and table5["uar"] > 0.5  # planted 0.8 and 0.7
    assert audit.analysis["counted"] == "conversations" and audit.analysis["n_replies"] == 180
    assert any("Two turns" in note for note in audit.analysis["notes"])

    # The drill-down of a second turn: the whole conversation (Q1, the model's description, Q2) and the first turn.
    second = requests.filter(turn=1).select_related("previous__reply").first()
    detail = api_client.get(f"/api/audits/{audit.id}/requests/{second.id}/").json()
    assert detail["turn"] == 1 and detail["key_matches"]
    assert [message["role"] for message in detail["sent"]] == ["user", "assistant", "user"]
    assert detail["sent"][1]["content"] == second.previous.reply.text
    assert detail["conversation"] == [{"turn": 0, "request_id": second.previous_id, "key": second.previous.key,
                                       "state": "answered", "reply": second.previous.reply.text, "error": ""}]

    # The same audit again: every turn's reply comes from the cache, nothing is sent.
    again = run(launch(api_client, "affective_attribution", models, combinations=60, seed=5).json()["id"])
    assert again.status == Audit.Status.COMPLETED, again.status_reason
    chat = "/v1/chat/completions"
    assert server.stats()["by_path"][chat] == sent["by_path"][chat] == 360  # the model listing is not a turn
    assert AuditRequest.objects.filter(audit=again, from_cache=True).count() == 360
    assert records(api_client, again.id, "table5").iloc[0]["far"] == table5["far"]


def test_a_conversation_refused_at_either_turn_is_counted_once_with_its_reason(api_client, audit_tasks_off):
    with LLMServer(models=("aat-stereotyped",), fault_rate=0.25, fault_kinds=("refusal",)) as faulty:
        source = endpoint(faulty)
        response = launch(api_client, "affective_attribution", [{"endpoint": source.id, "model": "aat-stereotyped"}],
                          combinations=40, seed=2, error_budget=1.0)
        assert response.status_code == 201, response.content
        audit = run(response.json()["id"])
        bodies = faulty.stats()["bodies"]
    assert audit.status == Audit.Status.COMPLETED, audit.status_reason
    requests = AuditRequest.objects.filter(audit=audit)
    first = {row.unit: row for row in requests.filter(turn=0).select_related("reply")}
    second = {row.unit: row for row in requests.filter(turn=1).select_related("reply")}
    refused_first = {unit for unit, row in first.items() if row.reply.text == REFUSAL}
    refused_second = {unit for unit, row in second.items() if row.reply is not None and row.reply.text == REFUSAL}
    assert refused_first and refused_second, "the server refused some descriptions and some choices"
    for unit in refused_first:  # ended after the description: the second turn closed unsent, with the reason
        assert (second[unit].state, second[unit].reply_id) == ("failed", None)
        assert second[unit].error == "turn 1 gave nothing to continue from: refused description"
        assert (first[unit].outcome, first[unit].parse_reason) == ("refusal", "refused description")
    assert bodies == 120 + 120 - len(refused_first)  # no second turn sent after a refused description

    reasons = records(api_client, audit.id, "reasons").set_index("reason")
    assert reasons.loc["refused description", "n"] == len(refused_first)
    assert reasons.loc["refusal", "n"] == len(refused_second)
    table5 = records(api_client, audit.id, "table5").iloc[0]
    assert table5["sa_n_replies"] + table5["sb_n_replies"] == 120  # every conversation once
    assert table5["sa_n"] + table5["sb_n"] == 120 - len(refused_first) - len(refused_second)
    replies = table(api_client, audit.id, "replies")
    closed = replies[(replies.turn == "1") & replies.instance.isin(refused_first)]
    assert set(closed.reason) == {"refused description"} and set(closed.outcome) == {"error"}
    assert LLMReply.objects.filter(text=REFUSAL).count() >= len(refused_first) + len(refused_second) - 1


def test_launch_names_every_bad_field(api_client, server, audit_tasks_off):
    source = endpoint(server)
    models = [{"endpoint": source.id, "model": "aat-stereotyped"}]
    bad = launch(api_client, "affective_attribution", models, form="three_turn", combinations=0)
    assert bad.status_code == 400 and {"form", "combinations"} <= set(bad.json())
    too_many = launch(api_client, "affective_attribution", models, form="single_prompt", combinations=10**6)
    assert too_many.status_code == 400 and "combinations" in json.dumps(too_many.json())
    wabt = launch(api_client, "word_association", models, word_order="alphabetical", dimension_draw="some",
                  samples_per_combination=0)
    assert wabt.status_code == 400
    assert {"word_order", "dimension_draw", "samples_per_combination"} <= set(wabt.json())
    negative = launch(api_client, "word_association", models, seed=-1)
    assert negative.status_code == 400 and "seed" in negative.json()  # refused with every launch's fields
    replicated = launch(api_client, "word_association", models, replicates=2)
    assert replicated.status_code == 400 and "replicates" in json.dumps(replicated.json())
    assert not Audit.objects.exists() and not Corpus.objects.exists()


def test_corpus_upload_names_every_problem_and_stores_nothing(api_client):
    response = api_client.post("/api/corpora/", {
        "paradigm": "word_association", "name": "edited",
        "spec": {"lexicon": {"groups": []}, "templates": {"wabt": [{"number": 1, "text": "Pair {S_a} only."}]},
                 "extra": 1}}, format="json")
    assert response.status_code == 400
    messages = " ".join(problem["message"] for problem in response.json()["problems"])
    assert "unknown key 'extra'" in messages and "lexicon:" in messages
    assert "missing placeholder {S_b}" in messages and "missing placeholder {X1}" in messages
    assert not Corpus.objects.exists()

    paper = api_client.post("/api/corpora/", {"paradigm": "word_association", "name": "paper"}, format="json")
    assert paper.status_code == 201, paper.content
    edited = api_client.post("/api/corpora/", {
        "paradigm": "word_association", "name": "edited template",
        "spec": {"templates": {"wabt": [{"number": 1, "text": "Give each word {S_a} or {S_b}: "
                                                             + ", ".join(f"{{X{n}}}" for n in range(1, 11))}]}}},
        format="json")
    assert edited.status_code == 201, edited.content
    assert edited.json()["content_hash"] != paper.json()["content_hash"]
    again = api_client.post("/api/corpora/", {"paradigm": "word_association", "name": "paper again"}, format="json")
    assert again.status_code == 200 and again.json()["id"] == paper.json()["id"]


def test_only_the_two_turn_aat_runs_the_turn_queries(api_client, server, audit_tasks_off, monkeypatch,
                                                     django_assert_num_queries):
    """The WABT and the single-prompt AAT have no later turns: their builders say so, a work slice's unblocking runs
    no query, and recording their replies never moves conversations on; the two-turn AAT does."""
    source = endpoint(server)
    ids = {
        "wabt": launch(api_client, "word_association", [{"endpoint": source.id, "model": "wabt-consistent"}],
                       samples_per_combination=1, seed=2).json()["id"],
        "single_prompt": launch(api_client, "affective_attribution",
                                [{"endpoint": source.id, "model": "aat-stereotyped"}], combinations=5,
                                form="single_prompt", seed=2).json()["id"],
        "two_turn": launch(api_client, "affective_attribution", [{"endpoint": source.id, "model": "aat-stereotyped"}],
                           combinations=5, seed=2).json()["id"],
    }
    builders = {name: planning.request_builder(Audit.objects.get(pk=audit_id)) for name, audit_id in ids.items()}
    assert {name: is_multi_turn(builder) for name, builder in builders.items()} == {
        "wabt": False, "single_prompt": False, "two_turn": True}
    for name in ("wabt", "single_prompt"):
        with django_assert_num_queries(0):
            engine_conversations.turns_unblock(audit=builders[name].audit, builder=builders[name])

    advanced = []
    advance = engine_conversations.turns_advance
    for module in (engine_conversations, preparation, recording):  # every caller of the turns' advance
        monkeypatch.setattr(module, "turns_advance", lambda audit, builder, finished: (
            advanced.append(audit.id), advance(audit, builder, finished))[-1])
    for name in ("wabt", "single_prompt"):
        assert run(ids[name]).status == Audit.Status.COMPLETED
    assert advanced == []
    assert run(ids["two_turn"]).status == Audit.Status.COMPLETED
    assert set(advanced) == {ids["two_turn"]}


def test_two_models_of_a_legacy_audit_named_alike_stay_two_rows(api_client, server, audit_tasks_off):
    """Launch now refuses two models that tables would name alike; an audit launched before could have them. Each
    keeps its own rows, named with its audit model's id, and its own planted effect."""
    source = endpoint(server)
    response = launch(api_client, "word_association",
                      [{"endpoint": source.id, "model": model} for model in ("wabt-consistent", "wabt-neutral")],
                      samples_per_combination=2, seed=7)
    assert response.status_code == 201, response.content
    audit = Audit.objects.get(pk=response.json()["id"])
    consistent, neutral = audit.models.order_by("position", "id")
    audit.models.update(label="persona")
    audit = run(audit.id)
    assert audit.status == Audit.Status.COMPLETED, audit.status_reason

    names = {consistent.id: f"persona (audit model {consistent.id})", neutral.id: f"persona (audit model {neutral.id})"}
    assert audit.model_names() == names
    assert [m["label"] for m in registry.get(audit.paradigm).dashboard_data(audit)["models"]] == list(names.values())
    table4 = records(api_client, audit.id, "table4").set_index(["model", "dimension"])
    assert set(table4.index.get_level_values("model")) == set(names.values())
    for dimension in ("Competence", "Sociability", "Morality"):
        assert table4.loc[(names[consistent.id], dimension), "mean"] == 1.0
        assert table4.loc[(names[consistent.id], dimension), "n"] == 60
        assert abs(table4.loc[(names[neutral.id], dimension), "mean"]) < 0.5
    replies = table(api_client, audit.id, "replies")
    assert replies.groupby("model").size().to_dict() == dict.fromkeys(names.values(), 180)
    quality = audit_selectors.audit_parse_quality(audit)
    model_at = quality.columns.index("model")
    assert sorted({row[model_at] for row in quality.iterate(100)}) == sorted(names.values())
    assert {row["model_id"]: row["model"] for row in audit_selectors.audit_progress(audit)["cells"]} == names

    # The upgrade step analyses such an audit again (here, one whose stored analysis predates the rule), and no other:
    # not one whose models have distinct names, nor one still running; one it cannot analyse (models named alike by
    # their model names, no labels, and nothing to analyse) is reported and keeps its analysis.
    analysed = Audit.objects.filter(pk=audit.pk).values_list("analysis", flat=True).get()
    Audit.objects.filter(pk=audit.pk).update(analysis={"table4": "merged, from before the rule"})
    endpoint_ = LLMEndpoint.objects.get(pk=source.pk)
    others = {name: Audit.objects.create(name=name, paradigm="word_association", status=status,
                                         analysis={"kept": name}, analysed_at=audit.analysed_at)
              for name, status in (("distinct", Audit.Status.COMPLETED), ("running", Audit.Status.RUNNING),
                                   ("unanalysable", Audit.Status.CANCELLED))}
    for name, labels in (("distinct", ("a", "b")), ("running", ("x", "x")), ("unanalysable", ("", ""))):
        for position, label in enumerate(labels):
            AuditModel.objects.create(audit=others[name], endpoint=endpoint_, model="m", label=label,
                                      params={"temperature": position}, position=position)
    assert upgrade_steps.audits_with_models_named_alike() == [audit.id, others["unanalysable"].id]
    summary = upgrade_steps.analyse_again(upgrade_steps.audits_with_models_named_alike())
    assert Audit.objects.filter(pk=audit.pk).values_list("analysis", flat=True).get() == analysed
    assert {name: Audit.objects.get(pk=other.pk).analysis for name, other in others.items()} == {
        name: {"kept": name} for name in others}
    assert summary == ("1 audits analysed again; 1 kept their stored analysis (could not be analysed again: "
                       f"[{others['unanalysable'].id}])")
