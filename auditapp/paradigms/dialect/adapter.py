"""The dialect paradigm's entry in the registry (:mod:`auditapp.engine.registry`), built from the counterfactual
paradigms' shared interface (:mod:`auditapp.paradigms.counterfactual.interface`): its material, its batch size,
its tables (seed 002 Figure 2, Table 1)."""
from __future__ import annotations

from rest_framework import serializers

from auditapp.engine.launch_settings import Setting
from auditapp.models import Audit
from auditapp.paradigms.counterfactual.interface import Flavour, PairBrowser, iterations_setting, paradigm_of
from auditapp.paradigms.counterfactual.tasks import DIALECT_TASKS
from auditapp.paradigms.counterfactual.units import dialect_spec_material, dialect_units
from auditapp.paradigms.dialect import LABEL
from auditapp.paradigms.dialect.design import DEFAULTS, MAX_BATCH_SIZE, DialectDesign

NAME = "dialect"


def units_of(spec: dict | None, settings: dict):
    """The units and provenance of a material spec (None: the paper's 16 tasks, our pairs)."""
    material = dialect_spec_material(spec)
    provenance = {"generator": NAME, "spec": spec, "sources": material.provenance()}
    return dialect_units(material.tasks, material.pairs), provenance


def judgment_columns(audit: Audit):
    """The judgment export's design columns: the text's number, its pair and its dialect."""
    def extra(iteration: int, key: str) -> tuple:
        index, rest = key.split(":", 1)
        pair, dialect = rest.rsplit(":", 1)
        return int(index), pair, dialect
    return ("index", "pair", "dialect"), extra


def unit_pair(unit: str) -> tuple[str, str]:
    """A judgment unit's pair key and dialect ("{index}:{pair_key}:{dialect}"; a key may hold colons)."""
    pair, dialect = unit.split(":", 1)[1].rsplit(":", 1)
    return pair, dialect


PAIRS = PairBrowser(
    sides=("SAE", "AAVE"),
    prefixes=("sae", "aave"),
    headings=("SAE", "AAVE"),
    unit_pair=unit_pair,
    pair_field=serializers.CharField(help_text="The pair's key in the material (the judgments table's pair)."),
    columns=(),
    describe=lambda design, iteration, pair: (),
    side_text=lambda design, task, iteration, pair, side: design.side_text(task, pair, side),
    searched=("sae_text", "aave_text", "pair"),
    orderings={"pair": ("pair", "iteration", "first_index")},
    help="One row per request × text pair its batch drew: a batch draws each text independently (SAE or AAVE, any "
         "pair), so a pair often has one side only (the other: not in this batch), and whether the labels differ "
         "needs both.",
    one_sided=True,
)


FLAVOUR = Flavour(
    name=NAME,
    label=LABEL,
    design_class=DialectDesign,
    units_of=units_of,
    default_tasks=DIALECT_TASKS,
    default_corpus_name="Dialect: seed 002's 16 tasks, our SAE/AAVE pairs",
    settings=(
        Setting("batch_size", "integer", default=DEFAULTS["batch_size"], minimum=1, maximum=MAX_BATCH_SIZE,
                help="Texts per request (10 in seed 002)."),
        iterations_setting(DEFAULTS["iterations"]),
    ),
    material_help='Omit for seed 002\'s 16 tasks with our introduction and message pairs. Any of: "tasks" (slugs '
                  'of the paper\'s tasks, or {slug, name, domain, description, text_set} objects), "pairs" '
                  '({key, text_set, sae, aave} objects; the AAVE may mark its features inline, e.g. [HB]).',
    dashboard_template="auditapp/dialect_dashboard.html",
    tables={
        "cells": "Per model × task: SAE and AAVE yes-rates and counts, the gap (AAVE − SAE) with its approximate "
                 "95% CI, Cohen's h, Welch's and the paired t-test, BH q within the model, FDR-significant.",
        "summary": "Per task (Figure 2): the cross-model mean gap and SD, the models with the modal sign, the "
                   "FDR-significant models.",
    },
    judgment_columns=judgment_columns,
    pairs=PAIRS,
)

PARADIGM = paradigm_of(FLAVOUR)
