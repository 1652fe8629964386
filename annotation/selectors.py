"""Reads of the annotation domain: studies with their counts, and the row sources of the exports.

Export selectors return ``(columns, queryset of tuples)``: the column names that every export of
that resource uses (CSV header, JSON keys) and a ``values_list`` queryset in the same order, which
the API iterates in chunks so an export of any size runs in flat memory.
"""
from __future__ import annotations

from django.db.models import Count, IntegerField, OuterRef, QuerySet, Subquery
from django.db.models.functions import Coalesce

from annotation.models import Item, Label, Participant, Study

ITEM_EXPORT = {
    "item": "external_id",
    "target": "target",
    "preceding": "preceding",
    "following": "following",
    "position": "position",
    "metadata": "metadata",
    "created_at": "created_at",
}
PARTICIPANT_EXPORT = {
    "participant": "pseudonym",
    "team": "team",
    "status": "status",
    "n_labels": "n_labels",
    "created_at": "created_at",
    "started_at": "started_at",
    "completed_at": "completed_at",
}
LABEL_EXPORT = {
    "participant": "participant__pseudonym",
    "item": "item__external_id",
    "value": "value",
    "rationale": "rationale",
    "created_at": "created_at",
}


def _count_of(model, **filters) -> Coalesce:
    subquery = (
        model.objects.filter(**filters).order_by().values(*filters.keys()).annotate(n=Count("pk")).values("n")
    )
    return Coalesce(Subquery(subquery, output_field=IntegerField()), 0)


def study_list() -> QuerySet[Study]:
    """All studies with n_items, n_participants and n_labels, counted in the same query."""
    return Study.objects.annotate(
        n_items=_count_of(Item, study=OuterRef("pk")),
        n_participants=_count_of(Participant, study=OuterRef("pk")),
        n_labels=_count_of(Label, item__study=OuterRef("pk")),
    ).order_by("-created_at", "-id")


def study_items_export(*, study: Study) -> tuple[list[str], QuerySet]:
    """The study's items in study order, one row per item, the item named by its external id."""
    queryset = Item.objects.filter(study=study).order_by("position", "id").values_list(*ITEM_EXPORT.values())
    return list(ITEM_EXPORT), queryset


def study_participants_export(*, study: Study) -> tuple[list[str], QuerySet]:
    """The study's participants by pseudonym (never by invite token), with their number of labels."""
    queryset = (
        Participant.objects.filter(study=study)
        .annotate(n_labels=_count_of(Label, participant=OuterRef("pk")))
        .order_by("pseudonym")
        .values_list(*PARTICIPANT_EXPORT.values())
    )
    return list(PARTICIPANT_EXPORT), queryset


def study_labels_export(*, study: Study) -> tuple[list[str], QuerySet]:
    """The study's labels, one row per label: participant pseudonym, item external id, value, ..."""
    queryset = (
        Label.objects.filter(item__study=study)
        .order_by("item__position", "item_id", "participant__pseudonym")
        .values_list(*LABEL_EXPORT.values())
    )
    return list(LABEL_EXPORT), queryset
