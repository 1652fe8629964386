"""Counterfactual dialect audits (seed 002, Experiment 2 "Dialect paradigm" and its SI Appendix): matched texts in
Standard American English and African American Vernacular English with identical propositional content, sampled
into numbered batches and annotated by a model for one binary task; the AAVE − SAE yes-rate gap per model × task
with Welch's and the paired t-test, Cohen's h, and Benjamini–Hochberg within each model (Figure 2)."""

LABEL = "Counterfactual dialect (seed 002, Experiment 2)"
