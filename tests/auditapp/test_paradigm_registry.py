"""The paradigm registry and the shared parts that go through it: launching (API and admin), judgment rows
written with each reply and rewritten by a re-parse, and the migration that judges replies stored before them."""
from __future__ import annotations

import pytest

from auditapp import upgrade_steps
from auditapp.engine import analysis, launch, preparation, registry
from auditapp.engine import runner as audit_runner
from auditapp.launch_forms import launch_field_order
from auditapp.models import Audit, AuditJudgment, AuditRequest, LLMEndpoint
from auditapp.paradigms.classification import services as classification_services
from auditapp.paradigms.self_report import services as self_report_services
from auditapp.paradigms.self_report.design import parse_reply
from tests.factories import make_audit_study
from tests.llm_server import LLMServer

pytestmark = pytest.mark.django_db


def test_every_registered_paradigm_declares_itself_under_its_own_name():
    assert registry.DEFAULT in registry.PARADIGMS
    for name in registry.PARADIGMS:
        paradigm = registry.get(name)
        assert paradigm.name == name and paradigm.label == dict(registry.choices())[name]
        assert paradigm.dashboard_template.endswith(".html")
    with pytest.raises(registry.UnknownParadigm, match="registered: classification"):
        registry.get("no-such-paradigm")


def test_the_admin_shows_every_field_of_each_launch_form_once_in_the_shared_order():
    for paradigm in registry.every():
        form = paradigm.launch_form
        order = launch_field_order(form)
        assert sorted(order) == sorted(form.base_fields), paradigm.name
        assert order[0] == "name" and order[-1] == "structured_output", (paradigm.name, order)
        assert order.index("models") < order.index(paradigm.settings[0].in_form) < order.index("seed"), (
            paradigm.name, order)
        settings = [name for name in order if name in {setting.in_form for setting in paradigm.settings}]
        assert settings == [setting.in_form for setting in paradigm.settings], (paradigm.name, order)


def test_an_unknown_paradigm_is_a_400_naming_the_registered_ones(api_client):
    response = api_client.post("/api/audits/", {"paradigm": "astrology", "name": "x", "models": []}, format="json")
    assert response.status_code == 400
    assert "astrology" in response.json()["paradigm"][0] and "self_report" in response.json()["paradigm"][0]
    assert not Audit.objects.exists()


def test_the_admin_launch_page_picks_a_paradigm(staff_client):
    page = staff_client.get("/admin/auditapp/audit/add/").content.decode()
    assert 'id="paradigm-picker"' in page and "Zero-Shot" in page  # the default paradigm's form: its conditions
    assert all(label in page for _, label in registry.choices())
    page = staff_client.get("/admin/auditapp/audit/add/?paradigm=self_report").content.decode()
    assert "Masked (one questionnaire" in page and "Zero-Shot" not in page
    assert staff_client.get("/admin/auditapp/audit/add/?paradigm=astrology").status_code == 404


@pytest.fixture
def tasks_off(monkeypatch):
    for name in ("audit_prepare_task", "audit_work_task", "audit_analyse_task"):
        monkeypatch.setattr(f"tasks.audits.{name}.delay", lambda audit_id: None)


def _run(audit: Audit, *, analyse: bool = True) -> Audit:
    preparation.audit_prepare(audit_id=audit.id)
    assert audit_runner.audit_work(audit.id) == "finished"
    if analyse:
        analysis.audit_analyse(audit_id=audit.id)
    return Audit.objects.get(pk=audit.id)


@pytest.mark.django_db(transaction=True)
def test_classification_replies_have_one_judgment_each_and_a_reparse_rewrites_them(tasks_off):
    study = make_audit_study(12, n_examples=0)
    with LLMServer(latency=0.0) as server:
        endpoint = LLMEndpoint.objects.create(name="t", protocol="openai", base_url=server.base_url)
        audit = _run(classification_services.audit_create(
            study=study, name="judged", conditions=["zs", "cot"],
            models=[launch.ModelChoice(endpoint=endpoint, model="model-a")]), analyse=False)
    assert audit.status == Audit.Status.ANALYSING
    answered = AuditRequest.objects.filter(audit=audit, state=AuditRequest.State.ANSWERED)
    expected = sorted((r.id, str(r.item_id), r.outcome, r.label) for r in answered)
    judged = sorted(AuditJudgment.objects.filter(audit=audit).values_list("request_id", "unit", "outcome", "label"))
    assert judged == expected and len(judged) == 12 * 2

    # A re-parse rewrites them from the stored replies (a judgment changed by hand is put right).
    AuditJudgment.objects.filter(audit=audit).update(label=7, outcome="x")
    assert analysis.audit_reparse(audit_id=audit.id) == 24
    assert sorted(AuditJudgment.objects.filter(audit=audit).values_list("request_id", "unit", "outcome", "label")) \
        == expected


@pytest.mark.django_db(transaction=True)
def test_self_report_judgments_are_each_items_answer_and_the_upgrade_judges_older_replies(
        tasks_off, persona_server, shipped_instruments):
    endpoint = LLMEndpoint.objects.create(name="p", protocol="ollama", base_url=persona_server.base_url)
    audit = _run(self_report_services.self_report_audit_create(
        name="judged", models=[launch.ModelChoice(endpoint=endpoint, model="persona-key")],
        instruments=[shipped_instruments["aq50"]], mode="batch", seed=3))
    builder = self_report_services.SelfReportRequests(audit)
    expected = []
    for request in AuditRequest.objects.filter(audit=audit).select_related("reply"):
        spec = builder.specs(request.condition, request.replicate)[request.unit]
        expected += [(request.id, str(position), answer.outcome, answer.index)
                     for position, answer in parse_reply(spec, request.reply.text).items()]
    judged = sorted(AuditJudgment.objects.filter(audit=audit).values_list("request_id", "unit", "outcome", "label"))
    # The original AQ-50, and the masked form: its 50 items among 50 IPIP fillers and 52 dummy items.
    assert judged == sorted(expected) and len(judged) == 50 + (50 + 50 + 52)
    answers = self_report_services.item_answers(audit)
    scores = audit.analysis["scores"]

    # A database from before judgments: the upgrade step writes them, and the exports read the same again.
    AuditJudgment.objects.all().delete()
    assert upgrade_steps.judge_stored_replies() == f"{audit.n_requests} stored replies judged"
    assert upgrade_steps.judge_stored_replies() == "0 stored replies judged"
    assert sorted(AuditJudgment.objects.filter(audit=audit).values_list("request_id", "unit", "outcome", "label")) \
        == sorted(expected)
    assert self_report_services.item_answers(audit) == answers
    analysis.audit_analyse(audit_id=audit.id)
    assert Audit.objects.get(pk=audit.id).analysis["scores"] == scores


def test_a_classification_audit_snapshots_its_ground_truth_as_a_corpus_stored_once(tasks_off):
    study = make_audit_study(10, n_examples=0)
    endpoint = LLMEndpoint.objects.create(name="t", protocol="openai", base_url="http://127.0.0.1:9")
    choice = [launch.ModelChoice(endpoint=endpoint, model="model-a")]
    first = classification_services.audit_create(study=study, name="a", conditions=["zs"], models=choice)
    second = classification_services.audit_create(study=study, name="b", conditions=["cot"], models=choice)
    assert first.corpus_id == second.corpus_id, "the same items and labels: one corpus"
    corpus = first.corpus
    assert corpus.paradigm == "classification" and corpus.provenance["study"] == study.slug
    snapshot = {unit.key: (unit.text, unit.factors) for unit in corpus.units.all()}
    expected = {item.external_id: (item.target, {"majority": str(majority) if majority is not None else "",
                                                 "weighted": str(weighted) if weighted is not None else ""})
                for item, majority, weighted in ((i.item, i.majority_label, i.weighted_label)
                                                 for i in first.items.select_related("item"))}
    assert snapshot == expected and len(snapshot) == 10
