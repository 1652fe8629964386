"""Tasks that import data files into studies."""
from celery import shared_task
from django.db import OperationalError

from annotation.services import item_import_run


@shared_task(
    name="annotation.item_import_run",
    autoretry_for=(OperationalError,),
    retry_backoff=True,
    max_retries=5,
)
def item_import_run_task(item_import_id: int) -> str:
    """Run a recorded item import; a second run of a finished import changes nothing."""
    return item_import_run(item_import_id=item_import_id).status
