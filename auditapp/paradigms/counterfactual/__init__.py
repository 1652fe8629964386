"""What the two counterfactual paradigms of seed 002 share (Törnberg 2026, "Large Language Models Reproduce Racial
Stereotypes When Used for Text Annotation"): the names paradigm (Experiment 1, :mod:`auditapp.paradigms.names`) and
the dialect paradigm (Experiment 2, :mod:`auditapp.paradigms.dialect`).

Both ask a model one binary annotation task about a numbered batch of texts and read its answers as JSON Lines
(``{"i": <index>, "y": 0 or 1}``, SI Appendix "Handling of missing and non-parsed responses"), falling back to a
numbered list; an answer that cannot be read is missing with its reason, never imputed. This package is not a
registered paradigm itself: it holds their material (tasks, names, vignettes, matched SAE/AAVE pairs), the
planning of batches, the prompt, the reply parser and the statistics.
"""
