"""Services that compute a study analysis's alternative ground truths (``annotation.alternatives``) after it, in
their own task, and store them on the run (``AnalysisRun.alternatives``).

crowd-kit's models take about a second on a study of 50 annotators × 2,121 items even computed vectorised (MACE's
ten restarts most of it; docs/benchmarks.md), so the study analysis stores its own results at once and asks for the
alternatives when it commits (``study_alternatives_request``); the task
(``tasks.analysis.study_alternatives_compute_task``, on the "analysis" queue) runs ``study_alternatives_compute``:

- it computes from exactly the inputs the run used: the analysis keeps them, compressed, beside the run
  (``AnalysisRunInputs``, :func:`annotation.alternatives.alternatives_inputs_pack`: the scores as its weights read
  them, the labels and the settings), and the task deletes them once it has stored the alternatives or their
  failure. Labels that arrive meanwhile therefore change nothing: in a study still collecting labels the
  alternatives follow every analysis. A run whose inputs were not kept (asked for before they were) is recorded as
  failed with :data:`INPUTS_MISSING`;
- it stores only for the request it was sent for (``alternatives_requested_at`` names it): a newer run's request
  replaces an older one, and the older task skips;
- a failure of the computation (crowd-kit on unusual data) is recorded with its reason, never an empty result;
- running it twice changes nothing: a request already answered is left alone.

``study_alternatives_recover`` (the workers' periodic recovery) sends again a request whose task was never sent
(the broker was away) or sent more than settings.ANALYSIS_RESEND_SECONDS ago without an answer (lost, or its
worker died).
"""
from __future__ import annotations

import logging
import math
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.conf import settings as django_settings
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from annotation.alternatives import GroundTruthAlternatives, alternative_ground_truths, alternatives_inputs_unpack
from annotation.models import AnalysisRun, AnalysisRunInputs
from tasks.sending import task_send

logger = logging.getLogger(__name__)

INPUTS_MISSING = ("the inputs of this analysis were not kept (it was asked for before they were), so its alternatives "
                  "were not computed: the next analysis (when an annotator finishes, or Recompute) computes them")


def stored_value(x):
    """NaN and pandas' NA become None for the database and its JSON fields."""
    if x is None:
        return None
    try:
        return None if math.isnan(x) else x
    except TypeError:
        return None if str(x) == "<NA>" else x


@dataclass(frozen=True)
class AlternativesOutcome:
    """What a task did: ``stored`` is True when it recorded alternatives or a failure for the run's request."""

    study_id: int | None
    stored: bool
    message: str


def study_alternatives_request(*, run: AnalysisRun, inputs_digest: str, inputs_data: bytes) -> None:
    """Within the analysis's transaction: forget the run's previous alternatives (they compare with the previous
    weighted labels), keep this run's inputs (``inputs_data``, packed) and ask for new alternatives from them; the
    task is sent when the transaction commits. The run's row is written before its inputs', as in
    :func:`_finish`, so the two never wait for each other."""
    now = timezone.now()
    run.alternatives, run.alternatives_inputs_digest = {}, inputs_digest
    run.alternatives_requested_at = run.alternatives_sent_at = now
    run.alternatives_computed_at, run.alternatives_error = None, ""
    run.save(update_fields=["alternatives", "alternatives_inputs_digest", "alternatives_requested_at",
                            "alternatives_sent_at", "alternatives_computed_at", "alternatives_error"])
    AnalysisRunInputs.objects.update_or_create(run=run, defaults={"requested_at": now, "data": inputs_data})
    run_id = run.id
    transaction.on_commit(lambda: _send(run_id, now))


def _send(run_id: int, requested_at: datetime) -> None:
    """Send the task; when the broker is away, say so and leave the request unsent for the recovery."""
    if not task_send("annotation.study_alternatives_compute", run_id, what=f"Alternatives of analysis run {run_id}"):
        AnalysisRun.objects.filter(pk=run_id, alternatives_requested_at=requested_at).update(alternatives_sent_at=None)


def study_alternatives_compute(*, run_id: int) -> AlternativesOutcome:
    """Compute and store the alternatives the run asked for (module docstring); idempotent."""
    run = AnalysisRun.objects.filter(pk=run_id).first()
    if run is None:
        return AlternativesOutcome(None, False, "no such analysis run")
    if run.alternatives_status != "computing":
        return AlternativesOutcome(run.study_id, False, f"nothing to compute: {run.alternatives_status}")
    requested_at = run.alternatives_requested_at
    inputs = AnalysisRunInputs.objects.filter(run_id=run_id, requested_at=requested_at).values_list(
        "data", flat=True).first()
    if inputs is None:
        stored = _finish(run_id, requested_at, alternatives={}, error=INPUTS_MISSING)
        return AlternativesOutcome(run.study_id, stored, INPUTS_MISSING if stored else
                                   "a newer analysis asked for its own alternatives")
    try:
        scores, labels, missing, aggregation = alternatives_inputs_unpack(inputs)
        alternatives, error = alternatives_json(alternative_ground_truths(
            scores, labels, missing=missing, aggregation=aggregation)), ""
    except Exception as exc:  # crowd-kit or numpy failing on this study's data: recorded, not retried
        logger.exception("Alternatives of study %s (analysis run %s) failed", run.study_id, run_id)
        alternatives, error = {}, f"{type(exc).__name__}: {exc}"
    stored = _finish(run_id, requested_at, alternatives=alternatives, error=error)
    if not stored:
        return AlternativesOutcome(run.study_id, False, "a newer analysis asked for its own alternatives")
    return AlternativesOutcome(run.study_id, True, f"failed: {error}" if error else "stored")


def _finish(run_id: int, requested_at: datetime, *, alternatives: dict, error: str) -> bool:
    """Store the outcome for the request named by ``requested_at``, unless a newer request replaced it or it was
    answered meanwhile (a duplicate task), and delete the inputs kept for it. Returns whether it stored."""
    with transaction.atomic():
        run = AnalysisRun.objects.select_for_update().filter(pk=run_id).first()
        if run is None or run.alternatives_requested_at != requested_at or run.alternatives_status != "computing":
            return False
        run.alternatives, run.alternatives_error = alternatives, error
        run.alternatives_computed_at = None if error else timezone.now()
        run.save(update_fields=["alternatives", "alternatives_error", "alternatives_computed_at"])
        AnalysisRunInputs.objects.filter(run_id=run_id, requested_at=requested_at).delete()
    return True


def study_alternatives_recover() -> list[int]:
    """Send again the requests never sent or sent more than settings.ANALYSIS_RESEND_SECONDS ago and still
    unanswered; returns the run ids sent. Rows another recovery holds are skipped."""
    now = timezone.now()
    resend_before = now - timedelta(seconds=django_settings.ANALYSIS_RESEND_SECONDS)
    with transaction.atomic():
        runs = list(AnalysisRun.objects.select_for_update(skip_locked=True)
                    .filter(alternatives_requested_at__isnull=False, alternatives_computed_at__isnull=True,
                            alternatives_error="")
                    .filter(Q(alternatives_sent_at__isnull=True) | Q(alternatives_sent_at__lt=resend_before))
                    .only("id", "alternatives_requested_at"))
        for run in runs:
            logger.warning("Alternatives of analysis run %s, asked at %s, never arrived; sending them again", run.id,
                           run.alternatives_requested_at.isoformat())
            AnalysisRun.objects.filter(pk=run.id).update(alternatives_sent_at=now)
            transaction.on_commit(lambda run_id=run.id, requested_at=run.alternatives_requested_at:
                                  _send(run_id, requested_at))
    return [run.id for run in runs]


def _records(frame) -> list[dict]:
    return [{k: stored_value(v) for k, v in row.items()} for row in frame.to_dict("records")]


def alternatives_json(result: GroundTruthAlternatives) -> dict:
    """The alternative ground truths as stored on ``AnalysisRun.alternatives``: per-item labels as columns (item
    external ids, then one list per alternative), the summary, agreement matrix, flipped items, annotators'
    weights, settings, notes and crowd-kit's outputs unchanged."""
    labels = result.labels
    return {"settings": result.settings, "notes": result.notes, "items": [str(item) for item in labels["item"]],
            "labels": {name: [stored_value(v) for v in labels[name]] for name in labels.columns if name != "item"},
            "summary": _records(result.summary), "flipped": _records(result.flipped),
            "agreement": {"alternatives": list(result.agreement.index),
                          "kappa": [[stored_value(v) for v in row] for row in result.agreement.to_numpy().tolist()]},
            "weights": _records(result.weights), "crowdkit": result.crowdkit}
