"""Upgrade steps: recomputations of stored results that an upgrade of the app needs, run by ``manage.py upgrade``
after ``manage.py migrate`` (``bin/run`` and the deployment run both).

Migrations change tables only, with the historical models Django gives them; a step that needs the app's own code
(a paradigm's parser or analysis) cannot be a migration, since a migration runs at its place in history while the
code is today's: 0009 once failed on a database at 0008 because today's code read a column only 0010 adds. A step
here runs after every migration, on today's tables with today's code. Each step is idempotent (it selects what is
still to do, or redoing its work changes nothing) and commits one audit at a time, so a stopped upgrade is run
again and goes on. ``auditapp.models.UpgradeStep`` records the steps that ran to their end; the others run at the
next upgrade. No model is asked by any step.

To add a step: write a function taking no argument that returns a one-line summary, and append it to ``STEPS``
under a new name (names are recorded, never reused).
"""
from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass

from django.db.models import Count, Value
from django.db.models.functions import Coalesce, NullIf

from auditapp.engine import registry
from auditapp.engine.analysis import audit_judge_unjudged
from auditapp.engine.errors import TRANSIENT_ERRORS
from auditapp.models import Audit, AuditMetric, AuditModel, AuditRequest, UpgradeStep

logger = logging.getLogger(__name__)

BATCH = 2000
# Statuses whose audit a worker analyses by itself: a step leaves them to it rather than race it.
WORKED_ON = (Audit.Status.QUEUED, Audit.Status.RUNNING, Audit.Status.PAUSED, Audit.Status.ANALYSING)


def for_each_audit(audit_ids, work: Callable[[int], int], failure: str) -> tuple[int, list[int]]:
    """Run ``work`` on each audit (it commits its own transactions) and add up what it returns. An audit it fails
    on is logged (``failure`` says what failed) and skipped, so that one audit's data never stops an upgrade; a
    database or broker fault stops it, to be run again. Returns the total and the audits it failed on."""
    total, failed = 0, []
    for audit_id in audit_ids:
        try:
            total += work(audit_id)
        except TRANSIENT_ERRORS:
            raise
        except Exception as error:  # noqa: BLE001 - one audit's data must not stop the upgrade
            failed.append(audit_id)
            logger.warning("Audit %s: %s: %s: %s", audit_id, failure, type(error).__name__, error)
    return total, failed


def judge_stored_replies() -> str:
    """Judgment rows for answered requests that have none: replies stored before judgments existed (a self-report
    audit's answers and scores read judgments), parsed again from the stored reply."""
    audits = (AuditRequest.objects.filter(state=AuditRequest.State.ANSWERED).values_list("audit_id", flat=True)
              .distinct().order_by("audit_id"))
    judged, failed = for_each_audit(audits, lambda audit_id: audit_judge_unjudged(audit_id=audit_id),
                                    "its stored replies could not be judged")
    not_judged = f"; the replies of {len(failed)} audits could not be judged: {failed}" if failed else ""
    return f"{judged} stored replies judged{not_judged}"


def classification_audits_without_notes() -> list[int]:
    """Classification audits, not being worked on, whose stored metrics hold no ``_note`` key at all: analysed
    before undefined metrics were stored as undefined with a reason (they stored 0.0, which cannot be told from a
    measured 0)."""
    with_metrics, with_notes = set(), set()
    rows = (AuditMetric.objects.filter(audit__paradigm="classification").exclude(audit__status__in=WORKED_ON)
            .values_list("audit_id", "values"))
    for audit_id, values in rows.iterator(chunk_size=BATCH):
        with_metrics.add(audit_id)
        if any(key.endswith("_note") for key in values or {}):
            with_notes.add(audit_id)
    return sorted(with_metrics - with_notes)


def audits_with_models_named_alike() -> list[int]:
    """Analysed audits, not being worked on, two of whose models have one name in tables (their label, or their
    model name without one): launched before launch refused such pairs, analysed before every paradigm named them
    apart (``Audit.model_names``)."""
    shared = (AuditModel.objects.annotate(name=Coalesce(NullIf("label", Value("")), "model"))
              .values("audit_id", "name").annotate(n=Count("id")).filter(n__gt=1).values("audit_id"))
    return list(Audit.objects.filter(pk__in=shared, analysed_at__isnull=False).exclude(status__in=WORKED_ON)
                .order_by("id").values_list("id", flat=True))


def bits_audits_before_table_6() -> list[int]:
    """Analysed BITS audits, not being worked on, whose stored analysis has no ``source_means`` table: analysed
    before Table 6 (the group means' t-tests and the per-source table) and the pairing rules' counts (such an
    analysis counts a sentence without a control as a missing pair)."""
    return list(Audit.objects.filter(paradigm="bits", analysed_at__isnull=False).exclude(status__in=WORKED_ON)
                .exclude(analysis__tables__has_key="source_means").order_by("id").values_list("id", flat=True))


def implicit_bias_audits_before_per_model_counts() -> list[int]:
    """Analysed WABT and AAT audits, not being worked on, whose reasons table has a row without ``n_replies`` (the
    model's own replies, which the row's share is of): analysed before the table gave it."""
    candidates = (Audit.objects.filter(paradigm__in=("word_association", "affective_attribution"),
                                       analysed_at__isnull=False).exclude(status__in=WORKED_ON)
                  .order_by("id").values_list("id", "analysis"))
    return [audit_id for audit_id, analysis in candidates
            if any("n_replies" not in row for row in ((analysis or {}).get("tables") or {}).get("reasons") or [])]


def analyse_again(audit_ids: list[int]) -> str:
    """Analyse each audit again from its stored replies with its paradigm's analysis (one transaction per audit,
    the paradigm's own). An audit whose analysis cannot be computed again is reported and keeps the one it has."""
    def analyse(audit_id: int) -> int:
        audit = Audit.objects.get(pk=audit_id)
        registry.get(audit.paradigm).analyse(audit)
        return 1

    analysed, failed = for_each_audit(audit_ids, analyse, "it keeps its stored analysis; analysing it again failed")
    kept = f"; {len(failed)} kept their stored analysis (could not be analysed again: {failed})" if failed else ""
    return f"{analysed} audits analysed again{kept}"


@dataclass(frozen=True)
class Step:
    name: str
    run: Callable[[], str]
    description: str


STEPS: tuple[Step, ...] = (
    Step("judgments-of-stored-replies", judge_stored_replies,
         "judgment rows for replies stored before judgments existed"),
    Step("metric-notes-of-classification-audits", lambda: analyse_again(classification_audits_without_notes()),
         "classification audits analysed before undefined metrics had notes, analysed again"),
    Step("audits-with-models-named-alike", lambda: analyse_again(audits_with_models_named_alike()),
         "audits with two models named alike, analysed again under one naming rule"),
    Step("bits-audits-before-table-6", lambda: analyse_again(bits_audits_before_table_6()),
         "BITS audits analysed before Table 6 and the pairing counts, analysed again"),
    Step("implicit-bias-reasons-per-model", lambda: analyse_again(implicit_bias_audits_before_per_model_counts()),
         "WABT and AAT audits analysed before their reasons table gave each model's reply count, analysed again"),
)


def pending_steps() -> list[Step]:
    """The steps not yet recorded as run to their end, in order."""
    done = set(UpgradeStep.objects.values_list("name", flat=True))
    return [step for step in STEPS if step.name not in done]


def run_step(step: Step) -> str:
    """Run one step and record it as done; returns its summary."""
    summary = step.run()
    UpgradeStep.objects.get_or_create(name=step.name)
    return summary
