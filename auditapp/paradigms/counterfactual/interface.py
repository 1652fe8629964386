"""What the two counterfactual paradigms' adapters share (seed 002): the launch body and admin form, the dashboard's
data, the named tables and the error browser of judged pairs, each built from a paradigm's :class:`Flavour` (its
name, design class, material, its own settings, what its pairs show). The adapters (:mod:`auditapp.paradigms.names.adapter`, :mod:`auditapp.paradigms.dialect.adapter`)
declare their flavour, its settings ending with :func:`iterations_setting`, and call :func:`paradigm_of`.
"""
from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping
from dataclasses import dataclass

from django import forms
from rest_framework import serializers

from auditapp.api.launch import ModelChoiceSerializer, model_choices, settings_serializer
from auditapp.corpus_selectors import corpus_units
from auditapp.engine import registry
from auditapp.engine.errors import AuditError
from auditapp.engine.launch_settings import Setting
from auditapp.launch_forms import launch_form_base
from auditapp.models import Audit, AuditJudgment, Corpus, CorpusUnit
from auditapp.paradigms.counterfactual import services
from auditapp.paradigms.counterfactual.analysis import analysis_problems
from auditapp.paradigms.counterfactual.material import Task
from auditapp.paradigms.counterfactual.prompt import DEFAULT_TEMPLATE
from auditapp.paradigms.counterfactual.replies import ANSWER_FORM_KEYED, ANSWER_SCHEMA, KEYED_ANSWER_SCHEMA
from common.api.exports import stored_analysis_table
from common.export_rows import Export

MAX_ITERATIONS = 10_000
MAX_ONLY_TASKS = 500
ONLY_TASKS_HELP = ("Ask only these tasks of the material (their slugs; leave empty for every task): the subset is "
                   "recorded in the audit's design and manifest, and only its requests are planned and sent.")
COMPLETION_TABLES = {
    "completion": "Per model (Table 1): texts asked, labelled, missing, the completion rate.",
    "completion_tasks": "Per model × task: texts asked, labelled, missing, the completion rate.",
    "missing": "Per model × kind of reason: the texts without a label.",
    "missing_tasks": "Per model × task × reason, as recorded: the texts without a label.",
}
"""The tables both paradigms store beside their own (:func:`auditapp.paradigms.counterfactual.analysis.completion_tables`)."""


@dataclass(frozen=True)
class PairColumn:
    """A design column of a judged pair (after ``pair``): its key in the rows, its heading on the page, its API
    field."""

    key: str
    heading: str
    field: serializers.Field


@dataclass(frozen=True)
class PairBrowser:
    """What a flavour's error browser shows of a pair (:mod:`auditapp.paradigms.counterfactual.pairs`).

    ``sides``: the side values of its judgment units; ``prefixes``: the row fields' prefixes for them and
    ``headings`` the page's names for them; ``unit_pair(unit)`` → (pair, side); ``pair_field``: the API field of
    ``pair``; ``columns`` and ``describe(design, iteration, pair)`` → their values; ``side_text(design, task,
    iteration, pair, side)``: a side's text where the batch did not draw it; ``searched``: the row fields a search reads;
    ``orderings``: its sorts besides the iteration's (name → row fields); ``groups(design)``: the values of its
    ``group`` column (None: the rows have no group); ``help``: what the page says a row is; ``one_sided``: a
    request may hold a side of a pair once, twice or not at all (its batch draws each text on its own)."""

    sides: tuple[str, str]
    prefixes: tuple[str, str]
    headings: tuple[str, str]
    unit_pair: Callable[[str], tuple[Hashable, str]]
    pair_field: serializers.Field
    columns: tuple[PairColumn, ...]
    describe: Callable[..., tuple]
    side_text: Callable[..., str]
    searched: tuple[str, ...]
    orderings: Mapping[str, tuple[str, ...]]
    help: str
    groups: Callable[..., list[str]] | None = None
    one_sided: bool = False

    @property
    def column_keys(self) -> tuple[str, ...]:
        return tuple(column.key for column in self.columns)


@dataclass(frozen=True)
class Flavour:
    """One counterfactual paradigm: ``design_class`` (from_audit, texts, analyse, …), ``units_of(spec, settings)``
    (the material's units and provenance; MaterialError), the tasks of its default material, its settings (stored in the audit's design, the design
    class reads them), its tables' descriptions, the judgment export's extra columns (``judgment_columns(audit)``
    → columns, a row function) and what its error browser shows of a pair (``pairs``)."""

    name: str
    label: str
    design_class: type
    units_of: Callable
    default_corpus_name: str
    default_tasks: tuple[Task, ...]
    settings: tuple[Setting, ...]
    material_help: str
    dashboard_template: str
    tables: dict[str, str]
    judgment_columns: Callable
    pairs: PairBrowser


FLAVOURS: dict[str, Flavour] = {}
"""Every counterfactual flavour by paradigm name, as :func:`paradigm_of` registered it: the judged pairs' view
serves them all under one route."""


def iterations_setting(default: int) -> Setting:
    """The setting both flavours take, each with the default of its design."""
    return Setting("iterations", "integer", default=default, minimum=1, maximum=MAX_ITERATIONS,
                   help="Requests per model × task, each a new sample of texts.")


def launch_serializer(flavour: Flavour) -> type:
    """The body of ``POST /api/audits/`` for this paradigm."""

    attributes = {
        "__doc__": f"The body of POST /api/audits/ for a {flavour.label} audit.",
        "paradigm": serializers.ChoiceField(choices=registry.choices()),
        "models": ModelChoiceSerializer(many=True, help_text="Chat models (OpenAI-compatible or Ollama)."),
        "corpus": serializers.PrimaryKeyRelatedField(
            queryset=Corpus.objects.all(), required=False, allow_null=True, default=None,
            help_text="A stored material corpus (GET /api/corpora/); omit to use `material`."),
        "material": serializers.DictField(required=False, allow_null=True, default=None,
                                          help_text=flavour.material_help),
        "prompt": serializers.CharField(required=False, max_length=20000, default=DEFAULT_TEMPLATE,
                                        help_text="The prompt template, with {description} and {texts} once "
                                                  "each (default: seed 002's instruction and our JSON Lines one; with "
                                                  "structured_output, our instruction naming the JSON object the "
                                                  "server enforces)."),
        "analysis": serializers.DictField(default=dict, help_text="alpha (0.05), primary (paired or welch)."),
        "only_tasks": serializers.ListField(child=serializers.CharField(max_length=40), default=list,
                                            max_length=MAX_ONLY_TASKS, help_text=ONLY_TASKS_HELP),
    }
    return type(f"{flavour.name.title()}LaunchSerializer", (settings_serializer(flavour.settings),), attributes)


def settings_from(flavour: Flavour, values: dict) -> dict:
    return {**{setting.name: values[setting.name] for setting in flavour.settings},
            "only_tasks": list(dict.fromkeys(values.get("only_tasks") or ())),
            "analysis": dict(values.get("analysis") or {})}


def task_choices(flavour: Flavour, corpora) -> list[tuple[str, list[tuple[str, str]]]]:
    """The tasks a launch form offers, grouped by domain: the default material's and those of the stored
    ``corpora`` (a queryset), each slug once."""
    tasks = {task.slug: (task.domain, task.name) for task in flavour.default_tasks}
    stored = (CorpusUnit.objects.filter(corpus__in=corpora, factors__role="task").order_by("corpus_id", "position")
              .values_list("factors", "fields"))
    for factors, fields in stored:
        tasks.setdefault(factors.get("task", ""), (factors.get("domain", ""), (fields or {}).get("name", "")))
    by_domain: dict[str, list[tuple[str, str]]] = {}
    for slug, (domain, name) in tasks.items():
        by_domain.setdefault(domain, []).append((slug, name if name == slug.replace("_", " ") else f"{name} ({slug})"))
    return list(by_domain.items())


def _arguments(flavour: Flavour, values: dict, models) -> dict:
    return {"paradigm": flavour.name, "design_class": flavour.design_class, "models": models,
            "corpus": values.get("corpus"), "material": values.get("material"),
            "settings": settings_from(flavour, values), "prompt_text": values.get("prompt") or DEFAULT_TEMPLATE,
            "seed": values.get("seed", 0), "error_budget": values.get("error_budget", 0.2),
            "replicates": values.get("replicates", 1), "units_of": flavour.units_of}


def problems_of(flavour: Flavour, *, values: dict, models) -> list[str]:
    """Every problem of a launch, nothing written."""
    arguments = _arguments(flavour, values, models)
    problems = analysis_problems(arguments["settings"]["analysis"])
    return problems or services.counterfactual_prepare(**arguments).problems


def create(flavour: Flavour, *, values: dict, models, created_by) -> Audit:
    problems = analysis_problems(settings_from(flavour, values)["analysis"])
    if problems:
        raise AuditError("; ".join(problems))
    return services.counterfactual_audit_create(
        **_arguments(flavour, values, models), name=values["name"], use_cache=values.get("use_cache", True),
        parallel_tasks=values.get("parallel_tasks", 1), created_by=created_by,
        default_corpus_name=flavour.default_corpus_name)


def launch_function(flavour: Flavour) -> Callable:
    def launch(values: dict, *, created_by=None) -> Audit:
        return create(flavour, values=values, models=model_choices(values["models"]), created_by=created_by)
    return launch


def launch_form(flavour: Flavour) -> type:
    """The admin's launch form: models, a stored corpus (or the default material), the settings, the FDR level."""

    class CounterfactualLaunchForm(launch_form_base(flavour.settings)):
        corpus = forms.ModelChoiceField(queryset=Corpus.objects.filter(paradigm=flavour.name), required=False,
                                        empty_label=f"the default material ({flavour.default_corpus_name})")
        only_tasks = forms.MultipleChoiceField(required=False, widget=forms.CheckboxSelectMultiple,
                                               label="Only these tasks", help_text=ONLY_TASKS_HELP)
        alpha = forms.FloatField(initial=0.05, min_value=0.0001, max_value=0.5,
                                 help_text="Benjamini–Hochberg FDR level.")

        class Meta:
            model = Audit
            fields = ("name", "seed", "use_cache", "error_budget", "parallel_tasks")

        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            # Evaluated when the field is shown or checked, after the admin has narrowed the corpora to the user's.
            self.fields["only_tasks"].choices = lambda: task_choices(flavour, self.fields["corpus"].queryset)

        def values(self) -> dict:
            data = self.cleaned_data
            return {"name": data["name"], "corpus": data["corpus"], "material": None,
                    "analysis": {"alpha": data["alpha"]}, "only_tasks": data["only_tasks"], **self.setting_values(),
                    "seed": data["seed"], "use_cache": data["use_cache"], "error_budget": data["error_budget"],
                    "parallel_tasks": data["parallel_tasks"]}

        def clean(self):
            data = super().clean()
            if not self.errors:
                for problem in problems_of(flavour, values=self.values(), models=self.model_choices()):
                    self.add_error(None, problem)
            return data

    return CounterfactualLaunchForm


def launch_from_form_function(flavour: Flavour) -> Callable:
    def launch_from_form(form, user) -> Audit:
        return create(flavour, values=form.values(), models=form.model_choices(), created_by=user)
    return launch_from_form


def cells(audit: Audit) -> list[tuple[str, str]]:
    """One progress column per task."""
    return [(task["slug"], task["name"]) for task in audit.design.get("tasks", [])]


PAIRS_QUERY = ("pairs_model", "pairs_task", "pairs_group")
"""The dashboard URL's query that presets its error browser (a results cell links there)."""


def dashboard_data_function(flavour: Flavour) -> Callable:
    def dashboard_data(audit: Audit, **pairs_query: str) -> dict:
        corpus = audit.corpus
        return {
            "audit": {"id": audit.id, "name": audit.name, "paradigm": audit.paradigm, "status": audit.status,
                      "status_label": audit.get_status_display(), "status_reason": audit.status_reason,
                      "n_requests": audit.n_requests, "analysed": bool(audit.analysis)},
            "models": audit.models_listing(),
            "conditions": [{"code": code, "name": name} for code, name in cells(audit)],
            "corpus": {"id": corpus.id, "name": corpus.name, "n_units": corpus.n_units,
                       "content_hash": corpus.content_hash},
            # The launch's own settings (pairs per request, reference group, batch size) until the preparation
            # writes the manifest's description of the design.
            "design": {**{setting.name: audit.design.get(setting.name) for setting in flavour.settings},
                       "seed": audit.seed, **(audit.manifest or {}).get("design", {})},
            "analysis": audit.analysis or None,
            "tables": [*flavour.tables, *COMPLETION_TABLES, "judgments"],
            "pairs": pair_browser_data(flavour, audit, **pairs_query),
        }
    return dashboard_data


def pair_browser_data(flavour: Flavour, audit: Audit, *, pairs_model: str = "", pairs_task: str = "",
                      pairs_group: str = "") -> dict:
    """What the dashboard's error browser draws for this flavour: the sides and design columns with their
    headings, its groups (None without), its sorts besides the iteration's, what a row is, and the model, task and
    group it starts with: those of the dashboard's query where the audit has them, else the first model and task
    and every group."""
    browser = flavour.pairs
    groups = None
    if browser.groups is not None:
        groups = browser.groups(flavour.design_class.from_audit(corpus_units(audit.corpus_id), seed=audit.seed,
                                                                settings=audit.design))
    model_ids = [model.id for model in sorted(audit.models.all(), key=lambda model: (model.position, model.id))]
    tasks = [slug for slug, _ in cells(audit)]
    model = next((model_id for model_id in model_ids if str(model_id) == pairs_model), model_ids[0] if model_ids
                 else None)
    return {"sides": [{"prefix": prefix, "heading": heading}
                      for prefix, heading in zip(browser.prefixes, browser.headings, strict=True)],
            "columns": [{"key": column.key, "heading": column.heading} for column in browser.columns],
            "groups": groups, "orderings": list(browser.orderings), "help": browser.help,
            "one_sided": browser.one_sided, "model": model,
            "task": pairs_task if pairs_task in tasks else (tasks[0] if tasks else None),
            "group": pairs_group if groups and pairs_group in groups else ""}


JUDGMENT_COLUMNS = ("request", "model", "task", "iteration", "unit", "label", "outcome", "reason")


def judgments_table(flavour: Flavour) -> Callable:
    """One row per judgment, in request order: the request, model, task, iteration, the judgment's unit key, the
    label (empty when missing), outcome and reason, and the paradigm's columns rebuilt from the design (the
    text's number, pair, group, name, dialect…)."""
    def rows(audit: Audit) -> Export:
        names = audit.model_names()
        extra_columns, extra = flavour.judgment_columns(audit)
        queryset = (AuditJudgment.objects.filter(audit=audit).order_by("request_id", "id")
                    .values_list("request_id", "request__audit_model_id", "request__condition", "request__unit",
                                 "unit", "label", "outcome", "reason"))

        def transform(row: tuple) -> tuple:
            request_id, model_id, task, unit, key, label, outcome, reason = row
            iteration = services.iteration_of(unit)
            return (request_id, names.get(model_id), task, iteration, key, label, outcome, reason,
                    *extra(iteration, key))
        return Export([*JUDGMENT_COLUMNS, *extra_columns], queryset, transform)
    return rows


def tables_of(flavour: Flavour) -> dict[str, registry.Table]:
    return {
        **{name: registry.Table(name, description, stored_analysis_table(name))
           for name, description in {**flavour.tables, **COMPLETION_TABLES}.items()},
        "judgments": registry.Table("judgments", "Every judgment: one row per numbered text of every request, "
                                                 "its label or why it is missing, with the text's design "
                                                 "columns.", judgments_table(flavour)),
    }


def api_urls() -> list:
    """The routes every counterfactual paradigm shares (the same list for each: routed once)."""
    from auditapp.paradigms.counterfactual.api import ROUTES

    return ROUTES


def paradigm_of(flavour: Flavour) -> registry.Paradigm:
    from auditapp.paradigms.counterfactual.corpora import corpus_generate_function

    builder_class = flavour.design_class
    FLAVOURS[flavour.name] = flavour

    return registry.Paradigm(
        name=flavour.name,
        label=flavour.label,
        builder=lambda audit: services.CounterfactualRequests(audit, builder_class),
        cells=cells,
        analyse=lambda audit: services.counterfactual_analyse(audit, builder_class),
        settings=flavour.settings,
        launch_serializer=launch_serializer(flavour),
        launch=launch_function(flavour),
        launch_form=launch_form(flavour),
        launch_from_form=launch_from_form_function(flavour),
        dashboard_template=flavour.dashboard_template,
        dashboard_data=dashboard_data_function(flavour),
        dashboard_query=PAIRS_QUERY,
        tables=tables_of(flavour),
        corpus_generate=corpus_generate_function(flavour),
        answer_schema=answer_schema,
        headline=lambda audit: builder_class.headline(audit.analysis or {}),
        api_urls=api_urls,
    )


def answer_schema(audit: Audit) -> dict:
    """The keyed form for audits that recorded it (each request narrows it to its texts), else the list form."""
    return KEYED_ANSWER_SCHEMA if audit.design.get("answer_form") == ANSWER_FORM_KEYED else ANSWER_SCHEMA


