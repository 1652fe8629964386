"""Classification audits, the Django side (seed 000 §3.4): launching one against a study's ground truth, its
requests for the engine, its metrics and manifest.

What the engine needs comes through :data:`auditapp.paradigms.classification.adapter.PARADIGM`; the pure parts
(messages, parsing, the metrics and Δκ) are :mod:`.analysis`, :mod:`.prompts` and :mod:`.replies`.
"""
from __future__ import annotations

import hashlib
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
from django.db import transaction
from django.utils import timezone

from annotation.models import AnalysisRun, Item, ItemGroundTruth, ItemSetMember, Label, Study
from auditapp.corpus_services import corpus_store
from auditapp.engine.errors import AuditError
from auditapp.engine.launch import ModelChoice, audit_models_create, launch_problems, manifest_models
from auditapp.engine.planning import BULK_BATCH_SIZE, PlannedRequest, audit_request_key
from auditapp.engine.protocol import Judgment, ParsedReply, Unit
from auditapp.engine.sending import enqueue_prepare
from auditapp.models import (
    Audit,
    AuditCondition,
    AuditItem,
    AuditMetric,
    AuditModel,
    AuditRequest,
    Corpus,
    PromptTemplate,
    distinct_model_names,
)
from auditapp.paradigms.classification import analysis as classification
from auditapp.paradigms.classification import evaluation as evaluation_sets
from auditapp.paradigms.classification import robustness as classification_robustness
from auditapp.paradigms.classification.prompts import CONDITIONS, DEFAULT_TEMPLATES
from auditapp.paradigms.classification.replies import DEFAULT_ANSWER_ORDER, LABEL_FIRST

PARADIGM = "classification"
EXAMPLE_SETS = {"icl_a": "icl_a", "icl_b": "icl_b"}
# The test set each example set is drawn from, and its annotators (annotation.analysis, seed 000 §3.4).
EXAMPLE_SOURCES = {"icl_a": ("high_aq", "high-AQ"), "icl_b": ("low_aq", "low-AQ")}
RECENT_MESSAGES = 2048


# ---------------------------------------------------------------------------------------------- templates

def templates_sync_defaults() -> None:
    """The seven default templates of seed 000 Appendix A.4 exist as template versions."""
    for template in DEFAULT_TEMPLATES.values():
        if not PromptTemplate.objects.filter(paradigm=PARADIGM, condition=template.code,
                                             content_hash=template.content_hash).exists():
            PromptTemplate.objects.create(paradigm=PARADIGM, condition=template.code, name=template.name,
                                          text=template.text, note=template.note, source=template.source)


def template_current(condition: str) -> PromptTemplate:
    """The newest version of a condition's template."""
    template = PromptTemplate.objects.filter(paradigm=PARADIGM, condition=condition).order_by("-created_at",
                                                                                               "-id").first()
    if template is None:
        raise AuditError(f"no template for condition {condition!r}")
    return template


# ----------------------------------------------------------------------------------------------- creation

@dataclass(frozen=True)
class EvaluationSet:
    """Which of the study's items an audit classifies (:mod:`.evaluation`): a kind, the stored set's name
    (``item_set``), the items' external ids (``items``), an optional seeded sample of n, and whether items that
    are also ICL examples of the audit's conditions may be evaluated."""

    kind: str = evaluation_sets.DEFAULT_KIND
    item_set: str = ""
    item_ids: tuple[str, ...] = ()
    sample: int | None = None
    allow_overlap: bool = False


@dataclass
class EvaluationPlan:
    """The evaluation set looked up: the (item id, majority, weighted) rows to evaluate, what the manifest says
    of it, every problem (the audit is not launched when there is one), and the (item id, label) pairs of each
    example set the conditions use, as read for the overlap check (the audit keeps them: :func:`audit_create`)."""

    truth: list[tuple[int, int | None, int | None]]
    record: dict
    problems: list[str]
    examples: dict[str, list[tuple[int, int]]] = field(default_factory=dict)


def _binary(label: int | None) -> int | None:
    return label if label in (0, 1) else None


def evaluation_plan(*, study: Study, evaluation: EvaluationSet, conditions: list[str], seed: int) -> EvaluationPlan:
    """The items an audit of the study evaluates (seed 000 §3.4), with their majority and weighted labels.

    Only items with a ground truth that are not attention checks can be evaluated; ``all`` also leaves out every
    ICL example item of the study, ``not_examples`` those of the example sets the conditions use. A stored set or
    a list of ids naming items the study has but cannot evaluate, ids it does not have, an unknown set name, a
    sample larger than the set, and (unless allowed) an overlap of the set with the conditions' ICL examples are
    problems, each named."""
    problems = evaluation_sets.kind_problems(kind=evaluation.kind, item_set=evaluation.item_set,
                                             item_ids=evaluation.item_ids, sample=evaluation.sample)
    record = {"kind": evaluation.kind, "name": evaluation.item_set or None, "sample": evaluation.sample,
              "sample_seed": seed if evaluation.sample else None, "allow_overlap": evaluation.allow_overlap}
    if problems:
        return EvaluationPlan([], record, problems)
    truths = {item: (_binary(majority), _binary(weighted)) for item, majority, weighted in
              ItemGroundTruth.objects.filter(item__study=study, item__attention_check_answer__isnull=True)
              .values_list("item_id", "majority_label", "weighted_label")}
    if not truths:
        if not Label.objects.filter(item__study=study).exists():
            return EvaluationPlan([], record, [
                f"study {study} has no labels yet, so no ground truth: collect or import its annotators' labels, "
                "then compute its analysis (study dashboard)"])
        return EvaluationPlan([], record, [
            f"study {study} has no ground truth yet: compute its analysis first (study dashboard)"])
    # One read of the study's ids each, not an IN list of thousands of ids (SQLite caps its parameters).
    external_ids = dict(Item.objects.filter(study=study).values_list("id", "external_id"))
    members: dict[str, set[int]] = {}
    labelled: dict[str, list[tuple[int, int]]] = {}
    for set_name, item, label in (ItemSetMember.objects.filter(study=study).order_by("item_id")
                                  .values_list("set_name", "item_id", "label")):
        members.setdefault(set_name, set()).add(item)
        labelled.setdefault(set_name, []).append((item, label))
    used_sets = {EXAMPLE_SETS[c] for c in conditions if c in EXAMPLE_SETS}
    chosen_examples = {name: members.get(name, set()) for name in sorted(used_sets)}

    if evaluation.kind == "all":
        every_example = set().union(*(members.get(name, set()) for name in EXAMPLE_SETS.values()))
        candidates = set(truths) - every_example
    elif evaluation.kind == "not_examples":
        candidates = set(truths) - set().union(*chosen_examples.values())
    elif evaluation.kind == "item_set":
        if evaluation.item_set not in members:
            known = ", ".join(sorted(members)) or "none (compute the study's analysis first)"
            return EvaluationPlan([], record, [
                f"item_set: study {study} has no item set {evaluation.item_set!r}; its sets: {known}"])
        candidates = members[evaluation.item_set] & set(truths)
        record["n_not_evaluable"] = len(members[evaluation.item_set] - candidates)
    else:
        candidates, id_problems = _listed_items(study, evaluation.item_ids, truths, external_ids)
        problems += id_problems
    if not problems and not candidates:
        problems.append(f"the evaluation set {evaluation.kind!r} of study {study} has no item to evaluate")
    if not problems and not evaluation.allow_overlap:
        overlap = evaluation_sets.overlap_problem(
            {external_ids[i] for i in candidates},
            {name: {external_ids[i] for i in items} for name, items in chosen_examples.items()})
        if overlap:
            problems.append(overlap)
    if not problems and evaluation.sample is not None and evaluation.sample > len(candidates):
        problems.append(f"sample: {evaluation.sample} items asked from an evaluation set of {len(candidates)}")
    if problems:
        return EvaluationPlan([], record, problems)
    record["n_set"] = len(candidates)
    chosen = candidates
    if evaluation.sample is not None:
        by_external = {external_ids[item]: item for item in candidates}
        chosen = {by_external[e] for e in evaluation_sets.seeded_sample(by_external, evaluation.sample, seed)}
    record["n_overlap"] = len(chosen & set().union(*chosen_examples.values()))
    truth = [(item, *truths[item]) for item in sorted(chosen)]
    return EvaluationPlan(truth, record, [], {name: labelled.get(name, []) for name in used_sets})


def _listed_items(study: Study, listed: tuple[str, ...], truths: dict, external_ids: dict[int, str]
                  ) -> tuple[set[int], list[str]]:
    """The study's items of the listed external ids, and the problems of ids it does not have or cannot
    evaluate."""
    by_external = {external: item for item, external in external_ids.items()}
    found = {external: by_external[external] for external in listed if external in by_external}
    problems = []
    unknown = [external for external in listed if external not in found]
    if unknown:
        problems.append(f"item_ids: {len(unknown)} ids are not items of study {study}: "
                        f"{evaluation_sets.some_ids(unknown)}")
    not_evaluable = [external for external, item in found.items() if item not in truths]
    if not_evaluable:
        problems.append(f"item_ids: {len(not_evaluable)} items have no ground truth or are attention checks: "
                        f"{evaluation_sets.some_ids(not_evaluable)}")
    return set(found.values()), problems


def audit_problems(*, study: Study, models: list[ModelChoice], conditions: list[str], replicates: int = 1,
                   error_budget: float = 0.2, unparsed: str = Audit.Unparsed.EXCLUDE,
                   evaluation: EvaluationSet | None = None, seed: int = 0) -> list[str]:
    """Everything that stops an audit of the study from being launched as asked (empty when it can be)."""
    return _launch_plan(study=study, models=models, conditions=conditions, replicates=replicates,
                        error_budget=error_budget, unparsed=unparsed, evaluation=evaluation or EvaluationSet(),
                        seed=seed).problems


def _empty_example_set_reason(study: Study, example_set: str) -> str:
    """Why an ICL example set has no item: its source test set is empty, or all of it is the analysis's evaluation
    set (examples never overlap the items they classify)."""
    source, group = EXAMPLE_SOURCES[example_set]
    n_source = ItemSetMember.objects.filter(study=study, set_name=source).count()
    if n_source:
        return (f"it is drawn from the {source} test set, which has {n_source} items but gave none: they are the "
                "study analysis's evaluation set, which examples never overlap, or the analysis has not drawn the "
                "sets since (compute the study's analysis again)")
    return (f"it is drawn from the {source} test set (items every {group} annotator labelled alike, with enough "
            f"labels each), which is empty too: the study needs more labels from {group} annotators (AQ scores "
            "decide the groups), or choose conditions without examples")


def conditions_unavailable(study: Study, *, conditions=CONDITIONS) -> dict[str, str]:
    """The conditions (of ``conditions``) an audit of the study cannot be launched with, each with why: an ICL
    condition whose example set the study does not have (empty). The launch refuses them with this reason; the
    launch form disables them with it."""
    needed = {condition: EXAMPLE_SETS[condition] for condition in conditions if condition in EXAMPLE_SETS}
    present = set(ItemSetMember.objects.filter(study=study, set_name__in=set(needed.values())).order_by()
                  .values_list("set_name", flat=True).distinct()) if needed else set()
    return {condition: f"needs the study's example set {example_set!r}, which is empty: "
                       + _empty_example_set_reason(study, example_set)
            for condition, example_set in needed.items() if example_set not in present}


def _launch_plan(*, study: Study, models: list[ModelChoice], conditions: list[str], replicates: int,
                 error_budget: float, unparsed: str, evaluation: EvaluationSet, seed: int) -> EvaluationPlan:
    problems = launch_problems(models=models, replicates=replicates, error_budget=error_budget)
    unknown = [c for c in conditions if c not in CONDITIONS]
    if unknown:
        problems.append(f"unknown conditions {unknown}; choose from {list(CONDITIONS)}")
    if not conditions or len(set(conditions)) != len(conditions):
        problems.append("choose each condition at most once, and at least one")
    if unparsed not in Audit.Unparsed.values:
        problems.append(f"unparsed must be one of {Audit.Unparsed.values}")
    problems += [f"condition {condition} {reason}"
                 for condition, reason in conditions_unavailable(study, conditions=conditions).items()]
    plan = evaluation_plan(study=study, evaluation=evaluation, conditions=conditions, seed=seed)
    plan.problems = problems + plan.problems
    return plan


@transaction.atomic
def audit_create(*, study: Study, name: str, models: list[ModelChoice], conditions: list[str],
                 replicates: int = 1, seed: int = 0, use_cache: bool = True, error_budget: float = 0.2,
                 unparsed: str = Audit.Unparsed.EXCLUDE, n_resamples: int = 2000, parallel_tasks: int = 1,
                 evaluation: EvaluationSet | None = None, answer_order: str = DEFAULT_ANSWER_ORDER,
                 created_by=None) -> Audit:
    """Record an audit of a study's current ground truth over an evaluation set (default ``all``) and have a
    worker prepare and run it. Only the evaluation set's items are snapshot (corpus and AuditItem rows), so only
    they are asked about and the metrics are computed over them. Each condition's ICL examples are snapshot too
    (``AuditCondition.examples``, the very pairs the overlap check read): a later recompute of the study redraws
    its ICL sets, and the prompts must neither change nor show an evaluated item.

    Raises AuditError naming every problem (see :func:`audit_problems`)."""
    plan = _launch_plan(study=study, models=models, conditions=conditions, replicates=replicates,
                        error_budget=error_budget, unparsed=unparsed, evaluation=evaluation or EvaluationSet(),
                        seed=seed)
    if plan.problems:
        raise AuditError("; ".join(plan.problems))
    truth = plan.truth
    audit = Audit.objects.create(study=study, name=name, paradigm=PARADIGM, replicates=replicates, seed=seed,
                                 use_cache=use_cache, error_budget=error_budget, unparsed=unparsed,
                                 n_resamples=n_resamples, parallel_tasks=parallel_tasks, created_by=created_by,
                                 design={"evaluation_set": plan.record, "answer_order": answer_order},
                                 corpus=ground_truth_corpus(study, truth, created_by=created_by,
                                                            evaluation=plan.record))
    audit_models_create(audit, models)
    AuditCondition.objects.bulk_create([
        AuditCondition(audit=audit, condition=condition, template=template_current(condition),
                       example_set=EXAMPLE_SETS.get(condition, ""), position=position,
                       examples=[[item, label] for item, label in plan.examples.get(EXAMPLE_SETS.get(condition), [])])
        for position, condition in enumerate(conditions)])
    AuditItem.objects.bulk_create([AuditItem(audit=audit, item_id=item, majority_label=majority,
                                             weighted_label=weighted) for item, majority, weighted in truth],
                                  batch_size=BULK_BATCH_SIZE)
    enqueue_prepare(audit.id)
    return audit


def ground_truth_corpus(study: Study, truth: list[tuple[int, int | None, int | None]], *, created_by=None,
                        evaluation: dict | None = None) -> Corpus:
    """The evaluated items and their references as a corpus: a snapshot of the study's ground truth, stored once
    (an audit of the same items and labels reuses it) and named in the manifest by its content hash. A unit's key
    is the item's external id; its factors the majority and weighted labels ("" where undefined); its fields the
    item's id and context. The audit's metrics read :class:`AuditItem`, the same snapshot row by row. ``evaluation``
    (the evaluation set's record) names the set in the corpus's name and provenance."""
    items = Item.objects.in_bulk([item for item, _, _ in truth])
    units = [Unit(key=items[item].external_id, text=items[item].target,
                  factors={"majority": "" if majority is None else str(majority),
                           "weighted": "" if weighted is None else str(weighted)},
                  fields={"item_id": item, "preceding": items[item].preceding, "following": items[item].following})
             for item, majority, weighted in truth]
    run = getattr(study, "analysis_run", None)
    computed = run.computed_at.isoformat() if run else None
    kind = (evaluation or {}).get("kind", evaluation_sets.DEFAULT_KIND)
    described = f"{kind} {evaluation.get('name') or ''}".strip() if evaluation else kind
    if evaluation and evaluation.get("sample"):
        described += f", sample of {evaluation['sample']} (seed {evaluation['sample_seed']})"
    name = f"{study.name}: ground truth of {computed or 'an unknown run'}, items: {described}"
    return corpus_store(paradigm=PARADIGM, name=name[:200],
                        units=units, created_by=created_by,
                        provenance={"snapshot_of": "the study's ground truth (seed 000 eq. 6 and majority vote)",
                                    "study": study.slug, "study_id": study.id, "ground_truth_computed_at": computed,
                                    "ground_truth_settings": run.settings if run else None,
                                    "evaluation_set": evaluation or {"kind": kind}})


# ------------------------------------------------------------------------------------------------ requests

def _sentence(item: Item | dict, label: int | None = None) -> classification.Sentence:
    return classification.Sentence(item_id=item["id"], target=item["target"], preceding=item["preceding"],
                                   following=item["following"], label=label)

class ClassificationRequests:
    """Rebuilds any request of a classification audit: its messages and its key (the messages are never stored)."""

    def __init__(self, audit: Audit):
        self.audit = audit
        self.models = {m.id: m for m in audit.models.select_related("endpoint")}
        self.conditions = list(audit.conditions.select_related("template"))
        self.templates = {c.condition: c.template.text for c in self.conditions}
        fields = ("id", "target", "preceding", "following")
        self.examples: dict[str, list[classification.Sentence]] = {}
        # Audits created before the snapshot existed (examples is None) still read the live set.
        self.live_examples = [c.condition for c in self.conditions if c.example_set and c.examples is None]
        snapshot = {c.condition: c.examples for c in self.conditions if c.example_set and c.examples is not None}
        texts = Item.objects.in_bulk([item for pairs in snapshot.values() for item, _ in pairs])
        for condition, pairs in snapshot.items():
            self.examples[condition] = [_sentence({f: getattr(texts[item], f) for f in fields}, label)
                                        for item, label in pairs]
        for condition in self.conditions:
            if condition.condition in self.live_examples:
                members = (ItemSetMember.objects.filter(study=audit.study_id, set_name=condition.example_set)
                           .values("label", *(f"item__{f}" for f in fields)))
                self.examples[condition.condition] = [
                    _sentence({f: m[f"item__{f}"] for f in fields}, m["label"]) for m in members]
        items = Item.objects.filter(pk__in=AuditItem.objects.filter(audit=audit).values("item_id")).values(*fields)
        self.items = {item["id"]: _sentence(item) for item in items}
        self._recent: dict[tuple[str, int], list[dict]] = {}

    def requests(self):
        for item_id in sorted(self.items):
            order = classification.dispatch_order(self.audit.seed, item_id)
            for condition in self.conditions:
                messages = self.item_messages(condition.condition, item_id)
                for audit_model in self.models.values():
                    for replicate in range(self.audit.replicates):
                        yield PlannedRequest(audit_model, condition.condition, item_id, "", replicate, order,
                                             self.key(audit_model, messages, replicate))

    def payload(self, request) -> list[dict]:
        return self.item_messages(request.condition, request.item_id)

    def parse(self, request, text: str, finish_reason: str) -> ParsedReply:
        """The label of the one item the request asks about (its judgment's unit is the item's id)."""
        parsed = classification.parse(text, finish_reason or None)
        judgment = Judgment(unit=str(request.item_id), outcome=parsed.outcome, label=parsed.label,
                            reason=parsed.reason, explanation=parsed.explanation)
        return ParsedReply(parsed.outcome, parsed.label, parsed.explanation, parsed.reason, (judgment,))

    def item_messages(self, condition: str, item_id: int) -> list[dict]:
        """The messages of an item under a condition (the same for every model and replicate, so the last
        few are kept: a worker sends an item's requests one after another)."""
        cache_key = (condition, item_id)
        messages = self._recent.get(cache_key)
        if messages is None:
            messages = classification.build_messages(self.templates[condition], self.items[item_id],
                                                     examples=self.examples.get(condition, ()), seed=self.audit.seed)
            if len(self._recent) >= RECENT_MESSAGES:
                self._recent.pop(next(iter(self._recent)))
            self._recent[cache_key] = messages
        return messages

    def key(self, audit_model: AuditModel, messages: list[dict], replicate: int) -> str:
        return audit_request_key(self.audit, audit_model, messages, replicate)

    def manifest(self) -> dict:
        return _classification_manifest(self.audit, self)



def _classification_manifest(audit: Audit, builder: ClassificationRequests) -> dict:
    """Everything needed to know what was asked of which model (ARCHITECTURE.md: the manifest), but the app's
    version (the caller adds it)."""
    study = audit.study
    run = getattr(study, "analysis_run", None)
    evaluated = list(AuditItem.objects.filter(audit=audit).order_by("item_id")
                     .values_list("item__external_id", "majority_label", "weighted_label"))
    data_hash = hashlib.sha256(repr(evaluated).encode()).hexdigest()
    return {
        "paradigm": audit.paradigm,
        "seed": audit.seed,
        "replicates": audit.replicates,
        "use_cache": audit.use_cache,
        "error_budget": audit.error_budget,
        "unparsed": audit.unparsed,
        "n_resamples": audit.n_resamples,
        "messages": "one user message holding the condition's prompt; no system prompt",
        **({"answer_order": audit.design.get("answer_order", LABEL_FIRST)} if audit.structured_output else {}),
        "templates": [{"condition": c.condition, "name": c.template.name, "content_hash": c.template.content_hash,
                       "text": c.template.text, "note": c.template.note, "source": c.template.source,
                       "example_set": c.example_set,
                       "examples_source": ("" if not c.example_set else
                                           "the live item set (audit created before example snapshots)"
                                           if c.condition in builder.live_examples else "snapshot at launch"),
                       "example_items": sorted(str(e.item_id) for e in builder.examples.get(c.condition, ()))}
                      for c in builder.conditions],
        "models": manifest_models(builder.models.values()),
        "data": {"study": study.slug, "study_id": study.id, "n_items": len(evaluated),
                 "corpus": {"id": audit.corpus_id, "content_hash": audit.corpus.content_hash} if audit.corpus_id
                 else None,
                 "ground_truth_computed_at": run.computed_at.isoformat() if run else None,
                 "ground_truth_settings": run.settings if run else None,
                 "ground_truth_sha256": data_hash,
                 "evaluation_set": {**audit.design.get("evaluation_set", {"kind": evaluation_sets.DEFAULT_KIND}),
                                    "n": len(evaluated),
                                    "items_sha256": evaluation_sets.item_ids_sha256(e for e, _, _ in evaluated)}},
    }



# ------------------------------------------------------------------------------------------------ metrics

OUTCOME_COUNTS = ("label", "refusal", "unparseable", "error", "pending")


def classification_requests_frame(audit: Audit) -> pd.DataFrame:
    """The audit's requests: id, model (its id), condition, item, replicate, outcome ("pending" while pending),
    label (the strict label, NaN unless the outcome is a label), state."""
    requests = pd.DataFrame.from_records(
        AuditRequest.objects.filter(audit=audit).values_list("id", "audit_model_id", "condition", "item_id",
                                                             "replicate", "outcome", "label", "state"),
        columns=["id", "model", "condition", "item", "replicate", "outcome", "label", "state"])
    requests["label"] = np.where(requests["outcome"] == AuditRequest.Outcome.LABEL,
                                 requests["label"].astype(float), np.nan)
    requests.loc[requests["state"] == AuditRequest.State.PENDING, "outcome"] = "pending"
    return requests


def classification_results(audit: Audit, *, labels: pd.Series | None = None) -> tuple[list[dict], dict]:
    """Metrics per model × condition × reference, Δκ and the means (seed 000 Tables 1–2, Figure 1, §4.1).

    ``labels`` (aligned with :func:`classification_requests_frame`) replaces the strict labels: an outcome source
    other than the strict parser (:mod:`.extraction_services`); the outcome counts stay the strict ones. Returns
    the cell rows (model id, condition, reference, values) and the analysis (unparsed rule, Δκ, means)."""
    models = list(audit.models.all())
    conditions = list(audit.conditions.values_list("condition", flat=True))
    requests = classification_requests_frame(audit)
    if labels is not None:
        requests["label"] = labels
    references = pd.DataFrame.from_records(
        AuditItem.objects.filter(audit=audit).order_by("item_id").values_list("item_id", "weighted_label",
                                                                              "majority_label"),
        columns=["item", "weighted", "majority"]).astype({"weighted": float, "majority": float})
    result = classification.analyse(requests, references, models=[m.id for m in models], conditions=conditions,
                                    unparsed=audit.unparsed, n_resamples=audit.n_resamples, seed=audit.seed)
    counts = requests.groupby(["model", "condition", "outcome"]).size()
    names = distinct_model_names(models)
    cells = []
    for cell in result.cells:
        values = {k: _json_number(v) for k, v in cell.items() if k not in ("model", "condition", "reference")}
        for outcome in OUTCOME_COUNTS:
            values[f"n_{outcome}"] = int(counts.get((cell["model"], cell["condition"], outcome), 0))
        cells.append({"model": cell["model"], "condition": cell["condition"], "reference": cell["reference"],
                      "values": values})

    def named(rows: list[dict]) -> list[dict]:
        """Rows keyed by model id get the model's name beside the id."""
        return [{**({"model_id": row["model"]} if "model" in row else {}),
                 **{k: names[v] if k == "model" else _json_number(v) for k, v in row.items()}} for row in rows]

    gap = {k: _json_number(v) for k, v in result.gap.items() if k != "cells"}
    gap["cells"] = named(result.gap["cells"])
    return cells, {"unparsed": audit.unparsed, "kappa_gap": gap, "model_means": named(result.model_means),
                   "condition_means": named(result.condition_means)}


def classification_analyse(audit: Audit) -> None:
    """Compute the strict outcomes' results (:func:`classification_results`) and store them."""
    audit_id = audit.id
    cells, analysis = classification_results(audit)
    analysis["robustness"] = audit_robustness(audit)
    metric_rows = [AuditMetric(audit=audit, audit_model_id=cell["model"], condition=cell["condition"],
                               reference=cell["reference"], unparsed=audit.unparsed, values=cell["values"])
                   for cell in cells]
    with transaction.atomic():
        AuditMetric.objects.filter(audit=audit).delete()
        AuditMetric.objects.bulk_create(metric_rows)
        Audit.objects.filter(pk=audit_id).update(analysis=analysis, analysed_at=timezone.now())
        Audit.objects.filter(pk=audit_id, status=Audit.Status.ANALYSING).update(status=Audit.Status.COMPLETED)


def audit_robustness(audit: Audit) -> dict:
    """The audit's replies re-scored against every alternative ground truth of its study (robustness of the weighted
    label; :mod:`.robustness`), as stored in ``Audit.analysis["robustness"]``.

    The paper's weighted label and the majority vote are the audit's own snapshot (``AuditItem.weighted_label`` and
    ``majority_label``, what its metrics and its Δκ test use), so the §4.1 test against majority here is the audit's
    own. The other alternatives come from the study's latest analysis (``AnalysisRun.alternatives``), matched by
    item: when labels arrived after the launch they see labels the audit's snapshot did not. ``snapshot`` says, per
    alternative, where it comes from and, against the audit's snapshot, how many of the audit's items the study's
    latest analysis labels differently (``n_changed``; only the two alternatives the snapshot holds can be
    compared), how many lost their label there (``n_missing``: labelled in the snapshot, not in the analysis) and
    how many lack one under it (``n_unlabelled``); a note says so when any item changed or is missing.

    The study's alternatives are computed by their own task after its analysis (``annotation.study_alternatives``).
    Until they are stored this waits for them rather than use none: ``available`` is False, ``pending`` True with
    when they were asked, and the task re-scores the audit once they are (:func:`robustness_after_alternatives`).
    When they failed or the study has none, ``available`` is False and a note says why."""
    from annotation.alternatives import ALTERNATIVES

    run = AnalysisRun.objects.filter(study_id=audit.study_id).first()
    status = run.alternatives_status if run is not None else "none"
    if status == "computing":
        asked = run.alternatives_requested_at.isoformat()
        return {"available": False, "pending": True, "study_alternatives_requested_at": asked,
                "notes": [f"the study's alternative ground truths are being computed (asked at {asked}); the audit is "
                          "re-scored against them when they are stored"]}
    if status == "failed":
        return {"available": False, "notes": [f"the study's alternative ground truths could not be computed: "
                                              f"{run.alternatives_error}"]}
    stored = run.alternatives if status == "ready" else {}
    if not stored.get("labels"):
        return {"available": False, "notes": ["the study's analysis has no alternative ground truths: recompute it "
                                              "(study dashboard), then re-analyse the audit"]}
    snapshot = pd.DataFrame.from_records(
        AuditItem.objects.filter(audit=audit).order_by("item_id").values_list(
            "item_id", "item__external_id", *SNAPSHOT_COLUMNS.values()),
        columns=["item", "external_id", *SNAPSHOT_COLUMNS.values()])
    alternatives = pd.DataFrame(stored["labels"], index=stored["items"], dtype=float)
    references = snapshot.join(alternatives, on="external_id")
    drift, notes = _snapshot_drift(references, [a.name for a in ALTERNATIVES if a.name in references.columns],
                                   computed_at=run.computed_at.isoformat())
    for name, column in SNAPSHOT_COLUMNS.items():
        references[name] = references[column].astype(float)
    names = [a.name for a in ALTERNATIVES if a.name in references.columns]
    tables = classification_robustness.robustness(
        classification_requests_frame(audit), references, alternatives=names,
        models=[m.id for m in audit.models.all()], conditions=list(audit.conditions.values_list("condition", flat=True)),
        unparsed=audit.unparsed, n_resamples=audit.n_resamples, seed=audit.seed, **_soft_cut(stored))
    model_names = audit.model_names()
    for row in tables["cells"]:
        row["model_id"], row["model"] = row["model"], model_names[row["model"]]
    for row in tables["ranks"]:
        if row["scope"] == "model":
            row["model_id"], row["key"] = row["key"], model_names[row["key"]]
    return {"available": True, "study_analysis_computed_at": run.computed_at.isoformat(),
            "settings": stored.get("settings", {}), "alternatives": names, "notes": notes, "snapshot": drift,
            **{name: [{k: _json_number(v) for k, v in row.items()} for row in rows] for name, rows in tables.items()}}


SNAPSHOT_COLUMNS = {"weighted": "weighted_label", "majority": "majority_label"}
SOFT_TIE_LABELS = {"positive": 1.0, "negative": 0.0, "none": 1.0}


def _soft_cut(stored: dict) -> dict:
    """How the study's weighted label cut the soft score (threshold, tie label), for unparsed replies under "wrong".
    Under the tie rule "none" a tied item has no weighted label; its unparsed replies are counted as 0 (the tie
    read as positive): at ŷ = 0.5 either prediction has the same expected credit."""
    aggregation = (stored.get("settings") or {}).get("aggregation") or {}
    return {"soft_threshold": float(aggregation.get("threshold", 0.5)),
            "soft_tie_label": SOFT_TIE_LABELS[aggregation.get("weighted_tie_rule", "positive")]}


def _snapshot_drift(references: pd.DataFrame, names: list[str], *, computed_at: str) -> tuple[list[dict], list[str]]:
    """Per alternative, its source and how the study's latest analysis stands against the audit's snapshot (the
    ``snapshot`` table of :func:`audit_robustness`), and the notes that say it. ``references``: one row per audit
    item with the snapshot's columns and the analysis's alternatives."""
    rows, changed_names = [], []
    for name in names:
        latest = references[name].astype(float)
        row = {"alternative": name, "n_items": len(references), "n_unlabelled": int(latest.isna().sum()),
               "source": f"study analysis of {computed_at}", "n_changed": None, "n_missing": None}
        if name in SNAPSHOT_COLUMNS:
            held = references[SNAPSHOT_COLUMNS[name]].astype(float)
            row.update(source="audit snapshot", n_unlabelled=int(held.isna().sum()),
                       n_changed=int((held.notna() & latest.notna() & (held != latest)).sum()),
                       n_missing=int((held.notna() & latest.isna()).sum()))
            if row["n_changed"] or row["n_missing"]:
                changed_names.append(f"{row['n_changed']} items' {name} label ({row['n_missing']} more without one)")
        rows.append(row)
    notes = []
    if changed_names:
        notes.append(f"the study's latest analysis ({computed_at}) changes {' and '.join(changed_names)} against the "
                     "audit's snapshot: labels arrived after the launch. Weighted and majority here are the "
                     "snapshot's (the audit's own metrics and Δκ); the other alternatives are the analysis's and "
                     "include those labels")
    return rows, notes


def robustness_after_alternatives(*, study_id: int, paradigm: str) -> list[int]:
    """The study's alternatives were stored or failed: its audits of ``paradigm`` whose robustness waits for them
    (``pending``) are re-scored, their other results unchanged. Returns the audit ids re-scored."""
    waiting = list(Audit.objects.filter(study_id=study_id, paradigm=paradigm, analysis__robustness__pending=True)
                   .values_list("id", flat=True))
    for audit_id in waiting:
        audit = Audit.objects.select_related("study").get(pk=audit_id)
        robustness = audit_robustness(audit)
        with transaction.atomic():
            locked = Audit.objects.select_for_update().get(pk=audit_id)
            analysis = locked.analysis or {}
            if not (analysis.get("robustness") or {}).get("pending"):
                continue
            analysis["robustness"] = robustness
            Audit.objects.filter(pk=audit_id).update(analysis=analysis)
    return waiting


def _json_number(value):
    """NaN and infinities are not JSON: they become None."""
    if isinstance(value, float | np.floating):
        return float(value) if np.isfinite(value) else None
    if isinstance(value, np.integer):
        return int(value)
    return value
