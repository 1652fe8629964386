"""The management commands: import_items, load_demo, load_demo_audit, create_researcher."""
from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.core.management.base import CommandError

from annotation.models import Item, Label, Study
from teams.models import Membership
from tests.factories import autalic_like_csv, make_study

pytestmark = pytest.mark.django_db


def test_import_items_command(tmp_path, capsys):
    study = make_study(slug="autalic")
    path = tmp_path / "autalic.csv"
    path.write_bytes(autalic_like_csv(40))
    call_command("import_items", str(path), study="autalic")
    assert "imported 40 items, 120 labels from 3 annotators" in capsys.readouterr().out
    assert study.items.count() == 40


def test_import_items_command_reports_every_problem_and_imports_nothing(tmp_path, capsys):
    make_study(slug="s")
    path = tmp_path / "bad.csv"
    path.write_bytes(b"id,sentence,A1_Score\na,One,1\nb,,0\nc,Three,7\n")
    with pytest.raises(CommandError, match="2 problem"):
        call_command("import_items", str(path), study="s")
    err = capsys.readouterr().err
    assert "row 3, column 'sentence': empty target sentence" in err
    assert "row 4, column 'A1_Score': label '7' is not one of -1, 0, 1" in err
    assert not Item.objects.exists()


def test_import_items_command_mapping_options(tmp_path):
    make_study(slug="s")
    path = tmp_path / "plain.csv"
    path.write_bytes(b"body,r1\nOne,1\nTwo,0\n")
    call_command("import_items", str(path), study="s", target_column="body", label_columns="r1",
                 row_numbers_as_ids=True)
    assert list(Item.objects.values_list("external_id", "target")) == [("2", "One"), ("3", "Two")]
    assert Label.objects.count() == 2


def test_import_items_command_unknown_study_or_file(tmp_path):
    with pytest.raises(CommandError, match="no study with slug 'nope'"):
        call_command("import_items", str(tmp_path / "x.csv"), study="nope")
    make_study(slug="s")
    with pytest.raises(CommandError, match="no such file"):
        call_command("import_items", str(tmp_path / "x.csv"), study="s")


def test_load_demo_is_idempotent_and_prints_the_login(settings, tmp_path, capsys):
    settings.VAR_DIR = tmp_path
    call_command("load_demo")
    first = capsys.readouterr().out
    call_command("load_demo")
    second = capsys.readouterr().out
    assert first == second
    password = (tmp_path / "demo-researcher.txt").read_text()
    assert f"user: researcher  password: {password}" in first
    assert Study.objects.get(slug="demo").items.count() == 24
    assert Label.objects.count() == 72 + 12 * (8 + 1)  # imported; simulated: 8 sentences and the attention check
    user = get_user_model().objects.get(username="researcher")
    assert user.is_staff and user.check_password(password)


def test_the_demo_has_simulated_annotators_with_weights_and_room_for_its_invitees(settings, tmp_path, capsys):
    from annotation.models import ParticipantWeight
    from annotation.participation import instructions_read, participant_consent
    from annotation.study_analysis import study_analysis_compute
    from psychometrics.models import IATTrial, InstrumentScore

    settings.VAR_DIR = tmp_path
    call_command("load_demo")
    study = Study.objects.get(slug="demo")
    simulated = study.participants.filter(team="simulated")
    assert simulated.count() == 12 and all(p.status == "completed" for p in simulated)
    assert InstrumentScore.objects.filter(participant__in=simulated).count() == 24  # AQ and SATA each
    assert IATTrial.objects.filter(participant__in=simulated).values("participant").distinct().count() == 12
    # Where the imported annotators agreed, the simulated annotators call the item ableist far more often when they
    # said 1 than when they said 0 (a clear item is called the other way with probability sigmoid(-2.5 +
    # slope · insensitivity), often for the most sensitive); the attention check
    # (demo-12), which the imported annotators called unrelated, every one of them calls unrelated.
    imported = study.participants.filter(source_import__isnull=False)
    agreed = {item: values.pop() for item in study.items.values_list("external_id", flat=True)
              if len(values := set(Label.objects.filter(participant__in=imported, item__external_id=item)
                                   .values_list("value", flat=True))) == 1}
    given = Label.objects.filter(participant__in=simulated, item__external_id__in=agreed)
    said_one = {value: [label == 1 for item, label in given.values_list("item__external_id", "value")
                        if agreed[item] == value] for value in (0, 1)}
    # Seed 2024 gives 0.90 (19 of 21) and 0.29 (7 of 24); a mapping of labels to the wrong items gives about 0.
    assert sum(said_one[1]) / len(said_one[1]) - sum(said_one[0]) / len(said_one[0]) > 0.5
    assert agreed["demo-12"] == -1
    assert set(given.filter(item__external_id="demo-12").values_list("value", flat=True)) == {-1}
    # Each took the time their simulated answers, IAT trials and labels add up to, in the order of the flow.
    for person in simulated:
        assert person.opened_at < person.started_at < person.read_instructions_at < person.completed_at
        minutes = (person.completed_at - person.started_at).total_seconds() / 60
        assert 5 < minutes < 30, (person.pseudonym, minutes)
        assert Label.objects.filter(participant=person, created_at__lt=person.started_at).count() == 0
    from annotation.monitor import study_monitor

    times = study_monitor(study=study).times
    assert times.median > 300 and times.shortest < times.longest  # not "Median 0 s (shortest 0 s, longest 0 s)"
    study_analysis_compute(study_id=study.pk)
    weights = ParticipantWeight.objects.filter(participant__in=simulated, weight__isnull=False)
    assert weights.count() == 12 and len(set(weights.values_list("weight", flat=True))) > 1
    # The printed invite link gets a full share of sentences, not the leftovers of a full study.
    invitee = study.participants.get(pseudonym=capsys.readouterr().out.split("Try the annotator flow as ")[1].split(":")[0])
    participant_consent(participant=invitee)
    instructions_read(participant=invitee)
    assert invitee.assignments.count() == 8 + 1


def test_create_researcher_command(capsys):
    call_command("create_researcher", "bob", password="a-long-passphrase")
    out = capsys.readouterr().out
    user = get_user_model().objects.get(username="bob")
    assert user.is_staff and not user.is_superuser and user.check_password("a-long-passphrase")
    assert user.auth_token.key in out
    assert user.has_perm("annotation.add_item") and user.has_perm("annotation.view_label")
    with pytest.raises(CommandError, match="already exists"):
        call_command("create_researcher", "bob")


@pytest.mark.django_db(transaction=True)
def test_load_demo_audit_runs_a_real_bits_audit_once_and_prints_its_dashboard(capsys, monkeypatch, researcher,
                                                                               staff_client):
    from textblob import TextBlob

    from auditapp.models import Audit, AuditJudgment, CorpusUnit

    for name in ("audit_prepare_task", "audit_work_task", "audit_analyse_task"):
        monkeypatch.setattr(f"tasks.audits.{name}.delay", lambda audit_id: None)
    call_command("load_demo_audit")
    first = capsys.readouterr().out
    call_command("load_demo_audit")
    assert capsys.readouterr().out == first
    audit = Audit.objects.get(paradigm="bits")
    assert audit.status == Audit.Status.COMPLETED and f"/audits/{audit.id}/dashboard/" in first
    # 2,310 sentences × VADER and TextBlob, each score the library's own.
    judged = AuditJudgment.objects.filter(audit=audit, request__audit_model__model="textblob")
    assert judged.count() == 2310
    texts = dict(CorpusUnit.objects.filter(corpus=audit.corpus).values_list("key", "text"))
    assert all(value == TextBlob(texts[unit]).sentiment.polarity for unit, value in judged.values_list("unit", "value"))
    # The demo audit is the Demo team's: a researcher reads its dashboard as one of the team's members.
    assert staff_client.get(f"/audits/{audit.id}/dashboard/").status_code == 404
    Membership.objects.create(team=audit.team, user=researcher[0], role="viewer")
    page = staff_client.get(f"/audits/{audit.id}/dashboard/").content.decode()
    assert 'id="table-7"' in page and 'id="bits-heatmap"' in page


def test_a_demo_that_fails_half_way_is_made_whole_by_the_next_run(settings, tmp_path, monkeypatch):
    settings.VAR_DIR = tmp_path

    def broken(**kwargs):
        raise RuntimeError("interrupted")

    monkeypatch.setattr("annotation.simulated_participation.instructions_read", broken)
    with pytest.raises(RuntimeError, match="interrupted"):
        call_command("load_demo")
    assert not Study.objects.filter(slug="demo").exists()
    monkeypatch.undo()
    call_command("load_demo")
    assert Study.objects.get(slug="demo").participants.filter(team="simulated", status="completed").count() == 12
