"""Self-report audits (seed 000 §3.3, §4.4, Appendix A): launching one, its requests for the engine, its
analysis and its item-level answers.

The engine (:mod:`auditapp.engine`, :mod:`auditapp.engine.runner`) is the classification audits' own:
requests keyed, cached, leased, sent and stored the same way. What differs lives here and in the pure
:mod:`auditapp.paradigms.self_report.design`: a request is a form's unit (``condition`` is the form,
``original:<slug>`` or ``masked``; ``unit`` is ``item:<position>`` or ``batch``; no sentence), its reply is
parsed as Likert answers, and the analysis scores instruments.

``Audit.design`` holds the design: the instruments (database ids, slugs and content hashes), forms, mode,
labels, title, the validity rule and, per replicate, the masked questionnaire as built at launch (its seed,
order, the wording shown with any phrasing variant used, and every item's mapping back).
"""
from __future__ import annotations

import hashlib
from collections import defaultdict
from dataclasses import asdict

from django.db import transaction
from django.utils import timezone

from auditapp.engine.errors import AuditError
from auditapp.engine.launch import ModelChoice, audit_models_create, launch_problems, manifest_models
from auditapp.engine.planning import PlannedRequest, audit_request_key
from auditapp.engine.protocol import Judgment, ParsedReply
from auditapp.engine.sending import enqueue_prepare
from auditapp.models import Audit, AuditJudgment, AuditModel, AuditRequest, ItemVariant
from auditapp.paradigms.self_report import design as plan
from auditapp.paradigms.self_report.instruments import (
    BATCH_INSTRUCTION,
    ITEM_INSTRUCTION,
    ParsedLikert,
    shipped_dummies,
    shipped_fillers,
)
from psychometrics.models import Instrument as StoredInstrument

PARADIGM = "self_report"


def design_of(audit: Audit) -> plan.Design:
    data = audit.design
    stored = StoredInstrument.objects.in_bulk([entry["id"] for entry in data["instruments"]])
    return plan.Design(instruments=tuple(stored[entry["id"]].parsed for entry in data["instruments"]),
                       forms=tuple(data["forms"]), mode=data["mode"], labels=data["labels"], title=data["title"],
                       validity=plan.ValidityRule(**data["validity"]))


def questionnaires_of(audit: Audit) -> dict[int, plan.MaskedQuestionnaire]:
    return {int(replicate): plan.questionnaire_from_dict(data)
            for replicate, data in audit.design.get("questionnaires", {}).items()}


def _dispatch_order(seed: int, form_id: str, unit: str, replicate: int) -> int:
    """A seeded position for a unit (smaller goes first), so forms and items are interleaved in the sending."""
    digest = hashlib.sha256(f"self-report-order:{seed}:{form_id}:{unit}:{replicate}".encode()).digest()
    return int.from_bytes(digest[:8], "big") >> 1


class SelfReportRequests:
    """Rebuilds any request of a self-report audit (see :func:`auditapp.engine.planning.request_builder`)."""

    def __init__(self, audit: Audit):
        self.audit = audit
        self.models = {m.id: m for m in audit.models.select_related("endpoint")}
        self.design = design_of(audit)
        self.questionnaires = questionnaires_of(audit)
        self._specs: dict[tuple[str, int], dict[str, plan.RequestSpec]] = {}
        self._items: dict[tuple[str, int], dict[int, plan.FormItem]] = {}

    def form(self, form_id: str, replicate: int) -> plan.Form:
        return plan.form_of(self.design, form_id, self.questionnaires, replicate)

    def items_by_position(self, form_id: str, replicate: int) -> dict[int, plan.FormItem]:
        cache_key = (form_id, replicate if form_id == plan.MASKED else 0)
        if cache_key not in self._items:
            self._items[cache_key] = {item.position: item for item in self.form(form_id, replicate).items}
        return self._items[cache_key]

    def specs(self, form_id: str, replicate: int) -> dict[str, plan.RequestSpec]:
        """Unit id → request of a form in a replicate (the original form is the same in every replicate)."""
        cache_key = (form_id, replicate if form_id == plan.MASKED else 0)
        if cache_key not in self._specs:
            self._specs[cache_key] = {spec.unit_id: spec for spec in
                                      plan.requests_of(self.design, form_id, self.form(form_id, replicate))}
        return self._specs[cache_key]

    def requests(self):
        for replicate in range(self.audit.replicates):
            for form_id in self.design.form_ids():
                for unit, spec in self.specs(form_id, replicate).items():
                    order = _dispatch_order(self.audit.seed, form_id, unit, replicate)
                    for audit_model in self.models.values():
                        yield PlannedRequest(audit_model, form_id, None, unit, replicate, order,
                                             self.key(audit_model, spec.messages, replicate))

    def payload(self, request) -> list[dict]:
        return self.specs(request.condition, request.replicate)[request.unit].messages

    def key(self, audit_model: AuditModel, messages: list[dict], replicate: int) -> str:
        return audit_request_key(self.audit, audit_model, messages, replicate)

    def parse(self, request, text: str, finish_reason: str) -> ParsedReply:
        spec = self.specs(request.condition, request.replicate)[request.unit]
        parsed = plan.parse_reply(spec, text)
        outcome, label, reason = plan.request_outcome(parsed)
        return ParsedReply(outcome, label, "", reason, tuple(
            Judgment(unit=str(position), outcome=answer.outcome, label=answer.index, reason=answer.reason)
            for position, answer in parsed.items()))

    def manifest(self) -> dict:
        design = self.design
        return {
            "paradigm": self.audit.paradigm,
        "replicate_rule": "none: each administration is scored on its own; scores are averaged over replicates",
            "seed": self.audit.seed,
            "replicates": self.audit.replicates,
            "use_cache": self.audit.use_cache,
            "error_budget": self.audit.error_budget,
            "mode": design.mode,
            "labels": design.labels or ("text" if design.mode == "batch" else "numbers"),
            "title": design.title,
            "forms": design.form_ids(),
            "messages": "one user message per request; no system prompt",
            "instruction": BATCH_INSTRUCTION if design.mode == "batch" else ITEM_INSTRUCTION,
            "instruments": [{"slug": i.slug, "name": i.name, "version": i.version, "content_hash": i.content_hash,
                             "partial": i.partial, "source": i.source, "licence_note": i.licence_note}
                            for i in design.instruments],
            "masked": {str(replicate): {"seed": q.seed, "filler_pool": q.filler_pool, "dummy_set": q.dummy_set,
                                        "order": [[item.kind, item.slug, item.number] for item in q.items],
                                        "rewritten": [{"source": item.slug, "number": item.number, "text": item.text,
                                                       "published_text": item.published_text,
                                                       "licence_note": item.licence_note}
                                                      for item in q.items if item.rewritten]}
                       for replicate, q in sorted(self.questionnaires.items())},
            "validity": {**asdict(design.validity), "text": design.validity.describe()},
            "models": manifest_models(self.models.values()),
        }


def variant_sources() -> dict[str, tuple[dict[int, str], str]]:
    """What an ItemVariant may reword: source slug → (item number → published wording, licence note), for every
    stored instrument (its newest version), the filler pool and the dummy set."""
    sources: dict[str, tuple[dict[int, str], str]] = {}
    for stored in StoredInstrument.objects.order_by("created_at", "id"):
        definition = stored.definition
        sources[stored.slug] = ({item["number"]: item["text"] for item in definition["items"]},
                                definition.get("licence_note", ""))
    for pool in (shipped_fillers(), shipped_dummies()):
        sources[pool.slug] = ({item.number: item.text for item in pool.items}, pool.licence_note)
    return sources


def active_variants(sources: list[str]) -> dict[tuple[str, int], list[str]]:
    """(source, item number) → the active rewordings of the sources' items (ItemVariant), oldest first."""
    variants: dict[tuple[str, int], list[str]] = defaultdict(list)
    for source, number, text in (ItemVariant.objects.filter(source__in=sources, active=True)
                                 .order_by("id").values_list("source", "number", "text")):
        variants[(source, number)].append(text)
    return dict(variants)


def _design(instruments: list[StoredInstrument], forms, mode, labels, title, validity) -> plan.Design:
    return plan.Design(instruments=tuple(instrument.parsed for instrument in instruments), forms=tuple(forms),
                       mode=mode, labels=labels, title=title, validity=validity or plan.ValidityRule())


def self_report_problems(*, models: list[ModelChoice], instruments: list[StoredInstrument],
                         forms: tuple[str, ...] = plan.FORMS, mode: str = "batch", labels: str | None = None,
                         title: bool = False, validity: plan.ValidityRule | None = None, replicates: int = 1,
                         error_budget: float = 0.2) -> list[str]:
    """Everything that stops a self-report audit from being launched as asked (empty when it can be)."""
    return (launch_problems(models=models, replicates=replicates, error_budget=error_budget)
            + _design(instruments, forms, mode, labels, title, validity).problems())


@transaction.atomic
def self_report_audit_create(*, name: str, models: list[ModelChoice], instruments: list[StoredInstrument],
                             forms: tuple[str, ...] = plan.FORMS, mode: str = "batch", labels: str | None = None,
                             title: bool = False, validity: plan.ValidityRule | None = None, replicates: int = 1,
                             seed: int = 0, use_cache: bool = True, error_budget: float = 0.2,
                             parallel_tasks: int = 1, created_by=None) -> Audit:
    """Record a self-report audit (every model × form × replicate; the masked questionnaires are built now, one
    per replicate) and have a worker prepare and run it. Raises AuditError naming every problem."""
    problems = self_report_problems(models=models, instruments=instruments, forms=forms, mode=mode, labels=labels,
                                    title=title, validity=validity, replicates=replicates, error_budget=error_budget)
    design = _design(instruments, forms, mode, labels, title, validity)
    questionnaires = {}
    if not problems:
        try:
            fillers, dummies = shipped_fillers(), shipped_dummies()
            questionnaires = plan.build_questionnaires(
                design, audit_seed=seed, replicates=replicates, fillers=fillers, dummies=dummies,
                variants=active_variants([*(i.slug for i in design.instruments), fillers.slug, dummies.slug]))
        except ValueError as error:
            problems.append(str(error))
    if problems:
        raise AuditError("; ".join(problems))
    audit = Audit.objects.create(
        name=name, paradigm=PARADIGM, replicates=replicates, seed=seed, use_cache=use_cache,
        error_budget=error_budget, parallel_tasks=parallel_tasks, created_by=created_by,
        design={"instruments": [{"id": i.id, "slug": i.slug, "content_hash": i.content_hash} for i in instruments],
                "forms": list(design.forms), "mode": design.mode, "labels": design.labels, "title": design.title,
                "validity": asdict(design.validity),
                "questionnaires": {str(r): plan.questionnaire_to_dict(q) for r, q in questionnaires.items()}})
    audit_models_create(audit, models)
    enqueue_prepare(audit.id)
    return audit


# ---------------------------------------------------------------------------------------------- answers

def _stored_answers(audit: Audit) -> dict[int, dict[int, ParsedLikert]]:
    """Request id → position → the parsed answer, from the judgments written with each reply."""
    answers: dict[int, dict[int, ParsedLikert]] = defaultdict(dict)
    for request_id, unit, outcome, label, reason in (AuditJudgment.objects.filter(audit=audit)
                                                     .values_list("request_id", "unit", "outcome", "label", "reason")
                                                     .iterator(chunk_size=5000)):
        answers[request_id][int(unit)] = ParsedLikert(outcome, label, reason)
    return answers


def item_answers(audit: Audit, builder: SelfReportRequests | None = None) -> list[dict]:
    """One row per model × replicate × form × presented item: what was shown, how it maps back, the parsed
    answer (from the judgments; a failed or unsent request's items are "error" / "pending")."""
    builder = builder or SelfReportRequests(audit)
    names = audit.model_names()
    stored = _stored_answers(audit)
    rows = []
    requests = (AuditRequest.objects.filter(audit=audit)
                .order_by("audit_model__position", "replicate", "condition", "order")
                .only("id", "audit_model_id", "replicate", "condition", "unit", "state", "error", "key"))
    for request in requests:
        spec = builder.specs(request.condition, request.replicate)[request.unit]
        items = builder.items_by_position(request.condition, request.replicate)
        parsed = stored.get(request.id, {})
        for position in spec.positions:
            item = items[position]
            answer = parsed.get(position)
            if answer is not None:
                outcome, index, reason = answer.outcome, answer.index, answer.reason
            else:
                outcome, index, reason = ("error", None, request.error) if request.state == AuditRequest.State.FAILED \
                    else ("pending", None, "")
            rows.append({"model_id": request.audit_model_id, "model": names[request.audit_model_id],
                         "replicate": request.replicate, "form": request.condition, "unit": request.unit,
                         "position": position, "kind": item.kind, "source": item.slug, "number": item.number,
                         "keying": item.key or "", "text": item.text, "rewritten": item.rewritten,
                         "outcome": outcome, "option_index": index,
                         "option": item.options[index] if index is not None else "", "reason": reason,
                         "request_key": request.key})
    return rows


def self_report_analyse(audit: Audit) -> None:
    """Score every administration and compare the forms (seed 000 §4.4, Figure 2); store it on the audit."""
    builder = SelfReportRequests(audit)
    names = audit.model_names()
    stored = _stored_answers(audit)
    answers: dict[tuple[int, int, str], dict] = defaultdict(dict)
    for request_id, model, replicate, form_id in (AuditRequest.objects.filter(
            audit=audit, state=AuditRequest.State.ANSWERED).values_list("id", "audit_model_id", "replicate",
                                                                        "condition")):
        answers[(model, replicate, form_id)].update(stored.get(request_id, {}))
    administrations = [plan.Administration(model=names[model], replicate=replicate, form_id=form_id,
                                           answers=answers.get((model, replicate, form_id), {}))
                       for model in names for replicate in range(audit.replicates)
                       for form_id in builder.design.form_ids()]
    result = plan.analyse(builder.design, administrations, builder.questionnaires, list(names.values()))
    with transaction.atomic():
        Audit.objects.filter(pk=audit.pk).update(analysis=result, analysed_at=timezone.now())
        Audit.objects.filter(pk=audit.pk, status=Audit.Status.ANALYSING).update(status=Audit.Status.COMPLETED)
