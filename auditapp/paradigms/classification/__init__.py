"""Classification audits (seed 000 §3.4, Tables 1–2, Figure 1, Appendix A.4): each model labels the study's
evaluated items under prompting conditions; metrics against the weighted ground truth and majority vote."""

LABEL = "Classification (seed 000 §3.4)"
