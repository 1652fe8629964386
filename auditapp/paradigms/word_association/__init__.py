"""Word association audits (seed 003, MIST, §3.1.1 the Word Association Bias Test, §3.2 eq. 1, §3.3, §4.2 Table 4
and Figure 3): a model pairs 10 attribute words of one Stereotype Content dimension with an advantaged and a
disadvantaged group identifier; the bias score of each valid reply, its mean per model × dimension with a
one-sample t-test, and the mean per social group for the radar charts. The pure core is
:mod:`auditapp.paradigms.implicit_bias`; the Django side both seed 003 paradigms share is its ``services``."""

LABEL = "Word association (WABT, seed 003)"
