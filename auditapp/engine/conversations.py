"""Multi-turn requests: a later turn (``AuditRequest.turn`` > 0) waits, pending with a blank key, until the turn
before it is finished; in the transaction that records that turn it is keyed (then claimable) or closed with the
reason. See "Multi-turn requests" in :mod:`auditapp.engine.protocol`. Also the request a worker claims
(:class:`ClaimedRequest`), which carries its earlier turns."""
from __future__ import annotations

from collections.abc import Collection, Iterable
from dataclasses import dataclass
from typing import Any

from django.db import transaction
from django.utils import timezone

from auditapp.engine.planning import BULK_BATCH_SIZE
from auditapp.engine.protocol import TURN_ENDED, TURN_FAILED, NoFollowUp, is_multi_turn
from auditapp.engine.reply_cache import take_cached_replies
from auditapp.models import (
    Audit,
    AuditRequest,
)

CONVERSATION_FIELDS = ("id", "audit_model_id", "condition", "item_id", "unit", "replicate", "key", "turn",
                        "previous_id")


def turns_link(audit_id: int) -> None:
    """Point each later turn of a freshly prepared audit at the turn before it: same model, condition, item or
    unit and replicate, one turn lower. A turn planned without the one before it is a bug of its paradigm."""
    identities = {}
    later = []
    for row in AuditRequest.objects.filter(audit_id=audit_id).only(
            "id", "audit_model_id", "condition", "item_id", "unit", "replicate", "turn", "previous_id"):
        identities[(row.audit_model_id, row.condition, row.item_id, row.unit, row.replicate, row.turn)] = row.id
        if row.turn and row.previous_id is None:
            later.append(row)
    for row in later:
        identity = (row.audit_model_id, row.condition, row.item_id, row.unit, row.replicate, row.turn - 1)
        if identity not in identities:
            raise RuntimeError(f"the paradigm planned turn {row.turn} of {identity[:5]} without turn {row.turn - 1}")
        row.previous_id = identities[identity]
    AuditRequest.objects.bulk_update(later, ["previous_id"], batch_size=BULK_BATCH_SIZE)


@dataclass(frozen=True)
class EarlierTurn:
    """A finished turn of a conversation as a later turn needs it: the request, its state, its reply's text (None
    when it has none) and its error."""

    request: ClaimedRequest
    state: str
    reply_text: str | None
    error: str = ""


def conversations_before(ids: Collection[int]) -> dict[int, tuple[EarlierTurn, ...]]:
    """For each request id, its conversation up to and including it (turn 0 first), in one query per turn."""
    chains: dict[int, tuple[EarlierTurn, ...]] = {}
    rows: dict[int, tuple] = {}
    wanted = set(ids)
    while wanted:
        fetched = AuditRequest.objects.filter(id__in=wanted).values_list(*CONVERSATION_FIELDS, "state",
                                                                          "reply__text", "error")
        rows.update({row[0]: row for row in fetched})
        wanted = {row[8] for row in rows.values() if row[8] is not None and row[8] not in rows}

    def chain(request_id: int) -> tuple[EarlierTurn, ...]:
        if request_id not in chains:
            *fields, state, text, error = rows[request_id]
            turn = EarlierTurn(ClaimedRequest(*fields), state, text, error)
            chains[request_id] = (*(chain(fields[8]) if fields[8] is not None else ()), turn)
        return chains[request_id]

    return {request_id: chain(request_id) for request_id in ids}


def conversation_payload(builder, request: ClaimedRequest | AuditRequest, earlier: tuple[EarlierTurn, ...] = ()) -> Any:
    """What a request sends: its builder's payload; for a later turn, the first turn's payload continued by each
    earlier reply and the next turn's question (``follow_up``, which may raise NoFollowUp)."""
    if not earlier:
        return builder.payload(request)
    payload = builder.payload(earlier[0].request)
    for before, after in zip(earlier, [*(turn.request for turn in earlier[1:]), request], strict=True):
        payload = builder.follow_up(after, payload, before.reply_text)
    return payload


def request_payload(builder, request: ClaimedRequest) -> Any:
    """What a claimed request sends (its earlier turns were loaded with the claim)."""
    return conversation_payload(builder, request, request.earlier)


def turns_advance(audit: Audit, builder, finished_ids: Iterable[int]) -> None:
    """Key or close the later turns waiting on these finished requests (each only once: a turn already keyed or
    closed is not waiting); a closed turn closes the turns after it, and with the cache a keyed turn takes a stored
    reply, whose next turn is then keyed in turn."""
    finished = set(finished_ids)
    while finished:
        waiting = list(AuditRequest.objects.filter(previous_id__in=finished, state=AuditRequest.State.PENDING,
                                                   key="").values_list(*CONVERSATION_FIELDS))
        if not waiting:
            return
        # The earlier turns are locked before they are read: "retry failed" re-opening one waits for this
        # transaction, or this one waits for it and reads it pending (and requeue_failed locks them first too).
        list(AuditRequest.objects.select_for_update().filter(id__in={row[8] for row in waiting}).order_by(
            "id").values_list("id", flat=True))
        chains = conversations_before({row[8] for row in waiting})
        now = timezone.now()
        keyed, closed_failed, closed_ended = [], [], []
        for fields in waiting:
            request = ClaimedRequest(*fields)
            assert request.previous_id is not None  # a later turn, selected by its previous_id
            chain = chains[request.previous_id]
            before = chain[-1]
            if before.state == AuditRequest.State.PENDING:
                continue
            if before.state == AuditRequest.State.FAILED:
                closed_failed.append(AuditRequest(id=request.id, error=TURN_FAILED.format(
                    turn=before.request.turn + 1, reason=before.error)))
                continue
            try:
                payload = conversation_payload(builder, request, chain)
            except NoFollowUp as ended:
                closed_ended.append(AuditRequest(id=request.id, error=TURN_ENDED.format(
                    turn=before.request.turn + 1, reason=ended)))
                continue
            keyed.append(AuditRequest(id=request.id, key=builder.key(
                builder.models[request.audit_model_id], payload, request.replicate)))
        for row in (*closed_failed, *closed_ended):
            row.state, row.outcome, row.finished_at, row.attempts = (AuditRequest.State.FAILED,
                                                                     AuditRequest.Outcome.ERROR, now, 0)
        # Each write re-checks, in its own UPDATE, what it was decided on: the turn still waits and the turn
        # before it is still answered or failed (not re-opened by "retry failed" since it was read).
        waits = AuditRequest.objects.filter(state=AuditRequest.State.PENDING, key="")
        closing = ["state", "outcome", "finished_at", "attempts", "error"]
        waits.filter(previous__state=AuditRequest.State.ANSWERED).bulk_update(keyed, ["key"],
                                                                               batch_size=BULK_BATCH_SIZE)
        waits.filter(previous__state=AuditRequest.State.FAILED).bulk_update(closed_failed, closing,
                                                                             batch_size=BULK_BATCH_SIZE)
        waits.filter(previous__state=AuditRequest.State.ANSWERED).bulk_update(closed_ended, closing,
                                                                               batch_size=BULK_BATCH_SIZE)
        # A turn whose close was refused stays pending, so the turns after it keep waiting (the next pass reads it).
        finished = {row.id for row in (*closed_failed, *closed_ended)}
        if audit.use_cache:
            keyed_ids = [row.id for row in keyed]
            for start in range(0, len(keyed_ids), BULK_BATCH_SIZE):
                finished |= take_cached_replies(audit.id, builder, keyed_ids[start:start + BULK_BATCH_SIZE])


def turns_unblock(*, audit: Audit, builder) -> None:
    """Key or close the later turns still waiting although the turn before them is finished (re-opened by "retry
    failed", or after a fault): run by each work slice, so no conversation is left waiting for ever."""
    if not is_multi_turn(builder):
        return
    stranded = AuditRequest.objects.filter(audit=audit, state=AuditRequest.State.PENDING, key="",
                                           previous__isnull=False).exclude(
        previous__state=AuditRequest.State.PENDING).values_list("previous_id", flat=True)
    with transaction.atomic():
        turns_advance(audit, builder, set(stranded))


@dataclass(frozen=True)
class ClaimedRequest:
    """A request a worker sends; a later turn of a conversation carries its ``earlier`` turns, answered."""

    id: int
    audit_model_id: int
    condition: str
    item_id: int | None
    unit: str
    replicate: int
    key: str
    turn: int = 0
    previous_id: int | None = None
    earlier: tuple[EarlierTurn, ...] = ()
