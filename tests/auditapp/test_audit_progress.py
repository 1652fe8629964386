"""The live progress of an audit (``GET /api/audits/{id}/progress/``): its rate is measured over the time spent
sending within the last minute, not over the whole minute, and it gives an ETA only while the audit runs.

The audit is the running one of the dashboard tests (two models × two conditions over 16 items); the finish times
and latencies of one row are set by hand, so the expected rate is worked out in each test's comments.
"""
from __future__ import annotations

import datetime
import types

import pytest
from django.utils import timezone

from auditapp.engine import selectors
from auditapp.models import Audit, AuditRequest, LLMReply
from tests.auditapp.test_audit_dashboard_view import RUNNING_PLAN, build_audit

pytestmark = pytest.mark.django_db

SECOND = datetime.timedelta(seconds=1)


@pytest.fixture
def now(monkeypatch) -> datetime.datetime:
    """The progress is read at this instant, however long the test takes to build the audit and ask for it."""
    instant = timezone.now()
    monkeypatch.setattr(selectors, "timezone", types.SimpleNamespace(now=lambda: instant))
    return instant


def _finish(audit: Audit, model: str, condition: str, times: list[datetime.datetime], *, latency_ms: float,
            **changes) -> None:
    """The finished requests of one row, in order, finished at ``times`` with replies that took ``latency_ms``."""
    rows = (AuditRequest.objects.filter(audit=audit, audit_model__model=model, condition=condition)
            .exclude(state=AuditRequest.State.PENDING).order_by("order"))
    assert rows.count() == len(times)
    for row, finished_at in zip(rows, times, strict=True):
        AuditRequest.objects.filter(pk=row.pk).update(finished_at=finished_at, **changes)
    LLMReply.objects.filter(pk__in=rows.values("reply")).update(latency_ms=latency_ms)


def _progress(api_client, audit: Audit) -> dict:
    return api_client.get(f"/api/audits/{audit.id}/progress/").json()


def _cell(progress: dict, model: str, condition: str) -> dict:
    return next(cell for cell in progress["cells"] if cell["model"] == f"Model {model[-1].upper()}"
                and cell["condition"] == condition)


def _quiet_all_but(audit: Audit, model: str, condition: str, before: datetime.datetime) -> None:
    """Every other row finished its requests long before the window: it adds nothing to the rate."""
    (AuditRequest.objects.filter(audit=audit).exclude(audit_model__model=model, condition=condition)
     .exclude(state=AuditRequest.State.PENDING).update(finished_at=before))


def test_early_in_an_audit_the_rate_is_over_the_seconds_it_has_sent(api_client, now):
    """12 s into the audit, model-a × zs has finished 8 requests (one failed), the first 11 s ago after a 1 s
    latency: 8 in the 12 s since it began sending, 0.667/s, and its 8 waiting ones in 12 s. Over the whole
    minute it would read 8 / 60 = 0.133/s and an ETA of 60 s, five times too long."""
    audit = build_audit(RUNNING_PLAN, status=Audit.Status.RUNNING)
    Audit.objects.filter(pk=audit.pk).update(started_at=now - 12 * SECOND)
    _quiet_all_but(audit, "model-a", "zs", now - 10 * 60 * SECOND)
    _finish(audit, "model-a", "zs", [now - (11 - i) * SECOND for i in range(8)], latency_ms=1000.0)
    cell = _cell(_progress(api_client, audit), "model-a", "zs")
    assert cell["waiting"] == 8
    assert cell["rate_per_s"] == pytest.approx(8 / 12, rel=0.005)
    assert cell["eta_s"] == pytest.approx(12, rel=0.005)


def test_after_an_outage_the_rate_is_over_the_seconds_since_sending_resumed(api_client, now):
    """The audit began 10 minutes ago; its endpoint was away until 10.5 s ago: nothing finished in the 50 s
    before. Since then model-a × zs finished 8 requests at 0.5 s latency, the first 10 s ago: 8 in 10.5 s,
    0.762/s, so 10.5 s for its 8 waiting ones (over the minute: 0.133/s and 60 s)."""
    audit = build_audit(RUNNING_PLAN, status=Audit.Status.RUNNING)
    Audit.objects.filter(pk=audit.pk).update(started_at=now - 10 * 60 * SECOND)
    _quiet_all_but(audit, "model-a", "zs", now - 5 * 60 * SECOND)
    _finish(audit, "model-a", "zs", [now - (10 - i) * SECOND for i in range(8)], latency_ms=500.0)
    progress = _progress(api_client, audit)
    cell = _cell(progress, "model-a", "zs")
    assert cell["rate_per_s"] == pytest.approx(8 / 10.5, rel=0.005)
    assert cell["eta_s"] == pytest.approx(10.5, rel=0.005)
    # Only that row sent: the totals' rate is its rate, for all 52 requests waiting.
    assert progress["totals"]["rate_per_s"] == pytest.approx(8 / 10.5, rel=0.005)
    assert progress["totals"]["eta_s"] == pytest.approx(52 * 10.5 / 8, rel=0.005)


def test_after_a_resume_the_rate_counts_only_what_finished_since_over_the_time_since(api_client, now):
    """Paused 40 s ago after 4 finishes (50, 48, 46 and 44 s ago), resumed 10 s ago: 4 more finished since, 8, 6, 4
    and 2 s ago, at 1 s latency. Since the resume: 4 requests, the first sent 9 s ago, but not before the resume
    (10 s ago): 4 / 9 = 0.444/s, 18 s for its 8 waiting. Without the resume known it read the 8 finishes over the
    51 s since the first was sent, 0.157/s, and an ETA of 51 s, though it sends at 0.444/s now."""
    audit = build_audit(RUNNING_PLAN, status=Audit.Status.RUNNING)
    Audit.objects.filter(pk=audit.pk).update(started_at=now - 10 * 60 * SECOND, resumed_at=now - 10 * SECOND)
    _quiet_all_but(audit, "model-a", "zs", now - 5 * 60 * SECOND)
    _finish(audit, "model-a", "zs", [now - t * SECOND for t in (50, 48, 46, 44, 8, 6, 4, 2)], latency_ms=1000.0)
    cell = _cell(_progress(api_client, audit), "model-a", "zs")
    assert cell["rate_per_s"] == pytest.approx(4 / 9, rel=0.005)
    assert cell["eta_s"] == pytest.approx(18, rel=0.005)


def test_resuming_and_sending_failed_requests_again_record_when_sending_began_again(api_client):
    for status, action in ((Audit.Status.PAUSED, "resume"), (Audit.Status.COMPLETED, "retry-failed")):
        audit = build_audit(RUNNING_PLAN, status=status)
        AuditRequest.objects.filter(audit=audit, state=AuditRequest.State.PENDING).update(
            state=AuditRequest.State.FAILED, error="HTTP 500")
        before = timezone.now()
        response = api_client.post(f"/api/audits/{audit.id}/{action}/")
        assert response.status_code in (200, 202), response.content
        audit.refresh_from_db()
        assert audit.status == Audit.Status.RUNNING and audit.resumed_at >= before


def test_a_row_sending_all_minute_long_is_measured_over_the_minute(api_client, now):
    """Finishes every 10 s over the last 75 s at 10 s latency: the 6 within the minute count, over the whole minute
    (the first of them was sent before it began), 0.1/s; the two before the minute do not count."""
    audit = build_audit(RUNNING_PLAN, status=Audit.Status.RUNNING)
    Audit.objects.filter(pk=audit.pk).update(started_at=now - 10 * 60 * SECOND)
    _quiet_all_but(audit, "model-a", "zs", now - 5 * 60 * SECOND)
    _finish(audit, "model-a", "zs", [now - (75 - 10 * i) * SECOND for i in range(8)],
            latency_ms=10_000.0)
    cell = _cell(_progress(api_client, audit), "model-a", "zs")
    assert cell["rate_per_s"] == pytest.approx(6 / 60, rel=0.005)
    assert cell["eta_s"] == pytest.approx(80, rel=0.005)


def test_replies_from_the_cache_are_not_counted_in_the_rate(api_client, now):
    audit = build_audit(RUNNING_PLAN, status=Audit.Status.RUNNING)
    _quiet_all_but(audit, "model-a", "zs", now - 5 * 60 * SECOND)
    _finish(audit, "model-a", "zs", [now - 5 * SECOND] * 8, latency_ms=0.0, from_cache=True)
    cell = _cell(_progress(api_client, audit), "model-a", "zs")
    assert cell["from_cache"] == 8
    assert cell["rate_per_s"] == 0.0
    assert cell["eta_s"] is None


@pytest.mark.parametrize("status", [Audit.Status.PAUSED, Audit.Status.STOPPED, Audit.Status.CANCELLED,
                                    Audit.Status.FAILED, Audit.Status.COMPLETED])
def test_an_audit_that_is_not_running_has_no_eta(api_client, now, status):
    """Paused 5 s after model-a × zs sent 8 requests in 10 s: its rate is still said, but nothing is being sent, so
    no row and not the totals give an ETA."""
    audit = build_audit(RUNNING_PLAN, status=Audit.Status.RUNNING)
    _finish(audit, "model-a", "zs", [now - (15 - i) * SECOND for i in range(8)], latency_ms=1000.0)
    Audit.objects.filter(pk=audit.pk).update(status=status)
    progress = _progress(api_client, audit)
    assert progress["status"] == status
    assert _cell(progress, "model-a", "zs")["rate_per_s"] > 0
    assert [cell["eta_s"] for cell in progress["cells"]] == [None] * 4
    assert progress["totals"]["eta_s"] is None


def test_a_running_audit_s_row_with_nothing_waiting_has_an_eta_of_zero(api_client, now):
    audit = build_audit({("model-a", "zs"): {}, ("model-b", "zs"): {"pending": {3}}}, status=Audit.Status.RUNNING)
    progress = _progress(api_client, audit)
    assert _cell(progress, "model-a", "zs")["eta_s"] == 0.0
    assert _cell(progress, "model-b", "zs")["eta_s"] > 0
