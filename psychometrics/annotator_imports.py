"""Writes of annotator data imports: per-annotator scores, raw questionnaire answers or raw IAT trials from a
file (``psychometrics.annotator_files``), stored where the app stores its own so that the trust weights, groups,
test sets and ICL sets compute exactly as for annotators who took the instruments in the app.

- scores: an ``InstrumentScore`` per instrument (the study's AQ / SATA) with a finished ``QuestionnaireSession``
  of no items (so the participant flow does not ask for the questionnaire again, and an in-app answer cannot
  overwrite the imported score), and a completed ``IATSession`` holding the D score (no trials, no design); a
  team in the file becomes the team of an annotator in the default team (eq. 5 is per team; another team is a
  problem), and the import records the team it replaced.
- answers: a finished ``QuestionnaireSession`` and its ``InstrumentResponse`` rows, scored by
  ``questionnaire_finish``, the app's own scoring of a finished questionnaire.
- iat: an ``IATSession`` and its ``IATTrial`` rows, scored by ``iat_session_score``, the app's own D score.

Every row written points to its ``AnnotatorImport`` (``source_import``), which keeps the file's bytes, SHA-256,
mapping and counts. All or nothing: the file is checked against the study inside the transaction that writes
it (the study, then its participants locked, in the order of ``annotation.locking``, so a withdrawal waits or
wins and the analysis storing its results waits or goes first), and a bad file raises ``ItemFileError``
with every problem and stores nothing. Annotator files are small (a few hundred trials per annotator), so an
import runs while the uploader waits; a successful one asks for the study's analysis to be recomputed, and so
does deleting one (``annotator_import_delete``: its rows go, the teams it changed come back).
"""
from __future__ import annotations

import hashlib
import logging

from django.db import transaction
from django.utils import timezone

from annotation.item_files import ImportProblem, ItemFileError, file_format_from_name, item_file_reading_cost
from annotation.locking import study_participants_lock
from annotation.models import DEFAULT_TEAM, Participant, Study
from annotation.study_analysis import study_analysis_request
from psychometrics.annotator_files import KINDS, ParsedAnnotatorFile, StudyContext, parse_annotator_file
from psychometrics.models import (
    AnnotatorImport,
    IATSession,
    IATTrial,
    InstrumentResponse,
    InstrumentScore,
    QuestionnaireSession,
    StudyInstrument,
)
from psychometrics.services import iat_session_score, questionnaire_finish

logger = logging.getLogger(__name__)
MAX_READING_BYTES = 16 * 1024 * 1024
BULK_BATCH_SIZE = 2000


def _source_text(annotator_import_id: int | None, filenames: dict[int, str]) -> str:
    if annotator_import_id is None:
        return "taken in the app"
    return f"imported by annotator import #{annotator_import_id} '{filenames[annotator_import_id]}'"


def annotator_import_context(*, study: Study) -> StudyContext:
    """The study's side of a check: its annotators, its instruments and roles, and the scores already held."""
    people = list(Participant.objects.filter(study=study).values_list("pseudonym", "status", "team"))
    settings = list(StudyInstrument.objects.filter(study=study).select_related("instrument"))
    instruments = {s.instrument.slug: s.instrument.parsed for s in settings}
    roles = {s.role: s.instrument.slug for s in settings if s.role != StudyInstrument.Role.OTHER}
    filenames = dict(AnnotatorImport.objects.filter(study=study).values_list("id", "filename"))
    held: dict[tuple[str, str], str] = {}
    for pseudonym, slug, source in QuestionnaireSession.objects.filter(participant__study=study).values_list(
            "participant__pseudonym", "instrument__slug", "source_import_id"):
        held[(pseudonym, slug)] = _source_text(source, filenames)
    for pseudonym, slug, source in InstrumentScore.objects.filter(participant__study=study).values_list(
            "participant__pseudonym", "instrument__slug", "source_import_id"):
        held[(pseudonym, slug)] = _source_text(source, filenames)
    for pseudonym, source in IATSession.objects.filter(participant__study=study).values_list(
            "participant__pseudonym", "source_import_id"):
        held[(pseudonym, "iat")] = _source_text(source, filenames)
    return StudyContext(
        annotators=frozenset(p for p, status, _ in people if status != Participant.Status.WITHDRAWN),
        withdrawn=frozenset(p for p, status, _ in people if status == Participant.Status.WITHDRAWN),
        declined=frozenset(p for p, status, _ in people if status == Participant.Status.DECLINED),
        instruments=instruments, roles=roles, held=held,
        teams={p: team for p, _, team in people if team != DEFAULT_TEAM})


def annotator_file_validate(*, study: Study, kind: str, content: bytes, file_format: str,
                            options: dict) -> ParsedAnnotatorFile:
    """Check a file against the study; ``ItemFileError`` names every problem (row and column). Writes nothing."""
    if item_file_reading_cost(content, file_format=file_format) > MAX_READING_BYTES:
        raise ItemFileError([ImportProblem(None, None, f"the file is larger than {MAX_READING_BYTES // 2**20} MB "
                                                       "to read; split it by annotator")])
    return parse_annotator_file(content, kind=kind, file_format=file_format, context=annotator_import_context(study=study),
                                mapping=options.get("columns") or {}, consistent_first=options.get("consistent_first"),
                                encoding=options.get("encoding") or None)


def annotator_import_submit(*, study: Study, kind: str, filename: str, content: bytes, options: dict | None = None,
                            uploaded_by=None) -> AnnotatorImport:
    """Check and import a file of annotator data (admin, API and command line); returns the stored import.

    ``options``: ``columns`` (field → file column), ``consistent_first`` (IAT files without a pairing column),
    ``encoding``. Raises ``ItemFileError`` and stores nothing when anything in the file is wrong.
    """
    options = {k: v for k, v in (options or {}).items() if v not in (None, "", {})}
    if kind not in KINDS:
        raise ItemFileError([ImportProblem(None, None, f"unknown kind '{kind}': use one of {', '.join(KINDS)}")])
    file_format = file_format_from_name(filename)
    if file_format == "jsonl":
        raise ItemFileError([ImportProblem(None, None, "annotator data is read from .csv, .tsv or .xlsx files")])
    with transaction.atomic():
        study_participants_lock(study.id)
        parsed = annotator_file_validate(study=study, kind=kind, content=content, file_format=file_format,
                                         options=options)
        annotator_import = AnnotatorImport.objects.create(
            study=study, kind=kind, uploaded_by=uploaded_by, filename=filename, file_format=file_format,
            content=content, sha256=hashlib.sha256(content).hexdigest(), options=options, columns=parsed.columns,
            encoding=parsed.encoding, warnings=parsed.warnings, n_rows=parsed.n_rows,
            n_annotators=len(parsed.annotators), counts=parsed.counts)
        _write(annotator_import, parsed)
        _analysis_request_after_import(study)
    logger.info("Imported %s (%s) into %s: %s", filename, kind, study.slug, annotator_import.counts)
    return annotator_import


def _analysis_request_after_import(study: Study) -> None:
    """Ask for the study's analysis to be recomputed, as the dashboard's Recompute does (sent on commit)."""
    study_analysis_request(study_id=study.id)


def _write(annotator_import: AnnotatorImport, parsed: ParsedAnnotatorFile) -> None:
    study = annotator_import.study
    participants = {p.pseudonym: p for p in Participant.objects.filter(
        study=study, pseudonym__in=[data.annotator for data in parsed.annotators])}
    instruments = {s.instrument.slug: s.instrument
                   for s in StudyInstrument.objects.filter(study=study).select_related("instrument")}
    if parsed.kind == "scores":
        _write_scores(annotator_import, parsed, participants, instruments)
    elif parsed.kind == "answers":
        _write_answers(annotator_import, parsed, participants, instruments)
    else:
        _write_trials(annotator_import, parsed, participants)


def _write_scores(annotator_import, parsed, participants, instruments) -> None:
    changes = {data.annotator: {"from": participants[data.annotator].team, "to": data.team}
               for data in parsed.annotators if data.team is not None and data.team != participants[data.annotator].team}
    for team, names in _by_team(parsed).items():
        Participant.objects.filter(study=annotator_import.study, pseudonym__in=names).update(team=team)
    if changes:
        annotator_import.team_changes = changes
        annotator_import.save(update_fields=["team_changes"])
    InstrumentScore.objects.bulk_create([
        InstrumentScore(participant=participants[data.annotator], instrument=instruments[slug], total=score.total,
                        subscales={k: v for k, v in score.subscales.items() if v is not None}, tier=score.tier,
                        source_import=annotator_import)
        for data in parsed.annotators for slug, score in data.questionnaires.items()], batch_size=BULK_BATCH_SIZE)
    now = timezone.now()
    QuestionnaireSession.objects.bulk_create([
        QuestionnaireSession(participant=participants[data.annotator], instrument=instruments[slug], item_order=[],
                             completed_at=now, source_import=annotator_import)
        for data in parsed.annotators for slug in data.questionnaires], batch_size=BULK_BATCH_SIZE)
    IATSession.objects.bulk_create([
        IATSession(participant=participants[data.annotator], condition_index=None,
                   seed=participants[data.annotator].seed, stimuli={}, design=[], completed_at=now,
                   d_score=data.iat.d, d600_score=data.iat.d600, error_rate=data.iat.error_rate,
                   fast_fraction=data.iat.fast_fraction, flagged_fast=data.iat.flagged_fast,
                   source_import=annotator_import)
        for data in parsed.annotators if data.iat is not None], batch_size=BULK_BATCH_SIZE)


def annotator_import_delete(*, annotator_import: AnnotatorImport) -> None:
    """Delete an import and everything it wrote (the foreign keys cascade), put back each team it changed where
    the annotator is still in the import's team (a team changed since is the researcher's), and ask for the
    study's analysis to be recomputed (on commit)."""
    study_id = annotator_import.study_id
    with transaction.atomic():
        study_participants_lock(study_id)
        for pseudonym, change in annotator_import.team_changes.items():
            Participant.objects.filter(study_id=study_id, pseudonym=pseudonym, team=change["to"]).update(
                team=change["from"])
        annotator_import.delete()
        study_analysis_request(study_id=study_id)
    logger.info("Deleted annotator import %s of study %s", annotator_import.filename, study_id)


def _by_team(parsed: ParsedAnnotatorFile) -> dict[str, list[str]]:
    teams: dict[str, list[str]] = {}
    for data in parsed.annotators:
        if data.team is not None:
            teams.setdefault(data.team, []).append(data.annotator)
    return teams


def _write_answers(annotator_import, parsed, participants, instruments) -> None:
    sessions = []
    responses = []
    for data in parsed.annotators:
        participant = participants[data.annotator]
        for slug, answers in data.answers.items():
            # Imported answers are kept in the instrument's own order: the order they were shown is not known.
            order = list(instruments[slug].parsed.item_numbers)
            sessions.append(QuestionnaireSession(participant=participant, instrument=instruments[slug],
                                                 item_order=order, source_import=annotator_import))
            responses.extend(InstrumentResponse(participant=participant, instrument=instruments[slug],
                                                item_number=number, response_index=answers[number],
                                                position=order.index(number), source_import=annotator_import)
                             for number in order)
    QuestionnaireSession.objects.bulk_create(sessions, batch_size=BULK_BATCH_SIZE)
    InstrumentResponse.objects.bulk_create(responses, batch_size=BULK_BATCH_SIZE)
    for data in parsed.annotators:
        for slug in data.answers:
            score = questionnaire_finish(participant=participants[data.annotator], instrument=instruments[slug])
            InstrumentScore.objects.filter(pk=score.pk).update(source_import=annotator_import)


def _write_trials(annotator_import, parsed, participants) -> None:
    for data in parsed.annotators:
        participant = participants[data.annotator]
        session = IATSession.objects.create(
            participant=participant, condition_index=None, seed=participant.seed, stimuli={}, design=[],
            blocks_done=max(trial["block"] for trial in data.trials), source_import=annotator_import)
        IATTrial.objects.bulk_create([IATTrial(participant=participant, source_import=annotator_import, **trial)
                                      for trial in data.trials], batch_size=BULK_BATCH_SIZE)
        iat_session_score(session)
        session.completed_at = timezone.now()
        session.save()

