"""Self-report audits (seed 000 §3.3, §4.4, Figure 2, Appendix A): models answer psychometric instruments on
their original form and on a masked form; scores, tiers, threshold crossings and validity flags."""

LABEL = "Self-report on instruments (seed 000 §3.3)"
