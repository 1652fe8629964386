"""The access log of exports through the API: every answer that carries a study's, an audit's, a round's, a corpus's
or a codebook's rows (a JSON page or the whole CSV) is one entry, with who, the team, the object, the kind and the
format; a refused or empty answer (404, not computed yet) is none."""
from __future__ import annotations

import pytest

from teams import access_log
from teams.models import AccessEvent
from tests.factories import token_client
from tests.teams.world import build_world_of_a


@pytest.fixture
def world_of_a(two_teams, queued):
    return build_world_of_a(two_teams)


STUDY_KINDS = ("items", "participants", "instrument-responses", "iat-trials", "ground-truth", "item-sets", "labels")
AUDIT_KINDS = {"responses": "responses/", "parse-quality": "parse-quality/", "table:metrics": "tables/metrics/",
               "metrics": "metrics/"}
ROUND_KINDS = ("excerpts", "codings", "analysis")


def exports(world: dict) -> list[tuple[str, object, str, bool]]:
    """(URL, target, kind, answers CSV too) of every export kind the world can answer."""
    study, audit, coding_round = world["study"], world["audit"], world["round"]
    return [
        *[(f"/api/studies/{study.id}/{kind}/", study, kind, True) for kind in STUDY_KINDS],
        (f"/api/studies/{study.id}/analysis/", study, "analysis", False),
        *[(f"/api/audits/{audit.id}/{path}", audit, kind, True) for kind, path in AUDIT_KINDS.items()],
        (f"/api/audits/{audit.id}/manifest/", audit, "manifest", False),
        (f"/api/audits/{audit.id}/requests/{world['request'].id}/", audit, "request", False),
        *[(f"/api/coding-rounds/{coding_round.id}/{kind}/", coding_round, kind, True) for kind in ROUND_KINDS],
        (f"/api/corpora/{world['corpus'].id}/units/", world["corpus"], "units", True),
        (f"/api/codebooks/{world['codebook'].id}/qdc/", world["codebook"], "qdc", False),
    ]


def test_each_export_kind_is_one_entry_per_answer(two_teams, world_of_a):
    vera = token_client(two_teams["vera"][1])
    for url, target, kind, csv_too in exports(world_of_a):
        for fmt in ("json", "csv") if csv_too else ("json",):
            before = AccessEvent.objects.count()
            response = vera.get(url, {"format": "csv"} if fmt == "csv" else {})
            assert response.status_code == 200, (url, fmt, response.content[:300])
            if fmt == "csv":
                b"".join(response.streaming_content)
            assert AccessEvent.objects.count() == before + 1, (url, fmt)
            event = AccessEvent.objects.order_by("-id").first()
            assert (event.action, event.username, event.user, event.team) == (
                access_log.EXPORT, "vera", two_teams["vera"][0], two_teams["a"]), url
            assert (event.target_kind, event.target_id) == (target._meta.label_lower, str(target.pk)), url
            assert event.detail == {"kind": kind, "format": "json" if url.endswith("/qdc/") else fmt}, url
    kinds = set(AccessEvent.objects.values_list("detail__kind", flat=True))
    assert kinds == {kind for _, _, kind, _ in exports(world_of_a)}


def test_every_page_read_is_an_export_and_a_refused_read_is_none(two_teams, world_of_a):
    study = world_of_a["import"].study  # nine labels
    vera, bob = token_client(two_teams["vera"][1]), token_client(two_teams["bob"][1])
    assert vera.get(f"/api/studies/{study.id}/labels/", {"page_size": 1}).status_code == 200
    assert vera.get(f"/api/studies/{study.id}/labels/", {"page_size": 1, "page": 2}).status_code == 200
    assert vera.get(f"/api/studies/{study.id}/labels/", {"page_size": 1, "page": 99}).status_code == 404
    assert AccessEvent.objects.filter(detail__kind="labels").count() == 2
    for url, _, _, _ in exports(world_of_a):
        assert bob.get(url).status_code == 404, url
    assert not AccessEvent.objects.filter(username="bob").exists()
    # Catalogues and states are not exports: the list of studies, a study, its imports.
    before = AccessEvent.objects.count()
    for url in ("/api/studies/", f"/api/studies/{study.id}/", f"/api/studies/{study.id}/imports/",
                "/api/audits/", f"/api/audits/{world_of_a['audit'].id}/progress/"):
        assert vera.get(url).status_code == 200, url
    assert AccessEvent.objects.count() == before


def test_alternatives_not_computed_are_no_export(two_teams, world_of_a):
    vera = token_client(two_teams["vera"][1])
    response = vera.get(f"/api/studies/{world_of_a['study'].id}/ground-truth-alternatives/")
    if response.status_code == 200:
        assert AccessEvent.objects.get().detail == {"kind": "ground-truth-alternatives", "format": "json"}
    else:
        assert response.json()["status"] in {"computing", "failed", "none"}
        assert not AccessEvent.objects.exists()
