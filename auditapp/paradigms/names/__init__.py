"""Counterfactual name audits (seed 002, Experiment 1 "Names paradigm" and its SI Appendix): the same
biographical vignette with a minority-group name and with a White name of the same gender, annotated by a model
for one binary task among 30 such pairs; the within-pair gap, tested against 0 per model × task × group with
Benjamini–Hochberg over the whole matrix, and its directional consistency across models (Figure 1)."""

LABEL = "Counterfactual names (seed 002, Experiment 1)"
