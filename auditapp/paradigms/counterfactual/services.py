"""Counterfactual audits (seed 002), the Django side both paradigms share: launching one over a stored material
corpus, its requests for the engine, its analysis from the judgments, its named tables.

Each paradigm (names, dialect) gives a *design* (:class:`auditapp.paradigms.names.design.NamesDesign`,
:class:`auditapp.paradigms.dialect.design.DialectDesign`): how its material is read from the corpus's units, which
numbered texts one request (a model × a task × an iteration) holds, and how its judgments are analysed. This
module never asks which paradigm it serves; it takes the design's class from the adapter.

``Audit.design`` holds the iterations, the paradigm's own settings (pairs per iteration and reference group, or
batch size), the prompt's text and the analysis settings.
"""
from __future__ import annotations

import hashlib
from collections.abc import Callable
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from functools import lru_cache

import pandas as pd
from django.db import transaction
from django.db.models import Count
from django.utils import timezone

from auditapp import scorer_kinds
from auditapp.corpus_selectors import corpus_units
from auditapp.corpus_services import CorpusError, corpus_store
from auditapp.engine.endpoints import endpoint_config
from auditapp.engine.errors import AuditError
from auditapp.engine.launch import ModelChoice, audit_models_create, launch_problems, manifest_models
from auditapp.engine.planning import PlannedRequest, audit_request_key
from auditapp.engine.protocol import ParsedReply
from auditapp.engine.sending import enqueue_prepare
from auditapp.models import Audit, AuditModel, AuditRequest, Corpus
from auditapp.paradigms.counterfactual import judgments as reading
from auditapp.paradigms.counterfactual.analysis import AnalysisSettings
from auditapp.paradigms.counterfactual.problems import MaterialError
from auditapp.paradigms.counterfactual.prompt import BatchPrompt, template_for
from auditapp.paradigms.counterfactual.replies import (
    ANSWER_FORM_KEYED,
    batch_answer_schema,
    parse_batch,
)
from auditapp.paradigms.counterfactual.replies import judgments as reply_judgments

ITERATION_PREFIX = "iteration:"
MAX_REQUESTS = 2_000_000
"""The most requests one audit plans (the paper's names experiment is 74,100: 19 models × 39 tasks × 100)."""


def iteration_of(unit: str) -> int:
    return int(unit.removeprefix(ITERATION_PREFIX))


def dispatch_order(seed: int, model_id: int, task: str, iteration: int) -> int:
    """A seeded position (smaller goes first): models, tasks and iterations interleaved in the sending, so an
    audit stopped early has a bit of every cell rather than all of the first."""
    digest = hashlib.sha256(f"cf-order:{seed}:{model_id}:{task}:{iteration}".encode()).digest()
    return int.from_bytes(digest[:8], "big") >> 1


class CounterfactualRequests:
    """Rebuilds any request of a counterfactual audit (see :func:`auditapp.engine.planning.request_builder`)."""

    def __init__(self, audit: Audit, design_class):
        self.audit = audit
        self.models = {m.id: m for m in audit.models.select_related("endpoint")}
        self.design = design_class.from_audit(corpus_units(audit.corpus_id), seed=audit.seed,
                                              settings=audit.design)
        # Keyed answers only where the audit recorded that form and constrains replies: an audit recorded before
        # keeps the list form and the prompt it was keyed with.
        self.keyed = audit.structured_output and audit.design.get("answer_form") == ANSWER_FORM_KEYED
        self.prompt = BatchPrompt(template=template_for(audit.design["prompt"]["template"], keyed=self.keyed))
        self.iterations = audit.design["iterations"]
        self._messages = lru_cache(maxsize=256)(self._build_messages)

    def _build_messages(self, task: str, iteration: int):
        texts = self.design.texts(iteration, task)
        return texts, self.prompt.messages(self.design.task(task).description, texts)

    def requests(self):
        for task in self.design.tasks:
            for iteration in range(self.iterations):
                _, messages = self._build_messages(task.slug, iteration)
                for audit_model in self.models.values():
                    yield PlannedRequest(audit_model, task.slug, None, f"{ITERATION_PREFIX}{iteration}", 0,
                                         dispatch_order(self.audit.seed, audit_model.id, task.slug, iteration),
                                         self.key(audit_model, messages, 0))

    def payload(self, request):
        return self._messages(request.condition, iteration_of(request.unit))[1]

    def key(self, audit_model: AuditModel, payload, replicate: int) -> str:
        return audit_request_key(self.audit, audit_model, payload, replicate)

    def answer_schema(self, request, schema: dict) -> dict:
        """The request's keyed answers: one required key per text it sends (the engine's per-request schemas)."""
        if not self.keyed:
            return schema
        texts = self._messages(request.condition, iteration_of(request.unit))[0]
        return batch_answer_schema([planned.index for planned in texts])

    def parse(self, request, text: str, finish_reason: str) -> ParsedReply:
        texts = self._messages(request.condition, iteration_of(request.unit))[0]
        return reply_judgments(parse_batch(text, [planned.index for planned in texts], finish_reason or None), texts)

    def manifest(self) -> dict:
        corpus = self.audit.corpus
        return {
            "paradigm": self.audit.paradigm,
            "seed": self.audit.seed,
            "iterations": self.iterations,
            "use_cache": self.audit.use_cache,
            "error_budget": self.audit.error_budget,
            "corpus": {"id": corpus.id, "name": corpus.name, "content_hash": corpus.content_hash,
                       "n_units": corpus.n_units, "provenance": corpus.provenance},
            "design": self.design.describe(),
            "prompt": self.prompt.manifest(),
            "models": [{**entry, "identity": scorer_kinds.identity(
                endpoint_config(model.endpoint), model.model)}
                for model, entry in zip(self.models.values(), manifest_models(self.models.values()), strict=True)],
            "analysis": self.audit.design.get("analysis", {}),
            "missing_values": "a text whose answer cannot be read is missing with its reason and excluded from "
                              "the statistics that need it; never coded 0 or 1 (seed 002 SI Appendix)",
        }


def counterfactual_problems(*, paradigm: str, corpus: Corpus | None, material: dict | None,
                            models: list[ModelChoice], replicates: int, error_budget: float,
                            n_requests: Callable[[], int]) -> list[str]:
    problems = launch_problems(models=models, replicates=1, error_budget=error_budget, accepts=("messages",))
    if replicates != 1:
        problems.append("a counterfactual audit repeats by iterations (each a new sample of texts), not "
                        "replicates: leave replicates at 1")
    if corpus is not None and corpus.paradigm != paradigm:
        problems.append(f"corpus {corpus.id} is a {corpus.paradigm} corpus, not a {paradigm} one")
    if corpus is not None and material:
        problems.append("give either a stored corpus or the material, not both")
    labels = [choice.label or choice.model for choice in models]
    repeated = sorted({label for label in labels if labels.count(label) > 1})
    if repeated:
        problems.append(f"two models have the same name ({', '.join(repeated)}): give each a label, as the tables "
                        "are per model")
    if not problems:
        total = n_requests()
        if total > MAX_REQUESTS:
            problems.append(f"{total:,} requests planned; at most {MAX_REQUESTS:,} per audit (split the models or "
                            "tasks over several audits)")
    return problems


@dataclass
class Prepared:
    """A launch checked: the units (None for a stored corpus), their provenance, the design, the prompt and every
    problem found (empty when the audit can be recorded)."""

    units: list | None
    provenance: dict | None
    design: object | None
    prompt: BatchPrompt
    problems: list[str]


def counterfactual_prepare(*, paradigm: str, design_class, models: list[ModelChoice], corpus: Corpus | None,
                           material: dict | None, settings: dict, prompt_text: str, seed: int, error_budget: float,
                           replicates: int, units_of: Callable) -> Prepared:
    """Check a launch without writing anything: the material (or the stored corpus), the design over it, the
    prompt, the models and the size."""
    problems: list[str] = []
    units = provenance = design = None
    if corpus is None:
        try:
            units, provenance = units_of(material, settings)
        except MaterialError as error:
            problems += [f"material: {problem}" for problem in error.problems]
        design_units = units
    else:
        design_units = corpus_units(corpus.id) if corpus.paradigm == paradigm else None
    if design_units is not None:
        try:
            design = design_class.from_audit(design_units, seed=seed, settings=settings)
        except MaterialError as error:
            problems += [str(problem) for problem in error.problems]
    prompt = BatchPrompt(template=prompt_text)
    problems += [f"prompt: {problem}" for problem in prompt.problems()]
    problems += counterfactual_problems(
        paradigm=paradigm, corpus=corpus, material=material, models=models, replicates=replicates,
        error_budget=error_budget,
        n_requests=lambda: len(models) * (len(design.tasks) if design else 0) * settings["iterations"])
    return Prepared(units, provenance, design, prompt, problems)


@transaction.atomic
def counterfactual_audit_create(*, paradigm: str, design_class, name: str, models: list[ModelChoice],
                                corpus: Corpus | None, material: dict | None, settings: dict, prompt_text: str,
                                seed: int = 0, use_cache: bool = True, error_budget: float = 0.2,
                                parallel_tasks: int = 1, replicates: int = 1, created_by=None,
                                default_corpus_name: str, units_of: Callable) -> Audit:
    """Record a counterfactual audit (every model × task × iteration) over the corpus (a stored one, or the one
    the material spec makes: the paper's and our defaults when none is given) and have a worker prepare and run
    it. Raises AuditError naming every problem (nothing is stored)."""
    prepared = counterfactual_prepare(paradigm=paradigm, design_class=design_class, models=models, corpus=corpus,
                                      material=material, settings=settings, prompt_text=prompt_text, seed=seed,
                                      error_budget=error_budget, replicates=replicates, units_of=units_of)
    if prepared.problems:
        raise AuditError("; ".join(prepared.problems))
    if corpus is None:
        try:
            corpus = corpus_store(paradigm=paradigm, name=f"{name}: material" if material else default_corpus_name,
                                  units=prepared.units, provenance=prepared.provenance, created_by=created_by)
        except CorpusError as error:
            raise AuditError(f"material: {error}") from None
    tasks = [{"slug": task.slug, "name": task.name} for task in prepared.design.tasks]
    audit = Audit.objects.create(
        name=name, paradigm=paradigm, corpus=corpus, replicates=1, seed=seed, use_cache=use_cache,
        error_budget=error_budget, parallel_tasks=parallel_tasks, created_by=created_by,
        # Every analysis setting recorded, defaults included: the design says what the analysis used, however it
        # was launched.
        design={**settings, "analysis": asdict(AnalysisSettings(**settings.get("analysis") or {})),
                "tasks": tasks, "answer_form": ANSWER_FORM_KEYED,
                "prompt": {"template": prepared.prompt.template, "version": prepared.prompt.version}})
    audit_models_create(audit, models)
    enqueue_prepare(audit.id)
    return audit


def requests_frame(audit_id: int) -> pd.DataFrame:
    """Per model × task × state: how many requests (the completion's targets)."""
    rows = (AuditRequest.objects.filter(audit_id=audit_id).order_by().values("audit_model_id", "condition", "state")
            .annotate(n=Count("id")).values_list("audit_model_id", "condition", "state", "n"))
    return pd.DataFrame(list(rows), columns=["model_id", "task", "state", "n"])


@contextmanager
def _numpy_in_small_pages():
    """NumPy's large arrays in ordinary pages while the analysis runs, as they were before.

    NumPy asks Linux for huge pages (``madvise(MADV_HUGEPAGE)``) for every large array, and with the kernels'
    default ``defrag`` setting (``madvise``) a fault on such an array waits while the kernel compacts memory to
    find 2 MB free: the analysis of 4,000,000 judgments, which makes many fresh arrays of 30 MB, spent 1.0 s of
    system time so (0.3 s in ordinary pages) and 0.4–0.8 s more in all. NumPy's switch is process-wide; it is set
    back afterwards. A NumPy without it leaves the pages as they are."""
    try:
        from numpy._core.multiarray import _set_madvise_hugepage
    except ImportError:
        yield
        return
    previous = _set_madvise_hugepage(False)
    try:
        yield
    finally:
        _set_madvise_hugepage(previous)


def counterfactual_analyse(audit: Audit, design_class) -> None:
    """The paradigm's analysis over every judgment, stored on the audit (``Audit.analysis``: named tables and the
    notes stating each choice)."""
    design = design_class.from_audit(corpus_units(audit.corpus_id), seed=audit.seed, settings=audit.design)
    with _numpy_in_small_pages():
        judged = reading.judgments_frame(audit.id)
        failed = reading.failed_requests_frame(audit.id)
        requests = requests_frame(audit.id)
        result = design.analyse(judged, failed, requests, audit.model_names())
    with transaction.atomic():
        Audit.objects.filter(pk=audit.pk).update(analysis=result, analysed_at=timezone.now())
        Audit.objects.filter(pk=audit.pk, status=Audit.Status.ANALYSING).update(status=Audit.Status.COMPLETED)
