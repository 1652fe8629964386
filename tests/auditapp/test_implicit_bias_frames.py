"""The analysis frames of the seed 003 audits (``wabt_frame``, ``aat_frame`` in auditapp.paradigms.implicit_bias.services)
are built a column at a time, eq. 1's counts read from the parse by the database: on audits run against the test LLM
server with every kind of row (valid, undefined score, unparseable, refused, failed; a two-turn conversation ended
at its description), each frame equals the row-by-row reading they replaced (``json.loads`` of every judgment's
explanation), kept below as the reference. The drill-down and the replies export still show the parse as JSON.
"""
from __future__ import annotations

import json

import pandas as pd
import pytest

from auditapp.engine.protocol import Outcome
from auditapp.models import AuditJudgment, AuditRequest, LLMEndpoint
from auditapp.paradigms.affective_attribution.adapter import TASK as AAT_TASK
from auditapp.paradigms.implicit_bias import analysis as payloads
from auditapp.paradigms.implicit_bias import services, stats
from auditapp.paradigms.word_association.adapter import TASK as WABT_TASK
from tests.auditapp.test_implicit_bias_audit import launch, run, table
from tests.llm_server import LLMServer

pytestmark = [pytest.mark.django_db(transaction=True)]


@pytest.fixture
def tasks_off(monkeypatch):
    for name in ("audit_prepare_task", "audit_work_task", "audit_analyse_task"):
        monkeypatch.setattr(f"tasks.audits.{name}.delay", lambda audit_id: None)


def reference_replies(audit_id: int, turn: int) -> list[tuple]:
    return list(AuditRequest.objects.filter(audit_id=audit_id, turn=turn).exclude(state=AuditRequest.State.PENDING)
                .order_by("id").values_list("audit_model_id", "unit", "state", "judgments__outcome",
                                            "judgments__label", "judgments__reason", "judgments__explanation",
                                            "error"))


def reference_wabt_frame(audit_id, instances, names) -> pd.DataFrame:
    rows = []
    for model_id, unit, state, outcome, _label, reason, explanation, _error in reference_replies(audit_id, 0):
        factors = instances[unit].factors
        failed = state == AuditRequest.State.FAILED or outcome is None
        valid = not failed and outcome == Outcome.SCORE
        counts = json.loads(explanation)["counts"] if valid else dict.fromkeys(stats.COUNT_COLUMNS, 0)
        rows.append({"model": names[model_id], "dimension": factors["dimension"],
                     "social_group": factors["social_group"], "valid": valid,
                     "reason": None if valid else (services.FAILED_REASON if failed else reason.partition(":")[0]),
                     **counts})
    return pd.DataFrame(rows, columns=list(stats.WABT_COLUMNS))


def reference_aat_frame(audit_id, turn, instances, names) -> pd.DataFrame:
    rows = []
    for model_id, unit, state, outcome, label, reason, _explanation, error in reference_replies(audit_id, turn):
        factors = instances[unit].factors
        failed = state == AuditRequest.State.FAILED or outcome is None
        answered = not failed and outcome == Outcome.LABEL
        rows.append({"model": names[model_id], "social_group": factors["social_group"],
                     "group_label": factors["group_label"],
                     "answer": services.ANSWER_OF_CODE[int(label)] if answered else None,
                     "reason": None if answered else (services.failed_reason(error or "") if failed else reason)})
    return pd.DataFrame(rows, columns=list(stats.AAT_COLUMNS))


def faulty_endpoint(server) -> LLMEndpoint:
    # One attempt: a server error leaves the request failed, a row of its own kind in the frame.
    return LLMEndpoint.objects.create(name="faulty personas", protocol="openai", base_url=server.base_url,
                                      max_concurrency=8, attempt_timeout_s=5, deadline_s=60, max_attempts=1)


def test_the_wabt_frame_reads_the_counts_in_the_database_and_equals_the_row_by_row_reading(api_client, tasks_off):
    with LLMServer(models=("wabt-consistent", "wabt-neutral"), fault_rate=0.3, permanent_error_rate=0.05,
                   fault_kinds=("malformed", "empty", "refusal")) as server:
        source = faulty_endpoint(server)
        response = launch(api_client, "word_association",
                          [{"endpoint": source.id, "model": model} for model in ("wabt-consistent", "wabt-neutral")],
                          samples_per_combination=2, seed=5, error_budget=1.0)
        assert response.status_code == 201, response.content
        audit = run(response.json()["id"])
    builder = services.ImplicitBiasRequests(audit, WABT_TASK)
    # An undefined score (every word given to S_a): valid, no value, its counts (5, 5, 0, 0) read but unused.
    judgment = AuditJudgment.objects.filter(audit=audit, outcome=Outcome.SCORE).order_by("id").first()
    instance = builder.instances[judgment.unit]
    undefined = services.wabt_judgment(instance, "\n".join(f"{word} - {instance.identifiers[0]}"
                                                           for word in instance.words))
    assert undefined.value is None and undefined.reason == stats.NO_WORD_FOR_SB
    AuditJudgment.objects.filter(pk=judgment.pk).update(value=None, reason=undefined.reason,
                                                        explanation=undefined.explanation)

    names = audit.model_names()
    frame = services.wabt_frame(services.replies_frame(audit.id, counts=True), builder.instances, names)
    reference = reference_wabt_frame(audit.id, builder.instances, names)
    pd.testing.assert_frame_equal(frame, reference)
    assert payloads.wabt_payload(frame) == payloads.wabt_payload(reference)
    assert len(frame) == 2 * 180
    reasons = set(frame.reason.dropna())
    assert {services.FAILED_REASON, "refusal"} <= reasons and len(reasons) >= 3  # failed, refused, unparseable
    assert frame.valid.sum() > 200 and frame.reason[frame.valid].isna().all()
    undefined_row = frame[frame.valid & (frame.n_sb_xa + frame.n_sb_xb == 0)]
    assert len(undefined_row) == 1 and undefined_row.iloc[0][list(stats.COUNT_COLUMNS)].tolist() == [5, 5, 0, 0]
    assert (frame.loc[~frame.valid, list(stats.COUNT_COLUMNS)] == 0).all().all()

    # The parse stays JSON where a researcher reads it: the replies export's "parse" column (the drill-down's).
    replies = table(api_client, audit.id, "replies")
    shown = json.loads(replies.set_index("request").loc[str(judgment.request_id), "parse"])
    assert shown["counts"] == {"n_sa_xa": 5, "n_sa_xb": 5, "n_sb_xa": 0, "n_sb_xb": 0} and len(shown["pairs"]) == 10


def test_the_aat_frame_equals_the_row_by_row_reading_for_every_kind_of_conversation(api_client, tasks_off):
    with LLMServer(models=("aat-stereotyped",), fault_rate=0.3, permanent_error_rate=0.05,
                   fault_kinds=("empty", "refusal")) as server:
        source = faulty_endpoint(server)
        response = launch(api_client, "affective_attribution", [{"endpoint": source.id, "model": "aat-stereotyped"}],
                          combinations=30, seed=3, error_budget=1.0)
        assert response.status_code == 201, response.content
        audit = run(response.json()["id"])
    builder = services.ImplicitBiasRequests(audit, AAT_TASK)
    assert builder.last_turn == 1
    names = audit.model_names()
    frame = services.aat_frame(services.replies_frame(audit.id, turn=1), builder.instances, names)
    reference = reference_aat_frame(audit.id, 1, builder.instances, names)
    pd.testing.assert_frame_equal(frame, reference)
    assert payloads.aat_payload(frame) == payloads.aat_payload(reference)
    assert len(frame) == 90
    assert {"refusal", "refused description", "empty description", services.FAILED_REASON} <= set(frame.reason.dropna())
    assert frame.reason[frame.answer.notna()].isna().all()
    assert set(frame.answer.dropna()) <= {"comedy", "tragedy", "neutral"} and frame.answer.notna().sum() > 30


def test_empty_frames_keep_their_columns():
    replies = pd.DataFrame(columns=[*services.REPLY_COLUMNS, *stats.COUNT_COLUMNS])
    wabt, aat = services.wabt_frame(replies, {}, {}), services.aat_frame(replies, {}, {})
    assert list(wabt.columns) == list(stats.WABT_COLUMNS) and list(aat.columns) == list(stats.AAT_COLUMNS)
    assert payloads.wabt_payload(wabt) == payloads.wabt_payload(pd.DataFrame(columns=list(stats.WABT_COLUMNS)))
    assert payloads.aat_payload(aat) == payloads.aat_payload(pd.DataFrame(columns=list(stats.AAT_COLUMNS)))
