"""The registry of audit paradigms: the one place that names them (:data:`PARADIGMS`).

Each paradigm is a package ``auditapp/paradigms/<name>/`` holding its pure modules (no Django: request building,
parsing, analysis over DataFrames, its data files) and one Django module, ``adapter.py``, whose ``PARADIGM`` is a
:class:`Paradigm`: everything the engine, the admin, the API, the progress, the dashboard and the exports need
from it. They call :func:`get` with ``audit.paradigm`` and never name a paradigm themselves.

This module imports no adapter until asked (the models import it for the paradigm's choices, and the adapters
import the models).

Adding a paradigm, a checklist:

1. ``auditapp/paradigms/<name>/__init__.py``: a docstring citing the paper's sections, and ``LABEL``, the name
   users see ("Perturbation sensitivity (BITS, seed 001)").
2. Pure modules beside it (units or corpus generation, request building, reply parsing, analysis): each
   statistic tested against scipy/statsmodels or a hand-worked example, and listed in the import contract
   (``[tool.importlinter]`` in pyproject.toml) as importing no Django.
3. ``auditapp/paradigms/<name>/adapter.py``: ``PARADIGM = Paradigm(...)`` with its settings (each declared once,
   :class:`auditapp.engine.launch_settings.Setting`), its launch serializer (subclassing
   ``auditapp.api.launch.settings_serializer(settings)``) and ``launch``, its admin launch form (subclassing
   ``auditapp.launch_forms.launch_form_base(settings, accepts=...)``, with the ``accepts`` it gives the registry
   entry and its launch's ``launch_problems``), analysis, dashboard template and data, and named export
   tables; ``answer_schema``, the JSON schema of its chat models' answer (for audits with structured output), and a
   reply parser that reads a reply valid against it (test it: a constrained reply parses to the same judgment);
   ``headline``, its paper's first table for the audit index and comparisons.
4. The dashboard template ``templates/auditapp/<name>_dashboard.html`` (extending
   ``auditapp/audit_dashboard_base.html``) and its script under ``static/auditapp/``.
5. Add the name to :data:`PARADIGMS`; tests under ``tests/auditapp/`` (pure, API, dashboard page, an engine run
   against the test servers with an effect planted and recovered).
6. A paradigm that asks in turns (a question that quotes the model's own earlier answer) gives its request builder
   ``multi_turn`` true (for the audits that ask in turns) and a
   ``follow_up(request, previous_payload, previous_reply_text)`` method, and plans each later turn as a
   ``PlannedRequest`` with ``turn=n`` and a blank key, sharing model, condition, item or unit and replicate with
   turn 0; ``follow_up`` raises ``NoFollowUp(reason)`` when a reply gives nothing to continue from, and a turn
   that only prepares the next one parses to no judgments. The engine keys each later turn once the one before it
   is recorded, closes it with the reason when that one failed, and shows the conversation in the drill-down: see
   "Multi-turn requests" in :mod:`auditapp.engine.protocol`, ``tests/auditapp/two_turn_builder.py`` for a small
   example and the affective attribution paradigm (``implicit_bias/services.py``) for a real one. Test it through
   the engine against the test LLM server (a persona that answers turn by turn), and with a worker killed between
   turns (``tests/integration/test_conversation_worker.py``, which does it to a two-turn AAT audit).
"""
from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import cache
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pandas as pd

    from auditapp.engine.headlines import Headline
    from auditapp.engine.launch_settings import Setting

PARADIGMS = ("classification", "self_report", "bits", "names", "dialect", "word_association", "affective_attribution")
DEFAULT = PARADIGMS[0]
"""The paradigm of a launch that names none (the API's and the admin's default)."""
CHAT = ("messages",)
"""What most paradigms accept: chat LLMs only (:attr:`Paradigm.accepts`)."""


@dataclass(frozen=True)
class Table:
    """A named export table of an audit: ``rows(audit)`` returns a ``common.export_rows.Export``."""

    name: str
    description: str
    rows: Callable[[Any], Any]


@dataclass(frozen=True)
class Paradigm:
    """What a paradigm gives the shared parts of the app (all callables take an ``Audit``).

    - ``builder(audit)``: its request builder (:class:`auditapp.engine.protocol.RequestBuilder`), for the engine;
    - ``cells(audit)``: the (code, name) of each column of the progress table (conditions, forms, scorers' tasks);
    - ``analyse(audit)``: compute and store the results (``Audit.analysis`` and the paradigm's own rows);
    - ``settings``: its own launch settings, each declared once
      (:class:`auditapp.engine.launch_settings.Setting`): its launch serializer and launch form derive their fields
      for them from these, so the API and the admin take them alike;
    - ``launch_serializer``: the DRF serializer of ``POST /api/audits/`` for it (its ``paradigm`` field included)
      and ``launch(validated_data, models, created_by)`` which records the audit (raising AuditError with every
      problem);
    - ``launch_form``: the admin's launch form (a ModelForm of Audit; the admin shows its fields in
      ``auditapp.launch_forms.launch_field_order``) and ``launch_from_form(form, user)``;
    - ``accepts``: the payloads its request builder makes, as scorer kinds take them
      (``auditapp.scorer_kinds.takes``: ``messages`` for chat LLMs, ``text`` for HTTP JSON scorers, ``texts`` for
      the local VADER and TextBlob): its launch form offers only the models of endpoints that take one of them
      (the form's ``accepts``, which the conformance suite checks is this), and its launch refuses any other;
    - ``dashboard_template`` and ``dashboard_data(audit)``; ``dashboard_query``: the query parameters of the
      dashboard's URL passed on to ``dashboard_data`` as keyword arguments (e.g. which outcomes the metrics use);
    - ``tables``: named exports under ``/api/audits/{id}/tables/{name}/``; ``api_urls()`` its own routes;
    - ``register_admin(site)``: the admin of its own records (a corpus, item variants);
    - ``after_migrate()``: what it ships into the database after every migrate (default prompt templates);
    - ``corpus_generate(spec=, name=, created_by=)``: its corpus from its paper's tables (spec None) or a
      researcher's spec, for ``POST /api/corpora/``; None when it generates none;
    - ``answer_schema(audit)``: the JSON schema a chat model's reply must be valid against when the audit asks for
      structured output (``Audit.structured_output``), or None when the paradigm has none (the launch is then
      refused with structured output). Its parser must read such a reply;
    - ``recover(stalled_after=)``: send again the paradigm's own background work that is stuck (its task lost, its
      worker dead), for the workers' periodic recovery (``tasks.recovery``); returns the ids sent;
    - ``study_alternatives_settled(study_id)``: a study's alternative ground truths were stored or failed
      (``annotation.study_alternatives``, in their own task after the study analysis): its audits that waited for
      them can now use them or say why not;
    - ``explained_replies(audit)``: the audit's parsed replies that carry a label and an explanation, as a DataFrame
      with one row per request (replicates are each their own row): ``request_id``, ``model`` (AuditModel id),
      ``model_name``, ``condition``, ``target``, ``preceding``, ``following``, ``label``, ``explanation``,
      ``reference_label`` (the audit's weighted ground truth, None when the unit has none) and ``majority_label``;
      what an error-analysis round (the ``coding`` app) samples. None when the paradigm has no such replies: a
      round is then refused;
    - ``headline(audit)``: its paper's first table as :class:`auditapp.engine.headlines.Headline` (model × cell,
      value, CI, n), read from the stored analysis, for the audit index, the comparison of audits and a model's
      card; None before the audit is analysed.
    """

    name: str
    label: str
    builder: Callable[[Any], Any]
    cells: Callable[[Any], list[tuple[str, str]]]
    analyse: Callable[[Any], None]
    settings: tuple[Setting, ...]
    launch_serializer: Any
    launch: Callable[..., Any]
    launch_form: Any
    launch_from_form: Callable[[Any, Any], Any]
    dashboard_template: str
    dashboard_data: Callable[..., dict]
    tables: Mapping[str, Table] = field(default_factory=dict)
    accepts: tuple[str, ...] = CHAT
    api_urls: Callable[[], list] = list
    register_admin: Callable[[Any], None] = lambda site: None
    after_migrate: Callable[[], None] = lambda: None
    corpus_generate: Callable[..., Any] | None = None
    answer_schema: Callable[[Any], dict | None] = lambda audit: None
    dashboard_query: tuple[str, ...] = ()
    recover: Callable[..., list[int]] = lambda stalled_after: []
    study_alternatives_settled: Callable[[int], None] = lambda study_id: None
    explained_replies: Callable[[Any], pd.DataFrame] | None = None
    headline: Callable[[Any], Headline | None] = lambda audit: None


class UnknownParadigm(KeyError):
    """No paradigm of that name is registered."""


def _package_label(name: str) -> str:
    return importlib.import_module(f"auditapp.paradigms.{name}").LABEL


def choices() -> list[tuple[str, str]]:
    """(name, label) of every paradigm, for the model field and the forms (no adapter is imported)."""
    return [(name, _package_label(name)) for name in PARADIGMS]


@cache
def get(name: str) -> Paradigm:
    """The paradigm of that name (its adapter is imported now)."""
    if name not in PARADIGMS:
        raise UnknownParadigm(f"no paradigm {name!r}; registered: {', '.join(PARADIGMS)}")
    paradigm = importlib.import_module(f"auditapp.paradigms.{name}.adapter").PARADIGM
    if paradigm.name != name:
        raise RuntimeError(f"auditapp.paradigms.{name}.adapter declares paradigm {paradigm.name!r}")
    return paradigm


def every() -> list[Paradigm]:
    return [get(name) for name in PARADIGMS]
