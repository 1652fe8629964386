"""Tasks that run the second-pass extractions of audits (unparseable replies read again): each takes an extraction id
and does only what is still missing, so a task delivered twice, or run again after a crash, stores every outcome once. A
delivery while another worker holds the extraction's lease does nothing; a database fault is retried here, any other
transient fault by the workers' recovery (tasks.recovery), which also takes over an extraction whose lease
expired."""
from celery import shared_task
from django.db import OperationalError

from auditapp.paradigms.classification.extraction_services import extraction_run


@shared_task(name="auditapp.audit_extraction_run", autoretry_for=(OperationalError,), retry_backoff=True,
             max_retries=5)
def audit_extraction_run_task(extraction_id: int) -> str:
    return extraction_run(extraction_id=extraction_id)
