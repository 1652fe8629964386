"""Writes of the psychometrics domain: instruments (shipped and uploaded), questionnaire answers and
scores, and the IAT (session, trial blocks, D score). Scores are computed here from the stored raw
answers and trials, never taken from the browser.

Every write for a participant runs under ``participant_locked`` (annotation.participation), so it is
serialised with a withdrawal and refused once the participant has withdrawn.
"""
from __future__ import annotations

import dataclasses
import math
import numbers
import random
from collections.abc import Mapping

import pandas as pd
from django.db import IntegrityError, transaction
from django.utils import timezone

from annotation.models import Participant
from annotation.participation import participant_locked
from common.errors import StateConflict
from common.participant_input import PageWrite
from psychometrics import iat as iat_design
from psychometrics import instruments as instrument_format
from psychometrics import roles
from psychometrics.models import (
    IATSession,
    IATTrial,
    Instrument,
    InstrumentResponse,
    InstrumentScore,
    QuestionnaireSession,
    StudyInstrument,
)
from psychometrics.page_input import MAX_ANSWER_TIME_MS, MAX_IAT_LATENCY_MS

IAT_KEYS = ("e", "i")


class IncompleteQuestionnaire(Exception):
    """Some items have no answer; ``missing`` lists their numbers in page order."""

    def __init__(self, missing: list[int]):
        self.missing = missing
        super().__init__(f"{len(missing)} item(s) not answered")


class IATBlockRejected(Exception):
    """A posted block does not match the participant's design (the message says why)."""


class IATTrialNotAllowed(Exception):
    """A posted trial answered in a way the study does not allow (touch where a keyboard is required):
    ``field`` names the trial's field, the message says why; nothing of the block is stored."""

    def __init__(self, field: str, reason: str):
        self.field = field
        super().__init__(f"{field}: {reason}")


def instrument_store(*, parsed: instrument_format.Instrument, shipped: bool = False, uploaded_by=None) -> Instrument:
    """Store a validated instrument once per content hash (a second copy returns the stored one)."""
    instrument, _ = Instrument.objects.get_or_create(
        content_hash=parsed.content_hash,
        defaults={"slug": parsed.slug, "name": parsed.name, "version": parsed.version, "partial": parsed.partial,
                  "definition": parsed.to_dict(), "shipped": shipped, "uploaded_by": uploaded_by},
    )
    return instrument


def instrument_upload(*, content: bytes, uploaded_by=None) -> Instrument:
    """An instrument file uploaded by a researcher: JSON in our format (InstrumentError lists every problem)."""
    return instrument_store(parsed=instrument_format.parse_instrument(content, origin="upload"),
                            uploaded_by=uploaded_by)


def instruments_sync_shipped() -> list[Instrument]:
    """Store the instruments shipped in ``psychometrics/instruments/`` (AQ-50, partial SATA) if missing."""
    return [instrument_store(parsed=parsed, shipped=True) for parsed in instrument_format.shipped_instruments()]


class StudyInstrumentsFixed(StateConflict):
    """A study's instruments are fixed once a participant has answers or scores on them."""


class StudyInstrumentsInvalid(ValueError):
    """A study's instruments break a rule of ``psychometrics.roles``: ``problems`` maps each offending entry's
    position (0-based) to its sentences, each naming the instrument."""

    def __init__(self, problems: dict[int, list[str]]):
        self.problems = problems
        super().__init__("; ".join(f"entry {index + 1}: {message}" for index, messages in sorted(problems.items())
                                   for message in messages))


@dataclasses.dataclass(frozen=True)
class StudyInstrumentChoice:
    """One instrument of a study's flow: which, its role for the analysis (aq, sata, other; None: what the instrument
    is, ``psychometrics.roles.inferred_role``), its position and whether each participant gets its items in an
    order of their own."""

    instrument: Instrument
    role: str | None = None
    position: int = 0
    randomise_items: bool = False

    @property
    def resolved_role(self) -> str:
        return self.role or roles.inferred_role(slug=self.instrument.slug, name=self.instrument.name)


def study_instruments_check(*, choices: list[StudyInstrumentChoice]) -> dict[int, list[str]]:
    """The problems of a study's instruments by entry (``psychometrics.roles.study_instrument_problems``): the one
    check of the admin's study page, the API and ``study_instruments_set``. Empty when they may be stored."""
    return roles.study_instrument_problems([
        roles.RoleEntry(instrument_id=choice.instrument.pk, slug=choice.instrument.slug, name=choice.instrument.name,
                        role=choice.resolved_role) for choice in choices])


@transaction.atomic
def study_instruments_set(*, study, choices: list[StudyInstrumentChoice]) -> list[StudyInstrument]:
    """Replace the study's instruments with ``choices``, all at once. StudyInstrumentsInvalid (nothing stored) when
    they break a rule of ``psychometrics.roles``; refused (StudyInstrumentsFixed, a conflict) once a participant of
    the study has a questionnaire answer or a score (taken or imported): those were given to the instruments as
    they were."""
    problems = study_instruments_check(choices=choices)
    if problems:
        raise StudyInstrumentsInvalid(problems)
    type(study).objects.select_for_update().filter(pk=study.pk).first()
    participants = Participant.objects.filter(study=study)
    answered = (QuestionnaireSession.objects.filter(participant__in=participants).exists()
                or InstrumentResponse.objects.filter(participant__in=participants).exists()
                or InstrumentScore.objects.filter(participant__in=participants).exists())
    if answered:
        raise StudyInstrumentsFixed("the study's instruments are fixed: participants have answers or scores on them "
                                    "(answered in the study or imported)")
    StudyInstrument.objects.filter(study=study).delete()
    return StudyInstrument.objects.bulk_create([
        StudyInstrument(study=study, instrument=choice.instrument, role=choice.resolved_role,
                        position=choice.position, randomise_items=choice.randomise_items) for choice in choices])


def questionnaire_session(*, participant: Participant, instrument: Instrument) -> QuestionnaireSession:
    """The participant's pass through an instrument, creating it with the item order they will see."""
    session = QuestionnaireSession.objects.filter(participant=participant, instrument=instrument).first()
    if session is not None:
        return session
    numbers = [item.number for item in instrument.parsed.items]
    setting = StudyInstrument.objects.filter(study_id=participant.study_id, instrument=instrument).first()
    if setting is not None and setting.randomise_items:
        random.Random(f"{participant.seed}:{instrument.content_hash}").shuffle(numbers)
    with participant_locked(participant):
        try:
            with transaction.atomic():
                return QuestionnaireSession.objects.create(participant=participant, instrument=instrument,
                                                           item_order=numbers)
        except IntegrityError:
            return QuestionnaireSession.objects.get(participant=participant, instrument=instrument)


def answer_save(*, participant: Participant, instrument: Instrument, item_number: int, response_index: int,
                rt_ms: int | None = None, writer: str = "", writer_seq: int = 0) -> InstrumentResponse:
    """Store one answer as it is given (a changed answer replaces the earlier one).

    ``rt_ms`` None (the no-JavaScript form path) keeps the time an earlier autosave recorded. ``writer`` names the
    page (one load of it) that autosaved the answer and ``writer_seq`` counts the answers that page had given: an
    autosave that reaches the server after a later one of the same page (one the page gave up on, still delivered)
    leaves the later answer stored. Another page's answer, or the form's (no writer), always replaces it.
    """
    session = questionnaire_session(participant=participant, instrument=instrument)
    if item_number not in session.item_order:
        raise ValueError(f"item {item_number} is not in {instrument.slug}")
    if not 0 <= response_index < len(instrument.parsed.response_options):
        raise ValueError(f"response {response_index} is not an option of {instrument.slug}")
    values = {"response_index": response_index, "position": session.item_order.index(item_number)}
    if rt_ms is not None:
        if not (isinstance(rt_ms, numbers.Real) and math.isfinite(rt_ms) and 0 <= rt_ms <= MAX_ANSWER_TIME_MS):
            raise ValueError(f"rt_ms must be a finite number of milliseconds up to {MAX_ANSWER_TIME_MS}")
        values["rt_ms"] = round(rt_ms)
    with participant_locked(participant):
        if QuestionnaireSession.objects.filter(pk=session.pk, completed_at__isnull=False).exists():
            raise ValueError("this questionnaire is already finished")
        stored = InstrumentResponse.objects.filter(participant=participant, instrument=instrument,
                                                   item_number=item_number).first()
        if stored is not None and PageWrite(writer, writer_seq).overtaken(stored.writer, stored.writer_seq):
            return stored
        response, _ = InstrumentResponse.objects.update_or_create(
            participant=participant, instrument=instrument, item_number=item_number,
            defaults={**values, "writer": writer, "writer_seq": writer_seq})
    return response


def questionnaire_submit(*, participant: Participant, instrument: Instrument,
                         answers: Mapping[int, tuple[int, int | None]]) -> InstrumentScore:
    """The questionnaire form's submit: each answer it carries (item number → response index and the time on the
    item, or None) stored, then the questionnaire scored, under one hold of the participant's lock, so that an
    autosave still on its way cannot land between the two and replace an answer the form carried (it waits, then
    finds the questionnaire finished). An answer that is no option of its item is skipped, and the item stays
    unanswered. IncompleteQuestionnaire if any item is unanswered; the answers given are kept."""
    incomplete = None
    with participant_locked(participant):
        for number, (response_index, rt_ms) in answers.items():
            try:  # answer_save checks before it writes, or in its own savepoint (its lock, taken again here)
                answer_save(participant=participant, instrument=instrument, item_number=number,
                            response_index=response_index, rt_ms=rt_ms)
            except ValueError:
                continue
        try:
            return questionnaire_finish(participant=participant, instrument=instrument)
        except IncompleteQuestionnaire as missing:
            incomplete = missing
    raise incomplete


def questionnaire_finish(*, participant: Participant, instrument: Instrument) -> InstrumentScore:
    """Score a complete questionnaire from its stored answers; IncompleteQuestionnaire if any is missing.

    A score this writes is the app's own (``source_import`` None), so deleting an annotator import never deletes
    it. A questionnaire whose score was imported without answers (a finished session with no items,
    ``psychometrics.annotator_imports``) has nothing to score: its stored score is returned unchanged."""
    session = questionnaire_session(participant=participant, instrument=instrument)
    if session.completed_at is not None and session.source_import_id is not None and not session.item_order:
        return InstrumentScore.objects.get(participant=participant, instrument=instrument)
    with participant_locked(participant):
        answers = dict(InstrumentResponse.objects.filter(participant=participant, instrument=instrument)
                       .values_list("item_number", "response_index"))
        missing = [n for n in session.item_order if n not in answers]
        if missing:
            raise IncompleteQuestionnaire(missing)
        score = instrument_format.score_responses(instrument.parsed, answers)
        stored, _ = InstrumentScore.objects.update_or_create(
            participant=participant, instrument=instrument,
            defaults={"total": score.total, "subscales": dict(score.subscales), "tier": score.tier or "",
                      "source_import": None})
        QuestionnaireSession.objects.filter(pk=session.pk, completed_at__isnull=True).update(
            completed_at=timezone.now())
    return stored


def iat_stimuli_for(study) -> iat_design.IATStimuli:
    """The study's IAT stimuli, or the defaults (seed 000 Appendix A.3 categories)."""
    if study.iat_stimuli:
        return iat_design.IATStimuli(**study.iat_stimuli)
    return iat_design.DEFAULT_STIMULI


def iat_session(*, participant: Participant) -> IATSession:
    """The participant's IAT, created on first visit with the next counterbalancing condition in the study."""
    existing = IATSession.objects.filter(participant=participant).first()
    if existing is not None:
        return existing
    stimuli = iat_stimuli_for(participant.study)
    with participant_locked(participant):
        # Imported IATs have no condition: only the app's sessions take turns through the four.
        condition = IATSession.objects.filter(participant__study_id=participant.study_id,
                                              source_import__isnull=True).count() % 4
        blocks = iat_design.build_iat(stimuli, condition_index=condition, seed=participant.seed)
        try:
            with transaction.atomic():
                return IATSession.objects.create(
                    participant=participant, condition_index=condition, seed=participant.seed,
                    stimuli=dataclasses.asdict(stimuli), design=[dataclasses.asdict(b) for b in blocks])
        except IntegrityError:
            return IATSession.objects.get(participant=participant)


def iat_block_submit(*, participant: Participant, block_number: int, trials: list[dict]) -> IATSession:
    """Store one finished block's trials; a block already stored is acknowledged again unchanged.

    Only the key pressed (or half tapped) first, the input modality and the two latencies come from the
    browser; stimulus, category, side, pairing and the error flag are taken from (or checked against) the
    participant's design. The block's modality (keyboard, touch, or mixed when its trials differ) is appended
    to ``block_modalities`` and the participant's recomputed over all blocks. A touch trial in a study that
    requires a keyboard raises IATTrialNotAllowed (the page never offers taps there; a post that has them
    was not made by it). After block 7 the D score (built-in error penalty) and D600 are computed and stored.
    """
    with participant_locked(participant):
        session = IATSession.objects.select_for_update().filter(participant=participant).first()
        if session is None:
            raise IATBlockRejected("no IAT in progress")
        if not 1 <= block_number <= len(session.design):
            raise IATBlockRejected(f"there is no block {block_number}")
        if block_number <= session.blocks_done:
            return session
        if block_number != session.blocks_done + 1:
            raise IATBlockRejected(f"block {block_number} posted before block {session.blocks_done + 1}")
        block = session.design[block_number - 1]
        if len(trials) != len(block["trials"]):
            raise IATBlockRejected(f"block {block_number} has {len(block['trials'])} trials, {len(trials)} posted")
        keyboard_required = participant.study.keyboard_required
        rows = []
        for position, (planned, posted) in enumerate(zip(block["trials"], trials, strict=True)):
            first_key = str(posted.get("first_key", "")).lower()
            if first_key not in IAT_KEYS:
                raise IATBlockRejected(f"trial {planned['index']}: first key must be 'e' or 'i'")
            if posted.get("modality") not in iat_design.MODALITIES:
                raise IATBlockRejected(f"trial {planned['index']}: modality must be 'keyboard' or 'touch'")
            if keyboard_required and posted["modality"] != "keyboard":
                raise IATTrialNotAllowed(f"trials[{position}].modality",
                                         "this study requires a keyboard; taps are not accepted")
            if posted.get("stimulus") != planned["stimulus"]:
                raise IATBlockRejected(f"trial {planned['index']}: stimulus does not match the design")
            try:
                first_ms, correct_ms = float(posted["latency_first_ms"]), float(posted["latency_correct_ms"])
            except (KeyError, TypeError, ValueError, OverflowError) as exc:
                raise IATBlockRejected(f"trial {planned['index']}: latencies missing") from exc
            if not (math.isfinite(first_ms) and math.isfinite(correct_ms)
                    and 0 <= first_ms <= correct_ms <= MAX_IAT_LATENCY_MS):
                raise IATBlockRejected(f"trial {planned['index']}: latencies must be finite, in order and at most "
                                       f"{MAX_IAT_LATENCY_MS} ms")
            rows.append(IATTrial(
                participant=participant, block=block_number, trial=planned["index"], stimulus=planned["stimulus"],
                stimulus_category=planned["stimulus_category"], pairing=block["pairing"] or "",
                correct_side=planned["correct_side"], first_key=first_key, modality=posted["modality"],
                error=first_key != planned["correct_key"], latency_first_ms=first_ms, latency_correct_ms=correct_ms))
        IATTrial.objects.bulk_create(rows)
        session.block_modalities = [*session.block_modalities,
                                    iat_design.combined_modality([row.modality for row in rows])]
        session.input_modality = iat_design.combined_modality(session.block_modalities) or ""
        session.blocks_done = block_number
        if block_number == len(session.design):
            iat_session_score(session)
            session.completed_at = timezone.now()
        session.save()
        return session


def iat_trials_frame(*, participant_ids) -> pd.DataFrame:
    """The stored trials of some participants as the D-score functions take them."""
    return pd.DataFrame.from_records(
        IATTrial.objects.filter(participant_id__in=participant_ids).values(
            "participant_id", "block", "trial", "pairing", "error", "latency_first_ms", "latency_correct_ms"))


def iat_session_score(session: IATSession) -> None:
    """Set the session's D score (built-in error penalty), D600 and their bookkeeping from its stored trials
    (the caller saves it); the one scoring path of the app's IAT and of imported trials."""
    trials = iat_trials_frame(participant_ids=[session.participant_id])
    trials["pairing"] = trials["pairing"].replace("", None)
    builtin = iat_design.iat_d_score(trials, error_penalty="builtin")
    d600 = iat_design.iat_d_score(trials, error_penalty="d600")
    session.d_score = _finite(builtin.d)
    session.d_practice = _finite(builtin.d_practice)
    session.d_test = _finite(builtin.d_test)
    session.d600_score = _finite(d600.d)
    session.error_rate = builtin.error_rate
    session.fast_fraction = builtin.fast_fraction
    session.flagged_fast = builtin.flagged_fast
    session.n_dropped_slow = builtin.n_dropped_slow


def _finite(value: float) -> float | None:
    return None if value is None or pd.isna(value) else float(value)
