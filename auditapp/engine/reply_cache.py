"""The reply cache: a pending request whose key already has a stored reply takes it, parsed and judged, instead of
being sent (errors are never stored, so never reused)."""
from __future__ import annotations

from django.db import transaction
from django.utils import timezone

from auditapp.engine.judgments import judgments_create
from auditapp.engine.planning import BULK_BATCH_SIZE
from auditapp.models import (
    AuditRequest,
    LLMReply,
)


def take_cached_replies(audit_id: int, builder, ids: list[int] | None = None) -> set[int]:
    """Pending requests (of ``ids`` when given) whose key already has a stored reply take it (errors are never
    stored, so never reused); returns their ids. A later turn still waiting for its key takes nothing."""
    pending = AuditRequest.objects.filter(audit_id=audit_id, state=AuditRequest.State.PENDING).exclude(key="")
    if ids is not None:
        pending = pending.filter(id__in=ids)
    keys = set(pending.values_list("key", flat=True))
    replies = {}
    key_list = sorted(keys)
    for start in range(0, len(key_list), BULK_BATCH_SIZE):
        batch = key_list[start:start + BULK_BATCH_SIZE]
        replies.update({reply.key: reply for reply in LLMReply.objects.filter(key__in=batch)})
    if not replies:
        return set()
    now = timezone.now()
    with transaction.atomic():
        # Locked, so a request deleted meanwhile is not returned and gets no judgment (see AuditJudgment).
        rows = [row for row in pending.select_for_update().only(
            "id", "key", "audit_model_id", "condition", "item_id", "unit", "replicate", "turn") if row.key in replies]
        judged = []
        for row in rows:
            reply = replies[row.key]
            row.state, row.reply_id, row.from_cache, row.finished_at = (AuditRequest.State.ANSWERED, reply.id, True,
                                                                        now)
            row.attempts = 0
            parsed = builder.parse(row, reply.text, reply.finish_reason)
            row.outcome, row.label, row.explanation, row.parse_reason = (parsed.outcome, parsed.label,
                                                                         parsed.explanation, parsed.reason)
            judged.append((row.id, parsed))
        AuditRequest.objects.bulk_update(rows, ["state", "reply", "from_cache", "finished_at", "attempts", "outcome",
                                                "label", "explanation", "parse_reason"], batch_size=BULK_BATCH_SIZE)
        judgments_create(audit_id, judged)
    return {row.id for row in rows}
