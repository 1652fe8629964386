"""Reads of the annotation domain: studies with their counts, the row sources of the exports, and where a
study's analysis stands.

Export selectors return an :class:`common.export_rows.Export`.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import datetime

import pandas as pd
from django.db.models import Count, Exists, IntegerField, OuterRef, Q, QuerySet, Subquery
from django.db.models.functions import Coalesce

from annotation.duration import DurationEstimate, duration_estimate
from annotation.models import (
    AnalysisRun,
    AnalysisState,
    Assignment,
    Item,
    ItemGroundTruth,
    ItemSetMember,
    Label,
    LabelChange,
    Participant,
    ParticipantWeight,
    Study,
)
from common.export_rows import Export
from psychometrics.models import IATSession, IATTrial, Instrument, InstrumentResponse, InstrumentScore, StudyInstrument

AQ50_SUBSCALES = ("social_skill", "attention_switching", "attention_to_detail", "communication", "imagination")


def _count_of(model, **filters) -> Coalesce:
    subquery = (
        model.objects.filter(**filters).order_by().values(*filters.keys()).annotate(n=Count("pk")).values("n")
    )
    return Coalesce(Subquery(subquery, output_field=IntegerField()), 0)


def study_list() -> QuerySet[Study]:
    """All studies with n_items, n_participants and n_labels, counted in the same query."""
    return Study.objects.annotate(
        n_items=_count_of(Item, study=OuterRef("pk")),
        n_participants=_count_of(Participant, study=OuterRef("pk")),
        n_labels=_count_of(Label, item__study=OuterRef("pk")),
    ).order_by("-created_at", "-id")


ITEM_EXPORT = {
    "item": "external_id", "target": "target", "preceding": "preceding", "following": "following",
    "position": "position", "attention_check_answer": "attention_check_answer", "metadata": "metadata",
    "created_at": "created_at",
}


def study_items_export(*, study: Study) -> Export:
    """The study's items in study order, one row per item, the item named by its external id."""
    rows = Item.objects.filter(study=study).order_by("position", "id").values_list(*ITEM_EXPORT.values())
    return Export(list(ITEM_EXPORT), rows)


LABEL_EXPORT = {
    "participant": "participant__pseudonym", "item": "item__external_id", "value": "value",
    "rationale": "rationale", "created_at": "created_at", "updated_at": "updated_at", "n_changes": "n_changes",
    "first_value": "first_value",
}


def study_labels_export(*, study: Study) -> Export:
    """The study's labels, one row per label: participant pseudonym, item external id, the current value, and
    for a label its annotator went back to and changed, how often and the value first given (``first_value``;
    the changes themselves are :func:`study_label_changes_export`)."""
    first_change = LabelChange.objects.filter(label_id=OuterRef("pk")).order_by("changed_at", "id")
    rows = (Label.objects.filter(item__study=study)
            .annotate(n_changes=_count_of(LabelChange, label_id=OuterRef("pk")),
                      first_value=Coalesce(Subquery(first_change.values("previous_value")[:1]), "value"))
            .order_by("item__position", "item_id", "participant__pseudonym")
            .values_list(*LABEL_EXPORT.values()))
    return Export(list(LABEL_EXPORT), rows)


LABEL_CHANGE_EXPORT = {
    "participant": "label__participant__pseudonym", "item": "label__item__external_id",
    "previous_value": "previous_value", "previous_rationale": "previous_rationale", "previous_at": "previous_at",
    "changed_at": "changed_at",
}


def study_label_changes_export(*, study: Study) -> Export:
    """Every change of a label, oldest first within a label: the value and reason it replaced, when that was
    given and when it was replaced (the value it became is the next change's ``previous_value``, or the label's
    current value after the last)."""
    rows = (LabelChange.objects.filter(label__item__study=study)
            .order_by("label__item__position", "label__item_id", "label__participant__pseudonym", "changed_at", "id")
            .values_list(*LABEL_CHANGE_EXPORT.values()))
    return Export(list(LABEL_CHANGE_EXPORT), rows)


SKIP_AND_FLAG_EXPORT = {
    "participant": "participant__pseudonym", "item": "item__external_id", "skipped_at": "skipped_at",
    "skip_reason": "skip_reason", "flagged_at": "flagged_at", "flag_reason": "flag_reason",
}


def study_skips_and_flags_export(*, study: Study) -> Export:
    """The sentences annotators skipped or flagged, one row per annotator and sentence, with their reasons."""
    rows = (Assignment.objects.filter(item__study=study)
            .filter(Q(skipped_at__isnull=False) | Q(flagged_at__isnull=False))
            .order_by("item__position", "item_id", "participant__pseudonym")
            .values_list(*SKIP_AND_FLAG_EXPORT.values()))
    return Export(list(SKIP_AND_FLAG_EXPORT), rows)


PARTICIPANT_COLUMNS = [
    "participant", "team", "status", "n_labels", "created_at", "opened_at", "consented_at", "completed_at",
    "withdrawn_at", "declined_at", "aq", *[f"aq_{name}" for name in AQ50_SUBSCALES], "aq_tier", "sata", "sata_tier",
    "iat_d", "iat_d600", "iat_error_rate", "iat_fast_fraction", "iat_flagged_fast", "iat_condition",
    "iat_modality", "attention_check_score", "attention_checks_passed", "trust_raw", "weight",
]


def study_participants_export(*, study: Study) -> Export:
    """One row per participant (by pseudonym, never by invite token) with their scores.

    ``aq`` and ``sata`` are the totals of the instruments given those roles in the study's flow; the AQ
    subscales are the AQ-50's; ``iat_d`` is the D score with the built-in error penalty (positive =
    more implicit bias), ``iat_d600`` the D600 variant, ``iat_modality`` how that D was measured (keyboard,
    touch or mixed; empty for an imported IAT): touch latencies differ from key latencies; ``trust_raw`` (R) and ``weight`` (W) come from the
    latest analysis (seed 000 Appendix B).
    """
    participants = list(
        Participant.objects.filter(study=study).annotate(n_labels=_count_of(Label, participant=OuterRef("pk")))
        .order_by("pseudonym").values_list("id", "pseudonym", "team", "status", "n_labels", "created_at",
                                           "opened_at", "started_at", "completed_at", "withdrawn_at", "declined_at",
                                           "attention_check_score", "attention_checks_passed"))
    roles = dict(StudyInstrument.objects.filter(study=study).exclude(role=StudyInstrument.Role.OTHER)
                 .values_list("role", "instrument_id"))
    scores = {(p, i): (total, subscales, tier) for p, i, total, subscales, tier in
              InstrumentScore.objects.filter(participant__study=study, instrument_id__in=roles.values())
              .values_list("participant_id", "instrument_id", "total", "subscales", "tier")}
    weights = {pid: (r, w) for pid, r, w in ParticipantWeight.objects.filter(participant__study=study)
               .values_list("participant_id", "trust_raw", "weight")}
    iat = {row[0]: row[1:] for row in IATSession.objects.filter(participant__study=study, completed_at__isnull=False)
           .values_list("participant_id", "d_score", "d600_score", "error_rate", "fast_fraction", "flagged_fast",
                        "condition_index", "input_modality")}
    rows = []
    for (pid, pseudonym, team, status, n_labels, created, opened, consented, completed, withdrawn, declined,
         att_score, att_ok) in participants:
        aq_total, aq_sub, aq_tier = scores.get((pid, roles.get("aq")), (None, {}, None))
        sata_total, _, sata_tier = scores.get((pid, roles.get("sata")), (None, {}, None))
        rows.append((pseudonym, team, status, n_labels, created, opened, consented, completed, withdrawn, declined,
                     aq_total, *[aq_sub.get(name) for name in AQ50_SUBSCALES], aq_tier or None, sata_total,
                     sata_tier or None, *iat.get(pid, (None,) * 7), att_score, att_ok,
                     *weights.get(pid, (None, None))))
    return Export(PARTICIPANT_COLUMNS, rows)


RESPONSE_COLUMNS = ["participant", "instrument", "item_number", "response_index", "response_text", "position",
                    "rt_ms", "answered_at"]


def study_instrument_responses_export(*, study: Study) -> Export:
    """Every raw questionnaire answer: response_index is 0-based into the instrument's response options."""
    rows = (InstrumentResponse.objects.filter(participant__study=study)
            .order_by("participant__pseudonym", "instrument__slug", "position")
            .values_list("participant__pseudonym", "instrument_id", "item_number", "response_index", "position",
                         "rt_ms", "answered_at"))
    instrument_ids = InstrumentResponse.objects.filter(participant__study=study).values("instrument_id").distinct()
    instruments = {i.pk: i for i in Instrument.objects.filter(pk__in=instrument_ids)}
    options = {pk: instrument.parsed.response_options for pk, instrument in instruments.items()}
    slugs = {pk: instrument.slug for pk, instrument in instruments.items()}

    def with_text(row: tuple) -> tuple:
        pseudonym, instrument_id, number, index, position, rt_ms, answered_at = row
        return (pseudonym, slugs[instrument_id], number, index, options[instrument_id][index], position, rt_ms,
                answered_at)
    return Export(RESPONSE_COLUMNS, rows, with_text)


IAT_TRIAL_EXPORT = {
    "participant": "participant__pseudonym", "block": "block", "trial": "trial", "stimulus": "stimulus",
    "stimulus_category": "stimulus_category", "pairing": "pairing", "correct_side": "correct_side",
    "first_key": "first_key", "modality": "modality", "error": "error", "latency_first_ms": "latency_first_ms",
    "latency_correct_ms": "latency_correct_ms",
}


def study_iat_trials_export(*, study: Study) -> Export:
    """Every IAT trial: latencies to the first key and to the correct key, in ms from stimulus onset, and the
    trial's input modality (keyboard or touch; empty for an imported trial).

    A latency that is not finite (stored before the IAT posts were validated) is exported as empty, so
    one such trial cannot make the whole study's export fail.
    """
    rows = (IATTrial.objects.filter(participant__study=study).order_by("participant__pseudonym", "block", "trial")
            .values_list(*IAT_TRIAL_EXPORT.values()))

    def finite_latencies(row: tuple) -> tuple:
        *rest, first_ms, correct_ms = row
        return (*rest, *(ms if ms is not None and math.isfinite(ms) else None for ms in (first_ms, correct_ms)))
    return Export(list(IAT_TRIAL_EXPORT), rows, finite_latencies)


def study_scores_frame(*, study: Study) -> pd.DataFrame:
    """Per annotator (participant, team, aq, sata, iat_d, iat_modality): every participant not withdrawn who
    has a label or a score. AQ and SATA are the totals of the instruments with those roles; iat_d the D score
    (positive = more bias), iat_modality how it was measured (keyboard, touch, mixed; None when imported or
    absent). Missing scores are NaN."""
    roles = dict(StudyInstrument.objects.filter(study=study).exclude(role=StudyInstrument.Role.OTHER)
                 .values_list("instrument_id", "role"))
    people = (Participant.objects.filter(study=study).exclude(status=Participant.Status.WITHDRAWN)
              .filter(Exists(Label.objects.filter(participant=OuterRef("pk")))
                      | Exists(InstrumentScore.objects.filter(participant=OuterRef("pk")))))
    frame = pd.DataFrame.from_records(people.values_list("id", "pseudonym", "team"),
                                      columns=["id", "participant", "team"])
    for role in ("aq", "sata"):
        totals = dict(InstrumentScore.objects.filter(participant__study=study, instrument_id__in=[
            i for i, r in roles.items() if r == role]).values_list("participant_id", "total"))
        frame[role] = frame["id"].map(totals).astype(float)
    iat = {pid: (d, modality or None) for pid, d, modality in IATSession.objects.filter(
        participant__study=study, completed_at__isnull=False).values_list("participant_id", "d_score", "input_modality")}
    frame["iat_d"] = frame["id"].map({pid: d for pid, (d, _) in iat.items()}).astype(float)
    frame["iat_modality"] = frame["id"].map({pid: modality for pid, (_, modality) in iat.items()}).astype(object)
    return frame


def study_labels_frame(*, study: Study) -> pd.DataFrame:
    """Every label on a (non-attention-check) item: participant pseudonym, item external id, value."""
    rows = (Label.objects.filter(item__study=study, item__attention_check_answer__isnull=True)
            .exclude(participant__status=Participant.Status.WITHDRAWN)
            .values_list("participant__pseudonym", "item__external_id", "value"))
    return pd.DataFrame.from_records(list(rows), columns=["participant", "item", "value"])


GROUND_TRUTH_EXPORT = {
    "item": "item__external_id", "n_labels": "n_labels", "n_excluded": "n_excluded",
    "majority_label": "majority_label", "majority_tie": "majority_tie", "n_weighted": "n_weighted",
    "weighted_score": "weighted_score", "weighted_label": "weighted_label", "weighted_tie": "weighted_tie",
}


def study_ground_truth_export(*, study: Study) -> Export:
    """The latest ground truth, one row per labelled item (seed 000 Appendix B eq. 6 and majority vote)."""
    rows = (ItemGroundTruth.objects.filter(item__study=study).order_by("item__position", "item_id")
            .values_list(*GROUND_TRUTH_EXPORT.values()))
    return Export(list(GROUND_TRUTH_EXPORT), rows)


def study_item_sets_export(*, study: Study) -> Export:
    """Test sets (perfect agreement within a group) and ICL example sets: set, item, label."""
    rows = (ItemSetMember.objects.filter(study=study).order_by("set_name", "item__position", "item_id")
            .values_list("set_name", "item__external_id", "label"))
    return Export(["set", "item", "label"], rows)


@dataclass(frozen=True)
class StudyAnalysisStatus:
    """Where a study's analysis stands: ``state`` is queued, running, done (the stored results are those of
    the last run), failed (the last run raised ``error``; the results of the run before it, if any, are still
    served) or not_computed. ``computed_at``, ``duration_ms`` and ``notes`` describe the stored results."""

    state: str
    rerun_requested: bool
    requested_at: datetime | None
    started_at: datetime | None
    finished_at: datetime | None
    error: str | None
    computed_at: datetime | None
    duration_ms: int | None
    notes: list[str]


def study_analysis_status(*, study: Study) -> StudyAnalysisStatus:
    """The study's analysis state (``annotation.study_analysis``) and its latest stored results."""
    # One query: both rows hang off the study (reverse one-to-ones, None when absent).
    loaded = Study.objects.select_related("analysis_state", "analysis_run").get(pk=study.pk)
    state = getattr(loaded, "analysis_state", None) or AnalysisState(study=loaded)
    run = getattr(loaded, "analysis_run", None)
    if state.status != AnalysisState.Status.IDLE:
        name = state.status
    elif state.error:
        name = "failed"
    else:
        name = "done" if run is not None else "not_computed"
    return StudyAnalysisStatus(
        state=name, rerun_requested=state.dirty, requested_at=state.queued_at, started_at=state.started_at,
        finished_at=state.finished_at, error=state.error or None,
        computed_at=run.computed_at if run else None, duration_ms=run.duration_ms if run else None,
        notes=list(run.notes) if run else [])


def study_alternatives_status(*, study: Study) -> dict:
    """Whether the study's latest analysis has its alternative ground truths: ``status`` is ``ready``,
    ``computing`` (their task has not stored them yet; ``requested_at`` says when the analysis asked), ``failed``
    (``error`` says why) or ``none`` (no analysis, or one from before they existed). Times are ISO 8601."""
    run = (AnalysisRun.objects.filter(study=study)
           .only("computed_at", "alternatives_requested_at", "alternatives_computed_at", "alternatives_error")
           .first())
    if run is None:
        return {"status": "none", "detail": "the study has no analysis yet: compute it first"}
    status = run.alternatives_status
    details = {"ready": "the alternative ground truths are stored",
               "computing": "the alternative ground truths are being computed by a worker after the study's analysis",
               "failed": "the alternative ground truths could not be computed for the latest analysis",
               "none": "the latest analysis predates the alternative ground truths: recompute it"}
    return {"status": status, "detail": details[status],
            "analysis_computed_at": run.computed_at.isoformat(),
            "requested_at": run.alternatives_requested_at.isoformat() if run.alternatives_requested_at else None,
            "computed_at": run.alternatives_computed_at.isoformat() if run.alternatives_computed_at else None,
            "error": run.alternatives_error or None}


ALTERNATIVE_TABLES = ("labels", "summary", "agreement", "flipped", "weights")
SUMMARY_COLUMNS = ["alternative", "label", "description", "n_compared", "n_undefined", "n_differ", "share_differ",
                   "kappa", "mean_distance"]


def study_ground_truth_alternatives_export(*, study: Study, table: str = "labels") -> Export:
    """One of the stored alternative ground truths' tables (``annotation.alternatives``), empty until the study's
    analysis has them: ``labels`` (one row per item, one column per alternative; ``soft`` is ŷ), ``summary`` (one
    row per alternative against the paper's label), ``agreement`` (κ between every pair, one row per alternative),
    ``flipped`` (item, alternative, paper and alternative labels), ``weights`` (W per annotator and weighting)."""
    if table not in ALTERNATIVE_TABLES:
        raise ValueError(f"table must be one of {', '.join(ALTERNATIVE_TABLES)}, not {table!r}")
    run = AnalysisRun.objects.filter(study=study).only("alternatives").first()
    stored = run.alternatives if run is not None else {}
    if table == "labels":
        names = list(stored.get("labels", {}))
        columns = ["item", *names]
        return Export(columns, [(item, *(stored["labels"][n][i] for n in names))
                                for i, item in enumerate(stored.get("items", []))])
    if table == "agreement":
        agreement = stored.get("agreement", {"alternatives": [], "kappa": []})
        return Export(["alternative", *agreement["alternatives"]],
                      [(name, *row) for name, row in zip(agreement["alternatives"], agreement["kappa"], strict=True)])
    records = stored.get(table, [])
    defaults = {"summary": SUMMARY_COLUMNS, "flipped": ["item", "alternative", "paper_label", "alternative_label"],
                "weights": ["participant", "weighted", "loo_aq_sata", "loo_aq_iat", "loo_sata_iat", "no_team_norm"]}
    columns = defaults[table]
    return Export(columns, [tuple(record.get(column) for column in columns) for record in records])


def study_duration(*, study: Study) -> DurationEstimate:
    """The duration shown before consent (``annotation.duration``): from the study's instruments, IAT and the
    sentences one participant labels (their share of the items and every attention check), unless the study
    states its own."""
    statements = sum(len(setting.instrument.parsed.items)
                     for setting in StudyInstrument.objects.filter(study=study).select_related("instrument"))
    counts = Item.objects.filter(study=study).aggregate(
        items=Count("id", filter=Q(attention_check_answer__isnull=True)),
        checks=Count("id", filter=Q(attention_check_answer__isnull=False)))
    items = min(study.items_per_annotator, counts["items"]) if study.items_per_annotator else counts["items"]
    return duration_estimate(statements=statements, iat=study.iat_enabled, sentences=items + counts["checks"],
                             stated_minutes=study.estimated_minutes)
