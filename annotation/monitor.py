"""Reads behind a study's monitor, the top of its dashboard: how far its participants have come through the flow,
the items still short of labels, how long participants took, their attention checks, the last activity, and links
to every export of the study. Pure reads; the arithmetic is ``annotation.monitor_stats``'s.

Five queries whatever the study's size: the study's flow (its instruments), the participants grouped by where they
are, the items' label counts (aggregated in the database), the completion times (two timestamps per completed
participant), and the last activity with the counts of annotators who have labels (one row of subqueries).

Time per participant is measured from consent (``Participant.started_at``) to completion (``completed_at``): both
are kept for every participant who completed in the app; the time before consent (the invite page, the content
warning) is not counted, and participants imported with a data file have neither.
"""
from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from django.db.models import BooleanField, Count, Exists, ExpressionWrapper, OuterRef, Q, Subquery
from django.urls import reverse

from annotation.models import Item, Label, Participant, Study
from annotation.monitor_stats import (
    AttentionChecks,
    CompletionTimes,
    Funnel,
    MiddleStep,
    ParticipantGroup,
    attention_checks,
    completion_times,
    recruitment_funnel,
)
from annotation.participation import FlowStep, study_flow
from psychometrics.models import IATSession, InstrumentResponse, QuestionnaireSession


@dataclass(frozen=True)
class ItemCoverage:
    """The study's items (attention checks aside) against its target of labels per item (``annotators_per_item``;
    0 = no target, and an item needs labels until it has one): how many are ``short`` of it, how many have none."""

    n_items: int
    n_checks: int
    target: int
    short: int
    unlabelled: int


@dataclass(frozen=True)
class Activity:
    """The latest time of each kind of participant activity (None: none yet), and who has labels: participants
    who took the flow and participants imported with a data file, counted apart."""

    last_label: datetime | None
    last_answer: datetime | None
    last_iat: datetime | None
    last_consent: datetime | None
    labelling_in_app: int
    labelling_imported: int

    @property
    def latest(self) -> tuple[datetime, str] | None:
        """The most recent activity and what it was, or None."""
        moments = [(when, what) for when, what in ((self.last_label, "a label"),
                                                   (self.last_answer, "a questionnaire answer"),
                                                   (self.last_iat, "an IAT finished"),
                                                   (self.last_consent, "a consent")) if when is not None]
        return max(moments, key=lambda moment: moment[0]) if moments else None


@dataclass(frozen=True)
class ExportLink:
    title: str
    what: str
    url: str
    file_format: str


@dataclass(frozen=True)
class StudyMonitor:
    """What the monitor shows; ``statuses`` is (status, its name, how many) for every status but "imported" when
    there is none."""

    flow: list[FlowStep]
    statuses: list[tuple[str, str, int]]
    funnel: Funnel
    items: ItemCoverage
    times: CompletionTimes
    attention: AttentionChecks
    activity: Activity
    exports: list[ExportLink]


def _middle(flow: list[FlowStep]) -> list[MiddleStep]:
    return [MiddleStep(f"Finished {step.name}", f"answering {step.name}") if step.kind == "questionnaire"
            else MiddleStep("Finished the reaction-time task (IAT)", "taking the reaction-time task (IAT)")
            for step in flow if step.kind in ("questionnaire", "iat")]


def _finished_flags(flow: list[FlowStep]) -> dict[str, Exists]:
    """Per middle step of the flow, whether the participant has finished it, as subqueries ``step_<k>``."""
    flags = {}
    for k, step in enumerate(s for s in flow if s.kind in ("questionnaire", "iat")):
        if step.kind == "questionnaire":
            flags[f"step_{k}"] = Exists(QuestionnaireSession.objects.filter(
                participant_id=OuterRef("pk"), instrument_id=step.instrument_id, completed_at__isnull=False))
        else:
            flags[f"step_{k}"] = Exists(IATSession.objects.filter(participant_id=OuterRef("pk"),
                                                                 completed_at__isnull=False))
    return flags


def _flag(condition: Q) -> ExpressionWrapper:
    return ExpressionWrapper(condition, output_field=BooleanField())


def participant_groups(*, study: Study, flow: list[FlowStep]) -> list[ParticipantGroup]:
    """The study's participants counted by status and where they are (``monitor_stats.ParticipantGroup``), one
    grouped query. A participant who consented or declined has opened their link, whether or not its first
    load was recorded (``opened_at`` is empty for those from before it was kept)."""
    flags = _finished_flags(flow)
    rows = (Participant.objects.filter(study=study).order_by()
            .annotate(opened=_flag(Q(opened_at__isnull=False) | Q(started_at__isnull=False)
                                   | Q(declined_at__isnull=False)),
                      consented=_flag(Q(started_at__isnull=False)),
                      read_instructions=_flag(Q(read_instructions_at__isnull=False)), **flags)
            .values("status", "opened", "consented", "read_instructions", "attention_checks_passed", *flags)
            .annotate(n=Count("pk")))
    return [ParticipantGroup(row["status"], bool(row["opened"]), bool(row["consented"]),
                             tuple(bool(row[name]) for name in flags), bool(row["read_instructions"]),
                             row["attention_checks_passed"], row["n"]) for row in rows]


def item_coverage(*, study: Study) -> ItemCoverage:
    """The items short of the study's labels per item, counted in the database (one query)."""
    target = study.annotators_per_item
    counted = Item.objects.filter(study=study).order_by().annotate(n_labels=Count("labels"))
    target_item = Q(attention_check_answer__isnull=True)
    totals = counted.aggregate(
        n_items=Count("pk", filter=target_item), n_checks=Count("pk", filter=~target_item),
        short=Count("pk", filter=target_item & Q(n_labels__lt=max(target, 1))),
        unlabelled=Count("pk", filter=target_item & Q(n_labels=0)))
    return ItemCoverage(totals["n_items"], totals["n_checks"], target, totals["short"], totals["unlabelled"])


def completion_seconds(*, study: Study) -> list[float]:
    """Seconds from consent to completion of each participant who completed (module docstring)."""
    return [(completed - consented).total_seconds() for consented, completed in
            Participant.objects.filter(study=study, status=Participant.Status.COMPLETED, started_at__isnull=False,
                                       completed_at__isnull=False).values_list("started_at", "completed_at")]


def _latest(queryset, field: str) -> Subquery:
    return Subquery(queryset.filter(**{f"{field}__isnull": False}).order_by(f"-{field}").values(field)[:1])


def _annotators(imported: bool) -> Subquery:
    """How many of the study's participants (imported ones, or the others) have a label on an item that is not an
    attention check."""
    labels = Label.objects.filter(item__study_id=OuterRef("pk"), item__attention_check_answer__isnull=True)
    labels = (labels.filter if imported else labels.exclude)(participant__status=Participant.Status.IMPORTED)
    return Subquery(labels.order_by().values("item__study_id")
                    .annotate(n=Count("participant_id", distinct=True)).values("n"))


def study_activity(*, study: Study) -> Activity:
    """The last label, questionnaire answer, finished IAT and consent of the participants who take the flow (an
    import is not their activity), and who has labels; one query."""
    in_app = ~Q(participant__status=Participant.Status.IMPORTED)
    row = Study.objects.filter(pk=study.pk).annotate(
        last_label=_latest(Label.objects.filter(in_app, item__study_id=OuterRef("pk")), "updated_at"),
        last_answer=_latest(InstrumentResponse.objects.filter(in_app, participant__study_id=OuterRef("pk")),
                            "answered_at"),
        last_iat=_latest(IATSession.objects.filter(in_app, participant__study_id=OuterRef("pk"),
                                                   source_import__isnull=True), "completed_at"),
        last_consent=_latest(Participant.objects.filter(study_id=OuterRef("pk")), "started_at"),
        labelling_in_app=_annotators(imported=False), labelling_imported=_annotators(imported=True),
    ).values("last_label", "last_answer", "last_iat", "last_consent", "labelling_in_app", "labelling_imported").get()
    return Activity(row["last_label"], row["last_answer"], row["last_iat"], row["last_consent"],
                    row["labelling_in_app"] or 0, row["labelling_imported"] or 0)


# (title, what it holds, URL name under /api/, format): every export of a study, in the order a researcher needs
# them. The analysis is JSON only; every other one streams as CSV (common.api.exports).
STUDY_EXPORTS = (
    ("Labels", "one row per label, with how often it changed", "api:study-labels", "csv"),
    ("Ground truth", "majority and weighted label per item, from the latest analysis", "api:study-ground-truth",
     "csv"),
    ("Participants", "one row per participant: status, times, scores, attention checks, weight",
     "api:study-participants", "csv"),
    ("IAT trials", "one row per trial, with both latencies", "api:study-iat-trials", "csv"),
    ("Instrument responses", "every questionnaire answer, with its time", "api:study-instrument-responses", "csv"),
    ("Alternative ground truths", "one column per alternative (computed after each analysis)",
     "api:study-ground-truth-alternatives", "csv"),
    ("Item sets", "test sets and ICL example sets", "api:study-item-sets", "csv"),
    ("Items", "the sentences with their context", "api:study-items", "csv"),
    ("Label changes", "every label an annotator went back to and changed", "api:study-label-changes", "csv"),
    ("Skips and flags", "the sentences skipped or flagged, with the reasons", "api:study-skips-and-flags", "csv"),
    ("Analysis", "the analysis's state, times and notes", "api:study-analysis", "json"),
)


def study_export_links(*, study_id: int) -> list[ExportLink]:
    """A download link for each of the study's exports (``STUDY_EXPORTS``), in CSV where the export has it (the
    format named in the link, so a browser gets the file, not the API's HTML page)."""
    return [ExportLink(title, what, f"{reverse(name, args=[study_id])}?format={file_format}", file_format.upper())
            for title, what, name, file_format in STUDY_EXPORTS]


# The status "invited" is every participant who has not consented yet: the funnel's "invited" counts them all.
STATUS_NAMES = {Participant.Status.INVITED: "invited, not yet consented"}


def study_monitor(*, study: Study) -> StudyMonitor:
    """Everything the monitor shows (module docstring)."""
    flow = study_flow(study=study)
    groups = participant_groups(study=study, flow=flow)
    funnel = recruitment_funnel(groups=groups, middle=_middle(flow))
    return StudyMonitor(
        flow=flow, funnel=funnel, items=item_coverage(study=study),
        statuses=[(value, STATUS_NAMES.get(value, label), funnel.statuses.get(value, 0))
                  for value, label in Participant.Status.choices
                  if value != Participant.Status.IMPORTED or funnel.statuses.get(value)],
        times=completion_times(completion_seconds(study=study)), attention=attention_checks(groups),
        activity=study_activity(study=study), exports=study_export_links(study_id=study.pk))
