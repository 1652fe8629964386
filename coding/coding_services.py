"""A coder's work on a round: saving one excerpt's codes and memo, confirming it, and the coder's progress.

Every write takes the coder's row lock (``SELECT ... FOR NO KEY UPDATE`` on the coder joined with the round,
so PostgreSQL locks both rows): two tabs of one coder saving at once are applied one after the other, and a
round closed meanwhile is seen before anything is written (``RoundClosed``, answered 409 by the pages). A save
sends the excerpt's full code set and memo every time, so sending it twice changes nothing. A page sends the
revision it last saw, its own id and the number of its save: a save based on an older revision than one another
page stored is refused (``CodingConflict``) and the page shows what is stored, with the change it could not save,
so no device silently overwrites another; a page's own saves arriving out of order keep the later one.
"""
from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from django.db import transaction
from django.utils import timezone

from coding.models import Code, Coder, Excerpt, ExcerptCoding
from common.participant_input import InputError, PageWrite, storable_text

MAX_MEMO_LENGTH = 10_000


class CodingInputError(ValueError):
    """What a coder sent cannot be stored (a code outside the coder's codebook, a memo too long); the message
    names it."""


class RoundClosed(Exception):
    """The round was closed: no more coding is accepted."""


class CodingConflict(Exception):
    """The save was based on an older revision of the coding than the one stored (saved meanwhile from another
    device or tab); ``stored`` is the stored coding, left as it was."""

    def __init__(self, stored: ExcerptCoding):
        self.stored = stored
        super().__init__("This excerpt was changed on another device or tab since this page loaded.")


@dataclass(frozen=True)
class CodingProgress:
    confirmed: int
    total: int
    first_unconfirmed: Excerpt | None

    @property
    def complete(self) -> bool:
        return self.confirmed == self.total


def coder_progress(*, coder: Coder) -> CodingProgress:
    """How many of the round's excerpts the coder has confirmed, of how many, and the first (by position) still
    to confirm: where the coder's link resumes."""
    excerpts = Excerpt.objects.filter(round_id=coder.round_id)
    confirmed_ids = ExcerptCoding.objects.filter(coder=coder, confirmed_at__isnull=False,
                                                 excerpt__round_id=coder.round_id).values("excerpt_id")
    return CodingProgress(
        confirmed=confirmed_ids.count(), total=excerpts.count(),
        first_unconfirmed=excerpts.exclude(id__in=confirmed_ids).order_by("position").first())


def coding_save(*, coder: Coder, excerpt_id: int, code_ids: Iterable[int] | None, memo: str | None,
                confirm: bool = False, base_revision: int | None = None, writer: str = "",
                writer_seq: int = 0) -> ExcerptCoding:
    """Store the coder's full code set and memo for one excerpt of their round (replacing what was there; None
    keeps what is stored), and with ``confirm`` mark the excerpt done (an excerpt with no code is a valid
    answer; a later change keeps it confirmed). The first save sets the coder's ``started_at``; the save that
    leaves no excerpt unconfirmed sets ``completed_at``.

    Raises CodingInputError for an excerpt outside the coder's round, a code outside the codebook version of
    the coder's lens (named), or a memo over MAX_MEMO_LENGTH characters or holding what the database cannot
    store; RoundClosed when the round is closed; CodingConflict when ``base_revision`` is given and the stored
    coding has moved past it by another writer's save (another device or tab saved since the page loaded).
    Nothing is written then.

    ``writer`` names one load of a page and ``writer_seq`` counts its saves: a page's own later save is taken
    whatever revision it was based on (its earlier save landed meanwhile), and an earlier one arriving after a
    later one, or the same save again, changes neither codes nor memo, though a confirmation it carries is kept.
    The returned coding's ``superseded`` says whether what was sent was left unstored that way (the page then
    compares what is stored with what it shows).
    """
    code_ids = None if code_ids is None else sorted(set(code_ids))
    memo = None if memo is None else _checked_memo(memo)
    with transaction.atomic():
        locked = (Coder.objects.select_for_update(no_key=True).select_related("round", "lens__codebook")
                  .get(pk=coder.pk))
        if locked.round.closed_at is not None:
            raise RoundClosed(f"The round “{locked.round.name}” is closed: no more coding is accepted.")
        excerpt = Excerpt.objects.filter(pk=excerpt_id, round_id=locked.round_id).first()
        if excerpt is None:
            raise CodingInputError(f"Excerpt {excerpt_id} is not in this coder's round.")
        codes = None if code_ids is None else _codes_of_lens(locked, code_ids)
        now = timezone.now()
        coding, _ = ExcerptCoding.objects.get_or_create(coder=locked, excerpt=excerpt)
        own_page = bool(writer) and writer == coding.writer
        coding.superseded = PageWrite(writer, writer_seq).overtaken(coding.writer, coding.writer_seq)
        if coding.superseded:
            # This page's earlier state, overtaken by its later one (a keepalive sent on closing the tab): its
            # codes and memo stay, but a confirmation it carried is kept (Enter, then the tab closed at once).
            if not (confirm and coding.confirmed_at is None):
                return coding
            coding.confirmed_at = now
            coding.save(update_fields=["confirmed_at"])
        else:
            if not own_page and base_revision is not None and base_revision != coding.revision:
                raise CodingConflict(coding)
            coding.revision += 1
            coding.writer, coding.writer_seq = writer, writer_seq
            if memo is not None:
                coding.memo = memo
            if confirm and coding.confirmed_at is None:
                coding.confirmed_at = now
            coding.save()
            if codes is not None:
                coding.codes.set(codes)
        coder_fields = []
        if locked.started_at is None:
            locked.started_at = now
            coder_fields.append("started_at")
        if confirm and locked.completed_at is None and coder_progress(coder=locked).complete:
            locked.completed_at = now
            coder_fields.append("completed_at")
        if coder_fields:
            locked.save(update_fields=coder_fields)
    coder.started_at, coder.completed_at = locked.started_at, locked.completed_at
    return coding


def coding_confirm(*, coder: Coder, excerpt_id: int) -> ExcerptCoding:
    """Confirm one excerpt as it stands (its stored codes and memo; none yet is a valid answer)."""
    return coding_save(coder=coder, excerpt_id=excerpt_id, code_ids=None, memo=None, confirm=True)


def _checked_memo(memo: str) -> str:
    if len(memo) > MAX_MEMO_LENGTH:
        raise CodingInputError(f"The memo has {len(memo):,} characters; at most {MAX_MEMO_LENGTH:,} are kept.")
    try:
        return storable_text(memo, field="memo")
    except InputError as error:
        raise CodingInputError(str(error)) from None


def _codes_of_lens(coder: Coder, code_ids: list[int]) -> list[Code]:
    codebook = coder.lens.codebook
    codes = list(Code.objects.filter(codebook=codebook, id__in=code_ids))
    unknown = sorted(set(code_ids) - {code.id for code in codes})
    if unknown:  # named by id only: a coder learns nothing of other codebooks
        named = ", ".join(f"code {code_id}" for code_id in unknown)
        raise CodingInputError(f"{named} {'is' if len(unknown) == 1 else 'are'} not in this coder's codebook, "
                               f"{codebook}.")
    return codes
