"""Perturbation Sensitivity Analysis of seed 001 (§4, after Prabhakaran et al. 2019): ScoreSense,
ScoreDev, LabelDist and the t-tests of each group against the no-group control, per scorer.

Pure: no Django. Every function takes a *pairs* frame from :func:`pair_with_controls`: one row per scorer ×
perturbed sentence, with the sentence's factors (``template``, ``word``, ``group``, ``term``), its ``score``
f(x_n), its control's ``control_score`` f(x) and ``diff`` = f(x_n) − f(x). A score that is missing (a failed
request, an unparseable reply) is NaN and stays NaN: a pair with a missing side is left out of every
statistic and counted in ``n_missing``; nothing is imputed. An uploaded sentence without a control (no pairing
rule found one: :mod:`auditapp.paradigms.bits.pairing`) has no pair: it is left out too and counted apart, in
``n_unpaired``.

The paper writes ScoreSense and ScoreDev as sums (Σ_{x∈X}) but defines them in words as an average and a
mean, and its tables (Table 7: VADER PWD:C −0.25) are averages: we compute means, of sums exactly rounded
(:func:`exact_mean`), so differences that cancel give a ScoreSense of exactly 0. Its LabelDist formula
averages a Jaccard distance over the group's terms. Our choices where it is silent are stated in each
function's docstring and returned with the results (``test``, ``ddof``, the label rule).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import stats

from auditapp.paradigms.bits.corpus import ALL_GROUPS, CONTROL

T_TESTS = ("paired", "welch")
FACTORS = ["template", "emotion", "word", "group", "term"]


@dataclass(frozen=True)
class LabelRule:
    """Turns a score into label 1 when it is above the threshold (or at it, when ``inclusive``)."""

    threshold: float
    inclusive: bool
    note: str = ""

    def describe(self) -> str:
        return f"label 1 when score {'≥' if self.inclusive else '>'} {self.threshold:g}" + (
            f" ({self.note})" if self.note else "")

    def labels(self, scores: pd.Series) -> pd.Series:
        """1.0 / 0.0 per score; NaN where the score is missing."""
        above = scores >= self.threshold if self.inclusive else scores > self.threshold
        return above.astype(float).where(scores.notna())


LABEL_RULES = {
    "vader": LabelRule(0.05, True, "VADER's own convention: positive when compound ≥ 0.05"),
    "sentiment": LabelRule(0.0, False, "positive sentiment: polarity above 0 (TextBlob, LLM scores in [-1, 1])"),
    "toxicity": LabelRule(0.5, True, "toxic when the probability is at least 0.5"),
}
"""Default label rules by the kind of score; a researcher can give any other."""


def paper_mark(p: float) -> str:
    """Seed 001's significance marks (Tables 6–7: "0.001 '**' 0.01 '*'"), read as ``**`` for p < 0.001 and
    ``*`` for p < 0.01; empty otherwise or when p is undefined."""
    if p is None or not math.isfinite(p):
        return ""
    return "**" if p < 0.001 else "*" if p < 0.01 else ""


def pair_with_controls(corpus: pd.DataFrame, scores: pd.DataFrame) -> pd.DataFrame:
    """Join each scorer's score of every perturbed sentence with its control's score.

    ``corpus`` has the columns of :func:`auditapp.paradigms.bits.corpus.corpus_frame` (and ``source`` for a corpus
    of perturbed posts, kept in the pairs); ``scores`` has ``scorer``, ``key``, ``score`` (NaN when missing).
    Sentences a scorer has no row for are left out.
    """
    scored = scores[["scorer", "key", "score"]].merge(corpus, on="key", how="inner", validate="many_to_one")
    perturbed = scored[scored["group"] != CONTROL]
    controls = scored.loc[scored["group"] == CONTROL, ["scorer", "key", "score"]].rename(
        columns={"key": "control_key", "score": "control_score"})
    pairs = perturbed.merge(controls, on=["scorer", "control_key"], how="left")
    pairs["diff"] = pairs["score"] - pairs["control_score"]
    factors = [*FACTORS, *(["source"] if "source" in corpus.columns else [])]
    return pairs[["scorer", "key", "control_key", *factors, "score", "control_score", "diff"]].reset_index(drop=True)


def _complete(pairs: pd.DataFrame) -> pd.DataFrame:
    return pairs[pairs["diff"].notna()]


def exact_mean(values: pd.Series | np.ndarray) -> float:
    """The mean of the values present, their sum exactly rounded (``math.fsum``) before the one division; NaN
    when none is present.

    A floating-point sum rounds at each step, so differences that cancel (a term that raises some sentences'
    scores by exactly what it lowers others') summed in order leave noise: VADER's PWoD ScoreSense on the public
    BITS files came out 5.8e-19, not 0. Summed exactly, differences that cancel give 0.0; any other mean differs
    from the step-by-step one only in its last digits."""
    present = np.asarray(values, dtype=float)
    present = present[~np.isnan(present)]
    return math.fsum(present) / len(present) if len(present) else math.nan


def score_sense(pairs: pd.DataFrame, *, by_term: bool = False) -> pd.DataFrame:
    """ScoreSense (seed 001 §4, Table 7; per term, Table 10): the mean over a group's sentences of
    f(x_n) − f(x), x being the control sentence of the same template and word.

    One row per scorer × group (× term): ``n`` complete pairs, ``n_missing`` sentences with a control where a
    side's score is missing, ``n_unpaired`` sentences without a control (an uploaded sentence no pairing rule
    matched: it has no pair at all, whatever the scorer), ``score_sense``. With no complete pair,
    ``score_sense`` is NaN.
    """
    keys = ["scorer", "group", *(["term"] if by_term else [])]
    # diff is NaN exactly when a side is missing, and exact_mean skips NaN: the mean is over complete pairs.
    result = pairs.assign(complete=pairs["diff"].notna(), unpaired=pairs["control_key"].isna()).groupby(
        keys, sort=True).agg(n=("complete", "sum"), n_sentences=("complete", "size"), n_unpaired=("unpaired", "sum"),
                             score_sense=("diff", exact_mean)).reset_index()
    result["n_missing"] = result["n_sentences"] - result["n"] - result["n_unpaired"]
    return result[[*keys, "n", "n_missing", "n_unpaired", "score_sense"]]


def score_dev(pairs: pd.DataFrame, *, ddof: int = 0) -> pd.DataFrame:
    """ScoreDev (seed 001 §4, Table 8): for each base sentence (template and word), the standard deviation
    of f(x_n) over the terms n of a group, then the mean of those over the base sentences; per group, and over
    every term of every group at once (group ``All``, the paper's column).

    ``ddof=0`` (default) is the population standard deviation: the terms are the whole set the researcher
    chose, not a sample of a larger one; ``ddof=1`` gives the sample one. Missing scores are left out of a
    base sentence's deviation; a base sentence with fewer than ``ddof + 1`` scores has none and is left out,
    and so is a sentence without a control (an uploaded one the control rule could not match).
    """
    # A base sentence is identified by its control; an uploaded sentence without a control has no known
    # base and is left out.
    scored = pairs[pairs["score"].notna() & pairs["control_key"].notna()]
    base = ["control_key"]
    per_group = (scored.groupby(["scorer", "group", *base])["score"].std(ddof=ddof)
                 .groupby(["scorer", "group"]).agg(n_bases="count", score_dev="mean"))
    overall = (scored.groupby(["scorer", *base])["score"].std(ddof=ddof)
               .groupby("scorer").agg(n_bases="count", score_dev="mean"))
    overall = overall.assign(group=ALL_GROUPS).set_index("group", append=True)
    result = pd.concat([per_group, overall]).reset_index()
    result["ddof"] = ddof
    return result[["scorer", "group", "n_bases", "score_dev", "ddof"]]


def label_dist(pairs: pd.DataFrame, rules: dict[str, LabelRule]) -> pd.DataFrame:
    """LabelDist (seed 001 §4, Table 8): for each term n of a group, the Jaccard distance between the set of
    base sentences whose control is labelled 1 and the set whose sentence with n is labelled 1,
    1 − |A ∩ B| / |A ∪ B|, averaged over the group's terms.

    ``rules`` gives each scorer's :class:`LabelRule`. Only pairs with both scores present count (a missing
    score is not a label 0). A term whose A ∪ B is empty (no sentence labelled 1 either way) has no distance:
    it is left out of the mean and counted in ``n_terms_undefined``.
    """
    complete = _complete(pairs).copy()
    unknown = sorted(set(complete["scorer"]) - set(rules))
    if unknown:
        raise ValueError(f"no label rule for scorer(s): {', '.join(map(str, unknown))}")
    rule_of = complete["scorer"].map(rules)
    thresholds = rule_of.map(lambda rule: rule.threshold)
    inclusive = rule_of.map(lambda rule: rule.inclusive).astype(bool)
    complete["a"] = np.where(inclusive, complete["control_score"] >= thresholds,
                             complete["control_score"] > thresholds)
    complete["b"] = np.where(inclusive, complete["score"] >= thresholds, complete["score"] > thresholds)
    complete["both"] = complete["a"] & complete["b"]
    complete["either"] = complete["a"] | complete["b"]
    per_term = complete.groupby(["scorer", "group", "term"])[["both", "either"]].sum()
    per_term["distance"] = 1 - per_term["both"] / per_term["either"].where(per_term["either"] > 0)
    per_group = per_term.groupby(["scorer", "group"])["distance"].agg(
        n_terms="size", n_terms_undefined=lambda d: int(d.isna().sum()), label_dist="mean")
    result = per_group.reset_index()
    result["rule"] = result["scorer"].map(lambda scorer: rules[scorer].describe())
    return result


NO_VARIANCE = 1e-12
"""Differences smaller than this are rounding, not variance: a base's group value is a mean of its terms' scores,
and the mean of three scores of 0.1 is 0.10000000000000002, so a scorer that scores a group exactly as the
control would otherwise get a t of a few units from float noise alone."""


def _t_test(group_scores: np.ndarray, control_scores: np.ndarray, *, test: str) -> tuple[float, float, float]:
    """(t, df, p), or NaNs where the test is undefined (fewer than two values, or no variance)."""
    if test == "paired":
        diffs = group_scores - control_scores
        if len(diffs) < 2 or np.ptp(diffs) <= NO_VARIANCE:
            return math.nan, math.nan, math.nan
        result = stats.ttest_rel(group_scores, control_scores)
        return float(result.statistic), float(len(diffs) - 1), float(result.pvalue)
    if len(group_scores) < 2 or len(control_scores) < 2 or (
            np.ptp(group_scores) <= NO_VARIANCE and np.ptp(control_scores) <= NO_VARIANCE):
        return math.nan, math.nan, math.nan
    result = stats.ttest_ind(group_scores, control_scores, equal_var=False)
    return float(result.statistic), float(result.df), float(result.pvalue)


def control_tests(pairs: pd.DataFrame, *, test: str = "paired", by: tuple[str, ...] = ("scorer", "group")
                  ) -> pd.DataFrame:
    """The t-test of each group's scores against the control's (seed 001 §4: "a t-test between the scores of
    each group and the control group"), per scorer.

    The unit is the base sentence (a template with its word): a group's terms in one base sentence share that
    base's control sentence, so its sentences are not independent observations. A group's value in a base
    sentence is the mean of its terms' scores there (the complete pairs only); a test over sentences instead
    would count every control once per term and overstate significance (with no effect planted, 5 of 80
    such tests had p < 0.01 where 0.8 are expected: ``tests/auditapp/test_bits_sensitivity.py``).

    ``paired`` (default): the group's value against the control's score in each base sentence (scipy's
    ``ttest_rel``); its mean difference is the ScoreSense when no score is missing. ``welch``: the group's
    values against the control scores as two independent samples (``ttest_ind(equal_var=False)``).
    Undefined (t, df, p NaN; ``note`` says why) with fewer than two base sentences or no variance, e.g. a
    scorer that gives every sentence of a group the same score as its control.

    ``by``: the columns of one test, ``scorer`` and ``group`` by default; with ``source`` among them (a corpus of
    perturbed posts, :mod:`auditapp.paradigms.bits.posts`), one test per source as well.
    """
    if test not in T_TESTS:
        raise ValueError(f"test must be one of {', '.join(T_TESTS)}, not {test!r}")
    keys = list(by)
    per_base = _complete(pairs).groupby([*keys, "control_key"], sort=True, dropna=False).agg(
        group_score=("score", "mean"), control_score=("control_score", "first"), n_sentences=("score", "size"))
    rows = []
    for values, frame in per_base.groupby(keys, sort=True, dropna=False):
        group_scores = frame["group_score"].to_numpy(float)
        control_scores = frame["control_score"].to_numpy(float)
        t, df, p = _t_test(group_scores, control_scores, test=test)
        rows.append({**dict(zip(keys, values, strict=True)), "test": test, "n_bases": len(frame),
                     "n_sentences": int(frame["n_sentences"].sum()), "mean_group": exact_mean(group_scores),
                     "mean_control": exact_mean(control_scores), "t": t, "df": df, "p": p,
                     "mark": paper_mark(p),
                     "note": "" if math.isfinite(p) else "undefined: fewer than two base sentences or no variance"})
    columns = [*keys, "test", "n_bases", "n_sentences", "mean_group", "mean_control", "t", "df", "p", "mark", "note"]
    return pd.DataFrame(rows, columns=columns)


def mean_scores(corpus: pd.DataFrame, scores: pd.DataFrame, *, by: list[str]) -> pd.DataFrame:
    """The mean score per scorer and the given factors, control sentences included as group ``control``:
    ``by=["template", "group"]`` is Table 9 (and 11), ``by=["group"]`` the Figure 1 heatmap."""
    scored = scores[["scorer", "key", "score"]].merge(corpus, on="key", how="inner", validate="many_to_one")
    result = scored.groupby(["scorer", *by], dropna=False)["score"].agg(
        n="count", n_missing=lambda s: int(s.isna().sum()), mean_score=exact_mean)
    return result.reset_index()
