"""Services of the annotator flow: invites, the open link, consent, item assignment, labels, completion
and withdrawal; and :func:`next_step`, the one function that says where a participant is in the flow.

The flow (seed 000 §3.1, §8): content warning and consent → each of the study's instruments in order →
the IAT (if enabled) → labelling instructions → labelling → done. Everything a participant answers is
stored as it is given, so a closed tab resumes at the first unanswered thing.

Every write for a participant runs under :func:`participant_locked`: their row is locked and their state
read again under the lock, so a withdrawal and a write in flight are serialised. Withdrawal wins: once
it has committed, every later write raises :class:`ParticipantWithdrawn` and stores nothing.
"""
from __future__ import annotations

import hashlib
import re
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.db import transaction
from django.db.models import Count, Exists, OuterRef, Q, Subquery
from django.urls import reverse
from django.utils import timezone

from annotation import page_reads
from annotation.locking import study_lock
from annotation.models import Assignment, Item, Label, LabelChange, Participant, ParticipantWeight, Study
from annotation.study_analysis import study_analysis_enqueue
from common.participant_input import InputError, storable_text

PSEUDONYM_PREFIX = "P"


class FlowError(Exception):
    """A participant asked for something the flow does not allow (the message is shown to them)."""


class ParticipantWithdrawn(Exception):
    """A write for a participant who has withdrawn or declined consent: nothing was stored (the access decorator
    answers 410)."""

    def __init__(self, *, declined: bool = False):
        super().__init__("You did not consent to this study; nothing is recorded." if declined
                         else "You have withdrawn from this study; nothing more is recorded.")


_FLOW_STATE_FIELDS = ("status", "started_at", "read_instructions_at", "completed_at", "withdrawn_at",
                      "declined_at", "attention_check_score", "attention_checks_passed")


@contextmanager
def participant_locked(participant: Participant) -> Iterator[Participant]:
    """Run a write for ``participant`` in a transaction holding their row lock; raise ParticipantWithdrawn
    (and write nothing) if they have withdrawn.

    The caller's instance is refreshed from the locked row, so decisions inside the block (is this the
    last label, has consent been given) are taken on the current state, not on the one the request saw
    before waiting for the lock. FOR NO KEY UPDATE does not block the inserts of rows that reference
    the participant, only other writers of the participant row. SQLite ignores the lock but runs each
    transaction alone (IMMEDIATE mode), which gives the same order.
    """
    with transaction.atomic():
        # Only the flow state is copied onto the caller's instance, so only it is read.
        current = (Participant.objects.select_for_update(no_key=True).filter(pk=participant.pk)
                   .values(*_FLOW_STATE_FIELDS).get())
        if current["status"] in (Participant.Status.WITHDRAWN, Participant.Status.DECLINED):
            raise ParticipantWithdrawn(declined=current["status"] == Participant.Status.DECLINED)
        for field in _FLOW_STATE_FIELDS:
            setattr(participant, field, current[field])
        yield participant


@dataclass(frozen=True)
class Step:
    """Where a participant is: ``kind`` is consent, questionnaire, iat, instructions, label, done, withdrawn or
    declined."""

    kind: str
    instrument_id: int | None = None


@dataclass(frozen=True)
class FlowFacts:
    """What :func:`next_step` asks the database about a participant who has consented: the study's first
    instrument they have not finished (None when none is left) and whether they have finished the IAT; and, for
    :func:`step_position` on the labelling pages, how many instruments the study has."""

    unfinished_instrument_id: int | None
    iat_finished: bool
    instrument_count: int


def flow_facts_read_with(participant: Participant) -> FlowFacts | None:
    """The FlowFacts read with the participant (``page_reads.participant_for_page``, every participant page's
    lookup); None for a participant read otherwise. Ask it before anything is written for them: afterwards the
    facts may be out of date."""
    if not hasattr(participant, "flow_iat_finished"):
        return None
    return FlowFacts(participant.flow_unfinished_instrument_id, participant.flow_iat_finished,
                     participant.flow_instrument_count)


def next_step(participant: Participant, *, facts: FlowFacts | None = None) -> Step:
    """The first step of the flow that the participant has not finished. ``facts`` read with the participant
    (:func:`flow_facts_read_with`) save the queries that would read them."""
    from psychometrics.models import IATSession, QuestionnaireSession, StudyInstrument

    if participant.status == Participant.Status.WITHDRAWN:
        return Step("withdrawn")
    if participant.status == Participant.Status.DECLINED:
        return Step("declined")
    if participant.started_at is None:
        return Step("consent")
    if facts is None:
        finished = QuestionnaireSession.objects.filter(participant=participant,
                                                       instrument_id=OuterRef("instrument_id"),
                                                       completed_at__isnull=False)
        unfinished = (StudyInstrument.objects.filter(study_id=participant.study_id).exclude(Exists(finished))
                      .order_by("position", "id").values_list("instrument_id", flat=True).first())
    else:
        unfinished = facts.unfinished_instrument_id
    if unfinished is not None:
        return Step("questionnaire", unfinished)
    if participant.study.iat_enabled and not (
            facts.iat_finished if facts is not None
            else IATSession.objects.filter(participant=participant, completed_at__isnull=False).exists()):
        return Step("iat")
    if participant.read_instructions_at is None:
        return Step("instructions")
    if participant.completed_at is None:
        return Step("label")
    return Step("done")


@dataclass(frozen=True)
class StepPosition:
    """A page's place in the study as the participant sees it: "Step ``number`` of ``total``: ``name``"."""

    number: int
    total: int
    name: str


LABELLING = "Labelling"
"""What the pages call the flow's last step (the labelling instructions and the items)."""


@dataclass(frozen=True)
class FlowStep:
    """One step of a study's flow as participants take it: ``kind`` is consent, questionnaire (``instrument_id``),
    iat or label (the labelling instructions and the items are one step); ``name`` is what the pages call it."""

    kind: str
    name: str
    instrument_id: int | None = None


def study_flow(*, study: Study) -> list[FlowStep]:
    """The study's steps in the order :func:`next_step` routes them: consent, each of its instruments by position,
    the IAT when the study has it, labelling. One query, for the instruments."""
    from psychometrics.models import StudyInstrument

    instruments = (StudyInstrument.objects.filter(study_id=study.pk).order_by("position", "id")
                   .values_list("instrument_id", "instrument__name"))
    return [FlowStep("consent", "Consent"),
            *(FlowStep("questionnaire", name, instrument_id) for instrument_id, name in instruments),
            *([FlowStep("iat", "Reaction-time task")] if study.iat_enabled else []),
            FlowStep("label", LABELLING)]


def step_position(*, participant: Participant, step: Step, facts: FlowFacts | None = None) -> StepPosition | None:
    """Where ``step`` stands among the study's steps (:func:`study_flow`) as the participant sees it. None for the
    pages outside the count (done, withdrawn). One query, for the instruments; none for the labelling pages when
    ``facts`` read with the participant (:func:`flow_facts_read_with`) count them: labelling is the last step.
    """
    if step.kind not in ("consent", "questionnaire", "iat", "instructions", "label"):
        return None
    if facts is not None and step.kind in ("instructions", "label"):
        steps = 1 + facts.instrument_count + participant.study.iat_enabled + 1
        return StepPosition(steps, steps, LABELLING)
    flow = study_flow(study=participant.study)
    kind = "label" if step.kind == "instructions" else step.kind
    for number, flow_step in enumerate(flow, start=1):
        if (flow_step.kind, flow_step.instrument_id) == (kind, step.instrument_id):
            return StepPosition(number, len(flow), flow_step.name)
    return None


def step_url(participant: Participant, step: Step) -> str:
    """The page of a flow step for this participant."""
    if step.kind == "questionnaire":
        return reverse("participant:questionnaire", args=[participant.invite_token, step.instrument_id])
    name = {"withdrawn": "withdraw"}.get(step.kind, step.kind)
    return reverse(f"participant:{name}", args=[participant.invite_token])


def _next_pseudonyms(study: Study, count: int) -> list[str]:
    taken = Participant.objects.filter(study=study, pseudonym__regex=rf"^{PSEUDONYM_PREFIX}\d+$")
    numbers = [int(re.sub(r"\D", "", p)) for p in taken.values_list("pseudonym", flat=True)]
    start = max(numbers, default=0) + 1
    return [f"{PSEUDONYM_PREFIX}{n:04d}" for n in range(start, start + count)]


def participants_invite(*, study: Study, count: int, team: str = "default") -> list[Participant]:
    """Create ``count`` invited participants (P0001, P0002, …), each with their own invite link."""
    if count < 1:
        raise ValueError("count must be at least 1")
    with transaction.atomic():
        study_lock(study.pk)
        return Participant.objects.bulk_create(
            [Participant(study=study, pseudonym=p, team=team) for p in _next_pseudonyms(study, count)])


def open_link_check(*, study: Study, prolific_pid: str = "") -> Participant | None:
    """Raise FlowError when the open link would turn this visitor away: the link is off, the study closed, or
    it is full for a newcomer. A known PROLIFIC_PID is let back in: their participant is returned. Reads only:
    the page shown before a participant is created asks it, and :func:`open_link_join` asks it again under
    the study's lock."""
    if not study.open_link_enabled or study.status != Study.Status.OPEN:
        raise FlowError("This study is not accepting participants through this link.")
    if prolific_pid:
        returning = Participant.objects.filter(study=study, prolific_pid=prolific_pid).first()
        if returning is not None:
            return returning
    # A visitor who declined consent took no place: they left nothing but the decline.
    joined = Participant.objects.filter(study=study, via_open_link=True).exclude(
        status=Participant.Status.DECLINED).count()
    if study.open_link_cap and joined >= study.open_link_cap:
        raise FlowError("This study is full. Thank you for your interest.")
    return None


def open_link_join(*, study: Study, prolific_pid: str = "", prolific_study_id: str = "",
                   prolific_session_id: str = "") -> Participant:
    """The participant for a visitor of the study's open link: the same one again for a known PROLIFIC_PID,
    else a new one while the cap allows. Raises FlowError when the link is off, the study closed or full."""
    with transaction.atomic():
        study_lock(study.pk)
        returning = open_link_check(study=study, prolific_pid=prolific_pid)
        if returning is not None:
            return returning
        return Participant.objects.create(
            study=study, pseudonym=_next_pseudonyms(study, 1)[0], via_open_link=True, prolific_pid=prolific_pid[:64],
            prolific_study_id=prolific_study_id[:64], prolific_session_id=prolific_session_id[:64])


def participant_opened(*, participant: Participant) -> None:
    """Record when a page of the participant's link was first loaded (the study monitor's "opened"): one
    conditional UPDATE the first time, nothing afterwards. Not for a participant who has withdrawn or declined,
    of whom nothing more is recorded."""
    if participant.opened_at is not None:
        return
    now = timezone.now()
    # No row lock: the UPDATE's own condition lets only the first load write, and a withdrawal that commits
    # first makes it write nothing.
    if (Participant.objects.filter(pk=participant.pk, opened_at__isnull=True)
            .exclude(status__in=(Participant.Status.WITHDRAWN, Participant.Status.DECLINED)).update(opened_at=now)):
        participant.opened_at = now


def participant_consent(*, participant: Participant) -> None:
    """Record consent (after the content warning) and start the participant's session."""
    with participant_locked(participant):
        if participant.started_at is None:
            participant.started_at = timezone.now()
            participant.status = Participant.Status.ACTIVE
            participant.save(update_fields=["started_at", "status", "updated_at"])


def participant_decline(*, participant: Participant) -> None:
    """Record that the visitor declined consent, and keep nothing else of them: the panel identifiers an open link
    stored and the time they opened the link are cleared, and every later write is refused (``participant_locked``).
    The row stays, with its pseudonym and the time of the decline, so the study's recruitment numbers stay true (a
    decline counts as an opened link). Only possible before consent (afterwards the participant withdraws);
    declining twice changes nothing."""
    try:
        with participant_locked(participant):
            if participant.started_at is not None:
                raise FlowError("You have already agreed to take part; you can withdraw instead.")
            participant.status = Participant.Status.DECLINED
            participant.declined_at = timezone.now()
            participant.opened_at = None
            participant.prolific_pid = participant.prolific_study_id = participant.prolific_session_id = ""
            participant.save(update_fields=["status", "declined_at", "opened_at", "prolific_pid",
                                            "prolific_study_id", "prolific_session_id", "updated_at"])
    except ParticipantWithdrawn:
        participant.refresh_from_db()


def participant_withdraw(*, participant: Participant) -> None:
    """Delete everything the participant gave (answers, scores, IAT trials, labels, assignments).

    The participant row stays, marked withdrawn and with no data, so the study's recruitment numbers
    stay true and the invite link shows that they withdrew. The row is locked first, so a write in
    flight either commits before the deletion (and is deleted with the rest) or finds the participant
    withdrawn and stores nothing. Withdrawing twice changes nothing.
    """
    from psychometrics.models import (
        IATSession,
        IATTrial,
        InstrumentResponse,
        InstrumentScore,
        QuestionnaireSession,
    )

    try:
        with participant_locked(participant):
            # ParticipantWeight holds their AQ, SATA and IAT D as the last analysis read them: personal data
            # too, gone now rather than at the next recomputation.
            for model in (Label, Assignment, InstrumentResponse, InstrumentScore, QuestionnaireSession, IATTrial,
                          IATSession, ParticipantWeight):
                model.objects.filter(participant=participant).delete()
            participant.status = Participant.Status.WITHDRAWN
            participant.withdrawn_at = timezone.now()
            participant.attention_check_score = None
            participant.attention_checks_passed = None
            participant.save(update_fields=["status", "withdrawn_at", "attention_check_score",
                                            "attention_checks_passed", "updated_at"])
    except ParticipantWithdrawn:
        participant.status = Participant.Status.WITHDRAWN  # by another request: its deletion stands
        return
    study_analysis_enqueue(study_id=participant.study_id)


def instructions_read(*, participant: Participant) -> None:
    """The participant has read the labelling instructions: hand out their items. A participant who gets
    none (every item already has its annotators) is done. Handing out items locks the study, so it is locked
    before the participant (``annotation.locking``)."""
    with transaction.atomic():
        study_lock(participant.study_id)
        with participant_locked(participant):
            if participant.read_instructions_at is None:
                assignments_allocate(participant=participant)
                participant.read_instructions_at = timezone.now()
                participant.save(update_fields=["read_instructions_at", "updated_at"])
                if not Assignment.objects.filter(participant=participant).exists():
                    participant_complete(participant=participant)


def _order_key(seed: int, external_id: str) -> str:
    """A participant's random but reproducible position for an item (by external id, so the same seed
    gives the same order in any database)."""
    return hashlib.sha256(f"{seed}:{external_id}".encode()).hexdigest()


def assignments_allocate(*, participant: Participant) -> int:
    """Hand the participant up to ``items_per_annotator`` items still short of annotators, plus every
    attention-check item, in an order randomised for this participant (seeded by their seed).

    Items are chosen least-covered first: an item's coverage counts its labels and the unexpired
    assignments of others who have not labelled or skipped it yet (each annotator counted once), and, under
    the study's ``keep`` skipping, the skips. The study row is locked for the duration, so two participants
    starting at once cannot both take an item's last place.
    """
    study = participant.study
    now = timezone.now()
    with transaction.atomic():
        study_lock(study.pk)
        if Assignment.objects.filter(participant=participant).exists():
            return 0
        labels = dict(Label.objects.filter(item__study=study).values("item_id").annotate(n=Count("id"))
                      .values_list("item_id", "n"))
        labelled_by_holder = Label.objects.filter(participant_id=OuterRef("participant_id"),
                                                  item_id=OuterRef("item_id"))
        holding = Q(expires_at__gt=now, skipped_at__isnull=True)
        if study.skipping == Study.Skipping.KEEP:
            holding |= Q(skipped_at__isnull=False)
        pending = dict(
            Assignment.objects.filter(holding, item__study=study).exclude(participant=participant)
            .exclude(Exists(labelled_by_holder)).values("item_id").annotate(n=Count("id")).values_list("item_id", "n"))
        items = Item.objects.filter(study=study, attention_check_answer__isnull=True).values_list("id", "external_id")
        open_items = []
        for item_id, external_id in items:
            coverage = labels.get(item_id, 0) + pending.get(item_id, 0)
            if coverage < study.annotators_per_item:
                open_items.append((coverage, _order_key(participant.seed, external_id), item_id, external_id))
        open_items.sort()
        limit = study.items_per_annotator or len(open_items)
        chosen = [(item_id, external_id) for _, _, item_id, external_id in open_items[:limit]]
        checks = list(Item.objects.filter(study=study, attention_check_answer__isnull=False)
                      .values_list("id", "external_id"))
        order = [item_id for item_id, external_id in
                 sorted(chosen + checks, key=lambda pair: _order_key(participant.seed, pair[1]))]
        expires = now + timedelta(minutes=study.assignment_timeout_minutes)
        Assignment.objects.bulk_create([
            Assignment(participant=participant, item_id=item_id, position=n, expires_at=expires)
            for n, item_id in enumerate(order)])
        return len(order)


def _labelled(participant: Participant):
    return Exists(Label.objects.filter(participant=participant, item_id=OuterRef("item_id")))


def _pending_assignments(participant: Participant):
    """The participant's assignments neither labelled nor skipped: what is left to do."""
    return Assignment.objects.filter(participant=participant, skipped_at__isnull=True).exclude(
        _labelled(participant))


@dataclass(frozen=True)
class LabellingProgress:
    """Where the participant is in their sentences: the next one to do (None when all are done), how many
    are done (labelled or skipped) of ``total``, and the position of the last one done before the next (what
    "back" opens; None when there is none)."""

    assignment: Assignment | None
    done: int
    total: int
    previous_position: int | None


def labelling_progress(*, participant: Participant) -> LabellingProgress:
    """The next assignment to do in the participant's order (with its item), how many are done, and the one before
    it. The label page asks it at every sentence: while one is left to do, one query reads it all
    (``page_reads.next_sentence``)."""
    following = page_reads.next_sentence(participant_id=participant.pk)
    if following is not None:
        return LabellingProgress(following.assignment, following.done, following.total, following.previous_position)
    assignments = Assignment.objects.filter(participant=participant)
    finished = Q(_labelled(participant)) | Q(skipped_at__isnull=False)
    counts = assignments.aggregate(total=Count("id"), done=Count("id", filter=finished))
    previous = assignments.filter(finished).order_by("-position").values_list("position", flat=True).first()
    return LabellingProgress(None, counts["done"], counts["total"], previous)


@dataclass(frozen=True)
class ReviewedSentence:
    """A sentence the participant has done, opened again: their label (None if skipped), the neighbours in
    their order that are done too (for back and forward), its place (1-based) among ``total``, and how many
    are done."""

    assignment: Assignment
    label: Label | None
    number: int
    total: int
    done: int
    previous_position: int | None
    next_position: int | None


def labelling_review(*, participant: Participant, position: int) -> ReviewedSentence | None:
    """The participant's done sentence at ``position`` in their order, or None when there is none there or it
    is not done yet (then the page shows the next one to do). "Next" is the following done sentence before the
    next one to do; None means forward leads to the next one to do."""
    assignments = Assignment.objects.filter(participant=participant)
    finished = assignments.filter(Q(_labelled(participant)) | Q(skipped_at__isnull=False))
    assignment = finished.select_related("item").filter(position=position).first()
    if assignment is None:
        return None
    label = Label.objects.filter(participant=participant, item_id=assignment.item_id).first()
    pending = _pending_assignments(participant).order_by("position").values_list("position", flat=True).first()
    previous = finished.filter(position__lt=position).order_by("-position").values_list("position", flat=True).first()
    following = finished.filter(position__gt=position).order_by("position").values_list("position", flat=True).first()
    if following is not None and pending is not None and following > pending:
        following = None
    return ReviewedSentence(assignment, label, assignments.filter(position__lt=position).count() + 1,
                            assignments.count(), finished.count(), previous, following)


def participant_assignment_position(*, participant: Participant, item_id: int) -> int | None:
    """Where the item stands in the participant's order (None if it is not theirs)."""
    return Assignment.objects.filter(participant=participant, item_id=item_id).values_list(
        "position", flat=True).first()


def _note_text(text: str, *, field: str, limit: int) -> str:
    """A participant's free text (a reason, a flag) made storable, stripped and cut at ``limit``."""
    try:
        return storable_text(text, field=field).strip()[:limit]
    except InputError as error:
        raise FlowError(f"Your text cannot be saved: {error}") from None


def _expiry(study: Study) -> tuple[datetime, datetime]:
    """(new expiry, due): activity moves the participant's assignments' expiry on to now + the time-out once it is
    within a tenth of the time-out (at most a minute) of that, so a participant labelling every few seconds
    rewrites their assignment rows about once a minute, not at every label."""
    timeout = timedelta(minutes=study.assignment_timeout_minutes)
    expires = timezone.now() + timeout
    return expires, expires - min(timeout / 10, timedelta(minutes=1))


def _assignment_for_write(participant: Participant, item_id: int) -> Assignment | None:
    """The participant's assignment of the item, or None once they have finished (a post repeated after the last
    label, which stored it: nothing more changes).

    Read with it, in one query (``page_reads.assignment_for_write``): whether the item is labelled (``labelled``),
    whether any other of the participant's sentences is still to do (``others_pending``: once this one is labelled
    or skipped, they are done when none is) and whether the expiry of their assignments is due to move on
    (``expiry_due``). Read under the participant's lock, so no other write of theirs changes these before the
    transaction ends.
    """
    assignment = page_reads.assignment_for_write(participant_id=participant.pk, item_id=item_id,
                                                 due=_expiry(participant.study)[1])
    if assignment is None:
        raise FlowError("This sentence is not one of yours.")
    return None if participant.completed_at is not None else assignment


def _flag_text(flag_reason: str | None) -> str | None:
    """A flag's reason made storable (None stays None: the flag is left as it is)."""
    return None if flag_reason is None else _note_text(flag_reason, field="flag", limit=500)


def _flag_set(assignment: Assignment, flag_reason: str | None, now) -> list[str]:
    """Apply a flag choice to the assignment (None: unchanged; "": no flag; text: flagged for that reason) and
    return the fields it changed."""
    if flag_reason is None or flag_reason == assignment.flag_reason:
        return []
    assignment.flag_reason = flag_reason
    assignment.flagged_at = now if flag_reason else None
    return ["flag_reason", "flagged_at"]


def _after_activity(participant: Participant, assignment: Assignment) -> None:
    """After a label or a skip of ``assignment`` (read by :func:`_assignment_for_write`): keep the participant's
    open assignments alive, and complete them once nothing is left to do. Neither sends a statement when there is
    nothing to do, as for most labels."""
    if assignment.expiry_due:
        expires, due = _expiry(participant.study)
        Assignment.objects.filter(participant=participant, expires_at__lt=due).update(expires_at=expires)
    if participant.completed_at is None and not assignment.others_pending:
        participant_complete(participant=participant)


def label_submit(*, participant: Participant, item_id: int, value: int, rationale: str = "",
                 flag_reason: str | None = None, revise: bool = False) -> None:
    """Store the participant's label for an item assigned to them, and complete them after their last item.

    A second submission for an item already labelled changes nothing (a double click, a retried post), unless
    ``revise``: the participant went back to it, and a different value or reason replaces the label, the
    replaced one kept as a LabelChange with both times. ``flag_reason`` (None: leave the flag as it is; "": no
    flag) flags the sentence for the researchers. Labelling a skipped sentence un-skips it.
    """
    if value not in participant.study.allowed_label_values:
        raise FlowError(f"{value} is not a label of this study.")
    rationale = _note_text(rationale, field="rationale", limit=2000)
    flag_reason = _flag_text(flag_reason)
    with participant_locked(participant):
        assignment = _assignment_for_write(participant, item_id)
        if assignment is None:
            return
        now = timezone.now()
        if not assignment.labelled:
            # ON CONFLICT DO NOTHING: two first submissions racing keep one label, without the savepoint a
            # caught IntegrityError would need.
            Label.objects.bulk_create([Label(participant=participant, item_id=item_id, value=value,
                                             rationale=rationale)], ignore_conflicts=True)
        elif revise:
            label = Label.objects.get(participant=participant, item_id=item_id)
            if (label.value, label.rationale) != (value, rationale):
                LabelChange.objects.create(label=label, previous_value=label.value,
                                           previous_rationale=label.rationale, previous_at=label.updated_at,
                                           changed_at=now)
                label.value, label.rationale = value, rationale
                label.save(update_fields=["value", "rationale", "updated_at"])
        changed = _flag_set(assignment, flag_reason, now)
        if assignment.skipped_at is not None:
            assignment.skipped_at, assignment.skip_reason = None, ""
            changed += ["skipped_at", "skip_reason"]
        if changed:
            assignment.save(update_fields=changed)
        _after_activity(participant, assignment)


def label_skip(*, participant: Participant, item_id: int, reason: str, flag_reason: str | None = None) -> None:
    """Skip an assigned sentence, with the participant's reason, when the study allows skipping.

    A sentence already labelled cannot be skipped (its label stays: change it instead); skipping twice keeps the
    first reason. Under the study's ``reassign`` rule the skipped sentence no longer holds a place among its
    annotators, so later participants are given it (``assignments_allocate``); under ``keep`` it does.
    """
    if participant.study.skipping == Study.Skipping.OFF:
        raise FlowError("This study asks for a label for every sentence.")
    reason = _note_text(reason, field="reason", limit=500)
    if not reason:
        raise FlowError("Please say why you skip this sentence.")
    flag_reason = _flag_text(flag_reason)
    with participant_locked(participant):
        assignment = _assignment_for_write(participant, item_id)
        if assignment is None:
            return
        if assignment.labelled:
            raise FlowError("You have labelled this sentence; you can change its label but not skip it.")
        now = timezone.now()
        changed = _flag_set(assignment, flag_reason, now)
        if assignment.skipped_at is None:
            assignment.skipped_at, assignment.skip_reason = now, reason
            changed += ["skipped_at", "skip_reason"]
        if changed:
            assignment.save(update_fields=changed)
        _after_activity(participant, assignment)


def participant_complete(*, participant: Participant) -> None:
    """Mark the participant done and score their attention checks against the threshold.

    Writes only the completion fields, so it can never undo a withdrawal's; a withdrawn participant is
    refused (ParticipantWithdrawn).
    """
    with participant_locked(participant):
        # A skipped attention check counts as missed: skipping must not be a way around the checks.
        checks = list(Assignment.objects.filter(participant=participant, item__attention_check_answer__isnull=False)
                      .filter(Q(_labelled(participant)) | Q(skipped_at__isnull=False))
                      .annotate(value=Subquery(Label.objects.filter(participant=participant,
                                                                    item_id=OuterRef("item_id")).values("value")[:1]))
                      .values_list("value", "item__attention_check_answer"))
        if checks:
            participant.attention_check_score = sum(v == a for v, a in checks) / len(checks)
            participant.attention_checks_passed = (
                participant.attention_check_score >= participant.study.attention_check_pass_threshold)
        participant.status = Participant.Status.COMPLETED
        participant.completed_at = timezone.now()
        participant.save(update_fields=["status", "completed_at", "attention_check_score",
                                        "attention_checks_passed", "updated_at"])
        study_analysis_enqueue(study_id=participant.study_id)
