"""Psychometric instruments as data (items, keys, subscales, scoring rules), the questionnaire and IAT
pages, scoring (AQ, SATA, IAT D) and trust weights. Filled in by the annotator-flow and weights work;
registered now so its migrations and admin join the project without a settings change."""
