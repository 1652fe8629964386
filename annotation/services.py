"""Writes of the annotation domain: item imports (stored, validated, written in bulk, all or nothing).

An import is recorded first (:func:`item_import_create`), then run by :func:`item_import_run`, either
at once (command line) or by a Celery worker (admin and API uploads). Running an import twice is
harmless: a finished import is never run again. An import whose worker died, or whose task could not be
sent, is sent again by the workers' periodic recovery (:func:`item_imports_recover`). A successful import
has the study's analysis recomputed (``annotation.study_analysis``).
"""
from __future__ import annotations

import hashlib
import logging
from datetime import timedelta
from functools import partial

from django.db import OperationalError, connection, transaction
from django.db.models import Q
from django.utils import timezone

from annotation.item_files import (
    ColumnMapping,
    ImportProblem,
    ItemFileError,
    ParsedFile,
    file_format_from_name,
    item_file_reading_cost,
    parse_item_file,
    precheck_item_file,
)
from annotation.models import Item, ItemImport, Label, Participant, Study
from annotation.study_analysis import study_analysis_enqueue
from tasks.sending import task_send

logger = logging.getLogger(__name__)
BULK_BATCH_SIZE = 2000
# Above this many bytes to read (about a second of parsing), an upload is validated by the worker, not while
# the uploader waits: a web worker must not spend minutes on one request.
SYNC_VALIDATION_MAX_BYTES = 4 * 1024 * 1024


def item_file_validate(*, study: Study, content: bytes, file_format: str, options: dict) -> ParsedFile:
    """Parse and validate a file against a study (label scheme, ids already in the study, pseudonyms).

    Raises ItemFileError naming every row and column at fault; writes nothing.
    """
    parsed = parse_item_file(
        content,
        file_format=file_format,
        mapping=ColumnMapping.from_dict(options),
        allowed_label_values=study.allowed_label_values,
        encoding=options.get("encoding") or None,
    )
    problems: list[ImportProblem] = []
    existing_ids = set(Item.objects.filter(study=study).values_list("external_id", flat=True))
    if existing_ids:
        problems.extend(ImportProblem(item.row, parsed.columns["id"] or "(row number)",
                                      f"item '{item.external_id}' is already in study '{study.slug}'")
                        for item in parsed.items if item.external_id in existing_ids)
    if parsed.annotators:
        taken = dict(
            Participant.objects.filter(study=study, pseudonym__in=parsed.annotators)
            .exclude(status=Participant.Status.IMPORTED)
            .values_list("pseudonym", "status")
        )
        column_of = {annotator: column for column, annotator in parsed.label_columns.items()}
        for pseudonym, status in taken.items():
            problems.append(ImportProblem(1, column_of[pseudonym], f"pseudonym '{pseudonym}' belongs to a "
                                          f"participant of this study who is not imported (status: {status})"))
    if problems:
        raise ItemFileError(problems[:200], len(problems))
    return parsed


def item_import_create(*, study: Study, filename: str, content: bytes, options: dict | None = None,
                       uploaded_by=None, file_format: str | None = None) -> ItemImport:
    """Record an uploaded file (bytes and SHA-256 kept for provenance); does not import it yet."""
    return ItemImport.objects.create(
        study=study,
        uploaded_by=uploaded_by,
        filename=filename,
        file_format=file_format or file_format_from_name(filename),
        content=content,
        sha256=hashlib.sha256(content).hexdigest(),
        options=options or {},
    )


def item_import_enqueue(*, item_import: ItemImport) -> None:
    """Have a Celery worker run the import once the surrounding transaction commits."""
    ItemImport.objects.filter(pk=item_import.pk).update(queued_at=timezone.now())
    transaction.on_commit(partial(_item_import_send, item_import.id))


def _item_import_send(item_import_id: int) -> None:
    """Send the import's task; when the broker is away, say so and leave it unsent for the recovery."""
    if not task_send("annotation.item_import_run", item_import_id, what=f"Item import {item_import_id}"):
        ItemImport.objects.filter(pk=item_import_id, status=ItemImport.Status.PENDING).update(queued_at=None)


def item_imports_recover(*, resend_after: timedelta) -> list[int]:
    """Send again every import still pending that no worker is running, at most once per ``resend_after``:
    its worker died (the import rolled back, and its message waits in the broker until a visibility timeout),
    or its message was never sent. A running import holds its row lock (``item_import_run``), so it is
    skipped; a message that was only late finds the import done and changes nothing. Returns the ids sent."""
    now = timezone.now()
    with transaction.atomic():
        waiting = ItemImport.objects.filter(status=ItemImport.Status.PENDING).filter(
            Q(queued_at__isnull=True) | Q(queued_at__lte=now - resend_after))
        if connection.features.has_select_for_update_skip_locked:
            waiting = waiting.select_for_update(skip_locked=True)
        ids = list(waiting.values_list("id", flat=True))
        ItemImport.objects.filter(id__in=ids).update(queued_at=now)
        for item_import_id in ids:
            transaction.on_commit(partial(_item_import_send, item_import_id))
    if ids:
        logger.warning("Item imports %s were pending with no worker running them: sent again", ids)
    return ids


def item_import_submit(*, study: Study, filename: str, content: bytes, options: dict,
                       uploaded_by=None) -> ItemImport:
    """Validate an uploaded file at once, then record it and queue it for a worker (admin and API uploads).

    Raises ItemFileError (every problem with its row and column) and records nothing if the file is
    invalid, so the uploader sees the problems immediately; the worker validates again before writing,
    since the study may have changed in between. A file with more than SYNC_VALIDATION_MAX_BYTES to read
    gets only the quick checks here (a workbook's zip sizes and declared size, a text's encoding and NUL
    characters); its other problems are listed on the import when the worker has validated it.
    """
    file_format = file_format_from_name(filename)
    if item_file_reading_cost(content, file_format=file_format) <= SYNC_VALIDATION_MAX_BYTES:
        item_file_validate(study=study, content=content, file_format=file_format, options=options)
    else:
        precheck_item_file(content, file_format=file_format, encoding=options.get("encoding") or None)
    with transaction.atomic():
        item_import = item_import_create(study=study, filename=filename, content=content, options=options,
                                         uploaded_by=uploaded_by, file_format=file_format)
        item_import_enqueue(item_import=item_import)
    return item_import


def item_import_run(*, item_import_id: int) -> ItemImport:
    """Run a recorded import: validate, then write items, imported annotators and labels in bulk.

    All or nothing: on any problem the import is marked failed with every problem listed, and no
    item, participant or label is written. An import that already succeeded or failed is returned
    unchanged, so a retried or duplicated task does nothing. A database that is briefly unavailable
    (OperationalError) leaves the import pending for a retry; any other unexpected error marks it
    failed with the error recorded, and is raised again.

    A successful import asks for the study's analysis in its own transaction (``study_analysis_enqueue``,
    coalesced with any run already queued or running); the analysis task is sent once the import commits.
    """
    try:
        return _item_import_run_locked(item_import_id)
    except OperationalError:
        raise
    except Exception as exc:
        ItemImport.objects.filter(pk=item_import_id, status=ItemImport.Status.PENDING).update(
            status=ItemImport.Status.FAILED, finished_at=timezone.now(),
            errors=[{"row": None, "column": None, "message": f"internal error, nothing imported: {exc!r}"}],
        )
        raise


def _item_import_run_locked(item_import_id: int) -> ItemImport:
    with transaction.atomic():
        item_import = ItemImport.objects.select_for_update().select_related("study").get(pk=item_import_id)
        if item_import.status != ItemImport.Status.PENDING:
            return item_import
        item_import.started_at = timezone.now()
        try:
            parsed = item_file_validate(study=item_import.study, content=bytes(item_import.content),
                                        file_format=item_import.file_format, options=item_import.options)
        except ItemFileError as error:
            _finish(item_import, status=ItemImport.Status.FAILED, errors=error)
            return item_import
        _write_parsed_file(item_import, parsed)
        item_import.encoding = parsed.encoding
        item_import.warnings = parsed.warnings
        item_import.n_items = len(parsed.items)
        item_import.n_participants = len(parsed.annotators)
        item_import.n_labels = len(parsed.labels)
        _finish(item_import, status=ItemImport.Status.SUCCEEDED)
        study_analysis_enqueue(study_id=item_import.study_id)
    logger.info("Imported %s into %s: %d items, %d labels from %d annotators", item_import.filename,
                item_import.study.slug, item_import.n_items, item_import.n_labels, item_import.n_participants)
    return item_import


def _finish(item_import: ItemImport, *, status: str, errors: ItemFileError | None = None) -> None:
    item_import.status = status
    item_import.finished_at = timezone.now()
    if errors is not None:
        item_import.errors = [p.as_dict() for p in errors.problems]
        if errors.total > len(errors.problems):
            item_import.errors.append({"row": None, "column": None,
                                       "message": f"{errors.total - len(errors.problems)} more problem(s) "
                                                  "not listed"})
    item_import.save()


def _write_parsed_file(item_import: ItemImport, parsed: ParsedFile) -> None:
    study = item_import.study
    last = Item.objects.filter(study=study).order_by("-position").values_list("position", flat=True).first()
    start = 0 if last is None else last + 1
    items = Item.objects.bulk_create(
        [
            Item(study=study, external_id=p.external_id, target=p.target, preceding=p.preceding,
                 following=p.following, metadata=p.metadata, source_import=item_import, position=start + n)
            for n, p in enumerate(parsed.items)
        ],
        batch_size=BULK_BATCH_SIZE,
    )
    if not parsed.annotators:
        return
    existing = {p.pseudonym: p for p in Participant.objects.filter(study=study, pseudonym__in=parsed.annotators)}
    Participant.objects.bulk_create(
        [Participant(study=study, pseudonym=name, status=Participant.Status.IMPORTED, source_import=item_import)
         for name in parsed.annotators if name not in existing],
        batch_size=BULK_BATCH_SIZE,
    )
    participant_ids = dict(
        Participant.objects.filter(study=study, pseudonym__in=parsed.annotators).values_list("pseudonym", "id")
    )
    annotator_ids = [participant_ids[name] for name in parsed.annotators]
    Label.objects.bulk_create(
        [Label(participant_id=annotator_ids[a], item_id=items[i].id, value=value) for i, a, value in parsed.labels],
        batch_size=BULK_BATCH_SIZE,
    )


def items_import_file(*, study: Study, filename: str, content: bytes, options: dict | None = None,
                      uploaded_by=None) -> ItemImport:
    """Record and run an import in this process (the command-line path); returns the finished import."""
    item_import = item_import_create(study=study, filename=filename, content=content, options=options,
                                     uploaded_by=uploaded_by)
    return item_import_run(item_import_id=item_import.id)
