"""Codebook writes (coding/codebook_services.py): the defaults ship once after migrate, a changed default ships as
the next version, a used or shipped version is never edited (the edit is the next version and the round keeps
its own), an unused one is edited in place, imports store nothing when invalid."""
from __future__ import annotations

import dataclasses

import pytest

from auditapp.models import Audit
from coding import codebook_services
from coding.codebook_selectors import codebook_latest_versions, codebook_lineage_versions
from coding.codebook_services import (
    codebook_create_from_json,
    codebook_import_qdc,
    codebook_save,
    codebook_spec,
    codebooks_sync_shipped,
)
from coding.codebooks import CodebookInvalid, codebook_parse, default_codebooks
from coding.models import Code, Codebook, CodingRound, RoundLens
from coding.qdc import codebook_to_qdc

pytestmark = pytest.mark.django_db

LENS = {"name": "My lens", "codes": [{"name": "A", "definition": "first"}, {"name": "B"}]}


def use_in_a_round(codebook: Codebook) -> RoundLens:
    coding_round = CodingRound.objects.create(audit=Audit.objects.create(name="audited"), name="round")
    return RoundLens.objects.create(round=coding_round, codebook=codebook)


def test_the_defaults_ship_after_migrate_once_and_syncing_again_changes_nothing():
    # The test database was migrated: the post_migrate hook has shipped them.
    shipped = Codebook.objects.filter(shipped=True)
    assert sorted(shipped.values_list("name", flat=True)) == sorted(d.spec.name for d in default_codebooks())
    before = list(Codebook.objects.values_list("id", "version"))
    again = codebooks_sync_shipped()
    assert list(Codebook.objects.values_list("id", "version")) == before
    assert [codebook_spec(c) for c in again] == [d.spec for d in default_codebooks()]
    assert Code.objects.filter(codebook__shipped=True).count() == 7 + 7 + 4


def test_a_changed_default_ships_as_the_next_version_of_its_lineage(monkeypatch):
    first = codebooks_sync_shipped()[0]
    use_in_a_round(first)
    changed = default_codebooks()
    changed[0] = dataclasses.replace(changed[0], spec=dataclasses.replace(changed[0].spec, description="New."))
    monkeypatch.setattr(codebook_services, "default_codebooks", lambda: changed)
    second = codebooks_sync_shipped()[0]
    assert (second.lineage, second.version, second.shipped) == (first.lineage, 2, True)
    assert Codebook.objects.get(pk=first.pk).description != "New."
    assert codebooks_sync_shipped()[0].pk == second.pk


def test_editing_a_used_version_makes_the_next_version_and_the_round_keeps_its_own():
    v1 = codebook_create_from_json(data=LENS)
    lens = use_in_a_round(v1)
    edit = codebook_parse({**LENS, "codes": [*LENS["codes"], {"name": "C"}]})
    saved = codebook_save(codebook=v1, spec=edit)
    assert saved.new_version and (saved.codebook.lineage, saved.codebook.version) == (v1.lineage, 2)
    assert [c.name for c in saved.codebook.codes.all()] == ["A", "B", "C"]
    lens.refresh_from_db()
    assert lens.codebook_id == v1.pk and [c.name for c in v1.codes.all()] == ["A", "B"]
    # Editing v1 again takes the next free number, not 2.
    assert codebook_save(codebook=v1, spec=codebook_parse({**LENS, "name": "Other"})).codebook.version == 3
    assert [c.version for c in codebook_lineage_versions(v1)] == [3, 2, 1]
    assert codebook_latest_versions().get(lineage=v1.lineage).version == 3


def test_an_unused_version_is_edited_in_place_and_an_unchanged_edit_stores_nothing():
    codebook = codebook_create_from_json(data=LENS)
    saved = codebook_save(codebook=codebook, spec=codebook_parse({**LENS, "codes": [{"name": "Z"}]}))
    assert not saved.new_version and saved.codebook.pk == codebook.pk
    assert list(codebook.codes.values_list("name", "shortcut")) == [("Z", "1")]
    used = codebook_create_from_json(data=LENS)
    use_in_a_round(used)
    same = codebook_save(codebook=used, spec=codebook_spec(used))
    assert not same.new_version and Codebook.objects.filter(lineage=used.lineage).count() == 1


def test_a_shipped_version_is_never_edited_in_place():
    shipped = Codebook.objects.filter(shipped=True).first()
    saved = codebook_save(codebook=shipped, spec=dataclasses.replace(codebook_spec(shipped), name="Mine"))
    assert saved.new_version and not saved.codebook.shipped
    assert Codebook.objects.get(pk=shipped.pk).name != "Mine"


def test_an_invalid_codebook_or_file_stores_nothing():
    count = Codebook.objects.count()
    with pytest.raises(CodebookInvalid):
        codebook_create_from_json(data={"name": "x", "codes": [{"name": "A"}, {"name": "a"}]})
    with pytest.raises(CodebookInvalid) as raised:
        codebook_import_qdc(content=b"<!DOCTYPE x><CodeBook/>", filename="bad.qdc")
    assert "DOCTYPE" in str(raised.value)
    assert Codebook.objects.count() == count


def test_a_qdc_export_imports_as_a_new_codebook_equal_but_for_its_source():
    default = Codebook.objects.filter(shipped=True).order_by("id").first()
    content = codebook_to_qdc(codebook_spec(default), lineage=default.lineage, origin="auditapp test")
    imported = codebook_import_qdc(content=content, filename="lens.qdc")
    assert imported.lineage != default.lineage and not imported.shipped
    spec, original = codebook_spec(imported), codebook_spec(default)
    assert [(c.name, c.definition, c.examples, c.shortcut) for c in spec.codes] == [
        (c.name, c.definition, c.examples, c.shortcut) for c in original.codes]
    assert (spec.name, spec.source) == (original.name, original.source)
    renamed = codebook_import_qdc(content=content, filename="lens.qdc", name="Renamed")
    assert renamed.name == "Renamed"
