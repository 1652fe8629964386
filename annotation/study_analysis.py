"""Services that compute a study's analysis (``annotation.analysis``) and store it as its latest result.

A computation reads every score and label, runs the pure analysis, and replaces the stored results in
one transaction, so a reader sees either the old or the new analysis, never half of one. It runs in a
Celery task when an annotator finishes or a researcher changes the settings (``study_analysis_enqueue``),
and can be run at once from the dashboard or the command line.
"""
from __future__ import annotations

import math
import time

from django.conf import settings as django_settings
from django.db import transaction
from django.utils import timezone

from annotation.aggregation import AggregationSettings
from annotation.analysis import Analysis, AnalysisSettings, analyse
from annotation.models import (
    AnalysisRun,
    Item,
    ItemGroundTruth,
    ItemSetMember,
    Participant,
    ParticipantWeight,
    Study,
    StudyAnalysisSettings,
)
from annotation.selectors import study_labels_frame, study_scores_frame


def analysis_settings_for(study: Study) -> AnalysisSettings:
    stored, _ = StudyAnalysisSettings.objects.get_or_create(study=study)
    return AnalysisSettings(
        missing_instrument=stored.missing_instrument,
        aggregation=AggregationSettings(threshold=stored.threshold, weighted_tie_rule=stored.weighted_tie_rule,
                                        majority_tie_rule=stored.majority_tie_rule),
        aq_high=stored.aq_high, aq_low=stored.aq_low, bias_method=stored.bias_method,
        bias_low_cut=stored.bias_low_cut, bias_high_cut=stored.bias_high_cut,
        min_group_labels=stored.min_group_labels, icl_size=stored.icl_size, icl_seed=stored.icl_seed,
        evaluation_set=stored.evaluation_set)


def study_analysis_enqueue(*, study_id: int) -> None:
    """Have a worker recompute the study's analysis after the current transaction commits.

    Off when settings.ANALYSIS_AUTO_RECOMPUTE is False (the test settings; tests compute explicitly).
    """
    if not getattr(django_settings, "ANALYSIS_AUTO_RECOMPUTE", True):
        return
    from tasks.analysis import study_analysis_compute_task

    transaction.on_commit(lambda: study_analysis_compute_task.delay(study_id))


def _value(x):
    """NaN and pandas' NA become None for the database."""
    if x is None:
        return None
    try:
        return None if math.isnan(x) else x
    except TypeError:
        return None if str(x) == "<NA>" else x


def study_analysis_compute(*, study_id: int) -> AnalysisRun:
    """Compute and store the study's analysis; running it twice gives the same stored result."""
    started = time.perf_counter()
    study = Study.objects.get(pk=study_id)
    result = analyse(study_scores_frame(study=study), study_labels_frame(study=study), analysis_settings_for(study))
    with transaction.atomic():
        Study.objects.select_for_update().get(pk=study.pk)
        _store(study, result)
        run, _ = AnalysisRun.objects.update_or_create(study=study, defaults={
            "computed_at": timezone.now(),
            "duration_ms": round((time.perf_counter() - started) * 1000),
            "settings": result.settings.as_dict(),
            "notes": result.notes,
            "agreement": [{k: _value(v) for k, v in row.items()} for row in result.agreement.to_dict("records")],
            "cohen_kappa": {"annotators": list(result.cohen_kappa.index),
                            "kappa": [[_value(v) for v in row] for row in result.cohen_kappa.to_numpy().tolist()]},
        })
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
                          high_bias=bool(row["high_bias"]), **{f: _value(row[f]) for f in weight_fields})
        for row in result.weights.to_dict("records")], batch_size=2000)
    truth_fields = ("n_labels", "n_excluded", "majority_label", "majority_tie", "n_weighted", "weighted_score",
                    "weighted_label", "weighted_tie")
    ItemGroundTruth.objects.bulk_create([
        ItemGroundTruth(item_id=item_ids[row["item"]], **{f: _value(row[f]) for f in truth_fields})
        for row in result.ground_truth.to_dict("records")], batch_size=2000)
    ItemSetMember.objects.bulk_create([
        ItemSetMember(study=study, set_name=row["set"], item_id=item_ids[row["item"]], label=int(row["label"]))
        for row in result.item_sets.to_dict("records")], batch_size=2000)
