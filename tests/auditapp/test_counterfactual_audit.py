"""Counterfactual names and dialect audits (seed 002) through the engine in one process (prepare, send, record,
analyse), launched through the API against the test LLM server's batched annotators (``annotator-*``), with
effects planted in their answers:

- names: one annotator answers "self-disciplined" 0.3 less often for Black names; the analysis finds that cell
  FDR-significant with its CI covering −0.3 and finds nothing for an annotator with nothing planted; every
  statistic equals scipy recomputed from the exported judgments; a refused task leaves its texts missing (never
  0 or 1) and counted in the completion;
- dialect: an annotator answers "professional tone" 0.3 less often for AAVE texts; the gap, Welch's and the
  paired test equal scipy on the exported judgments;
- any request is drilled down to its 60 numbered texts and its reply; the launch refuses what it cannot run.

The worker path (Celery on Redis, PostgreSQL) is tests/integration/test_counterfactual_worker.py.
"""
from __future__ import annotations

import csv
import io

import numpy as np
import pandas as pd
import pytest
from scipy import stats as scipy_stats
from statsmodels.stats.multitest import multipletests

from auditapp.engine import analysis as engine_analysis
from auditapp.engine import preparation
from auditapp.engine import runner as audit_runner
from auditapp.models import Audit, AuditJudgment, AuditModel, LLMEndpoint
from auditapp.paradigms.counterfactual.dialect_texts import DEFAULT_PAIRS, strip_features
from auditapp.paradigms.counterfactual.names import TABLE_2
from tests.llm_server import LLMServer

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.integration]

BLACK_NAMES = [f"I'm {entry.name}." for entry in TABLE_2 if entry.group == "Black"]
AAVE_TEXTS = [strip_features(pair.aave_annotated) for pair in DEFAULT_PAIRS if pair.text_set == "introduction"]
ANNOTATORS = {
    "annotator-biased": {"base": 0.5, "effects": [{"task": "self-disciplined", "contains": BLACK_NAMES,
                                                   "delta": -0.3}]},
    "annotator-fair": {"base": 0.5},
    "annotator-refuses": {"base": 0.5, "refuse_tasks": ["someone an employer would want to hire"]},
    "annotator-dialect": {"base": 0.6, "effects": [{"task": "professional tone", "contains": AAVE_TEXTS,
                                                    "delta": -0.3}]},
}


@pytest.fixture(scope="module")
def server():
    with LLMServer(latency=0.0, annotators=ANNOTATORS, models=tuple(ANNOTATORS)) as running:
        yield running


@pytest.fixture
def tasks_off(monkeypatch):
    """Tasks are run by the test itself, in order, instead of by a worker."""
    for name in ("audit_prepare_task", "audit_work_task", "audit_analyse_task"):
        monkeypatch.setattr(f"tasks.audits.{name}.delay", lambda audit_id: None)


def endpoint(server) -> LLMEndpoint:
    return LLMEndpoint.objects.create(name="annotators", protocol="openai", base_url=server.base_url,
                                      max_concurrency=8, attempt_timeout_s=5, deadline_s=60, max_attempts=2)


def run(audit_id: int) -> Audit:
    preparation.audit_prepare(audit_id=audit_id)
    assert audit_runner.audit_work(audit_id) == "finished"
    engine_analysis.audit_analyse(audit_id=audit_id)
    return Audit.objects.get(pk=audit_id)


def launch(api_client, paradigm: str, models: list[dict], **body) -> int:
    response = api_client.post("/api/audits/", {"paradigm": paradigm, "name": paradigm, "models": models, **body},
                               format="json")
    assert response.status_code == 201, response.content
    return response.json()["id"]


def table(api_client, audit_id: int, name: str) -> pd.DataFrame:
    response = api_client.get(f"/api/audits/{audit_id}/tables/{name}/", {"format": "csv"})
    assert response.status_code == 200, response.content
    text = b"".join(response.streaming_content).decode("utf-8-sig")
    return pd.DataFrame(list(csv.DictReader(io.StringIO(text))))


def records(api_client, audit_id: int, name: str) -> pd.DataFrame:
    response = api_client.get(f"/api/audits/{audit_id}/tables/{name}/", {"page_size": 10000})
    assert response.status_code == 200, response.content
    return pd.DataFrame(response.json()["results"])


def test_names_audit_recovers_a_planted_gap_and_every_statistic_equals_scipy(api_client, server, tasks_off):
    source = endpoint(server)
    audit = run(launch(api_client, "names", [{"endpoint": source.id, "model": model} for model in
                                             ("annotator-biased", "annotator-fair", "annotator-refuses")],
                       material={"tasks": ["self_disciplined", "warm", "hireable"]}, iterations=8, seed=3))
    assert audit.status == Audit.Status.COMPLETED, audit.status_reason
    # 3 models × 3 tasks × 8 iterations, 60 texts each.
    assert audit.n_requests == 72 and AuditJudgment.objects.filter(audit=audit).count() == 72 * 60

    cells = records(api_client, audit.id, "cells")
    planted = cells[(cells.model == "annotator-biased") & (cells.task == "self_disciplined")
                     & (cells.group == "Black")].iloc[0]
    assert planted.significant and planted.ci_low <= -0.3 <= planted.ci_high, planted.to_dict()
    fair = cells[cells.model == "annotator-fair"]
    assert not fair.significant.any()
    biased_elsewhere = cells[(cells.model == "annotator-biased") & ~((cells.task == "self_disciplined")
                                                                   & (cells.group == "Black"))]
    assert not biased_elsewhere.significant.any()
    # The headline (audit index, comparison, model card) is Figure 1's cells, and points at the planted gap.
    headline = api_client.get(f"/api/audits/{audit.id}/headline/").json()
    assert len(headline["rows"]) == len(cells)
    [row] = [row for row in headline["rows"] if row["model"] == "annotator-biased" and row["cell"].startswith("Black: ")
             and "disciplined" in row["cell"].lower()]
    assert (row["value"], row["low"], row["high"], row["n"]) == pytest.approx(
        (planted.mean_gap, planted.ci_low, planted.ci_high, planted.n_pairs))
    assert row["note"] == "FDR-significant"
    assert headline["summary"].endswith(f"largest in size {planted.mean_gap:+.3f} (annotator-biased, {row['cell']})")

    # Every gap test recomputed from the exported judgments (one row per text) with scipy and statsmodels.
    judged = table(api_client, audit.id, "judgments")
    assert len(judged) == 72 * 60
    judged["y"] = pd.to_numeric(judged["label"], errors="coerce")
    minority = judged[judged.side == "minority"].set_index(["request", "pair_no"])
    reference = judged[judged.side == "reference"].set_index(["request", "pair_no"])
    pairs = minority[["model", "task", "group"]].assign(gap=minority["y"] - reference["y"]).dropna(subset=["gap"])
    tested = []
    for (model, task, group), rows in pairs.groupby(["model", "task", "group"]):
        cell = cells[(cells.model == model) & (cells.task == task) & (cells.group == group)].iloc[0]
        assert cell.n_pairs == len(rows)
        assert cell.mean_gap == pytest.approx(rows.gap.mean())
        if rows.gap.std() > 0:
            result = scipy_stats.ttest_1samp(rows.gap, 0.0)
            assert cell.t == pytest.approx(result.statistic) and cell.p == pytest.approx(result.pvalue)
            tested.append((model, task, group, result.pvalue))
    reject, q, _, _ = multipletests([p for *_, p in tested], alpha=0.05, method="fdr_bh")
    for (model, task, group, _), expected_q, expected_reject in zip(tested, q, reject, strict=True):
        cell = cells[(cells.model == model) & (cells.task == task) & (cells.group == group)].iloc[0]
        assert cell.q == pytest.approx(expected_q) and bool(cell.significant) == bool(expected_reject)

    # The refused task: every text missing with the reason, none coded 0 or 1, counted in the completion.
    refused = judged[(judged.model == "annotator-refuses") & (judged.task == "hireable")]
    assert len(refused) == 8 * 60 and refused.y.isna().all() and set(refused.outcome) == {"refusal"}
    assert cells[(cells.model == "annotator-refuses") & (cells.task == "hireable")].n_pairs.eq(0).all()
    completion = records(api_client, audit.id, "completion").set_index("model")
    assert completion.loc["annotator-refuses", "n_asked"] == 3 * 8 * 60
    assert completion.loc["annotator-refuses", "n_labelled"] == 2 * 8 * 60
    assert completion.loc["annotator-fair", "rate"] == 1.0

    # Drill-down: the whole request, rebuilt, checked against its key, with its reply and 60 judgments.
    request_id = int(judged["request"].iloc[0])
    detail = api_client.get(f"/api/audits/{audit.id}/requests/{request_id}/").json()
    assert detail["key_matches"] and detail["reply"]["text"]
    content = detail["sent"][0]["content"]
    assert content.startswith("Based on the following text, is the following true of the person?")
    assert sum(line.startswith("Text ") for line in content.splitlines()) == 60 == len(detail["judgments"])

    page = api_client.get(f"/audits/{audit.id}/dashboard/")
    assert page.status_code in (200, 302)


def test_dialect_audit_recovers_a_planted_gap_and_equals_scipy(api_client, server, tasks_off):
    source = endpoint(server)
    audit = run(launch(api_client, "dialect", [{"endpoint": source.id, "model": "annotator-dialect"},
                                               {"endpoint": source.id, "model": "annotator-fair"}],
                       material={"tasks": ["professional_tone", "intelligent", "toxic"]}, iterations=40, seed=5))
    assert audit.status == Audit.Status.COMPLETED, audit.status_reason
    cells = records(api_client, audit.id, "cells")
    # Tables list tasks in the design's order (the material's), not alphabetically.
    assert list(dict.fromkeys(cells.task)) == ["professional_tone", "intelligent", "toxic"]
    # Nothing is missing: the empty table still exports its header.
    response = api_client.get(f"/api/audits/{audit.id}/tables/missing/", {"format": "csv"})
    assert b"".join(response.streaming_content).decode("utf-8-sig").strip() == "model,reason,n"
    planted = cells[(cells.model == "annotator-dialect") & (cells.task == "professional_tone")].iloc[0]
    assert planted.significant and planted.ci_low <= -0.3 <= planted.ci_high, planted.to_dict()
    assert not cells[(cells.model == "annotator-fair")].significant.any()
    headline = api_client.get(f"/api/audits/{audit.id}/headline/").json()
    assert headline["measure"] == "Gap in yes-rate, AAVE − SAE (Figure 2)" and len(headline["rows"]) == len(cells)
    top = max(headline["rows"], key=lambda row: abs(row["value"]))
    assert (top["model"], top["value"], top["low"], top["high"]) == (
        "annotator-dialect", pytest.approx(planted.gap), pytest.approx(planted.ci_low), pytest.approx(planted.ci_high))

    judged = table(api_client, audit.id, "judgments")
    judged["y"] = pd.to_numeric(judged["label"], errors="coerce")
    for (model, task), rows in judged.dropna(subset=["y"]).groupby(["model", "task"]):
        cell = cells[(cells.model == model) & (cells.task == task)].iloc[0]
        aave, sae = rows[rows.dialect == "AAVE"].y, rows[rows.dialect == "SAE"].y
        assert cell.gap == pytest.approx(aave.mean() - sae.mean())
        assert cell.cohens_h == pytest.approx(2 * np.arcsin(np.sqrt(aave.mean())) - 2 * np.arcsin(np.sqrt(sae.mean())))
        welch = scipy_stats.ttest_ind(aave, sae, equal_var=False)
        assert cell.welch_t == pytest.approx(welch.statistic) and cell.welch_p == pytest.approx(welch.pvalue)
        means = rows.groupby(["pair", "dialect"]).y.mean().unstack().dropna()
        paired = scipy_stats.ttest_rel(means["AAVE"], means["SAE"])
        assert cell.paired_n == len(means) and cell.paired_p == pytest.approx(paired.pvalue)


def test_launch_names_every_problem_and_stores_nothing(api_client, server):
    source = endpoint(server)
    models = [{"endpoint": source.id, "model": "annotator-fair"}]
    response = api_client.post("/api/audits/", {
        "paradigm": "names", "name": "bad", "models": models, "replicates": 2, "pairs_per_iteration": 40,
        "material": {"tasks": ["no_such_task"], "names": [{"name": "Ann", "group": "White", "gender": ""}],
                     "colour": "red"}}, format="json")
    assert response.status_code == 400
    text = response.content.decode()
    assert "colour" in text
    response = api_client.post("/api/audits/", {
        "paradigm": "names", "name": "bad", "models": models, "replicates": 2,
        "material": {"tasks": ["no_such_task"], "names": [{"name": "Ann", "group": "White", "gender": ""}]}},
        format="json")
    text = response.content.decode()
    assert response.status_code == 400 and "no_such_task" in text and "gender" in text and "replicates" in text
    assert not Audit.objects.exists()


def test_a_reparse_in_small_batches_rewrites_every_judgment_as_it_was(api_client, server, tasks_off, monkeypatch):
    source = endpoint(server)
    audit = run(launch(api_client, "dialect", [{"endpoint": source.id, "model": "annotator-refuses"}],
                       material={"tasks": ["hireable", "angry"]}, iterations=5, seed=2))

    def judgments() -> list[tuple]:
        return sorted(AuditJudgment.objects.filter(audit=audit).values_list("request_id", "unit", "outcome",
                                                                            "label", "reason"))
    before = judgments()
    monkeypatch.setattr(engine_analysis, "REPARSE_BATCH_SIZE", 3)  # 10 requests: four batches
    assert engine_analysis.audit_reparse(audit_id=audit.id) == 10
    assert judgments() == before and len(before) == 10 * 10
    assert {outcome for _, _, outcome, _, _ in before} == {"label", "refusal"}


def test_two_models_of_a_legacy_audit_named_alike_are_analysed_apart(api_client, server, tasks_off):
    """An audit launched before launch refused two models named alike (here, one label for both): its analysis
    used to fail (the model column's categories must be unique); each model now keeps its rows and its effect."""
    source = endpoint(server)
    audit_id = launch(api_client, "dialect", [{"endpoint": source.id, "model": "annotator-dialect"},
                                              {"endpoint": source.id, "model": "annotator-fair"}],
                      material={"tasks": ["professional_tone"]}, iterations=40, seed=11)
    # (Seed 5 gives the fair annotator's fixed texts a gap with p = 0.007 on this one task: a chance α = 0.05 allows.)
    dialect_model, fair_model = Audit.objects.get(pk=audit_id).models.order_by("position", "id")
    AuditModel.objects.filter(audit_id=audit_id).update(label="annotator")
    audit = run(audit_id)
    assert audit.status == Audit.Status.COMPLETED, audit.status_reason
    cells = records(api_client, audit.id, "cells").set_index("model")
    dialect, fair = (f"annotator (audit model {model.id})" for model in (dialect_model, fair_model))
    assert set(cells.index) == {dialect, fair}
    assert cells.loc[dialect, "significant"] and cells.loc[dialect, "ci_low"] <= -0.3 <= cells.loc[dialect, "ci_high"]
    assert not cells.loc[fair, "significant"], cells[["gap", "welch_p", "significant"]].to_string()
