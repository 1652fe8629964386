"""The analysis of a BITS perturbation-sensitivity audit (seed 001 §4, Tables 7–10, Figure 1) and the data of its
dashboard. Pure: no Django.

:func:`analyse` takes the corpus (:func:`auditapp.paradigms.bits.corpus.corpus_frame`) and every scorer's scores,
one row per scorer × unit × replicate, and returns a :class:`BitsAnalysis`: named tables as DataFrames and the
notes that state every choice made (the dashboard shows them beside the tables). The statistics themselves are
in :mod:`auditapp.paradigms.bits.sensitivity`; this module reduces replicates, pairs sentences with their
controls, applies the settings and lays the results out as the paper's tables.

The tables (each a DataFrame; :meth:`BitsAnalysis.to_dict` makes them JSON-ready, NaN → None):

- ``scorers``: name, kind, imported, label rule, scale;
- ``score_sense`` (Table 7): scorer × group: ScoreSense, n (complete pairs), n_missing (pairs with a side's score
  missing), n_unpaired (sentences without a control), and the t-test against the control (t, df, p, the paper's
  mark, which test); ``note`` says why a value or a test is undefined;
- ``label_dist`` (Table 8, LabelDist) and ``score_dev`` (Table 8, ScoreDev, per group and ``All``);
- ``template_means`` (Table 9): mean score per scorer × template × group, the control included;
- ``term_sense`` (Table 10): ScoreSense per scorer × group × term;
- ``group_means`` (Figure 1, and Table 6 for a corpus of perturbed posts): mean score per scorer × group, the
  control included, with each group's t-test against the control (the same test as Table 7's; t, df, p, mark);
- ``source_means`` (Table 6 per source): the same per scorer × source × group, for a corpus of perturbed posts
  with a source column (:mod:`auditapp.paradigms.bits.posts`); empty otherwise;
- ``distributions``: per scorer × group, histogram counts over fixed bins of the scorer's scale (values outside
  it counted apart, never clipped into a bin) and the quartiles;
- ``coverage``: per scorer, units, units scored and missing, and the perturbed sentences of the groups shown as
  Table 7 counts them (complete pairs, pairs with a missing score, without a control: the sums of its cells);
  ``missing``: scorer × reason;
- ``control_fills``: per recorded scorer whose missing control scores came from another scorer
  (``control_scores_from``), how many, and how far the two differ on the sentences both scored.

Missing values (a failed request, an unparseable reply, a sentence a recorded scorer has no value for) are left
out of every statistic and counted; nothing is imputed.
"""
from __future__ import annotations

import math
from collections.abc import Hashable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from auditapp.engine.headlines import Headline, HeadlineRow
from auditapp.engine.protocol import ReplicateRule
from auditapp.paradigms.bits.corpus import CONTROL
from auditapp.paradigms.bits.sensitivity import (
    ALL_GROUPS,
    LABEL_RULES,
    T_TESTS,
    LabelRule,
    control_tests,
    label_dist,
    mean_scores,
    pair_with_controls,
    score_dev,
    score_sense,
)

SCORE_COLUMNS = ("scorer", "imported", "kind", "unit", "replicate", "value", "reason")
SCALES = {"vader": (-1.0, 1.0), "sentiment": (-1.0, 1.0), "toxicity": (0.0, 1.0)}
"""The range of each kind of score; the distributions' bins cover it."""
BIN_WIDTH = 0.1
DDOFS = (0, 1)
REPLICATE_RULE = ReplicateRule("mean")
NOT_SCORED = "not scored (no row for this unit)"
NO_REASON = "missing (no reason recorded)"
SETTING_KEYS = frozenset({"t_test", "score_dev_ddof", "label_rules", "groups", "control_scores_from"})
TABLES = ("scorers", "score_sense", "label_dist", "score_dev", "template_means", "term_sense", "group_means",
          "source_means", "distributions", "coverage", "missing", "control_fills")


@dataclass(frozen=True)
class AnalysisSettings:
    """The researcher's choices for the analysis; :meth:`problems` names every invalid one.

    - ``t_test``: ``paired`` (each group against its control, base sentence by base sentence) or ``welch``;
    - ``score_dev_ddof``: 0 (population standard deviation over a group's terms) or 1 (sample);
    - ``label_rules``: per scorer name, a :class:`LabelRule` that replaces the default rule of its kind
      (:data:`auditapp.paradigms.bits.sensitivity.LABEL_RULES`);
    - ``groups``: the groups to analyse and show, in this order; empty means every group of the corpus;
    - ``control_scores_from``: per recorded (imported) scorer whose control sentences have no score (the public
      BITS repository's control file carries none), another scorer of the audit whose scores of the control
      sentences stand in for the missing ones, e.g. ``{"TEXTBLOB": "textblob"}``. The two are compared on the
      sentences both scored (``control_fills``): the cells mean something only where they agree.
    """

    t_test: str = "paired"
    score_dev_ddof: int = 0
    label_rules: Mapping[str, LabelRule] = field(default_factory=dict)
    groups: tuple[str, ...] = ()
    control_scores_from: Mapping[str, str] = field(default_factory=dict)

    def problems(self) -> list[str]:
        problems = []
        if self.t_test not in T_TESTS:
            problems.append(f"t_test: {self.t_test!r} is not one of {', '.join(T_TESTS)}")
        if isinstance(self.score_dev_ddof, bool) or self.score_dev_ddof not in DDOFS:
            problems.append(f"score_dev_ddof: {self.score_dev_ddof!r} is not 0 (population) or 1 (sample)")
        for scorer, rule in self.label_rules.items():
            if not isinstance(rule, LabelRule):
                problems.append(f"label_rules[{scorer!r}]: not a label rule (a threshold and inclusive)")
            elif isinstance(rule.threshold, bool) or not isinstance(rule.threshold, int | float) or not math.isfinite(
                    rule.threshold):
                problems.append(f"label_rules[{scorer!r}]: the threshold {rule.threshold!r} is not a finite number")
        if any(not isinstance(group, str) or not group.strip() for group in self.groups):
            problems.append("groups: every group must be a non-empty name")
        else:
            if CONTROL in self.groups:
                problems.append(f"groups: {CONTROL!r} is the no-group control, always shown; it is not a group")
            if len(set(self.groups)) != len(self.groups):
                problems.append("groups: a group is listed twice")
        for scorer, source in self.control_scores_from.items():
            if not isinstance(source, str) or not source.strip() or source == scorer:
                problems.append(f"control_scores_from[{scorer!r}]: {source!r} is not another scorer's name")
        return problems

    def to_dict(self) -> dict:
        return {"t_test": self.t_test, "score_dev_ddof": self.score_dev_ddof,
                "label_rules": {scorer: {"threshold": rule.threshold, "inclusive": rule.inclusive, "note": rule.note}
                                for scorer, rule in self.label_rules.items()},
                "groups": list(self.groups), "control_scores_from": dict(self.control_scores_from)}

    @classmethod
    def from_dict(cls, data: Mapping) -> AnalysisSettings:
        """Settings from their :meth:`to_dict` shape (missing keys take the defaults). A shape that would be read
        as something else (an unknown key, a string where a list or a true/false belongs) raises ``ValueError``
        naming it; content problems are for :meth:`problems`."""
        if not isinstance(data, Mapping):
            raise ValueError(f"the analysis settings are an object, not {type(data).__name__}")
        unknown = sorted(set(data) - SETTING_KEYS)
        if unknown:
            raise ValueError(f"unknown analysis settings {unknown}; known: {sorted(SETTING_KEYS)}")
        groups = data.get("groups") or []
        if not isinstance(groups, list | tuple):
            raise ValueError(f"groups: a list of group names, not {type(groups).__name__}")
        rules = data.get("label_rules") or {}
        if not isinstance(rules, Mapping):
            raise ValueError(f"label_rules: an object of scorer name → rule, not {type(rules).__name__}")
        parsed = {}
        for scorer, rule in rules.items():
            if not isinstance(rule, Mapping) or "threshold" not in rule or not isinstance(rule.get("inclusive"), bool):
                raise ValueError(f"label_rules[{scorer!r}]: give {{\"threshold\": a number, \"inclusive\": true or "
                                 f"false}}, not {rule!r}")
            parsed[str(scorer)] = LabelRule(threshold=rule["threshold"], inclusive=rule["inclusive"],
                                            note=str(rule.get("note", "")))
        fills = data.get("control_scores_from") or {}
        if not isinstance(fills, Mapping) or not all(isinstance(source, str) for source in fills.values()):
            raise ValueError(f"control_scores_from: an object of recorded scorer → a scorer's name, not {fills!r}")
        return cls(t_test=data.get("t_test", "paired"), score_dev_ddof=data.get("score_dev_ddof", 0),
                   label_rules=parsed, groups=tuple(groups),
                   control_scores_from={str(scorer): source for scorer, source in fills.items()})


@dataclass(frozen=True)
class BitsAnalysis:
    """The named tables of an analysis (:data:`TABLES`), the notes stating every choice, the settings, and the
    groups and templates in the corpus's order (the order the tables are sorted in)."""

    tables: Mapping[str, pd.DataFrame]
    notes: tuple[str, ...]
    settings: AnalysisSettings
    groups: tuple[str, ...]
    templates: tuple[str, ...]

    def to_dict(self) -> dict:
        """JSON-ready: each table as a list of records (NaN → None) and its columns (so an empty table keeps its
        header), the notes, the settings, the orders."""
        return {"tables": {name: table_records(frame) for name, frame in self.tables.items()},
                "columns": {name: [str(column) for column in frame.columns] for name, frame in self.tables.items()},
                "notes": list(self.notes), "settings": self.settings.to_dict(), "groups": list(self.groups),
                "templates": list(self.templates)}


def table_records(frame: pd.DataFrame) -> list[dict]:
    """A table as JSON-ready records: NaN and None → None, numpy numbers → Python numbers, lists kept."""
    return [{column: _json_value(value) for column, value in record.items()}
            for record in frame.to_dict(orient="records")]


def _json_value(value):
    if isinstance(value, list | tuple | np.ndarray):
        return [_json_value(item) for item in value]
    if value is None or value is pd.NA:
        return None
    if isinstance(value, np.bool_ | bool):
        return bool(value)
    if isinstance(value, np.integer):
        return int(value)
    if isinstance(value, float | np.floating):
        return float(value) if math.isfinite(value) else None
    return value


def _scorer_table(scores: pd.DataFrame, settings: AnalysisSettings) -> tuple[pd.DataFrame, list[str]]:
    """One row per scorer (in order of first appearance) with its kind, imported flag, label rule and scale,
    and the problems: a scorer with two kinds, an unknown kind without a rule of its own, a rule for no scorer."""
    problems = []
    rows = []
    for scorer, frame in scores.groupby("scorer", sort=False):
        kinds = sorted(set(frame["kind"]))
        imported = sorted(set(frame["imported"].astype(bool)))
        if len(kinds) != 1 or len(imported) != 1:
            problems.append(f"scorer {scorer!r}: rows disagree on its kind or on imported ({kinds}, {imported})")
            continue
        kind = kinds[0]
        rule = (settings.label_rules.get(scorer) if isinstance(scorer, str) else None) or LABEL_RULES.get(kind)
        if rule is None:
            problems.append(f"scorer {scorer!r}: kind {kind!r} has no default label rule (kinds: "
                            f"{', '.join(LABEL_RULES)}); give the scorer a label rule")
            continue
        low, high = SCALES.get(kind, (-1.0, 1.0))
        rows.append({"scorer": scorer, "kind": kind, "imported": imported[0], "rule": rule.describe(),
                     "rule_threshold": rule.threshold, "rule_inclusive": rule.inclusive,
                     "rule_source": "settings" if scorer in settings.label_rules else f"default for {kind}",
                     "scale_low": low, "scale_high": high})
    unknown = sorted(set(settings.label_rules) - set(scores["scorer"]))
    if unknown:
        problems.append(f"label_rules: no scorer named {', '.join(map(repr, unknown))}")
    columns = ["scorer", "kind", "imported", "rule", "rule_threshold", "rule_inclusive", "rule_source",
               "scale_low", "scale_high"]
    return pd.DataFrame(rows, columns=columns), problems


def _input_problems(corpus: pd.DataFrame, scores: pd.DataFrame, settings: AnalysisSettings) -> list[str]:
    problems = list(settings.problems())
    unknown_units = sorted(set(scores["unit"]) - set(corpus["key"]))
    if unknown_units:
        shown = ", ".join(map(repr, unknown_units[:5])) + (" …" if len(unknown_units) > 5 else "")
        problems.append(f"scores: {len(unknown_units)} unit(s) not in the corpus: {shown}")
    duplicated = scores.duplicated(["scorer", "unit", "replicate"])
    if duplicated.any():
        first = scores[duplicated].iloc[0]
        problems.append(f"scores: {int(duplicated.sum())} repeated scorer × unit × replicate row(s), e.g. "
                        f"{first['scorer']!r} {first['unit']!r} replicate {first['replicate']}")
    imported = scores.groupby("scorer")["imported"].first().astype(bool) if not scores.empty else pd.Series(dtype=bool)
    for scorer, source in settings.control_scores_from.items():
        if scorer not in imported.index or not imported[scorer]:
            problems.append(f"control_scores_from: {scorer!r} is not a recorded (imported) scorer of the audit")
        if source not in imported.index or imported[source]:
            problems.append(f"control_scores_from[{scorer!r}]: {source!r} is not a scorer the audit asked itself")
    corpus_groups = set(corpus["group"]) - {CONTROL}
    absent = [group for group in settings.groups if group not in corpus_groups]
    if absent:
        problems.append(f"groups: not in the corpus: {', '.join(map(repr, absent))} (the corpus has "
                        f"{', '.join(sorted(corpus_groups))})")
    return problems


def _ordered(frame: pd.DataFrame, orders: Mapping[str, list]) -> pd.DataFrame:
    """Rows sorted by the given columns in the given orders (the corpus's order of templates and groups, the
    scores' order of scorers), not alphabetically (T2 before T10)."""
    keys = [column for column in orders if column in frame.columns]
    if frame.empty or not keys:
        return frame.reset_index(drop=True)
    position: dict[Hashable, dict[Any, int]] = {
        column: {value: index for index, value in enumerate(orders[column])} for column in keys}

    def by_position(column: pd.Series) -> pd.Series:
        return column.map(position[column.name])

    return frame.sort_values(keys, key=by_position, kind="stable").reset_index(drop=True)


def _distributions(scored: pd.DataFrame, scorer_table: pd.DataFrame) -> pd.DataFrame:
    """Per scorer × group: counts over bins of :data:`BIN_WIDTH` across the scorer's scale (the last bin
    closed on the right), values outside the scale counted in ``n_below`` / ``n_above``, and the quartiles
    (numpy's linear interpolation, as pandas' ``quantile``) with the minimum and maximum."""
    scale = dict(zip(scorer_table["scorer"], zip(scorer_table["scale_low"], scorer_table["scale_high"],
                                                    strict=True), strict=True))
    rows = []
    for (scorer, group), frame in scored.groupby(["scorer", "group"], sort=False):
        values = frame["score"].dropna().to_numpy(float)
        low, high = scale[scorer]
        edges = np.round(np.linspace(low, high, round((high - low) / BIN_WIDTH) + 1), 10)
        counts, _ = np.histogram(values[(values >= low) & (values <= high)], bins=edges)
        quartiles = np.quantile(values, [0.25, 0.5, 0.75]) if len(values) else [math.nan] * 3
        rows.append({"scorer": scorer, "group": group, "n": len(values),
                     "n_missing": int(frame["score"].isna().sum()), "bin_edges": edges.tolist(),
                     "counts": counts.tolist(), "n_below": int((values < low).sum()),
                     "n_above": int((values > high).sum()),
                     "min": float(values.min()) if len(values) else math.nan, "q1": float(quartiles[0]),
                     "median": float(quartiles[1]), "q3": float(quartiles[2]),
                     "max": float(values.max()) if len(values) else math.nan})
    columns = ["scorer", "group", "n", "n_missing", "bin_edges", "counts", "n_below", "n_above", "min", "q1",
               "median", "q3", "max"]
    return pd.DataFrame(rows, columns=columns)


def _missing_reasons(scores: pd.DataFrame) -> pd.Series:
    """Why each (scorer, unit) without a value has none: its replicates' distinct reasons joined with "; ", or
    :data:`NO_REASON` when none was recorded."""
    return (scores[scores["value"].isna()].assign(reason=lambda f: f["reason"].fillna("").astype(str).str.strip())
            .groupby(["scorer", "unit"])["reason"]
            .agg(lambda r: "; ".join(sorted({reason for reason in r if reason})) or NO_REASON))


def _why_undefined(pairs: pd.DataFrame, reasons: pd.Series) -> dict[tuple, str]:
    """Per (scorer, group) with no complete pair: why its ScoreSense is undefined, naming the reasons the missing
    scores were given (e.g. "the control file has no column 'TEXTBLOB'")."""

    def reasons_of(scorer, units, noun: str) -> str:
        counts = pd.Series([reasons.get((scorer, unit), NOT_SCORED) for unit in units]).value_counts()
        return "; ".join(f"{reason}: {n} {noun}{'' if n == 1 else 's'}" for reason, n in counts.items())

    why = {}
    complete = pairs.groupby(["scorer", "group"])["diff"].count()
    for scorer, group in complete[complete == 0].index:
        frame = pairs[(pairs["scorer"] == scorer) & (pairs["group"] == group)]
        paired = frame[frame["control_key"].notna()]
        if paired.empty:
            why[(scorer, group)] = (f"undefined: none of the group's {len(frame)} sentences has a control (the "
                                    "corpus's pairing report says why)")
            continue
        parts = []
        no_control_score = paired[paired["control_score"].isna()]
        no_score = paired[paired["score"].isna()]
        for lacking, side, units, noun in ((no_control_score, "control's", no_control_score["control_key"].unique(),
                                            "control"), (no_score, "sentence's", no_score["key"], "sentence")):
            if len(lacking):
                parts.append(f"{len(lacking)} of its {len(paired)} pairs {'lacks' if len(lacking) == 1 else 'lack'} "
                             f"the {side} score ({reasons_of(scorer, units, noun)})")
        why[(scorer, group)] = "undefined: no pair has both scores: " + "; ".join(parts)
    return why


def _coverage(corpus: pd.DataFrame, scores: pd.DataFrame, reduced: pd.DataFrame,
              scorer_table: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Per scorer: the corpus's units, those with a value, those without; and the missing units by reason.

    A unit is missing when none of its replicates has a value; its reason is its replicates' distinct reasons
    joined with "; " (:data:`NO_REASON` when none was recorded), or :data:`NOT_SCORED` when the scorer has no
    row for it at all."""
    reasons = _missing_reasons(scores)
    coverage_rows, missing_rows = [], []
    for scorer in scorer_table["scorer"]:
        rows = reduced[reduced["scorer"] == scorer].set_index("unit")
        present = rows["value"].notna()
        unit_reasons = pd.Series(
            [NOT_SCORED if unit not in rows.index else reasons.get((scorer, unit), NO_REASON)
             for unit in corpus["key"] if unit not in rows.index or not present[unit]], dtype=object)
        replicates = scores[scores["scorer"] == scorer]
        coverage_rows.append({"scorer": scorer, "n_units": len(corpus), "n_scored": int(present.sum()),
                              "n_missing": len(unit_reasons), "n_replicates": len(replicates),
                              "n_replicates_missing": int(replicates["value"].isna().sum())})
        for reason, n in unit_reasons.value_counts(sort=True).items():
            missing_rows.append({"scorer": scorer, "reason": reason, "n": int(n)})
    coverage = pd.DataFrame(coverage_rows, columns=["scorer", "n_units", "n_scored", "n_missing", "n_replicates",
                                                    "n_replicates_missing"])
    return coverage, pd.DataFrame(missing_rows, columns=["scorer", "reason", "n"])


CONTROL_FILL_COLUMNS = ["scorer", "controls_from", "n_controls", "n_filled", "n_compared", "max_abs_diff",
                        "mean_abs_diff", "r"]


def _fill_controls(reduced: pd.DataFrame, corpus: pd.DataFrame, fills: Mapping[str, str]
                   ) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The reduced scores with each recorded scorer's missing control scores taken from the scorer the settings
    name (``control_scores_from``), and per such scorer: its controls, how many were filled, and how far the two
    scorers' scores differ on the sentences both scored (the largest and mean |difference|, Pearson's r)."""
    if not fills:
        return reduced, pd.DataFrame(columns=CONTROL_FILL_COLUMNS)
    reduced = reduced.copy()
    controls = set(corpus.loc[corpus["group"] == CONTROL, "key"])
    rows = []
    for scorer, source in fills.items():
        own = reduced["scorer"] == scorer
        theirs = reduced.loc[reduced["scorer"] == source].set_index("unit")["value"]
        is_control = reduced["unit"].isin(controls)
        wanted = own & is_control & reduced["value"].isna()
        filled = reduced.loc[wanted, "unit"].map(theirs).astype(float)
        if wanted.any():
            reduced.loc[wanted, "value"] = filled
        both = pd.concat([reduced.loc[own & ~is_control].set_index("unit")["value"], theirs], axis=1,
                         join="inner", keys=["own", "theirs"]).dropna()
        differences = (both["own"] - both["theirs"]).abs()
        correlated = len(both) >= 2 and both["own"].std() > 0 and both["theirs"].std() > 0
        rows.append({"scorer": scorer, "controls_from": source, "n_controls": int((own & is_control).sum()),
                     "n_filled": int(filled.notna().sum()), "n_compared": len(both),
                     "max_abs_diff": float(differences.max()) if len(both) else math.nan,
                     "mean_abs_diff": float(differences.mean()) if len(both) else math.nan,
                     "r": float(both["own"].corr(both["theirs"])) if correlated else math.nan})
    return reduced, pd.DataFrame(rows, columns=CONTROL_FILL_COLUMNS)


def _with_marks(means: pd.DataFrame) -> pd.DataFrame:
    """Table 6's cells: a group's mean with its t-test against the control; the control's own row, and a group
    without a complete pair, have no test (an empty mark)."""
    means = means.copy()
    means["mark"] = means["mark"].fillna("")
    means["note"] = means["note"].fillna("")
    means["n_bases"] = means["n_bases"].fillna(0).astype(int)
    return means


SOURCE_MEANS_COLUMNS = ["scorer", "source", "group", "n", "n_missing", "mean_score", "test", "n_bases", "t", "df",
                        "p", "mark", "note"]


def _source_means(corpus: pd.DataFrame, scores: pd.DataFrame, pairs: pd.DataFrame, test: str) -> pd.DataFrame:
    """Table 6 per source (a perturbed-posts corpus's platform): the mean score per scorer × source × group, the
    control included, with each group's t-test against the control within the source. Empty for a corpus without
    sources (one made from templates, or posts uploaded without a source column)."""
    if "source" not in corpus.columns or not corpus["source"].fillna("").astype(bool).any():
        return pd.DataFrame(columns=SOURCE_MEANS_COLUMNS)
    means = mean_scores(corpus, scores, by=["source", "group"])
    tests = control_tests(pairs, test=test, by=("scorer", "source", "group"))
    merged = means.merge(tests[["scorer", "source", "group", "test", "n_bases", "t", "df", "p", "mark", "note"]],
                         on=["scorer", "source", "group"], how="left")
    return _with_marks(merged)[SOURCE_MEANS_COLUMNS]


def _notes(settings: AnalysisSettings, scorer_table: pd.DataFrame, groups: list[str], fills: pd.DataFrame
           ) -> list[str]:
    test = ("paired t-test (scipy's ttest_rel): in each base sentence (a template with its word) the group's "
            "value, the mean over its terms, against the control sentence's score"
            if settings.t_test == "paired" else
            "Welch's t-test (scipy's ttest_ind, unequal variances): the group's values per base sentence (the "
            "mean over its terms) against the control scores, as two independent samples")
    notes = [
        "ScoreSense and ScoreDev are means, not sums: seed 001 §4 writes Σ but defines both in words as an "
        "average, and its tables are averages. ScoreSense and the mean scores sum their values exactly (math.fsum) "
        "before dividing: differences that cancel give exactly 0.",
        f"t-test of each group against the no-group control: {test}. The unit is the base sentence because a "
        "group's terms in one base sentence share its control. Marks as in seed 001 Tables 6–7: ** p < 0.001, "
        "* p < 0.01; the exact p is shown. No correction for multiple comparisons.",
        "ScoreDev: for each base sentence the standard deviation of the scores over a group's terms "
        f"({'population, ddof = 0' if settings.score_dev_ddof == 0 else 'sample, ddof = 1'}), then the mean over "
        "the base sentences; All: over every term of every group shown.",
        "LabelDist: per term, the Jaccard distance 1 − |A ∩ B| / |A ∪ B| between the base sentences whose "
        "control is labelled 1 (A) and those whose sentence with the term is labelled 1 (B), averaged over the "
        "group's terms; a term with no sentence labelled 1 either way has no distance and is left out.",
        *[f"Label rule for {row.scorer}: {row.rule} ({row.rule_source})." for row in scorer_table.itertuples()],
        f"Replicates: {REPLICATE_RULE.describe()}.",
        "Missing scores (failed requests, unparseable replies, sentences without a recorded score) are left out "
        "of every statistic and counted (n_missing, coverage); nothing is imputed. A pair whose control's score "
        "is missing is missing. A sentence without a control (an uploaded one that no pairing rule matched: the "
        "corpus's pairing report names each with its reason) has no pair; it is counted apart (n_unpaired), not "
        "as missing.",
        f"Groups: {', '.join(groups)}"
        + (" (chosen in the settings)." if settings.groups else " (every group of the corpus)."),
        f"Distributions: counts in bins of {BIN_WIDTH:g} over each scorer's scale (−1 to 1 for sentiment, 0 to 1 "
        "for toxicity); values outside the scale are counted apart. Boxes: quartiles, whiskers at the minimum "
        "and maximum.",
    ]
    for fill in fills.to_dict(orient="records"):
        agreement = (f"on the {fill['n_compared']} sentences both scored, the largest |difference| is "
                     f"{fill['max_abs_diff']:.4g} (mean {fill['mean_abs_diff']:.4g}, r {fill['r']:.4g})"
                     if fill["n_compared"] else "no sentence was scored by both, so their agreement is unknown")
        notes.append(f"The controls of {fill['scorer']} have no score of their own: {fill['n_filled']} of its "
                     f"{fill['n_controls']} controls are scored by {fill['controls_from']} (the setting "
                     f"control_scores_from); {agreement}. Its cells compare one scorer's sentences with another's "
                     "controls: they measure the groups' effect only as far as the two agree.")
    imported = list(scorer_table.loc[scorer_table["imported"], "scorer"])
    if imported:
        notes.append(f"Imported (recorded) scores, not computed here: {', '.join(imported)}.")
    return notes


def analyse(corpus: pd.DataFrame, scores: pd.DataFrame, *, settings: AnalysisSettings) -> BitsAnalysis:
    """Seed 001 §4's Perturbation Sensitivity Analysis of every scorer, as the paper's tables.

    ``corpus``: one row per sentence (``key``, ``template``, ``emotion``, ``word``, ``group``, ``term``,
    ``control_key``); ``scores``: one row per scorer × unit × replicate (:data:`SCORE_COLUMNS`; ``value`` NaN
    when missing, with its ``reason``). Replicates are reduced by :data:`REPLICATE_RULE` (the mean of those
    present). Raises ``ValueError`` naming every problem of the settings or the input. With no scores at all
    the tables are empty.
    """
    missing_columns = [column for column in SCORE_COLUMNS if column not in scores.columns]
    if missing_columns:
        raise ValueError("; ".join([*settings.problems(), f"scores: missing column(s) {', '.join(missing_columns)}"]))
    scorer_table, scorer_problems = _scorer_table(scores, settings)
    problems = _input_problems(corpus, scores, settings) + scorer_problems
    if problems:
        raise ValueError("; ".join(problems))

    corpus_groups = [group for group in corpus["group"].drop_duplicates() if group != CONTROL]
    groups = list(settings.groups) or corpus_groups
    shown_corpus = corpus[corpus["group"].isin([*groups, CONTROL])]
    scorers = list(scorer_table["scorer"])
    orders = {"scorer": scorers, "template": list(corpus["template"].drop_duplicates()),
              "source": list(corpus["source"].drop_duplicates()) if "source" in corpus.columns else [],
              "group": [*groups, CONTROL, ALL_GROUPS], "term": list(corpus["term"].dropna().drop_duplicates())}

    values = scores.assign(value=pd.to_numeric(scores["value"], errors="coerce").astype(float))
    reduced = REPLICATE_RULE.reduce(values, ["scorer", "unit"], "value")
    reduced["value"] = reduced["value"].astype(float)
    unfilled = reduced
    reduced, fills = _fill_controls(reduced, corpus, settings.control_scores_from)
    reduced_scores = reduced.rename(columns={"unit": "key", "value": "score"})
    pairs = pair_with_controls(shown_corpus, reduced_scores)
    rules = {scorer: LabelRule(threshold, bool(inclusive)) for scorer, threshold, inclusive in zip(
        scorer_table["scorer"], scorer_table["rule_threshold"], scorer_table["rule_inclusive"], strict=True)}
    scorer_kinds = scorer_table.set_index("scorer")[["kind", "imported"]]

    sense = score_sense(pairs)
    tests = control_tests(pairs, test=settings.t_test)
    table7 = sense.merge(tests, on=["scorer", "group"], how="left").merge(
        scorer_kinds, left_on="scorer", right_index=True)
    # A group without a complete pair has no test row: no mark, and the note says why rather than nothing.
    why = _why_undefined(pairs, _missing_reasons(values))
    table7["mark"] = table7["mark"].fillna("")
    table7["test"] = table7["test"].fillna(settings.t_test)
    table7["n_bases"] = table7["n_bases"].fillna(0).astype(int)
    table7["note"] = [why.get((scorer, group), note if isinstance(note, str) else "")
                      for scorer, group, note in zip(table7["scorer"], table7["group"], table7["note"], strict=True)]
    table7 = table7[["scorer", "kind", "imported", "group", "score_sense", "n", "n_missing", "n_unpaired", "t", "df",
                     "p", "mark", "test", "n_bases", "mean_group", "mean_control", "note"]]
    labels = label_dist(pairs, rules) if not pairs.empty else pd.DataFrame(
        columns=["scorer", "group", "n_terms", "n_terms_undefined", "label_dist", "rule"])
    scored = reduced_scores.merge(shown_corpus, on="key", how="inner")

    tests_columns = ["test", "n_bases", "t", "df", "p", "mark", "note"]
    group_means = mean_scores(shown_corpus, reduced_scores, by=["group"]).merge(
        tests[["scorer", "group", *tests_columns]], on=["scorer", "group"], how="left")
    tables = {
        "scorers": scorer_table,
        "score_sense": _ordered(table7, orders),
        "label_dist": _ordered(labels, orders),
        "score_dev": _ordered(score_dev(pairs, ddof=settings.score_dev_ddof), orders),
        "template_means": _ordered(mean_scores(shown_corpus, reduced_scores, by=["template", "group"]), orders),
        "term_sense": _ordered(score_sense(pairs, by_term=True), orders),
        "group_means": _ordered(_with_marks(group_means), orders),
        "source_means": _ordered(_source_means(shown_corpus, reduced_scores, pairs, settings.t_test), orders),
        "distributions": _ordered(_distributions(scored, scorer_table), orders),
    }
    # Coverage counts each scorer's own scores: a control scored by another scorer is counted in control_fills.
    coverage, tables["missing"] = _coverage(corpus, values, unfilled, scorer_table)
    # The perturbed sentences of Table 7, summed over its cells, so the two tables count alike.
    per_scorer = sense.groupby("scorer")[["n", "n_missing", "n_unpaired"]].sum().rename(columns={
        "n": "n_pairs_complete", "n_missing": "n_pairs_missing"})
    coverage = coverage.merge(per_scorer, left_on="scorer", right_index=True, how="left")
    pair_columns = ["n_pairs_complete", "n_pairs_missing", "n_unpaired"]
    coverage[pair_columns] = coverage[pair_columns].fillna(0).astype(int)
    tables["coverage"] = coverage
    tables["control_fills"] = fills
    return BitsAnalysis(tables=tables, notes=tuple(_notes(settings, scorer_table, groups, fills)), settings=settings,
                        groups=tuple(groups), templates=tuple(orders["template"]))


def p_text(p: float | None) -> str:
    """An exact p-value as the dashboard prints it: three decimals, or two significant digits in scientific
    notation below 0.001 (so a very small p is not shown as 0.000); "—" when the test is undefined."""
    if p is None or not math.isfinite(p):
        return "—"
    return f"{p:.1e}" if p < 0.001 else f"{p:.3f}"


def headline(analysis: dict) -> Headline | None:
    """Table 7 (seed 001 §4): ScoreSense per scorer and group, n the sentence pairs, the note its t-test against
    the control (the paper's mark and p); None before the analysis."""
    sense = (analysis or {}).get("tables", {}).get("score_sense")
    if not sense:
        return None
    rows = tuple(HeadlineRow(row["scorer"], row["group"], row["score_sense"], n=row["n"],
                             note=" ".join(part for part in (row.get("mark") or "", f"p = {p_text(row['p'])}") if part))
                 for row in sense)
    return Headline("ScoreSense (Table 7)", "Group", "abs", rows)


def _index(records: list[dict], *keys: str) -> dict[tuple, dict]:
    return {tuple(record[key] for key in keys): record for record in records}


def _table6(records: list[dict], names: list[str], imported: dict, groups: list[str]) -> list[dict]:
    """Table 6's rows: per scorer, a cell per group and the control (the mean, its mark and p), None where the
    table has no value."""
    means = _index(records, "scorer", "group")
    return [{"scorer": name, "imported": imported[name],
             "cells": [means.get((name, group)) and {**means[(name, group)], "p_text": p_text(means[(name, group)].get("p"))}
                       for group in groups]}
            for name in names]


def dashboard_payload(analysis: BitsAnalysis | dict) -> dict:
    """What the BITS dashboard (``templates/auditapp/bits_dashboard.html``, ``static/auditapp/bits_dashboard.js``)
    draws, JSON-ready, from an analysis or its stored :meth:`BitsAnalysis.to_dict`: the paper's tables laid out
    as rows of cells in the shown order (a cell is None where the table has no value), the Figure 1 heatmap as
    a matrix, the distributions and coverage per scorer, the notes and settings. An empty dict (an audit not yet
    analysed) gives ``analysed`` False and empty sections."""
    data = analysis.to_dict() if isinstance(analysis, BitsAnalysis) else (analysis or {})
    tables = {name: data.get("tables", {}).get(name, []) for name in TABLES}
    scorers = tables["scorers"]
    names = [scorer["scorer"] for scorer in scorers]
    imported = {scorer["scorer"]: scorer["imported"] for scorer in scorers}
    kinds = {scorer["scorer"]: scorer["kind"] for scorer in scorers}
    groups = list(data.get("groups", []))
    with_control = [*groups, CONTROL]

    sense = _index(tables["score_sense"], "scorer", "group")
    controls_from = {fill["scorer"]: fill["controls_from"] for fill in tables["control_fills"]}
    table7 = [{"scorer": name, "imported": imported[name], "kind": kinds[name], "controls_from": controls_from.get(name),
               "cells": [sense.get((name, group)) and {**sense[(name, group)],
                                                      "p_text": p_text(sense[(name, group)]["p"])}
                         for group in groups]}
              for name in names]
    labels = _index(tables["label_dist"], "scorer", "group")
    deviations = _index(tables["score_dev"], "scorer", "group")
    rules = {scorer["scorer"]: scorer["rule"] for scorer in scorers}
    table8 = [{"scorer": name, "imported": imported[name], "rule": rules[name],
               "label_dist": [labels.get((name, group)) for group in groups],
               "score_dev": [deviations.get((name, group)) for group in [*groups, ALL_GROUPS]]}
              for name in names]

    means = _index(tables["template_means"], "scorer", "template", "group")
    table9_rows = []
    for template in data.get("templates", []):
        cells = []
        for name in names:
            scorer_cells = [means.get((name, template, group)) for group in with_control]
            # The paper marks a template's lowest sentiment in bold; for a toxicity scorer the highest toxicity
            # is the same direction of bias.
            present = [cell["mean_score"] for cell in scorer_cells[:-1] if cell and cell["mean_score"] is not None]
            extreme = (max(present) if kinds[name] == "toxicity" else min(present)) if present else None
            cells += [cell and {**cell, "extreme": cell["group"] != CONTROL and cell["mean_score"] == extreme}
                      for cell in scorer_cells]
        table9_rows.append({"template": template, "cells": cells})

    terms = _index(tables["term_sense"], "scorer", "group", "term")
    term_order = list(dict.fromkeys((record["group"], record["term"]) for record in tables["term_sense"]))
    table10 = [{"group": group, "term": term, "cells": [terms.get((name, group, term)) for name in names]}
               for group, term in term_order]

    group_means = _index(tables["group_means"], "scorer", "group")
    heatmap = {"scorers": names, "imported": [imported[name] for name in names], "groups": with_control,
               "z": [[(group_means.get((name, group)) or {}).get("mean_score") for group in with_control]
                     for name in names],
               "n": [[(group_means.get((name, group)) or {}).get("n") for group in with_control] for name in names]}

    table6 = _table6(tables["group_means"], names, imported, with_control)
    by_source: dict[str, list[dict]] = {}
    for record in tables["source_means"]:
        by_source.setdefault(record["source"], []).append(record)
    table6_sources = [{"source": source, "table_id": f"table-6-source-{index}",
                       "label": f"Table 6, {source or '(no source)'}",
                       "rows": _table6(records, names, imported, with_control)}
                      for index, (source, records) in enumerate(by_source.items())]
    distributions = [{"scorer": scorer["scorer"], "kind": scorer["kind"], "imported": scorer["imported"],
                      "scale": [scorer["scale_low"], scorer["scale_high"]],
                      "groups": [record for record in tables["distributions"] if record["scorer"] == scorer["scorer"]]}
                     for scorer in scorers]
    # An analysis stored before the pair counts were added has none: None, shown as "—".
    coverage = [{"n_pairs_complete": None, "n_pairs_missing": None, "n_unpaired": None, **record,
                 "imported": imported.get(record["scorer"], False),
                 "reasons": [{"reason": row["reason"], "n": row["n"]} for row in tables["missing"]
                             if row["scorer"] == record["scorer"]]}
                for record in tables["coverage"]]
    return {"analysed": bool(scorers), "groups": groups, "groups_with_control": with_control, "control": CONTROL,
            "templates": list(data.get("templates", [])), "scorers": scorers, "settings": data.get("settings", {}),
            "notes": list(data.get("notes", [])), "table_names": list(TABLES), "table7": table7, "table8": table8,
            "table9": {"scorers": names, "imported": [imported[name] for name in names], "rows": table9_rows},
            "table10": table10, "table6": table6, "table6_sources": table6_sources, "heatmap": heatmap, "distributions": distributions, "coverage": coverage}
