"""The set-up functions of the scripts in benchmarks/, against the test database: every study, audit, corpus and
endpoint a benchmark makes must belong to a team (the database refuses one without), the team "Benchmarks" unless
the benchmark needs another. The suite's default team (tests/team_defaults.py) is turned off here, so a script that
names no team fails as it does when run. The scripts themselves run for minutes against servers of their own; their
set-up is what broke when teams came, so it alone is run here, at the smallest sizes."""
from __future__ import annotations

import pytest
from django.core import management

from annotation.models import Participant, Study
from auditapp.models import Audit, AuditModel, LLMEndpoint
from teams import roles
from teams.scoping import demo_team, role_on
from tests import team_defaults

pytestmark = [pytest.mark.slow, pytest.mark.django_db]

BENCHMARKS = "Benchmarks"


@pytest.fixture(autouse=True)
def as_a_script(monkeypatch):
    """No default team; and the scripts' own ``django.setup()`` and migration skipped: the test database is set up
    and migrated already (migrating again would cost seconds per script)."""
    monkeypatch.setitem(team_defaults.ENABLED, "on", False)
    monkeypatch.setattr("django.setup", lambda *args, **kwargs: None)
    call_command = management.call_command

    def without_migrate(name, *args, **kwargs):
        if name != "migrate":
            return call_command(name, *args, **kwargs)
        return None

    monkeypatch.setattr(management, "call_command", without_migrate)


def test_annotator_load_builds_its_study_in_the_benchmarks_team():
    from benchmarks.annotator_load import build_study

    study_id, tokens = build_study(annotators=2, items_per_annotator=1, annotators_per_item=1)

    assert Study.objects.get(pk=study_id).team.name == BENCHMARKS
    assert len(tokens) == 2


def test_export_labels_builds_a_study_its_researcher_may_read():
    from rest_framework.authtoken.models import Token

    from benchmarks.export_labels import build_study

    study_id, token = build_study(4, 2)

    study = Study.objects.get(pk=study_id)
    assert study.team.name == BENCHMARKS
    assert study.items.count() == 2
    assert role_on(Token.objects.get(key=token).user, study) == roles.VIEWER


def test_judgment_storage_audit_and_endpoint_are_in_the_benchmarks_team():
    from benchmarks.judgment_storage import throwaway_audit

    audit_id, request_ids = throwaway_audit(n_requests=2, name="judgment storage")

    assert Audit.objects.get(pk=audit_id).team.name == BENCHMARKS
    assert AuditModel.objects.get(audit_id=audit_id).endpoint.team.name == BENCHMARKS
    assert len(request_ids) == 2


def test_judged_pairs_audit_is_in_the_benchmarks_team_and_answered(audit_tasks_off):
    from auditapp.models import AuditJudgment
    from auditapp.services import researcher_create
    from benchmarks.judged_pairs import names_audit

    user, _, _ = researcher_create(username="pairs-benchmark")
    audit, model, task = names_audit(n_models=1, n_tasks=1, iterations=2, user=user)

    assert audit.team.name == BENCHMARKS and audit.corpus.team.name == BENCHMARKS
    assert (model, task) == (audit.models.get().id, "hireable")
    assert AuditJudgment.objects.filter(audit=audit).count() == 2 * 60


def test_counterfactual_scale_audit_its_corpus_and_endpoint_are_in_the_benchmarks_team(monkeypatch, capsys):
    from auditapp.paradigms.counterfactual import services as counterfactual_services
    from benchmarks.counterfactual_scale import create

    monkeypatch.setattr(counterfactual_services, "enqueue_prepare", counterfactual_services.enqueue_prepare)  # the
    # script replaces it (it plays the worker's part): put back after the test
    audit = Audit.objects.get(pk=create(1, 1))

    assert audit.team.name == BENCHMARKS
    assert audit.corpus.team.name == BENCHMARKS
    assert {model.endpoint.team.name for model in audit.models.all()} == {BENCHMARKS}
    assert "judgments/s" in capsys.readouterr().out


def test_audit_throughput_study_audit_and_its_corpus_are_in_the_benchmarks_team(audit_tasks_off):
    from benchmarks.audit_throughput import build_study, launch

    study = build_study(3)
    endpoint = LLMEndpoint.objects.create(name="throughput", protocol="openai", base_url="http://127.0.0.1:9/v1",
                                          team=study.team)
    audit = launch(study, endpoint, 1)

    assert study.team.name == BENCHMARKS
    assert audit.team.name == BENCHMARKS
    assert audit.corpus.team.name == BENCHMARKS
    assert not audit.use_cache  # every request is sent: a cached reply would inflate the rate


def test_bits_throughput_corpus_and_its_audits_are_in_the_benchmarks_team(audit_tasks_off):
    from auditapp.engine.launch import ModelChoice
    from auditapp.paradigms.bits.services import bits_audit_create
    from benchmarks.bits_throughput import build_corpus

    corpus = build_corpus()
    endpoint = LLMEndpoint.objects.create(name="local", protocol="local", base_url="", team=corpus.team)
    audit = bits_audit_create(name="throughput", corpus=corpus, use_cache=False,
                              models=[ModelChoice(endpoint=endpoint, model="vader")])

    assert corpus.team.name == BENCHMARKS
    assert audit.team.name == BENCHMARKS


def test_dashboard_scale_study_is_in_the_benchmarks_team_and_its_researcher_reads_its_dashboard(client):
    from benchmarks.dashboard_scale import build_study, researcher

    team, user = researcher()
    study = build_study(team, n_participants=3, n_items=6, with_scores=False)
    client.force_login(user)

    assert study.team.name == BENCHMARKS
    assert client.get(f"/studies/{study.pk}/dashboard/").status_code == 200


def test_run_soak_study_is_in_the_team_of_the_demo_researcher(monkeypatch, tmp_path):
    from benchmarks.run_soak import make_study

    # The script points Django at bin/run's folder (already set up here): put the environment back afterwards.
    monkeypatch.setenv("VAR_DIR", str(tmp_path))
    monkeypatch.setenv("DJANGO_SETTINGS_MODULE", "config.settings.test")
    study_id, invites = make_study(tmp_path, 3)

    assert Study.objects.get(pk=study_id).team == demo_team()
    assert len(invites) == 3


def test_iat_timing_study_is_in_the_benchmarks_team():
    from benchmarks.iat_timing import new_participant

    participant_id, _ = new_participant()

    assert Participant.objects.get(pk=participant_id).study.team.name == BENCHMARKS


def test_label_breakdown_times_the_label_pages_of_the_load_benchmarks_study(settings):
    from django.db import connection
    from django.test import Client

    from benchmarks import label_breakdown
    from benchmarks.annotator_load import build_study

    _, (token,) = build_study(annotators=1, items_per_annotator=2, annotators_per_item=1)
    settings.MIDDLEWARE = [*settings.MIDDLEWARE, "benchmarks.label_breakdown.ViewTimer"]
    with connection.execute_wrapper(label_breakdown.RECORDER.sql):
        labels = label_breakdown.label_everything(Client(enforce_csrf_checks=True), token, None)

    assert labels == 2
    assert label_breakdown.RECORDER.counts == {"label GET": 3, "label POST": 2}  # the third page: done
    lines = label_breakdown.report(1, labels)
    statements = next(line for line in lines if line.startswith("SQL statements")).split()
    assert all(float(count) > 0 for count in statements[2:])
