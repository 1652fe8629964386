"""The pure core of the word association (WABT) and affective attribution (AAT) tests of seed 003 (Li et al., "MIST:
Towards Multi-dimensional Implicit Bias and Stereotype Evaluation of LLMs via Theory of Mind"): the lexicons of
Tables 1–3 (:mod:`.lexicons`), the templates of §3.3.2 (:mod:`.templates`), the generation of §3.3.3
(:mod:`.generation`), the reply parsers (:mod:`.wabt_replies`, :mod:`.aat_replies`), the statistics of §3.2 and §4
(:mod:`.stats`) and the dashboard tables (:mod:`.analysis`), all pure; and :mod:`.services`, the Django side of the
two registered paradigms built on them (``word_association``, ``affective_attribution``), which is not.
"""
