"""The affective attribution paradigm's entry in the registry (:mod:`auditapp.engine.registry`), built from the
seed 003 paradigms' shared Django side (:mod:`auditapp.paradigms.implicit_bias.services`): its generation options
(its launch settings: combinations, the form) and its tables (Table 5 with FAR and UAR, Figure 4's bars, the
unparseable replies)."""
from __future__ import annotations

from auditapp.engine.launch_settings import Setting
from auditapp.paradigms.affective_attribution import LABEL
from auditapp.paradigms.implicit_bias.generation import DEFAULT_AAT_COMBINATIONS
from auditapp.paradigms.implicit_bias.services import Task, paradigm_of
from auditapp.paradigms.implicit_bias.templates import AAT_FORMS

TASK = Task(
    name="affective_attribution",
    label=LABEL,
    task="aat",
    default_corpus_name="AAT: seed 003 Tables 1 and 3 and §3.3.2 templates",
    settings=(
        Setting("combinations", "integer", default=DEFAULT_AAT_COMBINATIONS, minimum=1,
                help="Distinct (group identifier, neutral word) combinations (500 in seed 003)."),
        Setting("form", "choice", default="two_turn", choices=tuple((form, form) for form in AAT_FORMS),
                help="two_turn (the paper's, the default: Q1, then Q2 with the model's description in the "
                     "conversation; not with structured output) or single_prompt (ours: both questions at once)."),
    ),
    dashboard_template="auditapp/affective_attribution_dashboard.html",
    tables={
        "table5": "Table 5 (eqs. 2–3): per model, for advantaged (sa) and disadvantaged (sb) groups the replies, "
                  "unparseable, answered, comedy / tragedy / neutral proportions of the answered; N_f, FAR, N_u, UAR.",
        "bars": "Figure 4: per model × social group × answer, the share of the group's answered replies.",
        "reasons": "Per model × reason: the unparseable replies, with their share of the replies.",
    },
)

PARADIGM = paradigm_of(TASK)
