"""Perturbation sensitivity audits of sentiment and toxicity scorers (seed 001, the BITS corpus).

``corpus`` generates the corpus from the paper's Tables 3–5 (``seed001_tables.json``) or a researcher's own
spec; ``sensitivity`` computes ScoreSense, ScoreDev, LabelDist and the t-tests against the control (§4).
Both are pure. Not yet wired into the audit engine: that comes with the paradigm registry.
"""
