"""Services that compute a study's analysis (``annotation.analysis``) and store it as its latest result.

A computation reads every score and label, runs the pure analysis, and replaces the stored results in
one transaction, so a reader sees either the old or the new analysis, never half of one. Two ways in:

- ``study_analysis_enqueue``: the study's data changed (an annotator finished, an item import succeeded, a
  researcher changed the settings; any future import of annotators' scores calls it too). Off under the test
  settings (``ANALYSIS_AUTO_RECOMPUTE``), where tests compute explicitly.
- ``study_analysis_request``: a researcher asked (the API's ``POST /api/studies/{id}/analysis/``, the admin's
  and the dashboard's buttons). Always on.

Both run in a Celery task (``tasks.analysis``); ``study_analysis_compute`` runs at once (the command line).

Requests coalesce through the study's ``AnalysisState`` row, locked for every change: at most one run is
queued and one running per study, and a request during a run makes exactly one more run follow, so a
hundred annotators finishing together cost two or three runs, not a hundred, and the last request is
never lost. ``study_analyses_recover`` (run periodically by the workers) sends again what was queued but
never sent, and takes over runs whose worker died.

A stored run asks for its alternative ground truths when it commits (``annotation.study_alternatives``): crowd-kit's
models take seconds, so they run in their own task and the analysis does not wait for them.
"""
from __future__ import annotations

import logging
import time
from datetime import datetime, timedelta

from django.conf import settings as django_settings
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from annotation.aggregation import AggregationSettings
from annotation.alternatives import SCORE_COLUMNS, alternatives_inputs_digest, alternatives_inputs_pack
from annotation.analysis import Analysis, AnalysisSettings, analyse
from annotation.locking import study_lock
from annotation.models import (
    AnalysisRun,
    AnalysisState,
    Item,
    ItemGroundTruth,
    ItemSetMember,
    Participant,
    ParticipantWeight,
    Study,
    StudyAnalysisSettings,
)
from annotation.selectors import study_labels_frame, study_scores_frame
from annotation.study_alternatives import stored_value, study_alternatives_request
from tasks.sending import task_send

logger = logging.getLogger(__name__)


def analysis_settings_for(study: Study) -> AnalysisSettings:
    stored, _ = StudyAnalysisSettings.objects.get_or_create(study=study)
    return AnalysisSettings(
        missing_instrument=stored.missing_instrument,
        aggregation=AggregationSettings(threshold=stored.threshold, weighted_tie_rule=stored.weighted_tie_rule,
                                        majority_tie_rule=stored.majority_tie_rule),
        aq_high=stored.aq_high, aq_low=stored.aq_low, bias_method=stored.bias_method,
        bias_low_cut=stored.bias_low_cut, bias_high_cut=stored.bias_high_cut,
        min_group_labels=stored.min_group_labels, icl_size=stored.icl_size, icl_seed=stored.icl_seed,
        evaluation_set=stored.evaluation_set, touch_iat_in_weights=stored.touch_iat_in_weights)


def study_analysis_enqueue(*, study_id: int) -> None:
    """Ask a worker to recompute the study's analysis (coalesced: ``study_analysis_request``).

    Off when settings.ANALYSIS_AUTO_RECOMPUTE is False (the test settings; tests compute explicitly).
    """
    if not getattr(django_settings, "ANALYSIS_AUTO_RECOMPUTE", True):
        return
    study_analysis_request(study_id=study_id)


def study_analysis_request(*, study_id: int) -> bool:
    """Ask for a recomputation; returns True when this request queues a new run.

    Nothing new is queued while a run waits (it will read this request's data); while a run is computing,
    the study is marked dirty so one more run follows. Inside a transaction, the task is sent when it
    commits, so a rolled-back change asks for nothing.
    """
    with transaction.atomic():
        state = _locked_state(study_id)
        if state.status == AnalysisState.Status.RUNNING:
            if not state.dirty:
                state.dirty = True
                state.save(update_fields=["dirty"])
            return False
        if state.status == AnalysisState.Status.QUEUED:
            return False
        _mark_queued(state)
    return True


def study_analysis_run(*, study_id: int) -> str:
    """The worker's side of a request: claim the study's run, compute, then release it (queueing one more
    run if requests came in meanwhile). A duplicate message while another worker computes does nothing."""
    if not Study.objects.filter(pk=study_id).exists():
        return "no such study"
    started_at = _claim(study_id)
    if started_at is None:
        return "already running"
    try:
        run = study_analysis_compute(study_id=study_id)
    except BaseException as exc:
        _release(study_id, started_at, error=f"{type(exc).__name__}: {exc}")
        raise
    _release(study_id, started_at, error="")
    return run.computed_at.isoformat()


def study_analyses_recover() -> list[int]:
    """Send again the runs that were queued but never sent (the broker was away) or sent long ago and never
    started (a lost message), and take over runs whose lease expired (their worker died). Returns the study
    ids sent. Rows another recovery holds are skipped, so two recoveries never send the same run twice."""
    now = timezone.now()
    resend_after = timedelta(seconds=django_settings.ANALYSIS_RESEND_SECONDS)
    shortest_lease = timedelta(seconds=django_settings.ANALYSIS_LEASE_SECONDS)
    sent = []
    with transaction.atomic():
        candidates = (AnalysisState.objects.select_for_update(skip_locked=True)
                      .filter(Q(status=AnalysisState.Status.QUEUED, queued_at__isnull=True)
                              | Q(status=AnalysisState.Status.QUEUED, queued_at__lt=now - resend_after)
                              | Q(status=AnalysisState.Status.RUNNING, started_at__lt=now - shortest_lease)))
        for state in candidates:
            if state.status == AnalysisState.Status.RUNNING and state.started_at >= now - _lease(state.study):
                continue
            if state.status == AnalysisState.Status.RUNNING:
                logger.warning("Analysis of study %s: its run since %s stopped renewing; running it again",
                               state.study_id, state.started_at.isoformat())
                state.dirty = False
            _mark_queued(state)
            sent.append(state.study_id)
    return sent


def _locked_state(study_id: int) -> AnalysisState:
    AnalysisState.objects.get_or_create(study_id=study_id)
    return AnalysisState.objects.select_for_update().get(study_id=study_id)


def _lease(study: Study) -> timedelta:
    """How long a run may compute before another worker takes it over: ANALYSIS_LEASE_SECONDS, or five times
    the study's last computation when that is longer (a run is not renewed while it computes)."""
    last = getattr(study, "analysis_run", None)
    last_seconds = last.duration_ms / 1000 if last is not None else 0
    return timedelta(seconds=max(django_settings.ANALYSIS_LEASE_SECONDS, 5 * last_seconds))


def _mark_queued(state: AnalysisState) -> None:
    state.status = AnalysisState.Status.QUEUED
    state.queued_at = timezone.now()
    state.save(update_fields=["status", "queued_at", "dirty"])
    study_id = state.study_id
    transaction.on_commit(lambda: _send(study_id))


def _send(study_id: int) -> None:
    """Send the task; when the broker is away, say so and leave the run queued but unsent for recovery."""
    if not task_send("annotation.study_analysis_compute", study_id, what=f"Analysis of study {study_id}"):
        AnalysisState.objects.filter(study_id=study_id, status=AnalysisState.Status.QUEUED).update(queued_at=None)


def _claim(study_id: int) -> datetime | None:
    """Mark the study's analysis running (returns the run's start, which names it), or None when another
    worker's run is still within its lease."""
    with transaction.atomic():
        state = _locked_state(study_id)
        now = timezone.now()
        if state.status == AnalysisState.Status.RUNNING and state.started_at >= now - _lease(state.study):
            return None
        state.status, state.started_at, state.dirty = AnalysisState.Status.RUNNING, now, False
        state.save(update_fields=["status", "started_at", "dirty"])
        return now


def _release(study_id: int, started_at: datetime, *, error: str) -> None:
    """End the run named by ``started_at``, recording its outcome (``error`` is empty when it succeeded): idle,
    or queued once more when requests came in while it ran. A run that was taken over (its lease expired)
    leaves the state to the run that took it."""
    with transaction.atomic():
        state = _locked_state(study_id)
        if state.status != AnalysisState.Status.RUNNING or state.started_at != started_at:
            return
        state.finished_at, state.error = timezone.now(), error
        state.save(update_fields=["finished_at", "error"])
        if state.dirty:
            state.dirty = False
            _mark_queued(state)
        else:
            state.status = AnalysisState.Status.IDLE
            state.save(update_fields=["status"])


def study_analysis_compute(*, study_id: int) -> AnalysisRun:
    """Compute and store the study's analysis; running it twice gives the same stored result."""
    started = time.perf_counter()
    study = Study.objects.get(pk=study_id)
    scores, labels, settings = study_scores_frame(study=study), study_labels_frame(study=study), analysis_settings_for(study)
    result = analyse(scores, labels, settings)
    # The alternatives read the scores as the weights did (touch D left out per the setting), so their "weighted
    # (paper)" column is the stored ground truth, and exactly this run's labels, however many arrive meanwhile.
    weight_scores = result.weight_scores.loc[:, list(SCORE_COLUMNS)]
    inputs = {"missing": settings.missing_instrument, "aggregation": settings.aggregation}
    inputs_data = alternatives_inputs_pack(weight_scores, labels, **inputs)
    inputs_digest = alternatives_inputs_digest(weight_scores, labels, **inputs)
    with transaction.atomic():
        # The study first (annotation.locking); the weights inserted then take FOR KEY SHARE on its participants.
        study_lock(study.pk)
        _store(study, result)
        run, _ = AnalysisRun.objects.update_or_create(study=study, defaults={
            "computed_at": timezone.now(),
            "duration_ms": round((time.perf_counter() - started) * 1000),
            "settings": result.settings.as_dict(),
            "notes": result.notes,
            "agreement": [{k: stored_value(v) for k, v in row.items()} for row in result.agreement.to_dict("records")],
            "cohen_kappa": {"annotators": list(result.cohen_kappa.index),
                            "kappa": [[stored_value(v) for v in row] for row in result.cohen_kappa.to_numpy().tolist()]},
        })
        study_alternatives_request(run=run, inputs_digest=inputs_digest, inputs_data=inputs_data)
    return run


def _store(study: Study, result: Analysis) -> None:
    ParticipantWeight.objects.filter(participant__study=study).delete()
    ItemGroundTruth.objects.filter(item__study=study).delete()
    ItemSetMember.objects.filter(study=study).delete()
    participant_ids = dict(Participant.objects.filter(study=study).values_list("pseudonym", "id"))
    item_ids = dict(Item.objects.filter(study=study).values_list("external_id", "id"))
    weight_fields = ("aq", "sata", "iat_d", "aq_norm", "sata_norm", "iat_norm", "trust_raw", "weight",
                     "bias_index")
    ParticipantWeight.objects.bulk_create([
        ParticipantWeight(participant_id=participant_ids[row["participant"]], included=bool(row["included"]),
                          high_aq=bool(row["high_aq"]), low_aq=bool(row["low_aq"]), low_bias=bool(row["low_bias"]),
                          high_bias=bool(row["high_bias"]), **{f: stored_value(row[f]) for f in weight_fields})
        for row in result.weights.to_dict("records")], batch_size=2000)
    truth_fields = ("n_labels", "n_excluded", "majority_label", "majority_tie", "n_weighted", "weighted_score",
                    "weighted_label", "weighted_tie")
    ItemGroundTruth.objects.bulk_create([
        ItemGroundTruth(item_id=item_ids[row["item"]], **{f: stored_value(row[f]) for f in truth_fields})
        for row in result.ground_truth.to_dict("records")], batch_size=2000)
    ItemSetMember.objects.bulk_create([
        ItemSetMember(study=study, set_name=row["set"], item_id=item_ids[row["item"]], label=int(row["label"]))
        for row in result.item_sets.to_dict("records")], batch_size=2000)

