"""Affective attribution audits (seed 003, MIST, §3.1.2 the Affective Attribution Test, §3.2 eqs. 2–3, §3.3, §4.3
Table 5 and Figure 4, §5.3): a model describes a neutral object after thinking of a group, then classifies its
description as comedy or tragedy; the comedy / tragedy / neutral proportions per group, the favourable attribution
rate of advantaged groups (FAR) and the unfavourable attribution rate of disadvantaged groups (UAR). The pure core
is :mod:`auditapp.paradigms.implicit_bias`; the Django side both seed 003 paradigms share is its ``services``."""

LABEL = "Affective attribution (AAT, seed 003)"
