"""Researchers' pages say when no Celery worker has been seen for a while (auditapp/worker_status.py): the admin,
the dashboards and the progress API; participants' pages never ask."""
from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from auditapp.models import WorkerHeartbeat
from auditapp.worker_status import worker_heartbeat, worker_status
from tests.auditapp.test_audit_dashboard_view import RUNNING_PLAN, build_audit

pytestmark = pytest.mark.django_db


def beat(seconds_ago: float, hostname: str = "celery@a") -> None:
    seen = timezone.now() - timedelta(seconds=seconds_ago)
    WorkerHeartbeat.objects.update_or_create(hostname=hostname, defaults={"seen_at": seen, "started_at": seen})


def test_the_newest_heartbeat_decides_and_the_message_says_how_long(settings):
    settings.WORKER_SILENT_SECONDS = 40
    assert worker_status().alive is False and "No worker has been seen:" in worker_status().message
    beat(200)
    status = worker_status()
    assert not status.alive and status.message.startswith("No worker has been seen for 3 min (last at ")
    beat(10, hostname="celery@b")
    assert worker_status().alive and worker_status().message == ""
    beat(41, hostname="celery@b")
    assert worker_status().message.startswith("No worker has been seen for 41 s")


def test_a_heartbeat_keeps_the_start_and_moves_the_time_seen():
    worker_heartbeat(hostname="celery@a", starting=True)
    first = WorkerHeartbeat.objects.get()
    worker_heartbeat(hostname="celery@a")
    again = WorkerHeartbeat.objects.get()
    assert again.started_at == first.started_at and again.seen_at >= first.seen_at


def test_researchers_pages_and_the_progress_api_say_it(client, researcher, api_client):
    client.force_login(researcher[0])
    audit = build_audit(RUNNING_PLAN, status="running", name="Waiting")
    for url in ("/admin/", f"/audits/{audit.id}/dashboard/"):
        page = client.get(url).content.decode()
        assert "No worker has been seen" in page and 'id="worker-status"' in page, url
    progress = api_client.get(f"/api/audits/{audit.id}/progress/").json()
    assert progress["worker"]["alive"] is False and progress["worker"]["last_seen"] is None

    beat(3)
    for url in ("/admin/", f"/audits/{audit.id}/dashboard/"):
        assert "No worker has been seen" not in client.get(url).content.decode(), url
    progress = api_client.get(f"/api/audits/{audit.id}/progress/").json()
    assert progress["worker"]["alive"] is True and progress["worker"]["message"] == ""


def test_participants_pages_neither_show_nor_read_it(client, django_assert_num_queries):
    from annotation.models import Participant
    from tests.factories import make_study

    participant = Participant.objects.create(study=make_study(), pseudonym="P1")
    client.get(f"/p/{participant.invite_token}/")
    # The participant with their place in the flow, then the study (annotation/page_reads.py): no heartbeat is read.
    with django_assert_num_queries(2) as context:
        page = client.get(f"/p/{participant.invite_token}/").content.decode()
    assert "worker" not in page.lower()
    assert not any("workerheartbeat" in query["sql"] for query in context.captured_queries)
