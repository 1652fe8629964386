"""Perturbation sensitivity audits of sentiment and toxicity scorers (seed 001 §3.2, §4, Tables 3–10, Figure 1).

``corpus`` generates the BITS corpus from the paper's Tables 3–5 (``seed001_tables.json``) or a researcher's own
spec; ``upload`` reads a corpus in the public BITS repository's shape; ``sensitivity`` computes ScoreSense,
ScoreDev, LabelDist and the t-tests against the control (§4); ``llm_scoring`` asks a chat model for a score.
All pure; ``adapter`` is the paradigm's Django side.
"""

LABEL = "Perturbation sensitivity (BITS, seed 001)"
