"""Perturbation-sensitivity (BITS) audits, the Django side (seed 001 §3.2, §4): launching one over a stored corpus,
its requests for the engine, and its analysis from the judgments and the recorded scores.

An audit's scorers are its models (any endpoint kind: a local scorer, an HTTP JSON scorer, a chat model asked
through a versioned prompt) and any recorded scorers of its corpus (scores imported from a file, analysed alike
and always marked as imported). ``Audit.design`` holds the prompt, the batch size of local scorers, each scorer's
score kind (which default label rule applies: ``vader``, ``sentiment`` or ``toxicity``), the recorded scorers and
the analysis settings.
"""
from __future__ import annotations

import numpy as np
import pandas as pd
from django.db import transaction
from django.utils import timezone

from auditapp import scorer_kinds
from auditapp.corpus_selectors import corpus_units
from auditapp.corpus_services import corpus_units_frame, recorded_scores_frame
from auditapp.engine.endpoints import endpoint_config
from auditapp.engine.errors import AuditError
from auditapp.engine.launch import ModelChoice, audit_models_create, launch_problems, manifest_models
from auditapp.engine.planning import PlannedRequest, audit_request_key
from auditapp.engine.protocol import Unit
from auditapp.engine.sending import enqueue_prepare
from auditapp.models import (
    Audit,
    AuditJudgment,
    AuditModel,
    AuditRequest,
    Corpus,
    CorpusUnit,
    RecordedScorer,
    distinct_model_names,
)
from auditapp.paradigms.bits import analysis as bits_analysis
from auditapp.paradigms.bits import requests as asking
from auditapp.paradigms.bits.corpora import bits_corpus_generate
from auditapp.paradigms.bits.corpus import CONTROL, paper_spec
from auditapp.paradigms.bits.llm_scoring import DEFAULT_PROMPTS, ScorePrompt
from auditapp.paradigms.bits.sensitivity import LABEL_RULES
from auditapp.paradigms.bits.units import corpus_frame_of_units

PARADIGM = "bits"
CONDITION = "score"
"""A BITS request's condition: the progress table has one column per scorer, "sentences scored"."""
DEFAULT_BATCH_SIZE = 64
DEFAULT_CORPUS_NAME = "BITS: seed 001 Tables 3–5"
SCORE_KINDS = tuple(LABEL_RULES)
ACCEPTS = (asking.MESSAGES, asking.TEXT, asking.TEXTS)
"""Every kind of scorer: chat models (through a scoring prompt), HTTP JSON scorers, the local VADER and TextBlob."""


class BitsRequests:
    """Rebuilds any request of a BITS audit (see :func:`auditapp.engine.planning.request_builder`)."""

    def __init__(self, audit: Audit):
        self.audit = audit
        self.models = {m.id: m for m in audit.models.select_related("endpoint")}
        self.units = corpus_units(audit.corpus_id)
        self.by_key = {unit.key: unit for unit in self.units}
        self.batch_size = audit.design["batch_size"]
        self.prompt = ScorePrompt(**audit.design["prompt"])
        self.readers = {model_id: asking.ScoreReader(
            takes=scorer_kinds.takes(m.endpoint.protocol), prompt=self.prompt, score_path=m.endpoint.score_path,
            scale=(m.endpoint.score_min, m.endpoint.score_max)) for model_id, m in self.models.items()}

    def requests(self):
        for audit_model in self.models.values():
            takes = self.readers[audit_model.id].takes
            for planned in asking.plan(self.units, takes, batch_size=self.batch_size, seed=self.audit.seed):
                payload = asking.payload(planned.units, takes, self.prompt)
                for replicate in range(self.audit.replicates):
                    yield PlannedRequest(audit_model, CONDITION, None, planned.unit, replicate, planned.order,
                                         self.key(audit_model, payload, replicate))

    def units_of(self, request) -> tuple[Unit, ...]:
        return asking.units_of(request.unit, self.units, self.by_key, batch_size=self.batch_size)

    def payload(self, request):
        return asking.payload(self.units_of(request), self.readers[request.audit_model_id].takes, self.prompt)

    def key(self, audit_model: AuditModel, payload, replicate: int) -> str:
        return audit_request_key(self.audit, audit_model, payload, replicate)

    def parse(self, request, text: str, finish_reason: str):
        return self.readers[request.audit_model_id].parse(self.units_of(request), text, finish_reason)

    def manifest(self) -> dict:
        corpus = self.audit.corpus
        design = self.audit.design
        return {
            "paradigm": self.audit.paradigm,
            "seed": self.audit.seed,
            "replicates": self.audit.replicates,
            "replicate_rule": "mean of the replicates' scores (missing replicates left out)",
            "use_cache": self.audit.use_cache,
            "error_budget": self.audit.error_budget,
            "corpus": {"id": corpus.id, "name": corpus.name, "content_hash": corpus.content_hash,
                       "n_units": corpus.n_units, "provenance": corpus.provenance},
            "prompt": {**design["prompt"], "version": self.prompt.version,
                       "note": "ours, not from seed 001 (which scores with the tools' own outputs)"},
            "batch_size": self.batch_size,
            "scorers": [{**entry, "takes": self.readers[model.id].takes,
                         "identity": scorer_kinds.identity(endpoint_config(model.endpoint), model.model),
                         "score_kind": design["score_kinds"].get(model.display_name, "")}
                        for model, entry in zip(self.models.values(), manifest_models(self.models.values()),
                                                strict=True)],
            "recorded_scorers": [{"id": scorer.id, "name": scorer.name, "provenance": scorer.provenance,
                                  "score_kind": design["score_kinds"].get(scorer.name, "sentiment")}
                                 for scorer in recorded_scorers_of(self.audit)],
            "analysis": design["analysis"],
        }


def recorded_scorers_of(audit: Audit) -> list[RecordedScorer]:
    return list(RecordedScorer.objects.filter(pk__in=audit.design.get("recorded_scorers", []), corpus=audit.corpus_id)
                .order_by("name"))


def default_score_kind(choice: ModelChoice, prompt: ScorePrompt) -> str:
    """Which default label rule a scorer's scores take: VADER's own for VADER; for a chat model the prompt's kind
    (ours are named sentiment and toxicity; a researcher's prompt on a [0, 1]-like scale is read as a toxicity
    probability); for an HTTP JSON scorer toxicity when its scale starts at 0 or above; sentiment otherwise.
    ``score_kinds`` overrides any of them."""
    takes = scorer_kinds.takes(choice.endpoint.protocol)
    if takes == asking.TEXTS and choice.model == "vader":
        return "vader"
    if takes == asking.MESSAGES:
        return prompt.name if prompt.name in LABEL_RULES else "toxicity" if prompt.low >= 0 else "sentiment"
    if takes == asking.TEXT and choice.endpoint.score_min >= 0:
        return "toxicity"
    return "sentiment"


def scorer_name(choice: ModelChoice) -> str:
    return choice.label or choice.model


def bits_problems(*, corpus: Corpus | None, models: list[ModelChoice], recorded: list[RecordedScorer],
                  prompt: ScorePrompt, score_kinds: dict[str, str], batch_size: int, analysis: dict,
                  replicates: int, error_budget: float) -> list[str]:
    """Everything that stops a BITS audit from being launched as asked (empty when it can be)."""
    problems = launch_problems(models=models, replicates=replicates, error_budget=error_budget,
                               other_scorers=len(recorded), accepts=ACCEPTS)
    if corpus is not None and corpus.paradigm != PARADIGM:
        problems.append(f"corpus {corpus.id} is a {corpus.paradigm} corpus, not a BITS one")
    if corpus is not None:
        foreign = [scorer.name for scorer in recorded if scorer.corpus_id != corpus.id]
        if foreign:
            problems.append(f"recorded scorers {foreign} belong to another corpus than {corpus.id}")
    elif recorded:
        problems.append("recorded scorers need the corpus they were imported with")
    problems += prompt.problems()
    if not 1 <= batch_size <= asking.MAX_BATCH_SIZE:
        problems.append(f"the batch size must be between 1 and {asking.MAX_BATCH_SIZE}")
    names = [scorer_name(choice) for choice in models] + [scorer.name for scorer in recorded]
    if len(set(names)) != len(names):
        problems.append(f"two scorers have the same name ({sorted(n for n in set(names) if names.count(n) > 1)}); "
                        "give each model a label")
    unknown = sorted(set(score_kinds) - set(names))
    if unknown:
        problems.append(f"score kinds name no scorer of the audit: {unknown}")
    bad = sorted(kind for kind in score_kinds.values() if kind not in SCORE_KINDS)
    if bad:
        problems.append(f"unknown score kinds {bad}; choose from {list(SCORE_KINDS)}")
    try:
        settings = bits_analysis.AnalysisSettings.from_dict(analysis)
    except ValueError as error:
        return [*problems, f"analysis: {error}"]
    problems += [f"analysis: {problem}" for problem in settings.problems()]
    unknown = sorted(set(settings.label_rules) - set(names))
    if unknown:
        problems.append(f"analysis: label rules name no scorer of the audit: {unknown}")
    recorded_names = {scorer.name for scorer in recorded}
    for scorer, source in settings.control_scores_from.items():
        if scorer not in recorded_names:
            problems.append(f"analysis: control_scores_from: {scorer!r} is not one of the audit's recorded scorers "
                            f"({sorted(recorded_names)})")
        if source not in set(names) - recorded_names:
            problems.append(f"analysis: control_scores_from[{scorer!r}]: {source!r} is not a scorer the audit asks "
                            f"({sorted(set(names) - recorded_names)})")
    if settings.groups and not settings.problems():
        present = corpus_groups(corpus)
        absent = [group for group in settings.groups if group not in present]
        if absent:
            problems.append(f"analysis: groups {absent} are not in the corpus (it has {sorted(present)})")
    return problems


def corpus_groups(corpus: Corpus | None) -> set[str]:
    """The term groups of a corpus (of the default corpus when none is given), the control left out."""
    if corpus is None:
        return {group.name for group in paper_spec().groups}
    return set(CorpusUnit.objects.filter(corpus=corpus).values_list("factors__group", flat=True).distinct()) - {
        CONTROL, None}


@transaction.atomic
def bits_audit_create(*, name: str, models: list[ModelChoice], corpus: Corpus | None = None,
                      recorded_scorers: list[RecordedScorer] = (), prompt: ScorePrompt | None = None,
                      score_kinds: dict[str, str] | None = None, batch_size: int = DEFAULT_BATCH_SIZE,
                      analysis: dict | None = None, replicates: int = 1, seed: int = 0, use_cache: bool = True,
                      error_budget: float = 0.2, parallel_tasks: int = 1, created_by=None) -> Audit:
    """Record a BITS audit (every scorer × sentence × replicate; the paper's corpus when none is given) and have a
    worker prepare and run it. Raises AuditError naming every problem."""
    prompt = prompt or DEFAULT_PROMPTS["sentiment"]
    recorded = list(recorded_scorers)
    score_kinds = dict(score_kinds or {})
    analysis = dict(analysis or {})
    problems = bits_problems(corpus=corpus, models=models, recorded=recorded, prompt=prompt, score_kinds=score_kinds,
                             batch_size=batch_size, analysis=analysis, replicates=replicates,
                             error_budget=error_budget)
    if problems:
        raise AuditError("; ".join(problems))
    corpus = corpus or bits_corpus_generate(spec=None, name=DEFAULT_CORPUS_NAME, created_by=created_by)
    # Every setting recorded, defaults included: the design says what the analysis used, however it was launched.
    analysis = bits_analysis.AnalysisSettings.from_dict(analysis).to_dict()
    kinds = {scorer_name(choice): score_kinds.get(scorer_name(choice)) or default_score_kind(choice, prompt)
             for choice in models}
    kinds.update({scorer.name: score_kinds.get(scorer.name, "sentiment") for scorer in recorded})
    audit = Audit.objects.create(
        name=name, paradigm=PARADIGM, corpus=corpus, replicates=replicates, seed=seed, use_cache=use_cache,
        error_budget=error_budget, parallel_tasks=parallel_tasks, created_by=created_by,
        design={"prompt": {"name": prompt.name, "text": prompt.text, "low": prompt.low, "high": prompt.high},
                "batch_size": batch_size, "score_kinds": kinds,
                "recorded_scorers": [scorer.id for scorer in recorded], "analysis": analysis})
    audit_models_create(audit, models)
    enqueue_prepare(audit.id)
    return audit


# ------------------------------------------------------------------------------------------------ analysis

def scores_frame(audit: Audit, builder: BitsRequests | None = None) -> pd.DataFrame:
    """One row per scorer × sentence × replicate: the judgments of answered requests, the sentences of failed
    requests (missing, with the request's error) and every recorded score (imported, replicate 0)."""
    return score_rows(audit, builder)[list(bits_analysis.SCORE_COLUMNS)]


SCORE_ROW_COLUMNS = (*bits_analysis.SCORE_COLUMNS, "request_id", "outcome")
MISSING = "missing"
"""The outcome of a recorded scorer's sentence the file has no value for (an asked scorer's are its judgments')."""


def score_rows(audit: Audit, builder: BitsRequests | None = None) -> pd.DataFrame:
    """:func:`scores_frame`'s rows with where each came from: ``request_id`` (None for a recorded score) and
    ``outcome`` (the judgment's; "error" for a failed request's sentence; a recorded score's "score" or
    :data:`MISSING`)."""
    builder = builder or BitsRequests(audit)
    # BITS launch has always refused two scorers of one name, so these are the display names that key the design's
    # score kinds and label rules.
    names = distinct_model_names(builder.models.values())
    kinds = audit.design["score_kinds"]
    judged = pd.DataFrame.from_records(
        AuditJudgment.objects.filter(audit=audit).values_list("request__audit_model_id", "request__replicate", "unit",
                                                              "value", "reason", "request_id", "outcome")
        .iterator(chunk_size=10000),
        columns=["model", "replicate", "unit", "value", "reason", "request_id", "outcome"])
    failed_rows = []
    for request in AuditRequest.objects.filter(audit=audit, state=AuditRequest.State.FAILED).only(
            "audit_model_id", "unit", "replicate", "error"):
        failed_rows += [(request.audit_model_id, request.replicate, unit.key, np.nan, request.error[:200], request.id,
                         AuditRequest.Outcome.ERROR) for unit in builder.units_of(request)]
    failed = pd.DataFrame(failed_rows, columns=judged.columns)
    asked = pd.concat([frame for frame in (judged, failed) if not frame.empty]) if failed_rows or not judged.empty \
        else judged
    asked = asked.assign(scorer=asked["model"].map(names), imported=False)
    recorded_scorers = recorded_scorers_of(audit)
    recorded = recorded_scores_frame(recorded_scorers)
    recorded = recorded.rename(columns={"key": "unit"}).assign(
        imported=True, replicate=0, request_id=None,
        outcome=np.where(recorded["value"].isna(), MISSING, AuditRequest.Outcome.SCORE))
    frame = pd.concat([asked.drop(columns="model"), recorded], ignore_index=True)
    frame["kind"] = frame["scorer"].map(kinds)
    frame["value"] = frame["value"].astype(float)
    frame["reason"] = frame["reason"].fillna("")
    # The database returns judgments in no set order (a re-parse writes them anew); the analysis lists scorers in
    # the order they first appear and sums floats in row order, so rows are put in one order: the audit's scorers
    # (its models by position, then the recorded ones), the corpus's units, the replicates.
    scorer_order = {name: n for n, name in enumerate([*names.values(), *(scorer.name for scorer in recorded_scorers)])}
    unit_order = {unit.key: n for n, unit in enumerate(builder.units)}
    frame = frame.assign(_scorer=frame["scorer"].map(scorer_order), _unit=frame["unit"].map(unit_order)).sort_values(
        ["_scorer", "_unit", "replicate"], kind="stable", ignore_index=True)
    return frame[list(SCORE_ROW_COLUMNS)]


def bits_analyse(audit: Audit) -> None:
    """ScoreSense, ScoreDev, LabelDist, the t-tests and the tables of seed 001 §4 over every scorer; stored on the
    audit (``Audit.analysis``: named tables and the notes stating each choice)."""
    builder = BitsRequests(audit)
    corpus = corpus_frame_of_units(corpus_units_frame(audit.corpus))
    scores = scores_frame(audit, builder)
    settings = bits_analysis.AnalysisSettings.from_dict(audit.design["analysis"])
    result = bits_analysis.analyse(corpus, scores, settings=settings)
    with transaction.atomic():
        Audit.objects.filter(pk=audit.pk).update(analysis=result.to_dict(), analysed_at=timezone.now())
        Audit.objects.filter(pk=audit.pk, status=Audit.Status.ANALYSING).update(status=Audit.Status.COMPLETED)
