"""Reads behind a study's dashboard: the study monitor (``annotation.monitor``) on top, then the weighted-vs-majority
analysis (seed 000 §3.2, Appendix B). Pure reads, no writes.

The analysis comes from the stored latest analysis (``annotation.study_analysis``): ``AnalysisRun`` for
the run's metadata, agreement and Cohen's kappa; ``ParticipantWeight`` for the annotators' scores, R
and W (seed 000 Appendix B, eqs. 1–5); ``ItemGroundTruth`` for the majority and weighted labels (eq. 6);
``ItemSetMember`` for the test and ICL example sets. A fixed number of queries whatever the study's
size: the lists of items (disagreements, items without a label on one side) are read a page at a time
(``ITEM_PAGE_SIZE`` rows, in study order, optionally filtered by a text in the item's id or sentence), their
totals come from the contingency table's counts, and the labels of the listed items are read in one query.

R components: R is the mean of the standardised scores that entered it (eq. 4), so an annotator's bar
is split into x̂_AQ/n, x̂_SATA/n and x̂_IAT/n, n the number of those scores (3 as a rule; fewer when an
instrument is left out for everyone because max = min, or under the "average" rule for missing scores).
The segments then add up to R exactly.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from urllib.parse import urlencode

from django.db.models import Case, Count, Exists, F, OuterRef, Q, QuerySet, Subquery, Sum, Value, When
from django.urls import reverse

from annotation.analysis import GROUPS
from annotation.models import (
    AnalysisRun,
    Assignment,
    Item,
    ItemGroundTruth,
    ItemSetMember,
    Label,
    LabelChange,
    ParticipantWeight,
    Study,
)
from annotation.monitor import StudyMonitor, study_monitor
from annotation.selectors import study_analysis_status
from psychometrics.models import IATSession, InstrumentScore, StudyInstrument

ITEM_PAGE_SIZE = 50
ITEM_LIST_IDS = ("disagreements", "ties")
LABEL_KEYS = (1, 0, None)   # rows and columns of the contingency table; None = no label
SET_ORDER = ("all", *GROUPS, "icl_a", "icl_b")
SET_DESCRIPTIONS = {
    "all": "test set: every annotator agrees",
    "high_aq": "test set: high-AQ annotators agree",
    "low_aq": "test set: low-AQ annotators agree",
    "low_bias": "test set: low-bias annotators agree",
    "high_bias": "test set: high-bias annotators agree",
    "icl_a": "ICL examples from the high_aq test set",
    "icl_b": "ICL examples from the low_aq test set",
}


@dataclass
class ItemRow:
    """An item listed on the dashboard: its text, both ground truths and every label as "pseudonym: value"."""

    item_id: int
    external_id: str
    preceding: str
    target: str
    following: str
    n_labels: int
    n_excluded: int
    majority_label: int | None
    majority_tie: bool
    n_weighted: int
    weighted_score: float | None
    weighted_label: int | None
    weighted_tie: bool
    labels: list[str] = field(default_factory=list)

    @property
    def reason(self) -> str:
        """Why an item has no label on one side (only meaningful for the ties list)."""
        reasons = []
        if self.majority_label is None:
            reasons.append("majority tie" if self.majority_tie else "no 0/1 label")
        if self.weighted_label is None:
            reasons.append("weighted tie" if self.weighted_tie else "no weighted annotator")
        return "; ".join(reasons)


@dataclass(frozen=True)
class ItemListQuery:
    """Which page of a list of items to show, and the text its items must contain (id or sentence; "" = all)."""

    page: int = 1
    text: str = ""


class ItemListQueryError(ValueError):
    """A page beyond the last one of a list (the message names the list, the page asked and the last page)."""


@dataclass
class ItemList:
    """One page of a list of items: ``total`` items in the list, ``matching`` of them contain ``text``."""

    rows: list[ItemRow]
    total: int
    matching: int = 0
    page: int = 1
    page_size: int = ITEM_PAGE_SIZE
    text: str = ""

    @property
    def n_pages(self) -> int:
        return max(1, -(-self.matching // self.page_size))

    @property
    def first(self) -> int:
        """The position (from 1) of the page's first row in the matching items."""
        return (self.page - 1) * self.page_size + 1 if self.rows else 0

    @property
    def last(self) -> int:
        return self.first + len(self.rows) - 1 if self.rows else 0


def _ground_truth(study: Study) -> QuerySet[ItemGroundTruth]:
    return ItemGroundTruth.objects.filter(item__study=study)


DISAGREE = Q(majority_label__isnull=False, weighted_label__isnull=False) & ~Q(majority_label=F("weighted_label"))
ONE_SIDE_MISSING = Q(majority_label__isnull=True) | Q(weighted_label__isnull=True)
ITEM_ROW_FIELDS = ("item_id", "item__external_id", "item__preceding", "item__target", "item__following",
                   "n_labels", "n_excluded", "majority_label", "majority_tie", "n_weighted", "weighted_score",
                   "weighted_label", "weighted_tie")


def _item_rows(queryset: QuerySet[ItemGroundTruth], *, offset: int, limit: int) -> list[ItemRow]:
    rows = queryset.order_by("item__position", "item_id").values_list(*ITEM_ROW_FIELDS)[offset:offset + limit]
    return [ItemRow(item_id, external_id, preceding, target, following, *rest)
            for item_id, external_id, preceding, target, following, *rest in rows]


def _item_list(list_id: str, queryset: QuerySet[ItemGroundTruth], *, total: int, query: ItemListQuery,
               page_size: int) -> ItemList:
    """A page of ``queryset``'s items; counts the matching items (one query) only when a text filters them."""
    matching = total
    if query.text:
        queryset = queryset.filter(Q(item__external_id__icontains=query.text) | Q(item__target__icontains=query.text))
        matching = queryset.count()
    items = ItemList([], total, matching, query.page, page_size, query.text)
    if query.page > items.n_pages:
        raise ItemListQueryError(f"{list_id}_page {query.page} is beyond the last page of this list "
                                 f"({items.n_pages}).")
    items.rows = _item_rows(queryset, offset=(query.page - 1) * page_size, limit=page_size)
    return items


def _attach_labels(rows: list[ItemRow]) -> None:
    """Every label of the listed items, "pseudonym: value" in pseudonym order, in one query."""
    by_item = {row.item_id: row for row in rows}
    if not by_item:
        return
    labels = (Label.objects.filter(item_id__in=list(by_item)).order_by("item_id", "participant__pseudonym")
              .values_list("item_id", "participant__pseudonym", "value"))
    for item_id, pseudonym, value in labels:
        by_item[item_id].labels.append(f"{pseudonym}: {value}")


def _label_key(value: int | None) -> str:
    return "none" if value is None else str(value)


def contingency_table(study: Study) -> dict:
    """Majority (rows) × weighted (columns) counts over the items with a ground truth, one query.

    ``cells[m][w]`` for m, w in "1", "0", "none"; with row and column totals and the number of items
    on which the two agree (same label, both present).
    """
    keys = [_label_key(k) for k in LABEL_KEYS]
    cells = {m: dict.fromkeys(keys, 0) for m in keys}
    counts = (_ground_truth(study).order_by().values("majority_label", "weighted_label")
              .annotate(n=Count("pk")).values_list("majority_label", "weighted_label", "n"))
    for majority, weighted, n in counts:
        cells[_label_key(majority)][_label_key(weighted)] += n
    row_totals = {m: sum(cells[m].values()) for m in keys}
    column_totals = {w: sum(cells[m][w] for m in keys) for w in keys}
    total = sum(row_totals.values())
    agree = cells["1"]["1"] + cells["0"]["0"]
    return {
        "keys": keys, "cells": cells, "row_totals": row_totals, "column_totals": column_totals, "total": total,
        "agree": agree, "disagree": cells["1"]["0"] + cells["0"]["1"],
        "rows": [{"key": m, "cells": [{"key": w, "n": cells[m][w]} for w in keys], "total": row_totals[m]}
                 for m in keys],
        "column_total_list": [column_totals[w] for w in keys],
    }


IMPORTED_SCORES = {"aq_imported": "AQ", "sata_imported": "SATA", "iat_imported": "IAT D"}


def _imported_flags(study: Study) -> dict[str, Exists]:
    """Whether an annotator's AQ, SATA and IAT D were imported from a file, as subqueries of the weights' query."""
    def role_score(role: str) -> Exists:
        return Exists(InstrumentScore.objects.filter(
            participant_id=OuterRef("participant_id"), source_import__isnull=False,
            instrument_id__in=StudyInstrument.objects.filter(study=study, role=role).values("instrument_id")))
    return {"aq_imported": role_score(StudyInstrument.Role.AQ), "sata_imported": role_score(StudyInstrument.Role.SATA),
            "iat_imported": Exists(IATSession.objects.filter(participant_id=OuterRef("participant_id"),
                                                            source_import__isnull=False))}


def _iat_measured() -> dict[str, Subquery]:
    """The annotator's IAT as measured, as subqueries of the weights' query: its input modality (keyboard, touch,
    mixed; empty when imported) and its D score, which the weights leave out when touch D does not enter them."""
    session = IATSession.objects.filter(participant_id=OuterRef("participant_id"))
    return {"iat_modality": Subquery(session.values("input_modality")[:1]),
            "iat_d_measured": Subquery(session.values("d_score")[:1])}


def iat_modality_counts(study: Study) -> dict[str, int]:
    """How many of the study's IATs were answered by keyboard, by touch, or by both (mixed), counting every
    session with a stored block; "unknown" counts the imported ones."""
    counts = dict(IATSession.objects.filter(participant__study=study, blocks_done__gt=0).order_by()
                  .values("input_modality").annotate(n=Count("pk")).values_list("input_modality", "n"))
    return {"keyboard": counts.get("keyboard", 0), "touch": counts.get("touch", 0),
            "mixed": counts.get("mixed", 0), "unknown": counts.get("", 0)}


def annotator_rows(study: Study) -> list[dict]:
    """One row per annotator of the latest analysis, with R split into its components (module docstring),
    ``imported``, the scores of the weights that came from a file (``psychometrics.annotator_imports``), e.g.
    ["AQ", "IAT D"], and the IAT's input modality and measured D (``_iat_measured``), read in the same query."""
    fields = ("participant__pseudonym", "participant__team", "aq", "sata", "iat_d", "aq_norm", "sata_norm",
              "iat_norm", "trust_raw", "weight", "included", "bias_index", *GROUPS)
    rows = []
    measured = ("iat_modality", "iat_d_measured")
    for values in (ParticipantWeight.objects.filter(participant__study=study)
                   .annotate(**_imported_flags(study), **_iat_measured())
                   .order_by("participant__pseudonym").values_list(*fields, *IMPORTED_SCORES, *measured)):
        row = dict(zip(("pseudonym", "team", *fields[2:]), values[:len(fields)], strict=True))
        flags = values[len(fields):len(fields) + len(IMPORTED_SCORES)]
        row["imported"] = [name for name, flag in zip(IMPORTED_SCORES.values(), flags, strict=True) if flag]
        row.update(zip(measured, values[len(fields) + len(IMPORTED_SCORES):], strict=True))
        row["iat_touch"] = row["iat_modality"] in ("touch", "mixed")
        norms = [row["aq_norm"], row["sata_norm"], row["iat_norm"]]
        present = [n for n in norms if n is not None]
        entered = row["trust_raw"] is not None and bool(present)
        for name, norm in zip(("aq_part", "sata_part", "iat_part"), norms, strict=True):
            row[name] = norm / len(present) if entered and norm is not None else None
        row["n_components"] = len(present) if entered else 0
        row["groups"] = [g for g in GROUPS if row[g]]
        rows.append(row)
    return rows


def item_set_sizes(study: Study) -> list[dict]:
    """Size and number of positive (1) labels of each stored item set, in a fixed order, one query."""
    counts = {name: (n, positive or 0) for name, n, positive in (
        ItemSetMember.objects.filter(study=study).order_by().values("set_name")
        .annotate(n=Count("pk"), positive=Sum(Case(When(label=1, then=Value(1)), default=Value(0))))
        .values_list("set_name", "n", "positive"))}
    names = [*SET_ORDER, *sorted(set(counts) - set(SET_ORDER))]
    rows = []
    for name in names:
        n, positive = counts.get(name, (0, 0))
        rows.append({"name": name, "description": SET_DESCRIPTIONS.get(name, ""), "n": n,
                     "n_positive": positive, "n_negative": n - positive})
    return rows


def _flatten(settings: dict, prefix: str = "") -> list[tuple[str, object]]:
    rows = []
    for key, value in settings.items():
        if isinstance(value, dict):
            rows.extend(_flatten(value, f"{prefix}{key}."))
        else:
            rows.append((f"{prefix}{key}", '""' if value == "" else value))
    return rows


def _agreement_rows(run: AnalysisRun) -> tuple[list[dict], list[str]]:
    """The agreement rows, each with ``note_number``: its Fleiss note's number in the list of distinct notes (one
    note, often the same for every row, is then written once under the table)."""
    keys = ("scope", "group", "n_annotators", "n_items", "n_labels", "krippendorff_alpha", "fleiss_kappa",
            "fleiss_note")
    notes: list[str] = []
    rows = []
    for stored in run.agreement:
        row = {k: stored.get(k) for k in keys}
        if row["fleiss_note"]:
            if row["fleiss_note"] not in notes:
                notes.append(row["fleiss_note"])
            row["note_number"] = notes.index(row["fleiss_note"]) + 1
        rows.append(row)
    return rows, notes


ROBUSTNESS_FLIP_LIMIT = 200


def robustness_context(study: Study, run: AnalysisRun, *, limit: int) -> dict:
    """The "Robustness" section (alternative ground truths): the stored alternatives' summary against the paper's
    weighted label, and the flipped items (the first ``limit`` per alternative, in study order) with their labels and a
    link to them in the admin. Three queries whatever the study's size: the items' positions, then the labels of the
    shown items only (at most ``limit`` per alternative), chosen before any label is read. ``available`` is False until
    they are stored, with ``status`` saying why: ``computing`` (their own task runs after the analysis; ``requested_at``
    is when it was asked), ``failed`` (``error``), or ``none`` (an analysis from before they existed)."""
    status = run.alternatives_status
    stored = run.alternatives or {}
    if status != "ready" or not stored.get("summary"):
        return {"available": False, "status": status, "requested_at": run.alternatives_requested_at,
                "error": run.alternatives_error}
    positions = dict(Item.objects.filter(study=study).values_list("external_id", "position"))
    by_alternative: dict[str, list[dict]] = {}
    for flip in sorted(stored.get("flipped", []), key=lambda f: (positions.get(f["item"], 0), f["item"])):
        by_alternative.setdefault(flip["alternative"], []).append(flip)
    shown = {name: flips[:limit] for name, flips in by_alternative.items()}
    # Labels only for the items shown: every alternative can flip most of a large study, and its labels are ~10⁵.
    labels_by_item: dict[str, list[str]] = {}
    for item, pseudonym, value in (
            Label.objects.filter(item__study=study, item__external_id__in={f["item"] for flips in shown.values()
                                                                          for f in flips})
            .order_by("participant__pseudonym").values_list("item__external_id", "participant__pseudonym", "value")):
        labels_by_item.setdefault(item, []).append(f"{pseudonym}: {value}")
    changelist = reverse("admin:annotation_label_changelist")
    groups = []
    for row in stored["summary"]:
        n_flipped = len(by_alternative.get(row["alternative"], []))
        groups.append({**row, "flips": [{**f, "labels": labels_by_item.get(f["item"], []),
                                         "url": f"{changelist}?{urlencode({'item__study__id__exact': study.id, 'q': f['item']})}"}
                                        for f in shown.get(row["alternative"], [])],
                       "n_flipped": n_flipped, "truncated": n_flipped > limit})
    return {"available": True, "status": status, "computed_at": run.alternatives_computed_at,
            "rows": groups, "notes": stored.get("notes", []),
            "crowdkit_seed": stored.get("settings", {}).get("crowdkit_seed")}


def annotator_notes(study: Study) -> dict[str, int]:
    """How many sentences annotators skipped or flagged, and how many labels they went back to and changed."""
    # Counted over assignments, in one query: only a label given on the page (never an imported one) can change.
    changed = Exists(LabelChange.objects.filter(label__participant_id=OuterRef("participant_id"),
                                                label__item_id=OuterRef("item_id")))
    return Assignment.objects.filter(item__study=study).aggregate(
        skipped=Count("id", filter=Q(skipped_at__isnull=False)), flagged=Count("id", filter=Q(flagged_at__isnull=False)),
        changed=Count("id", filter=Q(changed)))


def _times_chart(monitor: StudyMonitor) -> dict:
    """The completion-time histogram's bins for the page's script (minutes, counts)."""
    return {"bins": [{"start": b.start, "end": b.end, "n": b.n} for b in monitor.times.bins],
            "median_minutes": monitor.times.median / 60 if monitor.times.median is not None else None}


def study_dashboard_context(*, study: Study, queries: dict[str, ItemListQuery] | None = None,
                            page_size: int = ITEM_PAGE_SIZE) -> dict:
    """Everything the dashboard shows: the monitor's live counts, and the stored latest analysis (``run`` is None
    when there is none).

    ``queries`` picks the page and filter of each list of items by its id (``ITEM_LIST_IDS``; default: the
    first page, unfiltered). Raises ItemListQueryError for a page beyond a list's last.
    """
    queries = queries or {}
    run = AnalysisRun.objects.filter(study=study).first()
    analysis = study_analysis_status(study=study)
    notes = annotator_notes(study)
    monitor = study_monitor(study=study)
    if run is None:
        return {"study": study, "run": None, "analysis": analysis, "annotator_notes": notes, "monitor": monitor,
                "chart_data": {"times": _times_chart(monitor)}}
    annotators = annotator_rows(study)
    truth = _ground_truth(study)
    contingency = contingency_table(study)
    disagreements = _item_list("disagreements", truth.filter(DISAGREE), total=contingency["disagree"],
                               query=queries.get("disagreements", ItemListQuery()), page_size=page_size)
    ties = _item_list("ties", truth.filter(ONE_SIDE_MISSING),
                      total=contingency["total"] - contingency["agree"] - contingency["disagree"],
                      query=queries.get("ties", ItemListQuery()), page_size=page_size)
    _attach_labels(disagreements.rows + ties.rows)
    kappa = run.cohen_kappa or {}
    agreement, agreement_notes = _agreement_rows(run)
    chart_keys = ("pseudonym", "team", "aq", "sata", "iat_d", "weight", "trust_raw", "aq_part", "sata_part",
                  "iat_part", "included")
    return {
        "study": study,
        "run": run,
        "analysis": analysis,
        "annotator_notes": notes,
        "monitor": monitor,
        "annotators": annotators,
        "n_included": sum(1 for a in annotators if a["included"]),
        "n_imported": sum(1 for a in annotators if a["imported"]),
        "iat_modalities": iat_modality_counts(study),
        "contingency": contingency,
        "disagreements": disagreements,
        "ties": ties,
        "item_lists": [
            {"id": "disagreements", "items": disagreements, "show_reason": False,
             "title": "Items where the majority and weighted labels differ"},
            {"id": "ties", "items": ties, "show_reason": True,
             "title": "Items without a label on one side (ties)"},
        ],
        "agreement": agreement,
        "agreement_notes": agreement_notes,
        "n_annotator_pairs": len(kappa.get("annotators", [])) * (len(kappa.get("annotators", [])) - 1) // 2,
        "item_sets": item_set_sizes(study),
        "settings_rows": _flatten(run.settings or {}),
        "notes": list(run.notes or []),
        "robustness": robustness_context(study, run, limit=ROBUSTNESS_FLIP_LIMIT),
        "chart_data": {
            "times": _times_chart(monitor),
            "robustness": {"agreement": (run.alternatives or {}).get("agreement", {}),
                           "labels": {a["name"]: a["label"] for a in
                                      (run.alternatives or {}).get("settings", {}).get("alternatives", [])}},
            "annotators": [{k: a[k] for k in chart_keys} for a in annotators],
            "kappa": {"annotators": list(kappa.get("annotators", [])), "kappa": list(kappa.get("kappa", []))},
        },
    }
