"""The material of a counterfactual audit (seed 002) as corpus units, back again, and from a launch or corpus spec.
Pure: no Django.

A names corpus holds three kinds of unit, told apart by the factor ``role`` (the coordinator's design, "Corpus"):

- ``task``: key ``task:<slug>``, text = the description, factors {role, task, domain}, fields {name, text_set,
  source};
- ``name``: key ``name:<group>:<gender>:<name>``, text = the name, factors {role, group, gender}, fields {source};
- ``vignette``: key ``vignette:<key>``, text = the template with ``{NAME}``, factors {role}, fields {source}.

A dialect corpus holds ``task`` units and one ``text`` unit per side of each pair: key ``pair:<key>:<dialect>``,
text = what is sent (the AAVE tags stripped), factors {role, dialect, text_set}, fields {source} and for AAVE
also {annotated, features}, ``pair`` = the pair's key. :func:`names_material` and :func:`dialect_material` invert
:func:`names_units` and :func:`dialect_units` exactly.

:func:`names_spec_material` and :func:`dialect_spec_material` turn a spec (all keys optional) into material: with
no spec, the paper's tasks and names (Experiment 1) or the paper's 16 tasks (Experiment 2), with our descriptions,
our 211 vignettes (drawn from our pools with seed 0) or our pairs. Every problem of every part is collected and
raised together as one :class:`~auditapp.paradigms.counterfactual.problems.MaterialError`. Each material's
``provenance()`` says which parts are the paper's, ours or the researcher's.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

from auditapp.engine.protocol import Unit
from auditapp.paradigms.counterfactual.dialect_texts import (
    DEFAULT_PAIRS,
    features_of,
    parse_pairs,
    strip_features,
)
from auditapp.paradigms.counterfactual.material import DialectPair, PersonName, Task, Vignette
from auditapp.paradigms.counterfactual.names import REFERENCE_GROUP, TABLE_2, parse_names, reference_problems
from auditapp.paradigms.counterfactual.problems import MaterialError, MaterialProblem, raise_if_any
from auditapp.paradigms.counterfactual.tasks import (
    DIALECT_TASKS,
    NAMES_TASKS,
    parse_tasks,
    task_problems,
)
from auditapp.paradigms.counterfactual.vignettes import (
    DEFAULT_VIGNETTE_COUNT,
    DEFAULT_VIGNETTE_SEED,
    POOL_A,
    POOL_B,
    generate_vignettes,
    parse_pool,
    parse_vignettes,
)

NAMES_SPEC_KEYS = ("tasks", "domains", "names", "vignettes", "pools")
DIALECT_SPEC_KEYS = ("tasks", "pairs")
POOL_KEYS = ("a", "b", "n", "seed")
PAIRS_PER_ITERATION = 30


def _task_provenance(tasks: Sequence[Task]) -> dict[str, list[str]]:
    """A task of ours is the paper's task (name, domain) with our description; a researcher's is theirs."""
    return {"tasks": sorted({"researcher" if task.source == "researcher" else "paper" for task in tasks}),
            "task_descriptions": sorted({task.source for task in tasks})}


@dataclass(frozen=True)
class NamesMaterial:
    """The tasks, names and vignettes of a names audit."""

    tasks: tuple[Task, ...]
    names: tuple[PersonName, ...]
    vignettes: tuple[Vignette, ...]

    def provenance(self) -> dict[str, list[str]]:
        """Where each part comes from: "paper", "ours" or "researcher" (a list, as a part may mix them)."""
        return {**_task_provenance(self.tasks), "names": sorted({name.source for name in self.names}),
                "vignettes": sorted({vignette.source for vignette in self.vignettes})}


@dataclass(frozen=True)
class DialectMaterial:
    """The tasks and matched pairs of a dialect audit."""

    tasks: tuple[Task, ...]
    pairs: tuple[DialectPair, ...]

    def provenance(self) -> dict[str, list[str]]:
        """Where each part comes from: "paper", "ours" or "researcher" (a list, as a part may mix them)."""
        return {**_task_provenance(self.tasks), "pairs": sorted({pair.source for pair in self.pairs})}


def task_unit(task: Task) -> Unit:
    return Unit(key=f"task:{task.slug}", text=task.description,
                factors={"role": "task", "task": task.slug, "domain": task.domain},
                fields={"name": task.name, "text_set": task.text_set, "source": task.source})


def _task_of(unit: Unit) -> Task:
    return Task(slug=unit.factors["task"], name=unit.fields["name"], domain=unit.factors["domain"],
                description=unit.text, text_set=unit.fields["text_set"], source=unit.fields["source"])


def names_units(tasks: Sequence[Task], names: Sequence[PersonName], vignettes: Sequence[Vignette]) -> list[Unit]:
    """The units of a names corpus: the tasks, then the names, then the vignettes, each in the order given."""
    return _same_factors([
        *(task_unit(task) for task in tasks),
        *(Unit(key=f"name:{n.group}:{n.gender}:{n.name}", text=n.name,
               factors={"role": "name", "group": n.group, "gender": n.gender}, fields={"source": n.source})
          for n in names),
        *(Unit(key=f"vignette:{v.key}", text=v.template, factors={"role": "vignette"}, fields={"source": v.source})
          for v in vignettes),
    ])


def _same_factors(units: list[Unit]) -> list[Unit]:
    """Every unit with every factor of the corpus (a corpus's units share their factors: a task has no group, a
    name no task), an empty string where a unit has none, in the order they first appear."""
    names = list(dict.fromkeys(name for unit in units for name in unit.factors))
    return [replace(unit, factors={name: unit.factors.get(name, "") for name in names}) for unit in units]


def _unknown_role(unit: Unit, roles: Sequence[str]) -> MaterialProblem:
    return MaterialProblem("corpus", f"unit {unit.key!r} has role {unit.factors.get('role')!r}; expected one of "
                                     f"{list(roles)}")


def names_material(units: Sequence[Unit]) -> NamesMaterial:
    """The material of a names corpus's units (the inverse of :func:`names_units`)."""
    tasks, names, vignettes, problems = [], [], [], []
    for unit in units:
        role = unit.factors.get("role")
        if role == "task":
            tasks.append(_task_of(unit))
        elif role == "name":
            names.append(PersonName(name=unit.text, group=unit.factors["group"], gender=unit.factors["gender"],
                                    source=unit.fields["source"]))
        elif role == "vignette":
            vignettes.append(Vignette(key=unit.key.removeprefix("vignette:"), template=unit.text,
                                      source=unit.fields["source"]))
        else:
            problems.append(_unknown_role(unit, ("task", "name", "vignette")))
    raise_if_any(problems)
    return NamesMaterial(tasks=tuple(tasks), names=tuple(names), vignettes=tuple(vignettes))


def dialect_units(tasks: Sequence[Task], pairs: Sequence[DialectPair]) -> list[Unit]:
    """The units of a dialect corpus: the tasks, then each pair's SAE and AAVE texts, in the order given."""
    units = [task_unit(task) for task in tasks]
    for pair in pairs:
        units.append(Unit(key=f"pair:{pair.key}:SAE", text=pair.sae,
                          factors={"role": "text", "dialect": "SAE", "text_set": pair.text_set},
                          fields={"source": pair.source}, pair=pair.key))
        units.append(Unit(key=f"pair:{pair.key}:AAVE", text=strip_features(pair.aave_annotated),
                          factors={"role": "text", "dialect": "AAVE", "text_set": pair.text_set},
                          fields={"annotated": pair.aave_annotated, "features": list(features_of(pair.aave_annotated)),
                                  "source": pair.source},
                          pair=pair.key))
    return _same_factors(units)


def dialect_material(units: Sequence[Unit]) -> DialectMaterial:
    """The material of a dialect corpus's units (the inverse of :func:`dialect_units`); a pair with only one side
    is a problem."""
    tasks, problems = [], []
    sides: dict[str, dict[str, Unit]] = {}
    for unit in units:
        role = unit.factors.get("role")
        if role == "task":
            tasks.append(_task_of(unit))
        elif role == "text":
            sides.setdefault(unit.pair, {})[unit.factors["dialect"]] = unit
        else:
            problems.append(_unknown_role(unit, ("task", "text")))
    pairs = []
    for key, side in sides.items():
        if set(side) != {"SAE", "AAVE"}:
            problems.append(MaterialProblem("corpus", f"pair {key!r} has only {sorted(side)}"))
            continue
        sae, aave = side["SAE"], side["AAVE"]
        pairs.append(DialectPair(key=key, text_set=sae.factors["text_set"], sae=sae.text,
                                 aave_annotated=aave.fields["annotated"], source=sae.fields["source"]))
    raise_if_any(problems)
    return DialectMaterial(tasks=tuple(tasks), pairs=tuple(pairs))


def _collect(problems: list[MaterialProblem], parse, *args, **kwargs):
    """``parse(*args, **kwargs)``, its problems added to ``problems`` (and None returned) if it has any."""
    try:
        return parse(*args, **kwargs)
    except MaterialError as error:
        problems += error.problems
        return None


def _spec_problems(spec, known: Sequence[str]) -> list[MaterialProblem]:
    if not isinstance(spec, Mapping):
        return [MaterialProblem("spec", f"must be an object with the keys {list(known)}")]
    return [MaterialProblem("spec", f"unknown key; known: {list(known)}", None, str(key))
            for key in spec if key not in known]


def _spec_tasks(spec: Mapping, paper_tasks: Sequence[Task], problems: list[MaterialProblem]) -> list[Task]:
    """The tasks a spec names: its ``tasks`` entries in their order (a slug is the paper's task, an object the
    researcher's), then the paper's tasks of its ``domains`` not already named; the paper's all by default."""
    entries, domains = spec.get("tasks"), spec.get("domains")
    if entries is None and domains is None:
        return list(paper_tasks)
    found: list[MaterialProblem] = []
    by_slug = {task.slug: task for task in paper_tasks}
    tasks: list[Task] = []
    if entries is not None:
        if isinstance(entries, str) or not isinstance(entries, Sequence):
            found.append(MaterialProblem("tasks", "must be a list of task slugs or task objects"))
            entries = []
        for row, entry in enumerate(entries, start=1):
            if isinstance(entry, str):
                if entry in by_slug:
                    tasks.append(by_slug[entry])
                else:
                    found.append(MaterialProblem("tasks", f"unknown task {entry!r}; known: {list(by_slug)}", row,
                                                 "slug"))
            else:
                try:
                    tasks.append(parse_tasks([entry])[0])
                except MaterialError as error:
                    found += [replace(problem, row=row) for problem in error.problems]
    if domains is not None:
        known = list(dict.fromkeys(task.domain for task in paper_tasks))
        if isinstance(domains, str) or not isinstance(domains, Sequence):
            found.append(MaterialProblem("domains", "must be a list of domains"))
            domains = []
        found += [MaterialProblem("domains", f"unknown domain {domain!r}; known: {known}", row)
                  for row, domain in enumerate(domains, start=1) if domain not in known]
        named = {task.slug for task in tasks}
        tasks += [task for task in paper_tasks if task.domain in domains and task.slug not in named]
    if not found:
        found = task_problems(tasks)
    problems += found
    return tasks


def _spec_vignettes(spec: Mapping, problems: list[MaterialProblem],
                    pairs_per_iteration: int) -> list[Vignette]:
    if "vignettes" in spec and "pools" in spec:
        problems.append(MaterialProblem("spec", "give either vignettes or pools, not both", None, "vignettes"))
        return []
    if "vignettes" in spec:
        vignettes = _collect(problems, parse_vignettes, spec["vignettes"]) or []
    else:
        vignettes = _pool_vignettes(spec.get("pools") or {}, problems)
    if vignettes and len(vignettes) < pairs_per_iteration:
        problems.append(MaterialProblem(
            "vignettes", f"{len(vignettes)} vignettes; an iteration draws {pairs_per_iteration} without "
                         "replacement"))
    return vignettes


def _pool_vignettes(pools, problems: list[MaterialProblem]) -> list[Vignette]:
    if not isinstance(pools, Mapping):
        problems.append(MaterialProblem("pools", f"must be an object with the keys {list(POOL_KEYS)}"))
        return []
    found = [MaterialProblem("pools", f"unknown key; known: {list(POOL_KEYS)}", None, str(key))
             for key in pools if key not in POOL_KEYS]
    pool_a = POOL_A if "a" not in pools else _collect(found, parse_pool, pools["a"], part="pools.a")
    pool_b = POOL_B if "b" not in pools else _collect(found, parse_pool, pools["b"], part="pools.b")
    settings = {}
    for name, default, least in (("n", DEFAULT_VIGNETTE_COUNT, 1), ("seed", DEFAULT_VIGNETTE_SEED, 0)):
        value = pools.get(name, default)
        if isinstance(value, bool) or not isinstance(value, int) or value < least:
            found.append(MaterialProblem("pools", f"must be a whole number of at least {least}, not {value!r}",
                                         None, name))
        settings[name] = value
    problems += found
    if found:
        return []
    source = "researcher" if {"a", "b"} & set(pools) else "ours"
    return _collect(problems, generate_vignettes, pool_a, pool_b, settings["n"], settings["seed"],
                    source=source) or []


def names_spec_material(spec: Mapping | None, *, reference_group: str = REFERENCE_GROUP,
                        pairs_per_iteration: int = PAIRS_PER_ITERATION) -> NamesMaterial:
    """The material of a names audit from ``spec`` (None: the paper's 39 tasks and 200 names, our 211 vignettes).

    Keys, all optional: ``tasks`` (slugs of the paper's tasks and/or task objects ``{slug, name, description[,
    domain][, text_set]}``), ``domains`` (the paper's domains whose tasks to add), ``names`` (``{name, group,
    gender}`` objects, or CSV text), ``vignettes`` (templates, or ``{template[, key]}``) or ``pools`` (``{"a":
    [...], "b": [...], "n": 211, "seed": 0}``; a pool left out is ours). The names must pair with
    ``reference_group``; there must be at least ``pairs_per_iteration`` vignettes. Raises
    :class:`~auditapp.paradigms.counterfactual.problems.MaterialError` with every problem."""
    spec = {} if spec is None else spec
    problems = _spec_problems(spec, NAMES_SPEC_KEYS)
    raise_if_any(problems)
    tasks = _spec_tasks(spec, NAMES_TASKS, problems)
    names = TABLE_2 if "names" not in spec else _collect(problems, parse_names, spec["names"])
    if names:
        problems += reference_problems(names, reference_group=reference_group)
    vignettes = _spec_vignettes(spec, problems, pairs_per_iteration)
    raise_if_any(problems)
    return NamesMaterial(tasks=tuple(tasks), names=tuple(names), vignettes=tuple(vignettes))


def dialect_spec_material(spec: Mapping | None) -> DialectMaterial:
    """The material of a dialect audit from ``spec`` (None: the paper's 16 tasks, our 35 pairs).

    Keys, all optional: ``tasks`` (slugs of the paper's 16 and/or task objects with their ``text_set``),
    ``pairs`` (``{key, text_set, sae, aave}`` objects, or CSV text). Every text set a task asks about must have a
    pair. Raises :class:`~auditapp.paradigms.counterfactual.problems.MaterialError` with every problem."""
    spec = {} if spec is None else spec
    problems = _spec_problems(spec, DIALECT_SPEC_KEYS)
    raise_if_any(problems)
    tasks = _spec_tasks(spec, DIALECT_TASKS, problems)
    pairs = DEFAULT_PAIRS if "pairs" not in spec else _collect(problems, parse_pairs, spec["pairs"])
    if pairs:
        have = {pair.text_set for pair in pairs}
        for text_set in dict.fromkeys(task.text_set for task in tasks):
            if text_set not in have:
                asking = [task.slug for task in tasks if task.text_set == text_set]
                problems.append(MaterialProblem("pairs", f"no {text_set} pairs for the tasks {asking}", None,
                                                "text_set"))
    raise_if_any(problems)
    return DialectMaterial(tasks=tuple(tasks), pairs=tuple(pairs))
