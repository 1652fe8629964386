"""Re-parsing an audit's stored replies (no model is asked) and computing its results with its paradigm's
analysis."""
from __future__ import annotations

import logging

from django.db import transaction
from django.db.models import Exists, OuterRef

from auditapp.engine import registry
from auditapp.engine.control import audit_fail
from auditapp.engine.errors import TRANSIENT_ERRORS, AuditStateError
from auditapp.engine.judgments import judgments_create
from auditapp.engine.planning import BULK_BATCH_SIZE, request_builder
from auditapp.engine.protocol import ParsedReply, RequestBuilder
from auditapp.engine.sending import enqueue_analysis
from auditapp.models import (
    Audit,
    AuditJudgment,
    AuditRequest,
)

logger = logging.getLogger(__name__)


REPARSE_BATCH_SIZE = 2000


def _stored_reply_parsed(builder: RequestBuilder, request: AuditRequest) -> ParsedReply:
    """An answered request's stored reply, parsed by the audit's request builder."""
    assert request.reply is not None  # recording and the reply cache answer a request with its reply, together
    return builder.parse(request, request.reply.text, request.reply.finish_reason)


def audit_reparse(*, audit_id: int) -> int:
    """Parse every stored reply of the audit again (no model is asked) and rewrite its judgments; returns how many
    replies were parsed. Only the judgments of the requests parsed here are replaced, in one transaction, so a
    reply recorded meanwhile keeps its own. Replies are read and judged in batches of REPARSE_BATCH_SIZE requests,
    so an audit of millions of judgments is re-parsed in bounded memory."""
    builder = request_builder(Audit.objects.get(pk=audit_id))
    answered = AuditRequest.objects.filter(audit_id=audit_id, state=AuditRequest.State.ANSWERED).order_by("id")
    parsed_count = 0
    with transaction.atomic():
        ids = list(answered.values_list("id", flat=True))
        for start in range(0, len(ids), REPARSE_BATCH_SIZE):
            batch_ids = ids[start:start + REPARSE_BATCH_SIZE]
            # Locked (PostgreSQL; SQLite's IMMEDIATE transactions hold the whole database): a request deleted
            # meanwhile is not returned, so no judgment is written for it (see AuditJudgment).
            rows = list(answered.filter(id__in=batch_ids).select_related("reply").select_for_update(
                of=("self",)).only("id", "audit_model_id", "condition", "item_id", "unit", "replicate", "turn",
                                   "reply__text", "reply__finish_reason"))
            judged = []
            for row in rows:
                parsed = _stored_reply_parsed(builder, row)
                row.outcome, row.label, row.explanation, row.parse_reason = (parsed.outcome, parsed.label,
                                                                             parsed.explanation, parsed.reason)
                judged.append((row.id, parsed))
            AuditRequest.objects.bulk_update(rows, ["outcome", "label", "explanation", "parse_reason"],
                                             batch_size=BULK_BATCH_SIZE)
            AuditJudgment.objects.filter(request_id__in=batch_ids).delete()
            judgments_create(audit_id, judged)
            parsed_count += len(rows)
    return parsed_count


def audit_judge_unjudged(*, audit_id: int) -> int:
    """Write the judgments of answered requests that have none (replies stored before judgments existed), parsing
    their stored replies in batches; nothing else changes. Returns how many requests were judged."""
    builder = request_builder(Audit.objects.get(pk=audit_id))
    unjudged = (AuditRequest.objects.filter(audit_id=audit_id, state=AuditRequest.State.ANSWERED)
                .exclude(Exists(AuditJudgment.objects.filter(request=OuterRef("pk")))).order_by("id"))
    judged_total, last_id = 0, 0
    while True:
        with transaction.atomic():
            # Read and locked in the transaction that writes their judgments, as audit_reparse does.
            rows = list(unjudged.filter(id__gt=last_id).select_related("reply").select_for_update(
                of=("self",)).only("id", "audit_model_id", "condition", "item_id", "unit", "replicate", "turn",
                                   "reply__text", "reply__finish_reason")[:BULK_BATCH_SIZE])
            if not rows:
                return judged_total
            last_id = rows[-1].id
            judgments_create(audit_id, [(row.id, _stored_reply_parsed(builder, row)) for row in rows])
        judged_total += len(rows)


def audit_reparse_and_analyse(*, audit: Audit) -> int:
    """Re-parse a finished (or stopped, paused, cancelled) audit's replies and recompute its metrics."""
    if audit.status in (Audit.Status.QUEUED, Audit.Status.RUNNING):
        raise AuditStateError(f"pause the audit before re-parsing: it is {audit.get_status_display().lower()}")
    n = audit_reparse(audit_id=audit.id)
    enqueue_analysis(audit.id)
    return n


def audit_analyse(*, audit_id: int) -> None:
    """Compute and store the audit's results: its paradigm's analysis (then a completed audit). An analysis that
    cannot be computed fails the audit with the reason, instead of leaving it analysing for every worker start to
    try again; a transient fault (the database away) is raised, for the task to retry."""
    audit = Audit.objects.get(pk=audit_id)
    try:
        registry.get(audit.paradigm).analyse(audit)
    except TRANSIENT_ERRORS:
        raise
    except Exception as error:  # any other failure is the audit's, recorded with its reason
        logger.exception("Audit %s: the analysis failed", audit_id)
        audit_fail(audit_id=audit_id, status=Audit.Status.ANALYSING,
                   reason=f"the analysis failed: {type(error).__name__}: {error}")
