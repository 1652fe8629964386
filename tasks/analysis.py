"""Tasks that recompute a study's analysis (trust weights, ground truth, agreement, item sets)."""
from celery import shared_task
from django.db import OperationalError

from annotation.study_analysis import study_analysis_run


@shared_task(name="annotation.study_analysis_compute", autoretry_for=(OperationalError,), retry_backoff=True,
             max_retries=5)
def study_analysis_compute_task(study_id: int) -> str:
    """Recompute from everything stored (coalesced with other requests); running it twice gives the same result."""
    return study_analysis_run(study_id=study_id)

