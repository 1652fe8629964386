"""Every admin page of an owned model, walked as a researcher of another team (bob), a viewer (vera) and an editor (ed)
of team A: bob's changelists show none of A's rows and name none of A's objects, each of A's change, history and
delete pages (and every custom page under an object's URL) is not found for him exactly as a missing id is, and his
POSTs change nothing; vera gets the change page read-only and her POSTs change nothing; ed may not delete.

The ModelAdmins are those of ``admin.site._registry``, so an admin registered later is walked too (its model then
needs an object in ``world``, or it fails here)."""
from __future__ import annotations

import dataclasses

import pytest
from django.contrib import admin
from django.test import Client
from django.urls import URLPattern, reverse

from annotation.models import Label, Study
from annotation.services import items_import_file
from auditapp.models import LLMEndpoint
from auditapp.paradigms.bits.corpora import bits_corpus_generate
from coding.codebook_services import codebook_create, codebook_spec, codebooks_sync_shipped
from coding.round_services import round_create
from psychometrics.annotator_imports import annotator_import_submit
from psychometrics.models import IATSession, InstrumentScore, StudyInstrument
from teams.admin_scoping import TeamScopedAdmin, TeamScopedInline, owned
from teams.scoping import new_objects_in
from tests.auditapp.test_audit_dashboard_view import COMPLETED_PLAN, build_audit
from tests.factories import autalic_like_csv, make_study
from tests.psychometrics.test_annotator_imports import SCORES

pytestmark = pytest.mark.django_db

SECRET = "SECRET-A"

# Registered models that belong to no team: the app's shared material and the accounts (superusers' alone).
UNOWNED = {"auth.Group", "auth.User", "authtoken.TokenProxy", "auditapp.PromptTemplate", "auditapp.ItemVariant",
           "psychometrics.Instrument", "teams.Team", "teams.AccessEvent"}

OWNED_ADMINS = sorted(((model, model_admin) for model, model_admin in admin.site._registry.items() if owned(model)),
                      key=lambda pair: pair[0]._meta.label)


def _ids(pair) -> str:
    return pair[0]._meta.label


def test_every_registered_admin_is_team_scoped_or_of_an_unowned_model():
    for model, model_admin in admin.site._registry.items():
        label = model._meta.label
        if owned(model):
            assert isinstance(model_admin, TeamScopedAdmin), f"{label}'s admin is not team-scoped"
        else:
            assert label in UNOWNED, f"{label} is registered in the admin but neither owned nor known as unowned"
        for inline in model_admin.inlines:
            if owned(inline.model):
                assert issubclass(inline, TeamScopedInline), f"{inline.__name__} of {label} is not team-scoped"


@pytest.fixture
def world(two_teams, queued, shipped_instruments, settings):
    """One object of team A for each owned model with an admin, keyed by model."""
    settings.CELERY_TASK_ALWAYS_EAGER = False
    with new_objects_in(two_teams["a"]):
        study = make_study(team=two_teams["a"], name=f"{SECRET} study", slug="secret-a")
        StudyInstrument.objects.create(study=study, instrument=shipped_instruments["aq50"], role="aq", position=0)
        StudyInstrument.objects.create(study=study, instrument=shipped_instruments["sata_partial"], role="sata",
                                       position=1)
        item_import = items_import_file(study=study, filename=f"{SECRET}.csv", content=autalic_like_csv(4))
        assert item_import.status == "succeeded", item_import.errors
        annotator_import = annotator_import_submit(study=study, kind="scores", filename=f"{SECRET}-scores.csv",
                                                   content=SCORES)
        if not IATSession.objects.filter(participant__study=study).exists():
            IATSession.objects.create(participant=study.participants.order_by("id").first(), seed=1, stimuli={},
                                      design={})
        audit = build_audit(COMPLETED_PLAN, name=f"{SECRET} audit")
        corpus = bits_corpus_generate(spec=None, name=f"{SECRET} corpus")
        endpoint = LLMEndpoint.objects.create(name=f"{SECRET} endpoint", base_url="http://127.0.0.1:9",
                                              team=two_teams["a"])
        shipped = codebooks_sync_shipped()[0]
        codebook = codebook_create(spec=dataclasses.replace(codebook_spec(shipped), name=f"{SECRET} codebook"),
                                   team=two_teams["a"])
        coding_round = round_create(audit=audit, codebooks=[codebook.id], name=f"{SECRET} round", sample_size=4,
                                    seed=1)
    labelled = Label.objects.filter(item__study=study).select_related("participant").first()
    objects = {obj._meta.model: obj for obj in (
        study, item_import, annotator_import, audit, corpus, endpoint, codebook, coding_round,
        study.items.first(), labelled.participant, labelled,
        InstrumentScore.objects.filter(participant__study=study).first(),
        IATSession.objects.filter(participant__study=study).first()) if obj is not None}
    for model, _ in OWNED_ADMINS:
        obj = objects.get(model)
        assert obj is not None, f"the walk has no object of {model._meta.label}: add one to the world fixture"
        assert obj._meta.model.objects.filter(pk=obj.pk).values_list(model.team_path, flat=True).get() \
            == two_teams["a"].pk, model._meta.label
    return objects


def login(two_teams, name: str) -> Client:
    client = Client()
    client.force_login(two_teams[name][0])
    return client


def snapshot(obj) -> dict:
    return type(obj)._default_manager.filter(pk=obj.pk).values().get()


def admin_url(model, view: str, *args) -> str:
    return reverse(f"admin:{model._meta.app_label}_{model._meta.model_name}_{view}", args=args)


def missing_pk(model) -> int:
    return (model._default_manager.order_by("-pk").values_list("pk", flat=True).first() or 0) + 1000


def not_found(response) -> bool:
    """The admin's "not found": a redirect to its index (Django's "doesn't exist" message) or a 404."""
    return response.status_code == 404 or (response.status_code == 302 and response["Location"] == reverse(
        "admin:index"))


@pytest.mark.parametrize("pair", OWNED_ADMINS, ids=_ids)
def test_another_team_sees_nothing_and_changes_nothing(pair, world, two_teams):
    model, model_admin = pair
    obj, bob = world[model], login(two_teams, "bob")
    before = snapshot(obj)
    changelist = bob.get(admin_url(model, "changelist"))
    assert changelist.status_code == 200
    assert not changelist.context["cl"].queryset.filter(pk=obj.pk).exists()
    assert SECRET not in changelist.content.decode()
    search = bob.get(admin_url(model, "changelist"), {"q": SECRET})
    assert search.status_code == 200 and not search.context["cl"].queryset.exists()
    if model_admin.has_add_permission(_request_of(two_teams["bob"][0])):
        add = bob.get(admin_url(model, "add"))
        assert SECRET not in add.content.decode(), f"{model._meta.label}'s add page offers A's objects"
    for view in ("change", "history", "delete"):
        response = bob.get(admin_url(model, view, obj.pk))
        assert not_found(response), (view, response.status_code)
        assert SECRET not in response.content.decode()
        posted = bob.post(admin_url(model, view, obj.pk), {"post": "yes", "name": "Bob's now"})
        # A model never changed in the admin refuses every POST alike (403), whether the id exists or not.
        unseen = bob.post(admin_url(model, view, missing_pk(model)), {"post": "yes", "name": "Bob's now"})
        assert posted.status_code == unseen.status_code and posted.status_code != 200, (view, posted.status_code)
        assert not_found(posted) or posted.status_code == 403
    # Every custom page under the object's URL answers as for an id that does not exist.
    for pattern in _object_urls(model_admin):
        url, missing = _custom_url(pattern, obj.pk), _custom_url(pattern, missing_pk(model))
        for method in ("get", "post"):
            seen, unseen = getattr(bob, method)(url), getattr(bob, method)(missing)
            assert seen.status_code == unseen.status_code, (url, method, seen.status_code, unseen.status_code)
            assert SECRET not in seen.content.decode()
    action = bob.post(admin_url(model, "changelist"), {"action": "delete_selected", "_selected_action": [obj.pk],
                                                       "post": "yes"})
    assert action.status_code in (200, 302)
    assert model._default_manager.filter(pk=obj.pk).exists()
    assert snapshot(obj) == before


@pytest.mark.parametrize("pair", OWNED_ADMINS, ids=_ids)
def test_a_viewer_reads_and_changes_nothing(pair, world, two_teams):
    model, model_admin = pair
    obj, vera = world[model], login(two_teams, "vera")
    before = snapshot(obj)
    assert vera.get(admin_url(model, "changelist")).context["cl"].queryset.filter(pk=obj.pk).exists()
    page = vera.get(admin_url(model, "change", obj.pk))
    assert page.status_code == 200
    assert 'name="_save"' not in page.content.decode()
    assert vera.post(admin_url(model, "change", obj.pk), {"name": "Vera's now"}).status_code == 403
    assert vera.post(admin_url(model, "delete", obj.pk), {"post": "yes"}).status_code == 403
    for pattern in _object_urls(model_admin):
        if not str(pattern.pattern).endswith(("download/", ".csv")):  # reads, a viewer's too
            assert vera.post(_custom_url(pattern, obj.pk), {}).status_code == 403, pattern
    assert snapshot(obj) == before


@pytest.mark.parametrize("pair", OWNED_ADMINS, ids=_ids)
def test_an_editor_may_not_delete(pair, world, two_teams):
    model, _ = pair
    obj, ed = world[model], login(two_teams, "ed")
    assert ed.get(admin_url(model, "delete", obj.pk)).status_code == 403
    assert ed.post(admin_url(model, "delete", obj.pk), {"post": "yes"}).status_code == 403
    ed.post(admin_url(model, "changelist"), {"action": "delete_selected", "_selected_action": [obj.pk], "post": "yes"})
    assert model._default_manager.filter(pk=obj.pk).exists()


def test_an_action_acts_only_on_the_rows_of_the_users_role(world, two_teams):
    """A viewer selecting A's audit and pausing it leaves it as it was, and is told why."""
    from auditapp.models import Audit

    audit = world[Audit]
    audit.status = Audit.Status.RUNNING
    audit.save(update_fields=["status"])
    response = login(two_teams, "vera").post(admin_url(Audit, "changelist"),
                                             {"action": "pause", "_selected_action": [audit.pk]}, follow=True)
    assert "needs the editor role" in response.content.decode()
    audit.refresh_from_db()
    assert audit.status == Audit.Status.RUNNING


def test_an_editor_of_several_teams_picks_the_team_of_a_new_study(two_teams):
    from teams.models import Membership

    Membership.objects.create(team=two_teams["b"], user=two_teams["ed"][0], role="editor")
    ed = login(two_teams, "ed")
    page = ed.get(admin_url(Study, "add")).content.decode()
    assert 'name="team"' in page
    form = {"name": "Ed's B study", "slug": "ed-b", "status": "draft", "label_scheme": "binary",
            "annotators_per_item": 3, "items_per_annotator": 10, "assignment_timeout_minutes": 60,
            "attention_check_pass_threshold": 0.5, "open_link_cap": 0, "completion_code": "DONE",
            "skipping": "reassign", "team": two_teams["b"].pk}
    inlines = {"study_instruments-TOTAL_FORMS": 0, "study_instruments-INITIAL_FORMS": 0,
               "analysis_settings-TOTAL_FORMS": 0, "analysis_settings-INITIAL_FORMS": 0}
    response = ed.post(admin_url(Study, "add"), {**form, **inlines})
    assert response.status_code == 302, response.context["adminform"].form.errors
    assert Study.objects.get(slug="ed-b").team == two_teams["b"]
    vera_page = login(two_teams, "vera").get(admin_url(Study, "add")).content.decode()
    assert 'name="team"' not in vera_page  # an editor of no team gets a personal team


def _request_of(user):
    from django.test import RequestFactory

    request = RequestFactory().get("/admin/")
    request.user = user
    return request


def _object_urls(model_admin) -> list[URLPattern]:
    """The admin's own URL patterns that name one object (the custom pages: imports, downloads, round changes)."""
    standard = {"change", "history", "delete"}
    patterns = []
    for pattern in model_admin.get_urls():
        if not isinstance(pattern, URLPattern) or not pattern.name:
            continue
        if pattern.name.rsplit("_", 1)[-1] in standard:
            continue
        if "object_id" in pattern.pattern.regex.groupindex or "round_id" in pattern.pattern.regex.groupindex:
            patterns.append(pattern)
    return patterns


def _custom_url(pattern: URLPattern, pk: int) -> str:
    kwargs = {name: (pk if name in ("object_id", "round_id") else 1) for name in pattern.pattern.regex.groupindex}
    return reverse(f"admin:{pattern.name}", kwargs=kwargs)


def test_the_launch_form_offers_the_users_and_the_shared_endpoints_only(world, two_teams):
    from auditapp.models import Audit

    endpoint = world[LLMEndpoint]
    endpoint.listed_models = [{"name": "secret-model"}]
    endpoint.save(update_fields=["listed_models"])
    bob = login(two_teams, "bob")
    assert "secret-model" not in bob.get(admin_url(Audit, "add")).content.decode()
    endpoint.shared_with.add(two_teams["b"])
    assert "secret-model" in bob.get(admin_url(Audit, "add")).content.decode()
    assert "secret-model" in login(two_teams, "ed").get(admin_url(Audit, "add")).content.decode()


def test_an_owner_deletes_and_an_editor_changes(world, two_teams):
    label = world[Label]
    alice = login(two_teams, "alice")
    assert alice.post(admin_url(Label, "delete", label.pk), {"post": "yes"}).status_code == 302
    assert not Label.objects.filter(pk=label.pk).exists()
    study = world[Study]
    page = login(two_teams, "ed").get(admin_url(Study, "change", study.pk))
    assert 'name="_save"' in page.content.decode()
