"""Codebook reads: the latest version of every codebook, a codebook's versions, whether a version is in use."""
from __future__ import annotations

from django.db.models import Count, Exists, OuterRef, QuerySet

from coding.codebooks import default_codebooks
from coding.models import Codebook, RoundLens


def codebook_versions_annotated() -> QuerySet[Codebook]:
    """Every version, with ``n_codes`` and ``in_use`` (a round's lens uses it)."""
    return (Codebook.objects.select_related("created_by")
            .annotate(n_codes=Count("codes"), in_use=Exists(RoundLens.objects.filter(codebook=OuterRef("pk")))))


def codebook_latest_versions(among: QuerySet[Codebook] | None = None) -> QuerySet[Codebook]:
    """The latest version of each codebook, by name; with ``among`` (the versions a user sees), the latest of those
    (a lineage whose newest version is another team's shows its latest visible one)."""
    versions = Codebook.objects.all() if among is None else among
    newer = versions.filter(lineage=OuterRef("lineage"), version__gt=OuterRef("version"))
    latest = codebook_versions_annotated().exclude(Exists(newer))
    if among is not None:
        latest = latest.filter(pk__in=among.values("pk"))
    return latest.order_by("name", "id")


def codebook_lineage_versions(codebook: Codebook) -> QuerySet[Codebook]:
    """Every version of ``codebook``'s lineage, newest first."""
    return codebook_versions_annotated().filter(lineage=codebook.lineage).order_by("-version")


def codebook_defaults_latest() -> list[Codebook]:
    """The latest version of each shipped codebook's lineage, in lens order
    (:func:`coding.codebooks.default_codebooks`): a new round's preselected lenses."""
    order = [default.lineage for default in default_codebooks()]
    latest = {codebook.lineage: codebook for codebook in codebook_latest_versions().filter(lineage__in=order)}
    return [latest[lineage] for lineage in order if lineage in latest]
