"""The word association paradigm's entry in the registry (:mod:`auditapp.engine.registry`), built from the
seed 003 paradigms' shared Django side (:mod:`auditapp.paradigms.implicit_bias.services`): its generation options
and its tables (Table 4, Figure 3's radar, the invalid replies)."""
from __future__ import annotations

from auditapp.paradigms.implicit_bias.generation import DEFAULT_SAMPLES_PER_COMBINATION
from auditapp.paradigms.implicit_bias.services import Task, paradigm_of
from auditapp.paradigms.word_association import LABEL

TASK = Task(
    name="word_association",
    label=LABEL,
    task="wabt",
    default_corpus_name="WABT: seed 003 Tables 1–2 and §3.3.2 templates",
    options={"samples_per_combination": DEFAULT_SAMPLES_PER_COMBINATION, "word_order": "shuffled",
             "dimension_draw": "every"},
    dashboard_template="auditapp/word_association_dashboard.html",
    tables={
        "table4": "Table 4: per model × dimension the replies, valid replies, undefined scores, n, mean bias score "
                  "(eq. 1), SD, t and p of the one-sample t-test against 0, and why t is undefined.",
        "radar": "Figure 3: per model × social group × dimension, n and the mean bias score.",
        "reasons": "Per model × reason: the invalid replies and undefined scores, with their share of the replies.",
    },
)

PARADIGM = paradigm_of(TASK)
