"""Psychometric instruments as data (items, keys, subscales, scoring rules), questionnaires, the IAT
(design, pages, D score) and trust weights (seed 000 Appendix B)."""
