"""Tasks that recompute a study's analysis (trust weights, ground truth, agreement, item sets) and, after it, its
alternative ground truths (``annotation.study_alternatives``)."""
from celery import shared_task
from django.db import OperationalError

from annotation.study_alternatives import study_alternatives_compute
from annotation.study_analysis import study_analysis_run
from auditapp.engine import registry


@shared_task(name="annotation.study_analysis_compute", autoretry_for=(OperationalError,), retry_backoff=True,
             max_retries=5)
def study_analysis_compute_task(study_id: int) -> str:
    """Recompute from everything stored (coalesced with other requests); running it twice gives the same result."""
    return study_analysis_run(study_id=study_id)



@shared_task(name="annotation.study_alternatives_compute", autoretry_for=(OperationalError,), retry_backoff=True,
             max_retries=5)
def study_alternatives_compute_task(run_id: int) -> str:
    """Compute the alternatives an analysis run asked for (or skip: answered, or a newer run asked); then the
    paradigms' audits that waited for them are told. Running it twice gives the same result."""
    outcome = study_alternatives_compute(run_id=run_id)
    if outcome.stored:
        for paradigm in registry.every():
            paradigm.study_alternatives_settled(outcome.study_id)
    return outcome.message
