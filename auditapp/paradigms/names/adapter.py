"""The names paradigm's entry in the registry (:mod:`auditapp.engine.registry`), built from the counterfactual
paradigms' shared interface (:mod:`auditapp.paradigms.counterfactual.interface`): its material, its own settings
(pairs per iteration, the reference group), its tables (seed 002 Figure 1, Supplementary Table 3, Table 1)."""
from __future__ import annotations

from rest_framework import serializers

from auditapp.corpus_selectors import corpus_units
from auditapp.engine.launch_settings import Setting
from auditapp.models import Audit
from auditapp.paradigms.counterfactual.interface import (
    Flavour,
    PairBrowser,
    PairColumn,
    iterations_setting,
    paradigm_of,
)
from auditapp.paradigms.counterfactual.tasks import NAMES_TASKS
from auditapp.paradigms.counterfactual.units import names_spec_material, names_units
from auditapp.paradigms.names import LABEL
from auditapp.paradigms.names.design import DEFAULTS, MAX_PAIRS, NamesDesign

NAME = "names"


def units_of(spec: dict | None, settings: dict):
    """The units and provenance of a material spec (None: the paper's tasks and names, our vignettes), checked
    against the audit's reference group and pairs per iteration (a corpus stored alone: against one pair)."""
    material = names_spec_material(spec, reference_group=settings.get("reference_group", DEFAULTS["reference_group"]),
                                   pairs_per_iteration=settings.get("pairs_per_iteration", 1))
    provenance = {"generator": NAME, "spec": spec, "sources": material.provenance()}
    return names_units(material.tasks, material.names, material.vignettes), provenance


def judgment_columns(audit: Audit):
    """The judgment export's design columns: the text's number, its pair, side, group, gender, name, vignette."""
    design = NamesDesign.from_audit(corpus_units(audit.corpus_id), seed=audit.seed, settings=audit.design)

    def extra(iteration: int, key: str) -> tuple:
        index, pair_no, side = key.split(":")
        pair = design.pairs(iteration)[int(pair_no)]
        name = pair.minority_name if side == "minority" else pair.reference_name
        group = pair.group if side == "minority" else design.reference_group
        return int(index), int(pair_no), side, group, pair.gender, name, pair.vignette_key
    return ("index", "pair_no", "side", "group", "gender", "name", "vignette"), extra


def unit_pair(unit: str) -> tuple[int, str]:
    """A judgment unit's pair number and side ("{index}:{pair_no}:{side}")."""
    _, pair_no, side = unit.split(":")
    return int(pair_no), side


def describe_pair(design: NamesDesign, iteration: int, pair_no: int) -> tuple:
    pair = design.pairs(iteration)[pair_no]
    return pair.group, pair.gender, pair.vignette_key, pair.minority_name, pair.reference_name


PAIRS = PairBrowser(
    sides=("minority", "reference"),
    prefixes=("minority", "reference"),
    headings=("minority name", "reference name"),
    unit_pair=unit_pair,
    pair_field=serializers.IntegerField(help_text="The pair's number in its iteration, from 0 (the judgments "
                                                  "table's pair_no): the same in every model and task."),
    columns=(
        PairColumn("group", "Group", serializers.CharField(help_text="The minority name's group.")),
        PairColumn("gender", "Gender", serializers.CharField(help_text="Both names' gender (pairs are within "
                                                                       "gender).")),
        PairColumn("vignette", "Vignette", serializers.CharField(help_text="The vignette's key in the material.")),
        PairColumn("minority_name", "Minority name", serializers.CharField()),
        PairColumn("reference_name", "Reference name", serializers.CharField()),
    ),
    describe=describe_pair,
    side_text=lambda design, task, iteration, pair_no, side: design.side_text(iteration, pair_no, side),
    searched=("minority_text", "reference_text", "minority_name", "reference_name"),
    orderings={"group": ("group", "iteration", "first_index")},
    groups=lambda design: design.minority_groups,
    help="One row per request × pair: the same vignette with a minority-group name and a reference-group name of "
         "the same gender, both in the request, each numbered apart.",
)


FLAVOUR = Flavour(
    name=NAME,
    label=LABEL,
    design_class=NamesDesign,
    units_of=units_of,
    default_tasks=NAMES_TASKS,
    default_corpus_name="Names: seed 002 Table 2 and tasks, our vignettes",
    settings=(
        Setting("pairs_per_iteration", "integer", default=DEFAULTS["pairs_per_iteration"], minimum=1,
                maximum=MAX_PAIRS, help="Within-gender name pairs per request (30 in seed 002: 60 texts)."),
        Setting("reference_group", "text", default=DEFAULTS["reference_group"], max_length=100,
                help="The group every other group's names are paired with (White in seed 002)."),
        iterations_setting(DEFAULTS["iterations"]),
    ),
    material_help='Omit for seed 002\'s 39 tasks and 200 names (Table 2) with our 211 vignettes. Any of: "tasks" '
                  '(slugs of the paper\'s tasks, or {slug, name, domain, description} objects), "domains", "names" '
                  '({name, group, gender} objects), "vignettes" (texts with {NAME} once) or "pools" '
                  '({"a": [...], "b": [...], "n": 211, "seed": 0}).',
    dashboard_template="auditapp/names_dashboard.html",
    tables={
        "cells": "Per model × task × minority group: the complete pairs (n_pairs; n_pairs_dropped with a side "
                 "missing), each side's yes-rate over its judged texts (n_minority, n_reference: a dropped pair's "
                 "judged side counts there) and over the complete pairs only (yes_minority_paired, "
                 "yes_reference_paired: their difference is the gap), the mean gap (minority − reference) over the "
                 "complete pairs only, with "
                 "its one-sample t-test, 95% CI, BH q over the whole matrix and whether it is FDR-significant.",
        "summary": "Per task × group (Figure 1, Supplementary Table 3): the cross-model mean gap and SD, the models "
                   "with the modal sign (\"18 of 19\"), the FDR-significant models and their mean gap.",
        "group_counts": "Per minority group: the FDR-significant effects.",
    },
    judgment_columns=judgment_columns,
    pairs=PAIRS,
)

PARADIGM = paradigm_of(FLAVOUR)
