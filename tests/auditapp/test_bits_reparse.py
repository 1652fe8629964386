"""Re-parsing a finished BITS audit (``POST /api/audits/{id}/reparse/``): no scorer is asked again, every judgment
is written anew from the stored replies (a judgment altered in the database is restored), and the analysis
recomputed from them equals the first one. A chat scorer through faults (refusals, malformed and empty replies
leave judgments without a value, with a reason) and VADER in batches."""
from __future__ import annotations

import pytest

from auditapp.engine import analysis as engine_analysis
from auditapp.engine import preparation
from auditapp.models import Audit, AuditJudgment, AuditRequest, LLMEndpoint
from tests.auditapp.test_bits_audit import launch, run, small_corpus, tasks_off  # noqa: F401 (a fixture)
from tests.llm_server import LLMServer

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.integration]


def judgments(audit_id: int) -> dict:
    return {(request, unit): (outcome, value, reason) for request, unit, outcome, value, reason in
            AuditJudgment.objects.filter(audit_id=audit_id).values_list("request_id", "unit", "outcome", "value",
                                                                        "reason")}


def test_a_reparse_rewrites_the_judgments_and_gives_the_same_analysis(api_client, tasks_off, monkeypatch):  # noqa: F811
    corpus = small_corpus(api_client)
    local = LLMEndpoint.objects.create(name="local", protocol="local", base_url="")
    # The chat scorer is listed first (its requests are created first) but answers later than VADER: the
    # judgments are first written in another order than the re-parse writes them.
    with LLMServer(models=["scorer-null"], latency=0.02, fault_rate=0.2,
                   fault_kinds=("malformed", "empty", "refusal"), retry_after=0.05) as server:
        chat = LLMEndpoint.objects.create(name="llm", protocol="openai", base_url=server.base_url, max_attempts=1)
        audit = run(launch(api_client, corpus=corpus.id, batch_size=16,
                           models=[{"endpoint": chat.id, "model": "scorer-null"},
                                   {"endpoint": local.id, "model": "vader"}]))
    assert audit.status == Audit.Status.COMPLETED, audit.status_reason
    before, analysis = judgments(audit.id), audit.analysis
    # One judgment per sentence of each answered request (VADER 210 in batches of 16; the chat scorer one each);
    # a failed request (a malformed body, with max_attempts=1) has none.
    failed = AuditRequest.objects.filter(audit=audit, state="failed").count()
    assert len(before) == 2 * 210 - failed
    unscored = [key for key, (_, value, _) in before.items() if value is None]
    assert unscored and all(before[key][2] for key in unscored), "faults left judgments without a value, with reasons"

    # Alter the stored judgments and the analysis: the re-parse and its analysis must rebuild both.
    AuditJudgment.objects.filter(audit=audit, value__isnull=False).update(value=99.0)
    Audit.objects.filter(pk=audit.pk).update(analysis={})
    first_ids = set(AuditJudgment.objects.filter(audit=audit).values_list("id", flat=True))
    analysed = []
    monkeypatch.setattr("tasks.audits.audit_analyse_task.delay", analysed.append)

    response = api_client.post(f"/api/audits/{audit.id}/reparse/")
    assert response.status_code == 200, response.content
    assert analysed == [audit.id]
    assert judgments(audit.id) == before
    assert not first_ids & set(AuditJudgment.objects.filter(audit=audit).values_list("id", flat=True))
    engine_analysis.audit_analyse(audit_id=audit.id)
    assert Audit.objects.get(pk=audit.pk).analysis == analysis


def test_a_running_audit_is_not_reparsed(api_client, tasks_off):  # noqa: F811
    local = LLMEndpoint.objects.create(name="local", protocol="local", base_url="")
    audit_id = launch(api_client, corpus=small_corpus(api_client).id, models=[{"endpoint": local.id,
                                                                               "model": "vader"}])
    preparation.audit_prepare(audit_id=audit_id)
    response = api_client.post(f"/api/audits/{audit_id}/reparse/")
    assert response.status_code == 409 and "pause the audit" in response.json()["detail"]
    assert not AuditJudgment.objects.filter(audit_id=audit_id).exists()
