"""Codebook writes: the shipped defaults, creation from JSON or a REFI-QDA file, and saving an edit.

A codebook version that a round uses (a ``RoundLens`` points to it) or that the app shipped is never changed:
saving an edit to it makes version n+1 of the same lineage, so a round keeps coding under the version it started
with and a shipped default stays what the app shipped. Any other version is edited in place. An edit that
changes nothing stores nothing.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import PurePath

from django.db import transaction
from django.db.models import Max

from coding.codebooks import CodebookInvalid, CodebookSpec, CodeSpec, codebook_parse, default_codebooks
from coding.models import Code, Codebook, RoundLens
from coding.qdc import QDCInvalid, qdc_read


@dataclass(frozen=True)
class CodebookSaved:
    codebook: Codebook
    new_version: bool


def codebook_spec(codebook: Codebook) -> CodebookSpec:
    """What a stored version says, in the pure module's terms."""
    return CodebookSpec(
        name=codebook.name, description=codebook.description, source=codebook.source,
        codes=tuple(CodeSpec(name=code.name, definition=code.definition, examples=tuple(code.examples),
                             shortcut=code.shortcut, definition_is_ours=code.definition_is_ours)
                    for code in codebook.codes.order_by("position", "id")))


def codebook_frozen(codebook: Codebook) -> bool:
    """True when saving an edit must make a new version: a round uses this version, or the app shipped it."""
    return codebook.shipped or RoundLens.objects.filter(codebook=codebook).exists()


@transaction.atomic
def codebook_create(*, spec: CodebookSpec, created_by=None, lineage=None, version: int = 1,
                    shipped: bool = False, team=None) -> Codebook:
    """A new codebook version with its codes (a new lineage unless one is given), in ``team`` if given (else its
    creator's, :mod:`teams.signals`)."""
    extra = {"lineage": lineage} if lineage is not None else {}
    if team is not None:
        extra["team"] = team
    codebook = Codebook.objects.create(name=spec.name, description=spec.description, source=spec.source,
                                       version=version, shipped=shipped, created_by=created_by, **extra)
    _codes_store(codebook, spec)
    return codebook


def codebook_create_from_json(*, data: object, created_by=None) -> Codebook:
    """A new codebook from the JSON shape of :mod:`coding.codebooks`; raises ``CodebookInvalid`` (nothing stored)."""
    return codebook_create(spec=codebook_parse(data), created_by=created_by)


def codebook_import_qdc(*, content: bytes, filename: str, name: str = "", created_by=None) -> Codebook:
    """A new codebook from a REFI-QDA ``.qdc`` file (ATLAS.ti, MAXQDA, NVivo...). ``name`` overrides the one the
    file gives (its one set's name, else the file's name). Raises ``CodebookInvalid`` naming every problem with
    its place in the file; nothing is stored."""
    try:
        read = qdc_read(content, fallback_name=PurePath(filename).stem)
    except QDCInvalid as invalid:
        raise CodebookInvalid(list(invalid.problems)) from None
    data = {**read.data, "name": name or read.data["name"],
            "source": read.data["source"] or f"Imported from the REFI-QDA codebook file {filename}."}
    try:
        spec = codebook_parse(data)
    except CodebookInvalid as invalid:
        raise CodebookInvalid([read.problem_in_file(problem) for problem in invalid.problems]) from None
    return codebook_create(spec=spec, created_by=created_by)


@transaction.atomic
def codebook_save(*, codebook: Codebook, spec: CodebookSpec, saved_by=None) -> CodebookSaved:
    """Save an edit of ``codebook``: in place, or as the lineage's next version when the version is frozen
    (:func:`codebook_frozen`). An edit equal to the stored version stores nothing."""
    # Locks the lineage, so two edits of one used version cannot both take the same next number.
    list(Codebook.objects.select_for_update().filter(lineage=codebook.lineage).values_list("id", flat=True))
    codebook = Codebook.objects.get(pk=codebook.pk)
    if codebook_spec(codebook) == spec:
        return CodebookSaved(codebook=codebook, new_version=False)
    if codebook_frozen(codebook):
        latest = Codebook.objects.filter(lineage=codebook.lineage).aggregate(Max("version"))["version__max"]
        # A team's codebook keeps its team; a shipped one's next version goes to its editor's (teams.signals).
        return CodebookSaved(codebook=codebook_create(spec=spec, created_by=saved_by, lineage=codebook.lineage,
                                                      version=latest + 1, team=codebook.team), new_version=True)
    codebook.name, codebook.description, codebook.source = spec.name, spec.description, spec.source
    codebook.save(update_fields=["name", "description", "source"])
    codebook.codes.all().delete()
    _codes_store(codebook, spec)
    return CodebookSaved(codebook=codebook, new_version=False)


@transaction.atomic
def codebooks_sync_shipped() -> list[Codebook]:
    """The shipped defaults in the database, after every migrate (seed 000 §3.4, §4.3: three lenses).

    Idempotent: a default equal to its lineage's latest shipped version stores nothing; a default that changed
    since ships as the lineage's next version (the earlier ones, perhaps used by rounds, are left as they are).
    Returns the shipped version of each default, in lens order.
    """
    shipped = []
    for default in default_codebooks():
        versions = Codebook.objects.select_for_update().filter(lineage=default.lineage)
        last_shipped = versions.filter(shipped=True).order_by("-version").first()
        if last_shipped is not None and codebook_spec(last_shipped) == default.spec:
            shipped.append(last_shipped)
            continue
        latest = versions.aggregate(Max("version"))["version__max"] or 0
        shipped.append(codebook_create(spec=default.spec, lineage=default.lineage, version=latest + 1,
                                       shipped=True))
    return shipped


def _codes_store(codebook: Codebook, spec: CodebookSpec) -> None:
    Code.objects.bulk_create([
        Code(codebook=codebook, name=code.name, definition=code.definition, examples=list(code.examples),
             shortcut=code.shortcut, definition_is_ours=code.definition_is_ours, position=position)
        for position, code in enumerate(spec.codes)])
