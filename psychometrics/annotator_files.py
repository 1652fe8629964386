"""Reading and validating files of annotator data (CSV, TSV, XLSX); pure Python + pandas, no Django.

Three shapes, each one row per line of the file (header on row 1, as a spreadsheet numbers rows):

``scores`` (one row per annotator)
    annotator, optionally team, and any of: AQ total (``aq``) with optional subscales (``aq_<subscale>``, the
    subscales of the study's AQ instrument), SATA total (``sata``), IAT D (``iat_d``, positive = more implicit
    bias, as ``psychometrics.iat``), optionally D600 (``iat_d600``) and the IAT flags (``iat_flagged_fast``,
    ``iat_error_rate``, ``iat_fast_fraction``). A blank cell is a score the annotator does not have (never
    imputed). Totals must lie in the range the study's instrument allows, subscales in theirs, and subscales
    that partition the total must add up to it; D scores lie in [−2, 2].
``answers`` (one row per answer)
    annotator, instrument (the slug of one of the study's instruments, or its role ``aq`` / ``sata``), item
    number, and the answer: ``response_index`` (0-based, as our export writes it) or ``response`` (the option's
    label, or its 1-based position in the instrument's options as Qualtrics codes it). Every item of the
    instrument must be answered: scores are defined only on complete answers (``psychometrics.instruments``).
``iat`` (one row per trial)
    annotator, block (1–7), trial, error (0/1), ``latency_correct_ms`` (to the correct key; the built-in error
    penalty scores it) and optionally ``latency_first_ms`` (to the first key; D600 and the 300 ms screen use
    it), ``pairing`` of the combined blocks (consistent / inconsistent), stimulus, stimulus_category,
    correct_side, first_key, as our IAT trial export writes them. Without a pairing column, option
    ``consistent_first`` says whether blocks 3–4 had the consistent pairing. The D score is computed by
    ``psychometrics.iat.iat_d_score``, the app's own; a file whose trials give no D score is refused.

Columns are found by name (case, spaces and hyphens ignored; the aliases below), or named in the mapping
(``columns``: field → file column). Columns not read are listed in a warning. Validation is all or
nothing: :func:`parse_annotator_file` returns everything or raises ``ItemFileError`` listing every problem
with its row and column. The study's side (which annotators it knows, which scores they already have,
its instruments) comes in a :class:`StudyContext`, so the same function checks a file against a study.
"""
from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field

import pandas as pd

from annotation.item_files import MAX_REPORTED_PROBLEMS, ImportProblem, ItemFileError, read_table_records
from psychometrics.iat import COMBINED_PRACTICE, COMBINED_TEST, CONSISTENT, INCONSISTENT, iat_d_score
from psychometrics.instruments import Instrument, score_responses
from psychometrics.page_input import MAX_IAT_LATENCY_MS

KINDS = ("scores", "answers", "iat")
ROLES = ("aq", "sata")
D_LIMIT = 2.0
N_IAT_BLOCKS = 7
COMBINED_BLOCKS = COMBINED_PRACTICE + COMBINED_TEST

_ANNOTATOR = ("annotator", "participant", "pseudonym", "annotator_id", "participant_id")
ALIASES: dict[str, dict[str, tuple[str, ...]]] = {
    "scores": {
        "annotator": _ANNOTATOR, "team": ("team",),
        "aq": ("aq", "aq_total", "aq50", "aq_50", "aq_score"), "sata": ("sata", "sata_total", "sata_score"),
        "iat_d": ("iat_d", "d", "d_score", "iat_d_score", "iat"), "iat_d600": ("iat_d600", "d600"),
        "iat_flagged_fast": ("iat_flagged_fast", "flagged_fast"), "iat_error_rate": ("iat_error_rate", "error_rate"),
        "iat_fast_fraction": ("iat_fast_fraction", "fast_fraction"),
    },
    "answers": {
        "annotator": _ANNOTATOR, "instrument": ("instrument", "scale", "questionnaire"),
        "item_number": ("item_number", "item", "item_no", "question"), "response_index": ("response_index",),
        "response": ("response", "response_text", "answer"),
    },
    "iat": {
        "annotator": _ANNOTATOR, "block": ("block", "block_number", "blocknum"),
        "trial": ("trial", "trial_number", "trial_index", "trialnum"), "error": ("error", "incorrect", "err"),
        "latency_correct_ms": ("latency_correct_ms", "latency", "latency_ms", "rt", "rt_ms"),
        "latency_first_ms": ("latency_first_ms",), "pairing": ("pairing",), "stimulus": ("stimulus",),
        "stimulus_category": ("stimulus_category",), "correct_side": ("correct_side",), "first_key": ("first_key",),
    },
}
REQUIRED = {"scores": ("annotator",), "answers": ("annotator", "instrument", "item_number"),
            "iat": ("annotator", "block", "trial", "error", "latency_correct_ms")}
IAT_TEXT_FIELDS = {"stimulus": 200, "stimulus_category": 20, "correct_side": 5, "first_key": 5}
_TRUE, _FALSE = {"1", "true", "yes", "y", "t"}, {"0", "false", "no", "n", "f"}


@dataclass(frozen=True)
class StudyContext:
    """What a file is checked against: the study's annotators and instruments, and the data already held.

    ``instruments`` maps the slug of each instrument in the study's flow to its definition, ``roles`` the roles
    ``aq`` / ``sata`` to a slug. ``held`` maps (pseudonym, instrument slug or ``"iat"``) to where the
    annotator's existing score comes from (e.g. "taken in the app"): importing over it is an error. ``teams``
    maps each annotator who is in a team other than the default one to that team: a file giving such an
    annotator another team is an error (eq. 5 normalises within a team; change it in the admin first).
    ``withdrawn`` and ``declined`` name the participants of whom nothing may be stored.
    """

    annotators: frozenset[str]
    withdrawn: frozenset[str] = frozenset()
    declined: frozenset[str] = frozenset()
    instruments: Mapping[str, Instrument] = field(default_factory=dict)
    roles: Mapping[str, str] = field(default_factory=dict)
    held: Mapping[tuple[str, str], str] = field(default_factory=dict)
    teams: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class QuestionnaireScore:
    """An instrument's total (and subscales) for one annotator, with its tier from the instrument."""

    total: float
    subscales: dict[str, float | None]
    tier: str


@dataclass(frozen=True)
class IATScore:
    """An imported D score with what the file says about it; None where the file has no value."""

    d: float
    d600: float | None = None
    error_rate: float | None = None
    fast_fraction: float | None = None
    flagged_fast: bool | None = None


@dataclass
class AnnotatorData:
    """Everything one annotator gets from the file: scores by instrument slug, an IAT, raw answers, trials."""

    annotator: str
    first_row: int
    team: str | None = None
    questionnaires: dict[str, QuestionnaireScore] = field(default_factory=dict)
    iat: IATScore | None = None
    answers: dict[str, dict[int, int]] = field(default_factory=dict)     # slug → item number → 0-based index
    trials: list[dict] = field(default_factory=list)                       # as psychometrics.models.IATTrial


@dataclass
class ParsedAnnotatorFile:
    kind: str
    annotators: list[AnnotatorData]
    n_rows: int
    columns: dict[str, str]
    encoding: str
    warnings: list[str]

    @property
    def counts(self) -> dict[str, int]:
        """How many of each thing the file brings: scores by instrument slug, IATs, answers, trials."""
        counts: Counter[str] = Counter()
        for data in self.annotators:
            counts.update(data.questionnaires.keys())
            counts["iat"] += data.iat is not None
            counts["answers"] += sum(len(answers) for answers in data.answers.values())
            counts["trials"] += len(data.trials)
        return {name: n for name, n in counts.items() if n}


class _Problems:
    def __init__(self) -> None:
        self.items: list[ImportProblem] = []

    def add(self, row: int | None, column: str | None, message: str) -> None:
        self.items.append(ImportProblem(row, column, message))

    def raise_if_any(self) -> None:
        if self.items:
            raise ItemFileError(self.items[:MAX_REPORTED_PROBLEMS], len(self.items))


def _normal(name: str) -> str:
    return re.sub(r"[\s\-]+", "_", name.strip().lower())


def _resolve_columns(kind: str, header: list[str], mapping: Mapping[str, str], extra: Mapping[str, tuple[str, ...]],
                     problems: _Problems) -> dict[str, str]:
    """field → file column, from the mapping or the aliases; unknown mapping fields and missing columns are problems."""
    aliases = {**ALIASES[kind], **extra}
    by_normal: dict[str, str] = {}
    for name in header:
        if not name:
            continue
        first = by_normal.setdefault(_normal(name), name)
        if first != name:
            # Columns are found whatever their case and spacing, so these two would be one: neither is chosen.
            problems.add(1, name, f"the columns '{first}' and '{name}' differ only in case, spaces or hyphens, so "
                                  "they cannot be told apart: rename or delete one")
    columns: dict[str, str] = {}
    for name, column in mapping.items():
        if name not in aliases:
            problems.add(None, None, f"the mapping names '{name}', which is not a field of a {kind} file "
                                     f"(fields: {', '.join(aliases)})")
        elif _normal(column) not in by_normal:
            problems.add(1, column, f"the {name} column '{column}' is not in the header")
        else:
            columns[name] = by_normal[_normal(column)]
    taken = set(columns.values())
    for name, names in aliases.items():
        if name in columns:
            continue
        found = next((by_normal[a] for a in names if a in by_normal and by_normal[a] not in taken), None)
        if found is not None:
            columns[name] = found
            taken.add(found)
    for name in REQUIRED[kind]:
        if name not in columns:
            problems.add(1, None, f"no {name} column: name one of {', '.join(ALIASES[kind][name])}, or choose the "
                                  "column in the mapping")
    return columns


def _number(text: str) -> float | str | None:
    """A cell as a finite number, None when blank, or an error message. Python's digit separators ("2_0") are
    not a spreadsheet's: a cell holding one is not a number."""
    if not text.strip():
        return None
    try:
        if "_" in text:
            raise ValueError(text)
        value = float(text.strip())
    except ValueError:
        return f"'{text}' is not a number"
    return value if math.isfinite(value) else f"'{text}' is not a finite number"


def _integer(text: str) -> int | str | None:
    value = _number(text)
    if value is None or isinstance(value, str):
        return value
    return int(value) if value.is_integer() else f"'{text}' is not a whole number"


def _boolean(text: str) -> bool | str | None:
    word = text.strip().lower()
    if not word:
        return None
    if word in _TRUE or word in _FALSE:
        return word in _TRUE
    return f"'{text}' is not 0 / 1 (or true / false)"


def _annotator_problem(name: str, context: StudyContext) -> str | None:
    if name in context.withdrawn:
        return f"annotator '{name}' has withdrawn from this study: their data was deleted and cannot be imported"
    if name in context.declined:
        return f"annotator '{name}' declined consent to this study: nothing of theirs can be stored"
    if name not in context.annotators:
        return (f"annotator '{name}' is not in this study: an import never creates annotators; import the items "
                "with their labels first (columns like A1_Score create annotator A1), or invite the participant")
    return None


class _Annotators:
    """The rows' annotators, each checked against the study once (reported on its first row only)."""

    def __init__(self, context: StudyContext, column: str, problems: _Problems) -> None:
        self.context, self.column, self.problems = context, column, problems
        self.known: dict[str, AnnotatorData] = {}
        self.refused: dict[str, int] = {}

    def get(self, row_number: int, row: dict[str, str]) -> AnnotatorData | None:
        name = row.get(self.column, "").strip()
        if not name:
            self.problems.add(row_number, self.column, "empty annotator")
            return None
        if name in self.known:
            return self.known[name]
        if name in self.refused:
            return None
        problem = _annotator_problem(name, self.context)
        if problem is not None:
            self.refused[name] = row_number
            self.problems.add(row_number, self.column, problem)
            return None
        self.known[name] = AnnotatorData(annotator=name, first_row=row_number)
        return self.known[name]


def _held_problem(context: StudyContext, annotator: str, what: str, label: str) -> str | None:
    source = context.held.get((annotator, what))
    if source is None:
        return None
    return f"annotator '{annotator}' already has {label} ({source}); delete that first to import another"


def _instrument_label(slug: str, context: StudyContext) -> str:
    role = next((r for r, s in context.roles.items() if s == slug), None)
    return f"{role.upper()} score ({slug})" if role else f"a {slug} score"


# ------------------------------------------------------------------------------------------------- scores


def _subscale_columns(context: StudyContext) -> dict[str, tuple[str, ...]]:
    aq = context.instruments.get(context.roles.get("aq", ""))
    return {f"aq_{name}": (f"aq_{name}",) for name in (aq.subscales if aq else ())}


def _parse_scores(rows, columns: dict[str, str], context: StudyContext, problems: _Problems) -> list[AnnotatorData]:
    for role in ROLES:
        if role in columns and role not in context.roles:
            problems.add(1, columns[role], f"the study has no instrument with the role {role.upper()}: add the "
                         f"instrument these totals come from to the study (its instruments, role {role.upper()}), "
                         "then import again")
    score_columns = [c for c in ("aq", "sata", "iat_d") if c in columns]
    if not score_columns:
        problems.add(1, None, "no score column: name at least one of aq, sata, iat_d (or choose them in the mapping)")
    problems.raise_if_any()
    annotators = _Annotators(context, columns["annotator"], problems)
    first_row: dict[str, int] = {}
    aq = context.instruments.get(context.roles.get("aq", ""))
    for row_number, row in rows:
        data = annotators.get(row_number, row)
        if data is None:
            continue
        if data.annotator in first_row:
            problems.add(row_number, columns["annotator"], f"annotator '{data.annotator}' appears twice (first on "
                                                           f"row {first_row[data.annotator]})")
            continue
        first_row[data.annotator] = row_number
        problems_before = len(problems.items)
        if "team" in columns and row[columns["team"]].strip():
            data.team = row[columns["team"]].strip()
            current = context.teams.get(data.annotator, data.team)
            if len(data.team) > 100:
                problems.add(row_number, columns["team"], "team longer than 100 characters")
            elif current != data.team:
                problems.add(row_number, columns["team"], f"annotator '{data.annotator}' is in team '{current}', "
                             f"not '{data.team}': the weights are normalised within a team (seed 000 eq. 5), so "
                             "change the annotator's team in the admin first if the file is right")
        for role in ROLES:
            if role in columns:
                _questionnaire_score(data, row_number, row, role, columns, context, problems)
        if "iat_d" in columns:
            _iat_score_cells(data, row_number, row, columns, context, problems)
        elif any(name in columns for name in ("iat_d600", "iat_flagged_fast", "iat_error_rate", "iat_fast_fraction")):
            problems.add(row_number, None, "IAT details without an iat_d column: the D score is needed")
        if not data.questionnaires and data.iat is None and len(problems.items) == problems_before:
            problems.add(row_number, None, f"no score for annotator '{data.annotator}': every score cell is empty")
        if aq is None or ("aq" in columns and row[columns["aq"]].strip()):
            continue
        for name in aq.subscales:
            column = columns.get(f"aq_{name}")
            if column and row[column].strip():
                problems.add(row_number, column, "an AQ subscale without an AQ total")
    return list(annotators.known.values())


def _questionnaire_score(data: AnnotatorData, row_number: int, row: dict, role: str, columns: dict,
                         context: StudyContext, problems: _Problems) -> None:
    column = columns[role]
    total = _number(row[column])
    if total is None:
        return
    if isinstance(total, str):
        problems.add(row_number, column, f"{role.upper()} total {total}")
        return
    if role == "aq" and not total.is_integer():
        # Every AQ item scores 0 or 1 (or a whole number of points): its totals are whole numbers.
        problems.add(row_number, column, f"AQ total {row[column].strip()} is not a whole number (AQ totals add up "
                                         "whole item scores)")
        return
    slug = context.roles[role]
    instrument = context.instruments[slug]
    low, high = instrument.total_range
    if not low <= total <= high:
        problems.add(row_number, column, f"{role.upper()} total {row[column].strip()} is outside {low}–{high}, the "
                                         f"range of the study's {slug}")
        return
    held = _held_problem(context, data.annotator, slug, _instrument_label(slug, context))
    if held:
        problems.add(row_number, column, held)
        return
    subscales: dict[str, float | None] = {}
    if role == "aq":
        ok = True
        for name, items in instrument.subscales.items():
            sub_column = columns.get(f"aq_{name}")
            value = _number(row[sub_column]) if sub_column else None
            if isinstance(value, str):
                problems.add(row_number, sub_column, f"AQ subscale {value}")
                ok = False
                continue
            if value is not None and not value.is_integer():
                problems.add(row_number, sub_column, f"AQ subscale {row[sub_column].strip()} is not a whole number")
                ok = False
                continue
            sub_low, sub_high = instrument.score_range(items)
            if value is not None and not sub_low <= value <= sub_high:
                problems.add(row_number, sub_column, f"{value:g} is outside {sub_low}–{sub_high}, the range of "
                                                     f"subscale {name}")
                ok = False
                continue
            subscales[name] = value
        partition = sorted(n for items in instrument.subscales.values() for n in items)
        given = [v for v in subscales.values() if v is not None]
        if ok and subscales and len(given) == len(subscales) \
                and partition == sorted(instrument.total_items) and not math.isclose(sum(given), total):
            problems.add(row_number, column, f"the AQ subscales add up to {sum(given):g}, not to the "
                                             f"total {total:g}")
        if not ok:
            return
    data.questionnaires[slug] = QuestionnaireScore(total=total, subscales=subscales,
                                                   tier=instrument.tier_for(total) or "")


def _iat_score_cells(data: AnnotatorData, row_number: int, row: dict, columns: dict, context: StudyContext,
                     problems: _Problems) -> None:
    values: dict = {}
    ok = True
    for name in ("iat_d", "iat_d600", "iat_error_rate", "iat_fast_fraction", "iat_flagged_fast"):
        column = columns.get(name)
        if column is None:
            continue
        value = _boolean(row[column]) if name == "iat_flagged_fast" else _number(row[column])
        if isinstance(value, str):
            problems.add(row_number, column, value)
            ok = False
        elif value is not None and name in ("iat_d", "iat_d600") and abs(value) > D_LIMIT:
            problems.add(row_number, column, f"{value:g} is not a D score (D lies between −2 and 2)")
            ok = False
        elif value is not None and name in ("iat_error_rate", "iat_fast_fraction") and not 0 <= value <= 1:
            problems.add(row_number, column, f"{value:g} is not a share between 0 and 1")
            ok = False
        else:
            values[name] = value
    if not ok:
        return
    if values.get("iat_d") is None:
        extra = [columns[n] for n in ("iat_d600", "iat_error_rate", "iat_fast_fraction", "iat_flagged_fast")
                 if values.get(n) is not None]
        if extra:
            problems.add(row_number, columns["iat_d"], f"IAT details ({', '.join(extra)}) without a D score")
        return
    held = _held_problem(context, data.annotator, "iat", "an IAT D score")
    if held:
        problems.add(row_number, columns["iat_d"], held)
        return
    data.iat = IATScore(d=values["iat_d"], d600=values.get("iat_d600"), error_rate=values.get("iat_error_rate"),
                        fast_fraction=values.get("iat_fast_fraction"), flagged_fast=values.get("iat_flagged_fast"))


# ------------------------------------------------------------------------------------------------ answers


def _instrument_slug(text: str, context: StudyContext) -> str | None:
    name = text.strip()
    if name in context.instruments:
        return name
    return context.roles.get(name.lower())


def _response_index(row: dict[str, str], columns: dict[str, str], instrument: Instrument
                    ) -> tuple[int | None, str, str | None]:
    """(0-based index, column read, problem) for one answer."""
    options = instrument.response_options
    if "response_index" in columns and row[columns["response_index"]].strip():
        column = columns["response_index"]
        index = _integer(row[column])
        if isinstance(index, str):
            return None, column, index
        if index is None or not 0 <= index < len(options):  # (never None: the cell is not empty)
            return None, column, f"response index {index} is not an option of {instrument.slug} (0–{len(options) - 1})"
        return index, column, None
    column = columns.get("response") or columns["response_index"]
    text = row[column].strip()
    if not text:
        return None, column, "empty answer: every item must be answered (scores are never imputed)"
    by_label = {option.casefold(): i for i, option in enumerate(options)}
    if text.casefold() in by_label:
        return by_label[text.casefold()], column, None
    position = _integer(text)
    if isinstance(position, int) and 1 <= position <= len(options):
        return position - 1, column, None
    listed = "; ".join(f"{i + 1} = {o}" for i, o in enumerate(options))
    return None, column, f"'{text}' is not an answer of {instrument.slug}: give the option's label or its number ({listed})"


def _parse_answers(rows, columns: dict[str, str], context: StudyContext, problems: _Problems) -> list[AnnotatorData]:
    if "response" not in columns and "response_index" not in columns:
        problems.add(1, None, "no answer column: name one response_index (0-based) or response (the option's label "
                              "or its 1-based number)")
    problems.raise_if_any()
    annotators = _Annotators(context, columns["annotator"], problems)
    first_row: dict[tuple[str, str, int], int] = {}
    group_rows: dict[tuple[str, str], int] = {}
    refused_groups: set[tuple[str, str]] = set()
    unknown_instruments: set[str] = set()
    for row_number, row in rows:
        data = annotators.get(row_number, row)
        instrument_text = row[columns["instrument"]].strip()
        slug = _instrument_slug(instrument_text, context)
        if slug is None:
            if instrument_text not in unknown_instruments:
                unknown_instruments.add(instrument_text)
                known = ", ".join([*context.instruments, *context.roles]) or "none: add the instruments to the study"
                problems.add(row_number, columns["instrument"], f"'{instrument_text}' is not an instrument of this "
                                                                f"study (known: {known})")
            continue
        if data is None:
            continue
        instrument = context.instruments[slug]
        group = (data.annotator, slug)
        if group not in group_rows:
            group_rows[group] = row_number
            held = _held_problem(context, data.annotator, slug, _instrument_label(slug, context))
            if held:
                problems.add(row_number, columns["instrument"], held)
                refused_groups.add(group)
        if group in refused_groups:
            continue
        number = _integer(row[columns["item_number"]])
        if number is None or isinstance(number, str) or number not in instrument.item_numbers:
            why = number if isinstance(number, str) else "empty" if number is None else \
                f"{instrument.slug} has no item {number}"
            problems.add(row_number, columns["item_number"], f"item number: {why}")
            continue
        key = (data.annotator, slug, number)
        if key in first_row:
            problems.add(row_number, columns["item_number"], f"annotator '{data.annotator}' answers {slug} item "
                                                             f"{number} twice (first on row {first_row[key]})")
            continue
        first_row[key] = row_number
        index, column, problem = _response_index(row, columns, instrument)
        if problem:
            problems.add(row_number, column, problem)
            continue
        assert index is not None  # an answer has an index or a problem
        data.answers.setdefault(slug, {})[number] = index
    for data in annotators.known.values():
        for slug, answers in data.answers.items():
            instrument = context.instruments[slug]
            missing = [n for n in instrument.item_numbers if n not in answers]
            if missing and (data.annotator, slug) not in refused_groups:
                shown = ", ".join(map(str, missing[:20])) + (" …" if len(missing) > 20 else "")
                problems.add(group_rows[(data.annotator, slug)], columns["item_number"],
                             f"annotator '{data.annotator}' has no answer to {len(missing)} item(s) of {slug}: "
                             f"{shown} (scores are defined only on complete answers)")
                continue
            score = score_responses(instrument, answers)
            assert score.total is not None  # every item is answered (checked above)
            data.questionnaires[slug] = QuestionnaireScore(total=score.total, subscales=dict(score.subscales),
                                                           tier=score.tier or "")
    return [data for data in annotators.known.values() if data.answers]


# ---------------------------------------------------------------------------------------------------- IAT


def _parse_trials(rows, columns: dict[str, str], context: StudyContext, consistent_first: bool | None,
                  problems: _Problems) -> list[AnnotatorData]:
    if "pairing" not in columns and consistent_first is None:
        problems.add(1, None, "no pairing column: add one (consistent / inconsistent for blocks 3, 4, 6 and 7), or "
                              "say whether blocks 3–4 had the consistent pairing (option consistent_first)")
    problems.raise_if_any()
    annotators = _Annotators(context, columns["annotator"], problems)
    first_row: dict[tuple[str, int, int], int] = {}
    refused: set[str] = set()
    for row_number, row in rows:
        data = annotators.get(row_number, row)
        if data is None:
            continue
        if data.first_row == row_number:
            held = _held_problem(context, data.annotator, "iat", "an IAT D score")
            if held:
                problems.add(row_number, columns["annotator"], held)
                refused.add(data.annotator)
        if data.annotator in refused:
            continue
        trial = _trial(row_number, row, columns, consistent_first, problems)
        if trial is None:
            continue
        key = (data.annotator, trial["block"], trial["trial"])
        if key in first_row:
            problems.add(row_number, columns["trial"], f"annotator '{data.annotator}' has block {trial['block']} "
                                                       f"trial {trial['trial']} twice (first on row {first_row[key]})")
            continue
        first_row[key] = row_number
        data.trials.append(trial)
    has_first = "latency_first_ms" in columns
    for data in annotators.known.values():
        if data.annotator in refused or not data.trials:
            continue
        frame = pd.DataFrame.from_records(data.trials)
        frame["pairing"] = frame["pairing"].replace("", None)
        try:
            builtin = iat_d_score(frame, error_penalty="builtin")
        except ValueError as error:
            problems.add(data.first_row, columns.get("pairing", columns["block"]),
                         f"annotator '{data.annotator}': {error}")
            continue
        if math.isnan(builtin.d):
            problems.add(data.first_row, columns["block"], f"annotator '{data.annotator}': no D score can be "
                         "computed from these trials (blocks 3 and 6, or 4 and 7, need trials of both pairings "
                         "under 10,000 ms with latencies that vary)")
            continue
        d600 = iat_d_score(frame, error_penalty="d600").d if has_first else None
        data.iat = IATScore(d=builtin.d, d600=None if d600 is None or math.isnan(d600) else d600,
                            error_rate=builtin.error_rate, fast_fraction=builtin.fast_fraction,
                            flagged_fast=builtin.flagged_fast)
    return [data for data in annotators.known.values() if data.iat is not None]


def _trial(row_number: int, row: dict, columns: dict, consistent_first: bool | None,
           problems: _Problems) -> dict | None:
    """One trial in the shape of psychometrics.models.IATTrial, or None (its problems reported)."""
    before = len(problems.items)
    block = _integer(row[columns["block"]])
    if block is None or isinstance(block, str) or not 1 <= block <= N_IAT_BLOCKS:
        problems.add(row_number, columns["block"], f"block: {block or 'empty'}" if isinstance(block, str | None)
                     else f"block {block} is not one of 1–{N_IAT_BLOCKS}")
    trial = _integer(row[columns["trial"]])
    if trial is None or isinstance(trial, str) or not 0 <= trial <= 32_767:
        problems.add(row_number, columns["trial"], f"trial: {trial or 'empty'}" if isinstance(trial, str | None)
                     else f"trial number {trial} is out of range")
    error = _boolean(row[columns["error"]])
    if not isinstance(error, bool):
        problems.add(row_number, columns["error"], f"error: {error or 'empty'}")
    latencies = {}
    for name in ("latency_correct_ms", "latency_first_ms"):
        if name not in columns:
            continue
        value = _number(row[columns[name]])
        if not isinstance(value, float) or not 0 <= value <= MAX_IAT_LATENCY_MS:
            why = value if isinstance(value, str) else "empty" if value is None else \
                f"{value:g} ms is outside 0–{MAX_IAT_LATENCY_MS} ms"
            problems.add(row_number, columns[name], f"latency: {why}")
        else:
            latencies[name] = value
    if len(latencies) == 2 and latencies["latency_first_ms"] > latencies["latency_correct_ms"]:
        problems.add(row_number, columns["latency_first_ms"], "the first key cannot come after the correct key")
    pairing = ""
    if isinstance(block, int) and block in COMBINED_BLOCKS:
        if "pairing" in columns:
            pairing = row[columns["pairing"]].strip().lower()
            if pairing not in (CONSISTENT, INCONSISTENT):
                problems.add(row_number, columns["pairing"], f"block {block} is a combined block: its pairing must be "
                             f"'{CONSISTENT}' or '{INCONSISTENT}', not '{row[columns['pairing']].strip()}'")
        else:
            pairing = CONSISTENT if (block <= 4) == consistent_first else INCONSISTENT
    texts = {}
    for name, length in IAT_TEXT_FIELDS.items():
        texts[name] = row[columns[name]].strip() if name in columns else ""
        if len(texts[name]) > length:
            problems.add(row_number, columns[name], f"longer than {length} characters")
    if len(problems.items) > before:
        return None
    correct = latencies["latency_correct_ms"]
    return {"block": block, "trial": trial, "pairing": pairing, "error": error, "latency_correct_ms": correct,
            # Without the first key's latency, it is unknown (never copied from the correct key's): the 300 ms
            # screen reads the correct key's and D600 is not computed (psychometrics.iat; a warning says so).
            "latency_first_ms": latencies.get("latency_first_ms"), **texts}


# --------------------------------------------------------------------------------------------------- entry


def parse_annotator_file(content: bytes, *, kind: str, file_format: str, context: StudyContext,
                         mapping: Mapping[str, str] | None = None, consistent_first: bool | None = None,
                         encoding: str | None = None) -> ParsedAnnotatorFile:
    """Read and check a whole file of annotator data against a study; all or nothing (module docstring).

    Raises ``ItemFileError`` listing every problem with its row and column: an unknown or withdrawn annotator,
    a value that is not a number or out of its range, a duplicated annotator (scores), item (answers) or trial
    (IAT), an incomplete questionnaire, trials that give no D score, a score the annotator already has, two
    columns whose names differ only in case or spacing, a team other than the annotator's assigned one.
    """
    if kind not in KINDS:
        raise ItemFileError([ImportProblem(None, None, f"unknown kind '{kind}': use one of {', '.join(KINDS)}")])
    table = read_table_records(content, file_format=file_format, encoding=encoding)
    header = list(table.rows[0][1]) if table.rows else []
    problems = _Problems()
    if not table.rows:
        problems.add(None, None, "the file has a header and no rows")
        problems.raise_if_any()
    extra = _subscale_columns(context) if kind == "scores" else {}
    columns = _resolve_columns(kind, header, mapping or {}, extra, problems)
    problems.raise_if_any()
    if kind == "scores":
        annotators = _parse_scores(table.rows, columns, context, problems)
    elif kind == "answers":
        annotators = _parse_answers(table.rows, columns, context, problems)
    else:
        annotators = _parse_trials(table.rows, columns, context, consistent_first, problems)
    problems.raise_if_any()
    warnings = list(table.warnings)
    unread = [h for h in header if h and h not in columns.values()]
    if unread:
        warnings.append(f"Columns not read: {', '.join(unread)}.")
    if kind == "iat" and "latency_first_ms" not in columns:
        warnings.append("No latency_first_ms column: D600 is not computed, and the 300 ms screen reads the latency "
                        "to the correct key.")
    return ParsedAnnotatorFile(kind=kind, annotators=annotators, n_rows=len(table.rows), columns=columns,
                               encoding=table.encoding, warnings=warnings)
