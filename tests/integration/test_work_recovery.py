"""Stuck work resumes by itself with real processes: a Celery worker killed (SIGKILL) in the middle of an item
import leaves it pending, with its message in Redis's unacknowledged set for the visibility timeout (an hour);
the next worker's recovery sends it again and the import finishes, once (tasks.recovery)."""
from __future__ import annotations

import signal

import pytest
from django.db import DatabaseError, transaction

from annotation.models import Item, ItemImport, Label
from annotation.services import item_import_create, item_import_enqueue
from tests.factories import autalic_like_csv, make_study
from tests.integration.support import celery_worker, wait_for, worker_environment

pytestmark = [pytest.mark.integration, pytest.mark.slow, pytest.mark.django_db(transaction=True)]

N_ITEMS = 30_000


def import_is_running(pk: int) -> bool:
    """A running import holds its row lock (annotation.services.item_import_run)."""
    try:
        with transaction.atomic():
            list(ItemImport.objects.select_for_update(nowait=True).filter(pk=pk).values_list("id"))
    except DatabaseError:
        return True
    return False


def test_an_import_whose_worker_was_killed_finishes_once_after_the_next_worker_starts():
    env = worker_environment(WORK_RECOVERY_SECONDS="5", WORK_STALLED_SECONDS="10")
    first = celery_worker(env=env)
    try:
        first.wait_for_output(r"celery@\S+ ready", timeout=60)
        study = make_study()
        with transaction.atomic():
            item_import = item_import_create(study=study, filename="big.csv", content=autalic_like_csv(N_ITEMS))
            item_import_enqueue(item_import=item_import)
        wait_for(lambda: import_is_running(item_import.pk), timeout=60, interval=0.05, what="the import to start")
    finally:
        first.stop(signal.SIGKILL)
    assert ItemImport.objects.get(pk=item_import.pk).status == ItemImport.Status.PENDING
    assert not Item.objects.filter(study=study).exists()

    second = celery_worker(env=env)
    try:
        second.wait_for_output(r"celery@\S+ ready", timeout=60)
        wait_for(lambda: ItemImport.objects.get(pk=item_import.pk).status != ItemImport.Status.PENDING, timeout=60,
                 what="the import to finish after the second worker is ready")
    finally:
        second.stop()
    assert ItemImport.objects.get(pk=item_import.pk).status == ItemImport.Status.SUCCEEDED
    assert Item.objects.filter(study=study).count() == N_ITEMS
    assert Label.objects.filter(item__study=study).count() == 3 * N_ITEMS
    assert "were pending with no worker running them: sent again" in second.output
