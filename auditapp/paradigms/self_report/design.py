"""A self-report audit's design, requests, replies and analysis (seed 000 §3.3, §4.4, Appendix A, Figure 2).

Pure: no Django. :mod:`auditapp.paradigms.self_report` builds forms and parses replies; this module says what
one audit asks and what its answers add up to, for the engine (:mod:`auditapp.engine`).

Design
======

An audit asks every model, for every replicate, every *form*: ``original:<slug>`` for each instrument (its
items in published order, own options) when the original form is chosen, and ``masked`` (one questionnaire of
all chosen instruments' items, IPIP fillers and the 52 dummy items, Appendix A) when the masked form is. Each
replicate of the masked form is one *administration* with its own item order, drawn from
:func:`masked_seed` (audit seed, replicate); every model answers the same administration, so models are
compared on the same order. An item with phrasing variants (a researcher-edited table) shows one of them,
drawn per administration (:func:`choose_variants`); the item keeps its published wording and its source's
licence note beside the one shown. The questionnaires are stored with the audit
(:func:`questionnaire_to_dict`) and read back from there, so an audit stays readable when the shipped pools or
the variants change.

Requests are :class:`~auditapp.paradigms.self_report.RequestSpec` units: ``item:<position>`` (one item per
request) or ``batch`` (the whole form, numbered); the manifest records the mode.

With structured output (an audit option) the reply is constrained to :func:`answer_schema`: ``{"answer":
"<option>"}`` for one item, ``{"answers": [{"n": 1, "answer": "<option>"}, ...]}`` for a batch. Such a reply is
read as the free-text reply it stands for (the option alone; one line ``n: option`` per answer) by the same
parsers, so the rules that judge an answer are the same with and without the constraint.

Scores and validity
===================

Per model × replicate × form the parsed answers are mapped back to the instruments' items
(:func:`~auditapp.paradigms.self_report.score_masked`) and scored with the human participants' scoring
(:func:`psychometrics.instruments.score_responses`): a total exists only when every item of the total is
answered (refusals and unparseable replies leave it undefined; nothing is imputed).

Validity (:class:`ValidityRule`, shown with the results) is judged per model and form over its
replicates: the share of the form's items refused, and on the masked form the dummy items endorsed (of 52;
seed 000 reports 44–48 as near-indiscriminate agreement and 1 as suppressed self-attribution). A model
breaking the rule is *flagged*; with ``action="exclude"`` it is also left out of the paired comparison. The
thresholds are ours: the paper reports the counts without a rule.

Comparison across models (§4.4, Figure 2)
=========================================

Per instrument: each model's score on each form (the mean over replicates with a total), its tier (of the
mean rounded to the nearest whole score, since tiers are whole-score ranges), the change masked − original
as % of the scale maximum; then, over the models with both scores that the rule does not exclude, the paired
t-test (``scipy.stats.ttest_rel``) and Cohen's d for paired samples (d_z), and per threshold (the
instrument's cut-offs, else the lower bounds of its tiers above the first) the models crossing it in each
direction.
"""
from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

import numpy as np

from auditapp.engine.headlines import Headline, HeadlineRow
from auditapp.paradigms.self_report.instruments import (
    FormItem,
    ItemPool,
    Labels,
    MaskedQuestionnaire,
    Mode,
    OriginalForm,
    ParsedLikert,
    RequestSpec,
    build_masked_questionnaire,
    build_masked_requests,
    build_original_requests,
    change_percent_of_max,
    paired_comparison,
    parse_batch_reply,
    parse_likert_reply,
    score_masked,
    threshold_crossings,
)
from psychometrics.instruments import Instrument, score_responses

FORMS = ("original", "masked")
MASKED = "masked"
ORIGINAL_PREFIX = "original:"

Form = OriginalForm | MaskedQuestionnaire


@dataclass(frozen=True)
class ValidityRule:
    """When a model's answers on a form are not taken at face value (module docstring)."""

    max_refusal_share: float = 0.5
    max_dummy_endorsed: int = 26
    action: Literal["flag", "exclude"] = "flag"

    def __post_init__(self):
        problems = []
        if not 0 <= self.max_refusal_share <= 1:
            problems.append("max_refusal_share is a share between 0 and 1")
        if not isinstance(self.max_dummy_endorsed, int) or self.max_dummy_endorsed < 0:
            problems.append("max_dummy_endorsed is a whole number ≥ 0")
        if self.action not in ("flag", "exclude"):
            problems.append("action is 'flag' or 'exclude'")
        if problems:
            raise ValueError("; ".join(problems))

    def describe(self) -> str:
        what = "flagged" if self.action == "flag" else "flagged and left out of the paired comparison"
        return (f"On a form, a model is {what} when it refuses more than {self.max_refusal_share:.0%} of the "
                f"form's items, or (masked form) endorses more than {self.max_dummy_endorsed} of the dummy items.")


@dataclass(frozen=True)
class Design:
    """What a self-report audit asks (module docstring)."""

    instruments: tuple[Instrument, ...]
    forms: tuple[str, ...] = FORMS
    mode: Mode = "item"
    labels: Labels | None = None
    title: bool = False  # the original form opens with the instrument's published name
    validity: ValidityRule = field(default_factory=ValidityRule)

    def problems(self) -> list[str]:
        problems = []
        if not self.instruments:
            problems.append("choose at least one instrument")
        slugs = [instrument.slug for instrument in self.instruments]
        if len(set(slugs)) != len(slugs):
            problems.append("choose each instrument at most once")
        if not self.forms or any(form not in FORMS for form in self.forms) or len(set(self.forms)) != len(self.forms):
            problems.append(f"forms: one or both of {list(FORMS)}, each once")
        if self.mode not in ("item", "batch"):
            problems.append("mode is 'item' (one item per request) or 'batch' (the whole form in one request)")
        elif self.mode == "batch" and self.labels not in (None, "text"):
            problems.append("a batch writes its options out: labels must be 'text'")
        elif self.mode == "item" and self.labels not in (None, "numbers", "letters", "text"):
            problems.append("labels are 'numbers', 'letters' or 'text'")
        return problems

    def form_ids(self) -> list[str]:
        ids = [ORIGINAL_PREFIX + instrument.slug for instrument in self.instruments] if "original" in self.forms else []
        return ids + ([MASKED] if MASKED in self.forms else [])

    def instrument(self, slug: str) -> Instrument:
        for instrument in self.instruments:
            if instrument.slug == slug:
                return instrument
        raise KeyError(slug)


def masked_seed(audit_seed: int, replicate: int) -> int:
    """The item-order seed of a replicate's masked administration: a hash of the audit seed and the replicate."""
    digest = hashlib.sha256(f"self-report:{audit_seed}:masked:{replicate}".encode()).digest()
    return int.from_bytes(digest[:8], "big") >> 1


def choose_variants(variants: Mapping[tuple[str, int], Sequence[str]], seed: int) -> dict[tuple[str, int], str]:
    """One wording per item that has variants, drawn with a generator of its own seeded by ``seed`` (so the
    draw does not change the item order, which comes from ``seed`` alone)."""
    rng = np.random.default_rng([seed, 1])
    return {target: texts[int(rng.integers(len(texts)))] for target, texts in sorted(variants.items()) if texts}


def build_questionnaires(design: Design, *, audit_seed: int, replicates: int, fillers: ItemPool, dummies: ItemPool,
                         variants: Mapping[tuple[str, int], Sequence[str]] | None = None
                         ) -> dict[int, MaskedQuestionnaire]:
    """One masked questionnaire per replicate (none when the masked form is not chosen). ``variants``: (source
    slug, item number) → rewordings; each administration shows one of an item's rewordings
    (:func:`choose_variants`). ValueError names a variant of an item the form does not hold."""
    if MASKED not in design.forms:
        return {}
    questionnaires = {}
    for replicate in range(replicates):
        seed = masked_seed(audit_seed, replicate)
        questionnaires[replicate] = build_masked_questionnaire(
            design.instruments, seed=seed, fillers=fillers, dummies=dummies,
            variants=choose_variants(variants or {}, seed))
    return questionnaires


def questionnaire_to_dict(questionnaire: MaskedQuestionnaire) -> dict:
    return {"seed": questionnaire.seed, "instruments": list(questionnaire.instruments),
            "filler_pool": questionnaire.filler_pool, "dummy_set": questionnaire.dummy_set,
            "items": [{**asdict(item), "options": list(item.options)} for item in questionnaire.items]}


def questionnaire_from_dict(data: Mapping) -> MaskedQuestionnaire:
    return MaskedQuestionnaire(seed=data["seed"], instruments=tuple(data["instruments"]),
                               filler_pool=data["filler_pool"], dummy_set=data["dummy_set"],
                               items=tuple(FormItem(**{**item, "options": tuple(item["options"])})
                                           for item in data["items"]))


def form_of(design: Design, form_id: str, questionnaires: Mapping[int, MaskedQuestionnaire],
            replicate: int) -> Form:
    if form_id == MASKED:
        return questionnaires[replicate]
    return OriginalForm.of(design.instrument(form_id.removeprefix(ORIGINAL_PREFIX)))


def requests_of(design: Design, form_id: str, form: Form) -> list[RequestSpec]:
    """The requests of a form, in presented order."""
    if isinstance(form, MaskedQuestionnaire):
        return build_masked_requests(form, design.mode, labels=design.labels)
    instrument = design.instrument(form.slug)
    return build_original_requests(instrument, design.mode, labels=design.labels,
                                   title=instrument.name if design.title else None)


ITEM_ANSWER_SCHEMA = {"type": "object", "properties": {"answer": {"type": "string"}}, "required": ["answer"],
                      "additionalProperties": False}
BATCH_ANSWER_SCHEMA = {
    "type": "object",
    "properties": {"answers": {"type": "array", "items": {
        "type": "object", "properties": {"n": {"type": "integer"}, "answer": {"type": "string"}},
        "required": ["n", "answer"], "additionalProperties": False}}},
    "required": ["answers"],
    "additionalProperties": False,
}


def answer_schema(mode: str) -> dict:
    """The JSON schema of a reply in that mode, for structured output (module docstring)."""
    return BATCH_ANSWER_SCHEMA if mode == "batch" else ITEM_ANSWER_SCHEMA


def structured_reply_text(text: str | None, *, batch: bool) -> str | None:
    """The free-text reply a reply valid against :func:`answer_schema` stands for, or None when the reply is not
    such a JSON object (it is then parsed as it is)."""
    try:
        data = json.loads(text or "")
    except ValueError:
        return None
    if not isinstance(data, dict):
        return None
    if not batch:
        return data["answer"] if isinstance(data.get("answer"), str) else None
    answers = data.get("answers")
    if not isinstance(answers, list) or not all(
            isinstance(entry, dict) and type(entry.get("n")) is int and isinstance(entry.get("answer"), str)
            for entry in answers):
        return None
    return "\n".join(f"{entry['n']}: {entry['answer']}" for entry in answers)


def parse_reply(spec: RequestSpec, text: str | None) -> dict[int, ParsedLikert]:
    """Position → parsed answer for every position the request asked about (a structured reply read as the free
    text it stands for)."""
    structured = structured_reply_text(text, batch=spec.unit_id == "batch")
    text = text if structured is None else structured
    if spec.unit_id == "batch":
        return dict(zip(spec.positions, parse_batch_reply(text, len(spec.positions), spec.options,
                                                          labels=spec.labels).values(), strict=True))
    return {spec.positions[0]: parse_likert_reply(text, spec.options[0], labels=spec.labels)}


def request_outcome(parsed: Mapping[int, ParsedLikert]) -> tuple[str, int | None, str]:
    """A request's own outcome (AuditRequest's fields): "label" with the option index for an answered item; for a
    batch "label" when every item is answered, else the most frequent other outcome with a count as reason."""
    if len(parsed) == 1:
        (answer,) = parsed.values()
        return ("label", answer.index, "") if answer.outcome == "answer" else (answer.outcome, None, answer.reason)
    answered = sum(answer.outcome == "answer" for answer in parsed.values())
    if answered == len(parsed):
        return "label", None, ""
    refused = sum(answer.outcome == "refusal" for answer in parsed.values())
    outcome = "refusal" if refused >= len(parsed) - answered - refused else "unparseable"
    return outcome, None, f"{answered} of {len(parsed)} items answered, {refused} refused"


# ---------------------------------------------------------------------------------------------- analysis

@dataclass(frozen=True)
class Administration:
    """The answers of one model to one form in one replicate (position → parsed answer; absent: not asked or
    its request failed)."""

    model: str
    replicate: int
    form_id: str
    answers: Mapping[int, ParsedLikert]


def threshold_descriptions(instrument: Instrument) -> dict[float, str]:
    """Threshold → what reaching it means, in increasing order: the instrument's cut-offs with their
    descriptions, else the lower bounds of its tiers above the first with the tier's label (module docstring)."""
    if instrument.cutoffs:
        return {float(value): instrument.cutoffs[value] for value in sorted(instrument.cutoffs, key=float)}
    return {float(tier.min): tier.label for tier in sorted(instrument.tiers, key=lambda tier: tier.min)[1:]}


def _whole_round(value: float) -> int:
    return math.floor(value + 0.5)


def _finite(value: float) -> float | None:
    return value if value is not None and math.isfinite(value) else None


def analyse(design: Design, administrations: Sequence[Administration],
            questionnaires: Mapping[int, MaskedQuestionnaire], models: Sequence[str]) -> dict:
    """Scores, validity, per-model changes and the paired comparison per instrument, as JSON-ready data."""
    rule = design.validity
    scores: list[dict] = []
    validity: dict[tuple[str, str], dict] = {}
    for administration in administrations:
        form = form_of(design, administration.form_id, questionnaires, administration.replicate)
        mapped = score_masked(form, {position: administration.answers.get(position) for position in
                                     (item.position for item in form.items)})
        counts = validity.setdefault((administration.model, administration.form_id), {
            "model": administration.model, "form": administration.form_id, "administrations": 0, "items": 0,
            "refusals": 0, "unparseable": 0, "missing": 0, "dummy_items": 0, "dummy_answered": 0,
            "dummy_endorsed": 0})
        counts["administrations"] += 1
        counts["items"] += len(form.items)
        for name, value in asdict(mapped.validity).items():
            counts[name] += value
        for slug, responses in mapped.responses.items():
            instrument = design.instrument(slug)
            score = score_responses(instrument, responses)
            scores.append({"model": administration.model, "replicate": administration.replicate,
                           "form": "masked" if administration.form_id == MASKED else "original",
                           "instrument": slug, "total": score.total, "tier": score.tier,
                           "n_answered": score.n_answered, "n_items": score.n_items,
                           "subscales": dict(score.subscales), "content_hash": score.content_hash})

    for counts in validity.values():
        per_administration = counts["administrations"]
        counts["refusal_share"] = counts["refusals"] / counts["items"] if counts["items"] else 0.0
        # Endorsements per administration, so the rule reads "of 52" whatever the number of replicates.
        counts["dummy_endorsed_mean"] = (counts["dummy_endorsed"] / per_administration
                                         if counts["dummy_items"] else None)
        reasons = []
        if counts["refusal_share"] > rule.max_refusal_share:
            reasons.append(f"refused {counts['refusal_share']:.0%} of the items")
        if counts["dummy_endorsed_mean"] is not None and counts["dummy_endorsed_mean"] > rule.max_dummy_endorsed:
            reasons.append(f"endorsed {counts['dummy_endorsed_mean']:g} of {counts['dummy_items'] // per_administration} "
                           "dummy items")
        counts["flagged"] = bool(reasons)
        counts["flag_reasons"] = reasons

    excluded = {(c["model"], c["form"]) for c in validity.values() if c["flagged"] and rule.action == "exclude"}
    instruments = [_compare(design, instrument, scores, models, excluded) for instrument in design.instruments]
    return {"rule": {**asdict(rule), "text": rule.describe()}, "mode": design.mode, "scores": scores,
            "validity": list(validity.values()), "instruments": instruments}


def _compare(design: Design, instrument: Instrument, scores: list[dict], models: Sequence[str],
             excluded: set[tuple[str, str]]) -> dict:
    low, high = instrument.total_range
    per_model = []
    for model in models:
        row: dict[str, Any] = {"model": model}
        for form in FORMS:
            totals = [s["total"] for s in scores if s["model"] == model and s["instrument"] == instrument.slug
                      and s["form"] == form and s["total"] is not None]
            mean = sum(totals) / len(totals) if totals else None
            row[form] = mean
            row[f"{form}_replicates"] = len(totals)
            row[f"{form}_tier"] = instrument.tier_for(_whole_round(mean)) if mean is not None else None
        form_ids = {"original": ORIGINAL_PREFIX + instrument.slug, "masked": MASKED}
        row["excluded"] = any((model, form_ids[form]) in excluded for form in FORMS)
        both = row["original"] is not None and row["masked"] is not None
        row["change"] = row["masked"] - row["original"] if both else None
        row["change_percent_of_max"] = (change_percent_of_max([row["original"]], [row["masked"]], low, high)[0]
                                        if both and high else None)
        row["tier_changed"] = both and row["original_tier"] != row["masked_tier"]
        per_model.append(row)

    paired = [row for row in per_model if row["change"] is not None and not row["excluded"]]
    comparison = None
    if len(paired) >= 2:
        result = paired_comparison([row["original"] for row in paired], [row["masked"] for row in paired])
        comparison = {"n": result.n, "mean_difference": result.mean_difference, "t": _finite(result.t),
                      "df": result.df, "p": _finite(result.p), "d_z": _finite(result.d_z),
                      "models": [row["model"] for row in paired]}
    crossings = threshold_crossings({row["model"]: row["original"] for row in paired},
                                    {row["model"]: row["masked"] for row in paired}, threshold_descriptions(instrument))
    return {"instrument": instrument.slug, "name": instrument.name, "partial": instrument.partial,
            "licence_note": instrument.licence_note, "scale": [low, high], "models": per_model,
            "paired": comparison,
            "thresholds": [{"threshold": c.threshold, "upward": list(c.upward), "downward": list(c.downward)}
                           for c in crossings.values()]}


def headline(analysis: Mapping[str, Any]) -> Headline | None:
    """Figure 2 (seed 000 §4.4): each model's change from the original to the masked form per instrument, as % of
    the scale maximum (so instruments of different scales compare); n the replicates scored on both forms."""
    instruments = analysis.get("instruments")
    if not instruments:
        return None
    rows = []
    for comparison in instruments:
        for row in comparison["models"]:
            notes = [note for note, applies in (("tier changed", row["tier_changed"]),
                                                ("left out of the paired comparison", row["excluded"])) if applies]
            if row["change"] is None:
                notes.insert(0, "no score on both forms")
            rows.append(HeadlineRow(row["model"], comparison["name"], row["change_percent_of_max"],
                                    n=min(row["original_replicates"], row["masked_replicates"]),
                                    note="; ".join(notes)))
    return Headline("Change masked − original form, % of the scale maximum (Figure 2)", "Instrument", "abs",
                    tuple(rows))
