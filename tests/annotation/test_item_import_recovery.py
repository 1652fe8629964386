"""Item imports whose task was never sent or whose worker died are sent again by the recovery
(annotation.services.item_imports_recover), once per resend interval; finished ones never. The killed-worker
case with real processes is tests/integration/test_work_recovery.py."""
from __future__ import annotations

from datetime import timedelta

import pytest
from django.db import transaction
from django.utils import timezone
from kombu.exceptions import OperationalError as BrokerError

from annotation.models import Item, ItemImport
from annotation.services import item_import_create, item_import_enqueue, item_import_run, item_imports_recover
from tests.factories import autalic_like_csv, make_study

pytestmark = pytest.mark.django_db(transaction=True)   # tasks are sent when transactions commit

HALF_A_MINUTE = timedelta(seconds=30)


def submitted(study) -> ItemImport:
    with transaction.atomic():
        item_import = item_import_create(study=study, filename="a.csv", content=autalic_like_csv(5))
        item_import_enqueue(item_import=item_import)
    return ItemImport.objects.get(pk=item_import.pk)


def test_an_upload_while_the_broker_is_away_is_kept_and_sent_by_the_recovery(monkeypatch):
    def broker_away(item_import_id):
        raise BrokerError("Error 111 connecting to 127.0.0.1:6379. Connection refused.")

    monkeypatch.setattr("tasks.imports.item_import_run_task.delay", broker_away)
    item_import = submitted(make_study())   # the upload itself does not fail
    assert item_import.status == ItemImport.Status.PENDING and item_import.queued_at is None
    sent: list[int] = []
    monkeypatch.setattr("tasks.imports.item_import_run_task.delay", sent.append)
    assert item_imports_recover(resend_after=HALF_A_MINUTE) == [item_import.id] and sent == [item_import.id]
    assert item_imports_recover(resend_after=HALF_A_MINUTE) == [], "sent once per interval, not on every recovery"


def test_a_pending_import_nobody_runs_is_sent_again_and_runs_once(queued):
    study = make_study()
    item_import = submitted(study)
    assert queued == [item_import.id]
    assert item_imports_recover(resend_after=HALF_A_MINUTE) == [], "just sent: its message may still be queued"
    # Its worker was killed: the import rolled back and its message waits in the broker's unacknowledged set.
    ItemImport.objects.filter(pk=item_import.pk).update(queued_at=timezone.now() - timedelta(seconds=31))
    assert item_imports_recover(resend_after=HALF_A_MINUTE) == [item_import.id]
    assert queued == [item_import.id, item_import.id]
    for pk in queued:   # the sent-again task and, an hour later, the original message
        item_import_run(item_import_id=pk)
    assert Item.objects.filter(study=study).count() == 5
    ItemImport.objects.filter(pk=item_import.pk).update(queued_at=timezone.now() - timedelta(hours=1))
    assert item_imports_recover(resend_after=timedelta(0)) == [], "a finished import is never sent again"


def test_a_starting_worker_sends_again_only_imports_queued_before_it_was_ready(queued):
    """At start the recovery sends at once what was queued before the worker was ready (its task may be lost with
    the worker that died), never an import queued since: that one's message is in the broker for this worker."""
    from tasks.recovery import work_recover_task

    study = make_study()
    before, since = submitted(study), submitted(make_study(slug="second"))
    ready_at = timezone.now() - timedelta(seconds=10)
    ItemImport.objects.filter(pk=before.pk).update(queued_at=ready_at - timedelta(seconds=5))
    ItemImport.objects.filter(pk=since.pk).update(queued_at=ready_at + timedelta(seconds=5))
    assert work_recover_task(at_start=True, ready_at=ready_at.timestamp())["imports"] == [before.id]
