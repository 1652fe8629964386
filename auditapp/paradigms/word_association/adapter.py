"""The word association paradigm's entry in the registry (:mod:`auditapp.engine.registry`), built from the
seed 003 paradigms' shared Django side (:mod:`auditapp.paradigms.implicit_bias.services`): its generation options
(its launch settings) and its tables (Table 4, Figure 3's radar, the invalid replies)."""
from __future__ import annotations

from auditapp.engine.launch_settings import Setting
from auditapp.paradigms.implicit_bias.generation import DEFAULT_SAMPLES_PER_COMBINATION, DIMENSION_DRAWS, WORD_ORDERS
from auditapp.paradigms.implicit_bias.services import Task, paradigm_of
from auditapp.paradigms.word_association import LABEL

MAX_SAMPLES_PER_COMBINATION = 1000

TASK = Task(
    name="word_association",
    label=LABEL,
    task="wabt",
    default_corpus_name="WABT: seed 003 Tables 1–2 and §3.3.2 templates",
    settings=(
        Setting("samples_per_combination", "integer", default=DEFAULT_SAMPLES_PER_COMBINATION, minimum=1,
                maximum=MAX_SAMPLES_PER_COMBINATION, help="Samples per S_a × S_b combination (50 in seed 003)."),
        Setting("word_order", "choice", default="shuffled", choices=tuple((order, order) for order in WORD_ORDERS),
                help="shuffled (ours, the default) or paper: the 5 X_a words, then the 5 X_b words."),
        Setting("dimension_draw", "choice", default="every", choices=tuple((draw, draw) for draw in DIMENSION_DRAWS),
                help="every (each sample in all three dimensions: the paper's 4,500), balanced or uniform (one "
                     "dimension per sample)."),
    ),
    dashboard_template="auditapp/word_association_dashboard.html",
    tables={
        "table4": "Table 4: per model × dimension the replies, valid replies, undefined scores, n, mean bias score "
                  "(eq. 1), SD, t and p of the one-sample t-test against 0, and why t is undefined.",
        "radar": "Figure 3: per model × social group × dimension, n and the mean bias score.",
        "reasons": "Per model × reason: the invalid replies and undefined scores, with their share of the replies.",
    },
)

PARADIGM = paradigm_of(TASK)
