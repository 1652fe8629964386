"""The study monitor (annotation.monitor) on tests/monitor_study.py's study, whose participants the participant
services put at every step of its flow; and the dashboard page that shows it."""
from __future__ import annotations

from datetime import timedelta

import pytest
from django.test import Client
from django.utils import timezone
from django.utils.html import strip_tags

from annotation.models import Item, Label, Participant
from annotation.monitor import completion_seconds, item_coverage, study_monitor
from annotation.participation import participant_opened, participant_withdraw, participants_invite
from annotation.study_analysis import study_analysis_compute, study_analysis_run
from tests.factories import make_study
from tests.monitor_study import make_monitor_study

pytestmark = pytest.mark.django_db

AQ, SATA = "Autism-Spectrum Quotient (AQ-50)", "SATA (partial: 5 published items, demo only)"


@pytest.fixture
def study():
    return make_monitor_study()


@pytest.fixture
def staff(researcher) -> Client:
    client = Client()
    client.force_login(researcher[0])
    return client


def test_the_funnel_of_a_study_with_a_participant_at_every_step(study):
    funnel = study_monitor(study=study).funnel
    assert [(row.milestone, row.reached, row.waiting) for row in funnel.rows] == [
        ("Invited (a link issued)", 11, 1),
        ("Opened their link", 10, 1),
        ("Consented", 8, 1),
        (f"Finished {AQ}", 6, 1),
        (f"Finished {SATA}", 5, 1),
        ("Finished the reaction-time task (IAT)", 4, 1),
        ("Started labelling (read the instructions)", 3, 1),
        ("Completed", 2, 2),
    ]
    assert [row.waiting_text for row in funnel.rows][2:6] == [
        f"answering {AQ}", f"answering {SATA}", "taking the reaction-time task (IAT)",
        "at the labelling instructions"]
    assert (funnel.declined, funnel.withdrawn, funnel.imported, funnel.accounted) == (1, 1, 1, 11)
    assert funnel.statuses == {"invited": 2, "declined": 1, "active": 5, "completed": 2, "withdrawn": 1,
                               "imported": 1}


def test_the_funnel_follows_the_study_flow_without_the_iat(study):
    study.iat_enabled = False
    study.save()
    rows = study_monitor(study=study).funnel.rows
    assert [row.milestone for row in rows][3:6] == [f"Finished {AQ}", f"Finished {SATA}",
                                                     "Started labelling (read the instructions)"]
    # P0006 (SATA finished, IAT not taken) is now at the labelling instructions with P0007.
    assert rows[4].waiting == 2 and rows[4].waiting_text == "at the labelling instructions"


def test_items_attention_times_and_activity(study):
    monitor = study_monitor(study=study)
    items = monitor.items
    labels = Label.objects.filter(item__study=study, item__attention_check_answer__isnull=True)
    counts = {item.external_id: labels.filter(item=item).count() for item in study.items.filter(
        attention_check_answer__isnull=True)}
    assert (items.n_items, items.n_checks, items.target) == (6, 1, 2)
    assert items.short == sum(1 for n in counts.values() if n < 2) and items.short > 0
    assert items.unlabelled == sum(1 for n in counts.values() if n == 0)

    assert (monitor.attention.scored, monitor.attention.passed) == (2, 1)  # P0009 right, P0010 wrong
    times = monitor.times
    assert times.n == 2 and times.median == pytest.approx((20 + 35) / 2 * 60)
    assert sum(b.n for b in times.bins) == 2 and times.bins[0].start == 20 and times.bins[-1].end == 36

    activity = monitor.activity
    assert (activity.labelling_in_app, activity.labelling_imported) == (3, 1)
    last_label = Label.objects.filter(item__study=study).exclude(participant__pseudonym="A1").latest("updated_at")
    assert activity.last_label == last_label.updated_at
    assert activity.last_answer is not None and activity.last_iat is not None
    assert activity.latest[0] == max(activity.last_label, activity.last_answer, activity.last_iat,
                                     activity.last_consent)


def test_items_short_of_the_target_are_counted_by_hand():
    study = make_study(annotators_per_item=2)
    people = participants_invite(study=study, count=3)
    items = {name: Item.objects.create(study=study, external_id=name, target=name, position=n)
             for n, name in enumerate(("a", "b", "c", "d"))}
    check = Item.objects.create(study=study, external_id="check", target="c", attention_check_answer=0, position=9)
    for name, n_labels in (("b", 1), ("c", 2), ("d", 3)):
        for person in people[:n_labels]:
            Label.objects.create(participant=person, item=items[name], value=1)
    Label.objects.create(participant=people[0], item=check, value=0)
    coverage = item_coverage(study=study)
    assert (coverage.n_items, coverage.n_checks, coverage.short, coverage.unlabelled) == (4, 1, 2, 1)  # a, b; a
    study.annotators_per_item = 0  # no target: an item needs labels until it has one
    assert (item_coverage(study=study).short, item_coverage(study=study).target) == (1, 0)


def test_the_monitor_takes_a_fixed_number_of_queries(study, django_assert_num_queries):
    with django_assert_num_queries(5):
        study_monitor(study=study)
    participants_invite(study=study, count=30)
    with django_assert_num_queries(5):
        assert study_monitor(study=study).funnel.invited == 41


def test_opening_a_link_is_recorded_once_and_never_after_a_withdrawal(study, client):
    (person,) = participants_invite(study=study, count=1)
    assert client.get(f"/p/{person.invite_token}/").status_code == 302
    person.refresh_from_db()
    first = person.opened_at
    assert first is not None
    client.get(f"/p/{person.invite_token}/consent/")
    person.refresh_from_db()
    assert person.opened_at == first
    (other,) = participants_invite(study=study, count=1)
    participant_withdraw(participant=other)
    participant_opened(participant=other)
    other.refresh_from_db()
    assert other.opened_at is None


def test_completion_time_is_consent_to_completion(study):
    person = Participant.objects.get(study=study, pseudonym="P0009")
    Participant.objects.filter(pk=person.pk).update(completed_at=person.started_at + timedelta(minutes=3))
    assert sorted(round(s) for s in completion_seconds(study=study)) == [180, 35 * 60]


def test_the_dashboard_shows_the_monitor_first(study, staff):
    html = staff.get(f"/studies/{study.id}/dashboard/").content.decode()
    assert html.index('id="monitor"') < html.index('id="no-analysis"')
    funnel = html[html.index('id="funnel"'):html.index("</table>", html.index('id="funnel"'))]
    assert '<td class="num reached">11</td>' in funnel and '<td class="num reached">2</td>' in funnel
    assert f"answering {AQ}" in funnel
    text = " ".join(strip_tags(html).split())
    assert ("Participants now: invited, not yet consented 2 · in progress 5 · completed 2 · withdrawn 1 · declined "
            "consent 1 · imported with a data file 1") in text
    assert "3 annotators have labels, of the 10 participants who opened their link; and 1 imported" in text
    assert 'id="items-needing-labels"' in html
    assert "1 of 2 passed (50%)" in text
    for name in ("labels", "ground-truth", "participants", "iat-trials", "instrument-responses"):
        assert f'href="/api/studies/{study.id}/{name}/?format=csv"' in html
    assert f'href="/api/studies/{study.id}/analysis/?format=json"' in html


def test_a_study_without_attention_checks_says_so(staff):
    study = make_study()
    html = staff.get(f"/studies/{study.id}/dashboard/").content.decode()
    assert "This study has no attention-check items" in html
    assert "No participant has completed yet" in html


def test_the_dashboard_counts_analysed_annotators_against_arrivals(study, staff):
    study_analysis_compute(study_id=study.id)
    html = staff.get(f"/studies/{study.id}/dashboard/").content.decode()
    summary = html[html.index('id="summary"'):]
    assert "The latest analysis scored" in summary


def test_the_last_activity_is_shown_with_its_kind(study, staff):
    Label.objects.filter(item__study=study).exclude(participant__pseudonym="A1").update(
        updated_at=timezone.now() + timedelta(hours=1))
    html = staff.get(f"/studies/{study.id}/dashboard/").content.decode()
    line = strip_tags(html[html.index('<p id="last-activity">'):html.index("</p>", html.index('id="last-activity"'))])
    assert "(a label, 0" in line and "minutes ago)" in line


@pytest.mark.django_db(transaction=True)  # the task is sent when the request's transaction commits
def test_the_status_the_page_polls_follows_the_recomputation(staff, monkeypatch):
    sent: list[int] = []
    monkeypatch.setattr("tasks.analysis.study_analysis_compute_task.delay", sent.append)
    study = make_study()
    status = f"/studies/{study.id}/dashboard/status/"
    assert staff.get(status).json() == {"state": "not_computed", "error": None, "computed_at": None,
                                        "alternatives": "none"}
    staff.post(f"/studies/{study.id}/dashboard/recompute/")
    assert sent == [study.id] and staff.get(status).json()["state"] == "queued"
    study_analysis_run(study_id=study.id)
    answer = staff.get(status).json()
    assert answer["state"] == "done" and answer["computed_at"] == study.analysis_run.computed_at.isoformat()
    assert answer["alternatives"] == "computing"  # their own task comes after the analysis
    assert staff.post(status).status_code == 405
