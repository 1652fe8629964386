"""teams.scoping: what each researcher sees of every model that belongs to a team, and their role on an object."""
from __future__ import annotations

import pytest
from django.apps import apps
from django.db import connection
from django.test.utils import CaptureQueriesContext

from annotation.models import Item, Label, Participant, Study
from annotation.services import items_import_file
from auditapp.models import Audit, Corpus, CorpusUnit, LLMEndpoint
from coding.models import Code, Codebook, CodingRound
from psychometrics.models import Instrument, StudyInstrument
from teams import roles
from teams.models import Team
from teams.scoping import role_on, visible
from tests.factories import autalic_like_csv, make_participant_user, make_researcher, make_study

APPS = ("annotation", "auditapp", "coding", "psychometrics")
OWNED = {"annotation.Study", "auditapp.Audit", "auditapp.Corpus", "auditapp.LLMEndpoint", "coding.Codebook",
         "coding.CodingRound"}
# Global models, named in the teams package's docstring: they belong to no team.
GLOBAL = {"psychometrics.Instrument", "auditapp.PromptTemplate", "auditapp.ItemVariant", "auditapp.LLMReply",
          "auditapp.UpgradeStep", "auditapp.WorkerHeartbeat"}


def _models():
    return [model for model in apps.get_models() if model._meta.app_label in APPS]


def _reaches_owned(model, seen=()) -> bool:
    if model._meta.label in OWNED:
        return True
    for field in model._meta.get_fields():
        if (field.concrete and field.is_relation and (field.many_to_one or field.one_to_one)
                and field.related_model is not None and field.related_model._meta.app_label in APPS
                and field.related_model not in seen and _reaches_owned(field.related_model, (*seen, model))):
            return True
    return False


def _resolve(model, path: str):
    """The model a team_path ends at, walking its fields (fails on a name that is no relation)."""
    for name in path.split("__"):
        field = model._meta.get_field(name)
        assert field.is_relation and field.concrete, f"{model._meta.label}.{name} is not a forward relation"
        model = field.related_model
    return model


def test_every_model_that_belongs_to_a_team_names_its_path_and_the_path_reaches_the_team():
    for model in _models():
        label = model._meta.label
        if _reaches_owned(model):
            assert getattr(model, "team_path", None), f"{label} belongs to a team but has no team_path"
            assert _resolve(model, model.team_path) is Team, f"{label}.team_path does not end at teams.Team"
        else:
            assert label in GLOBAL, f"{label} reaches no team: name it in GLOBAL and in teams' docstring"
            assert not hasattr(model, "team_path")
    assert {m._meta.label for m in _models() if not hasattr(m, "team_path")} == GLOBAL


@pytest.mark.django_db
def test_every_scoped_model_filters_with_one_query():
    user, _ = make_researcher("alice")
    for model in _models():
        if hasattr(model, "team_path"):
            with CaptureQueriesContext(connection) as queries:
                list(visible(user, model.objects.all()))
            assert len(queries) == 1, model._meta.label


def _world(team: Team, tag: str) -> dict:
    """One of each owned object, and some of their dependents, in ``team``."""
    study = make_study(team=team)
    assert items_import_file(study=study, filename="f.csv", content=autalic_like_csv(3)).status == "succeeded"
    StudyInstrument.objects.create(study=study, instrument=Instrument.objects.get(slug="aq50"), role="aq", position=0)
    corpus = Corpus.objects.create(paradigm="bits", name=f"c-{tag}", content_hash=tag * 8, team=team)
    CorpusUnit.objects.create(corpus=corpus, key="u1", text="A unit.", position=0)
    endpoint = LLMEndpoint.objects.create(name=f"e-{tag}", base_url="https://api.openai.com", team=team)
    audit = Audit.objects.create(name=f"a-{tag}", study=study, team=team)
    codebook = Codebook.objects.create(name=f"cb-{tag}", team=team)
    Code.objects.create(codebook=codebook, name="WORDING", position=0)
    coding_round = CodingRound.objects.create(audit=audit, name=f"r-{tag}", team=team)
    return {"study": study, "corpus": corpus, "endpoint": endpoint, "audit": audit, "codebook": codebook,
            "round": coding_round}


@pytest.fixture
def worlds(two_teams, shipped_instruments):
    return {"a": _world(two_teams["a"], "a"), "b": _world(two_teams["b"], "b")}


def test_each_researcher_sees_only_their_teams_rows_of_every_model(two_teams, worlds):
    alice, bob = two_teams["alice"][0], two_teams["bob"][0]
    checked = 0
    for model in _models():
        if not hasattr(model, "team_path"):
            continue
        rows = model.objects.all()
        teams_of_rows = set(rows.values_list(model.team_path, flat=True))
        if not teams_of_rows - {None}:
            continue
        checked += 1
        for user, team in ((alice, two_teams["a"]), (bob, two_teams["b"])):
            seen = set(visible(user, rows).values_list(model.team_path, flat=True))
            assert seen <= {team.id, None}, model._meta.label
            assert team.id in seen, model._meta.label
    assert checked >= 12


def test_the_owned_objects_of_another_team_are_not_seen(two_teams, worlds):
    alice = two_teams["alice"][0]
    for kind, model in (("study", Study), ("corpus", Corpus), ("endpoint", LLMEndpoint), ("audit", Audit),
                        ("codebook", Codebook), ("round", CodingRound)):
        assert set(visible(alice, model.objects.all())) >= {worlds["a"][kind]}
        assert worlds["b"][kind] not in set(visible(alice, model.objects.all())), kind
    assert not visible(alice, Item.objects.filter(study=worlds["b"]["study"])).exists()
    assert not visible(alice, Label.objects.filter(item__study=worlds["b"]["study"])).exists()
    assert visible(alice, Participant.objects.filter(study=worlds["a"]["study"])).exists()


def test_the_least_role_asked_for(two_teams, worlds):
    vera, ed = two_teams["vera"][0], two_teams["ed"][0]
    study = worlds["a"]["study"]
    assert list(visible(vera, Study.objects.all())) == [study]
    assert not visible(vera, Study.objects.all(), roles.EDITOR).exists()
    assert list(visible(ed, Study.objects.all(), roles.EDITOR)) == [study]
    assert not visible(ed, Study.objects.all(), roles.OWNER).exists()
    assert role_on(vera, study) == "viewer" and role_on(ed, study) == "editor"
    assert role_on(two_teams["bob"][0], study) is None
    assert role_on(vera, Item.objects.filter(study=study).first()) == "viewer"


def test_superusers_see_everything_and_others_nothing(two_teams, worlds):
    root, _ = make_researcher("root")
    root.is_superuser = True
    root.save()
    assert visible(root, Study.objects.all()).count() == 2
    assert role_on(root, worlds["b"]["study"]) == "owner"
    mallory = make_participant_user()
    assert not visible(mallory, Study.objects.all()).exists()
    assert role_on(mallory, worlds["a"]["study"]) is None
    from django.contrib.auth.models import AnonymousUser

    assert not visible(AnonymousUser(), Study.objects.all()).exists()
    alice = two_teams["alice"][0]
    alice.is_active = False
    alice.save()
    assert not visible(alice, Study.objects.all()).exists()


def test_a_shared_endpoint_is_usable_but_not_writable_by_the_other_team(two_teams, worlds):
    alice, bob = two_teams["alice"][0], two_teams["bob"][0]
    endpoint = worlds["b"]["endpoint"]
    assert endpoint not in set(visible(alice, LLMEndpoint.objects.all()))
    endpoint.shared_with.add(two_teams["a"])
    endpoint.shared_with.add(Team.objects.create(name="C"))
    seen = list(visible(alice, LLMEndpoint.objects.all()))
    assert sorted(e.name for e in seen) == ["e-a", "e-b"]  # once each, whatever it is shared with
    assert endpoint not in set(visible(alice, LLMEndpoint.objects.all(), roles.EDITOR))
    assert role_on(alice, endpoint) == "viewer" and role_on(bob, endpoint) == "owner"


def test_shipped_codebooks_are_read_by_every_researcher_and_changed_by_none(two_teams, worlds):
    shipped = Codebook.objects.create(name="Shipped", shipped=True)
    code = Code.objects.create(codebook=shipped, name="TONE", position=0)
    for name in ("alice", "bob", "vera"):
        user = two_teams[name][0]
        assert shipped in set(visible(user, Codebook.objects.all()))
        assert code in set(visible(user, Code.objects.all()))
        assert shipped not in set(visible(user, Codebook.objects.all(), roles.EDITOR))
        assert role_on(user, shipped) == "viewer"
