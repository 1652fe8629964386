"""Every researcher page of config.urls, walked with team A's real ids: a researcher of another team finds none of
them (404, never 403) and changes nothing, a viewer of A reads them and may not post (403, nothing changed), A's
owner reads and posts.

The walk iterates the URL resolver, leaving out the REST API and the admin (their own walks) only: a page added
without being declared here, either as a researcher page or as a participant's or coder's page (reached through
their own token or coder row, not a team's), fails the first test.
"""
from __future__ import annotations

import json

import pytest
from django.apps import apps
from django.test import Client
from django.urls import URLPattern, URLResolver, get_resolver, reverse

from annotation.models import AnalysisState
from psychometrics.models import StudyInstrument
from psychometrics.services import instruments_sync_shipped
from teams.scoping import new_objects_in
from tests.auditapp.test_audit_dashboard_view import COMPLETED_PLAN, build_audit
from tests.coding.test_exports import build_round
from tests.factories import make_study

pytestmark = pytest.mark.django_db

# A researcher page: (method, the role it needs, the query strings it is also walked with: its exports).
RESEARCHER_PAGES = {
    "home": ("GET", "viewer", ()),
    "study-dashboard": ("GET", "viewer", ("?disagreements_page=1",)),
    "study-dashboard-recompute": ("POST", "editor", ()),
    "study-dashboard-status": ("GET", "viewer", ()),
    "audit-dashboard": ("GET", "viewer", ()),
    "audit-compare": ("GET", "viewer", ()),
    "model-card": ("GET", "viewer", ()),
    "coding-round-results": ("GET", "viewer", ()),
    # A study's preview as a participant: read by any member, its posts included, which store nothing.
    **{f"study-preview:{page}": ("GET", "viewer", ())
       for page in ("consent", "questionnaire", "iat", "instructions", "label", "done")},
    "study-preview:answer": ("POST", "viewer", ()),
    "study-preview:iat-block": ("POST", "viewer", ()),
}
# The query a page needs, filled from team A's objects: the audits compared, the model of a card.
QUERIES = {"audit-compare": "?audits={analysed_audit_ids}", "model-card": "?model={model}"}
# Pages that name no object in their path and list only the user's own teams' (as home does).
LISTINGS = {"home", "model-card"}
# What the POST pages are sent (form-encoded when absent here).
POST_BODIES = {"study-preview:answer": {"item": 1, "response": 0},
               "study-preview:iat-block": {"block": 1, "trials": []}}
# Not researcher pages: the health check, the site's icon, and the pages annotators and coders reach through their own invite token or
# their own coder row in a round (a researcher who is no coder of the round gets 404 there: coding.access).
NOT_RESEARCHER_PAGES = {
    "healthz", "favicon",
    "participant:join", "participant:resume", "participant:consent", "participant:questionnaire",
    "participant:answer", "participant:iat", "participant:iat-block", "participant:instructions",
    "participant:label", "participant:done", "participant:withdraw", "participant:declined",
    *(f"coder-{way}-{page}" for way in ("link", "account") for page in ("resume", "intro", "excerpt", "save", "done")),
}
OWN_WALKS = ("api/", "admin/")  # tests/teams' API and admin walks
DATA_APPS = ("annotation", "auditapp", "coding", "psychometrics", "teams")


def page_patterns() -> dict[str, URLPattern]:
    """Every named URL pattern of config.urls outside the API and the admin, by its (namespaced) name."""
    found: dict[str, URLPattern] = {}

    def walk(patterns, namespace: str | None) -> None:
        for entry in patterns:
            if isinstance(entry, URLResolver):
                if namespace is None and str(entry.pattern) in OWN_WALKS:
                    continue
                walk(entry.url_patterns, entry.namespace or namespace)
            else:
                assert entry.name, f"the page {entry.pattern} has no name: name it and declare it here"
                found[f"{namespace}:{entry.name}" if namespace else entry.name] = entry
    walk(get_resolver("config.urls").url_patterns, None)
    return found


def test_every_page_is_declared_once():
    names = set(page_patterns())
    assert not set(RESEARCHER_PAGES) & NOT_RESEARCHER_PAGES
    assert names - set(RESEARCHER_PAGES) - NOT_RESEARCHER_PAGES == set(), "declare each new page above"
    assert set(RESEARCHER_PAGES) | NOT_RESEARCHER_PAGES == names, "a declared page is gone: remove it above"


def snapshot() -> dict[str, list[dict]]:
    """Every row of the apps that hold a team's data, to compare before and after a refused request."""
    return {model._meta.label: list(model._base_manager.order_by("pk").values())
            for name in DATA_APPS for model in apps.get_app_config(name).get_models()}


@pytest.fixture
def team_a_objects(two_teams):
    """A study, and a completed audit with a coding round: one of each thing a page shows."""
    with new_objects_in(two_teams["a"]):
        study = make_study(team=two_teams["a"], name="Secret study of A")
        instrument = instruments_sync_shipped()[0]
        StudyInstrument.objects.create(study=study, instrument=instrument, role="aq")
        coding_round = build_round(n_excerpts=4, coders={"ann": 0}, codings={"ann": {1: ["WORDING"]}})
        analysed = [build_audit(COMPLETED_PLAN, name=f"Analysed audit {n} of A") for n in (1, 2)]
    assert coding_round.team_id == coding_round.audit.team_id == two_teams["a"].id
    assert {audit.team_id for audit in analysed} == {two_teams["a"].id}
    audit_model = coding_round.audit.models.first().model
    return {"study_id": study.id, "instrument_id": instrument.id, "audit_id": coding_round.audit_id,
            "analysed_audit_ids": ",".join(str(audit.id) for audit in analysed), "model": audit_model,
            "round_id": coding_round.id,
            "names": (study.name, coding_round.audit.name, coding_round.name)}


def client_of(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def urls_of(name: str, objects: dict) -> list[str]:
    route = page_patterns()[name]
    params = list(route.pattern.converters)
    assert set(params) <= set(objects), f"{name}: no object of team A for {set(params) - set(objects)}"
    url = reverse(name, kwargs={param: objects[param] for param in params}) + QUERIES.get(name, "").format(**objects)
    return [url, *(url + query for query in RESEARCHER_PAGES[name][2])]


def request(client: Client, name: str, url: str):
    if RESEARCHER_PAGES[name][0] != "POST":
        return client.get(url)
    if name in POST_BODIES:
        return client.post(url, json.dumps(POST_BODIES[name]), content_type="application/json")
    return client.post(url)


@pytest.mark.parametrize("name", sorted(RESEARCHER_PAGES))
def test_another_team_finds_nothing_and_changes_nothing(two_teams, team_a_objects, name):
    bob = client_of(two_teams["bob"][0])
    before = snapshot()
    for url in urls_of(name, team_a_objects):
        response = request(bob, name, url)
        if name in LISTINGS:  # no id of A's in the path: it lists nothing of A's
            assert response.status_code == 200
            assert not any(shown in response.content.decode() for shown in team_a_objects["names"])
        else:
            assert response.status_code == 404, url
    assert snapshot() == before


@pytest.mark.parametrize("name", sorted(RESEARCHER_PAGES))
def test_a_viewer_reads_and_may_not_change(two_teams, team_a_objects, name):
    vera = client_of(two_teams["vera"][0])
    method, needs, _ = RESEARCHER_PAGES[name]
    before = snapshot()
    for url in urls_of(name, team_a_objects):
        response = request(vera, name, url)
        if needs == "viewer":
            assert response.status_code == 200, url
            if name == "home":
                assert all(shown in response.content.decode() for shown in team_a_objects["names"][:2])
        else:
            assert response.status_code == 403, url
    if method == "POST" or needs != "viewer":
        assert snapshot() == before


@pytest.mark.parametrize("name", sorted(RESEARCHER_PAGES))
def test_the_owner_reads_and_changes(two_teams, team_a_objects, name):
    alice = client_of(two_teams["alice"][0])
    for url in urls_of(name, team_a_objects):
        response = request(alice, name, url)
        method, needs, _ = RESEARCHER_PAGES[name]
        assert response.status_code == (302 if method == "POST" and needs != "viewer" else 200), url


def test_an_editor_recomputes_and_a_viewer_is_not_offered_it(two_teams, team_a_objects):
    url = reverse("study-dashboard", args=[team_a_objects["study_id"]])
    assert 'id="recompute"' not in client_of(two_teams["vera"][0]).get(url).content.decode()
    ed = client_of(two_teams["ed"][0])
    assert 'id="recompute"' in ed.get(url).content.decode()
    assert ed.post(reverse("study-dashboard-recompute", args=[team_a_objects["study_id"]])).status_code == 302
    assert AnalysisState.objects.get(study_id=team_a_objects["study_id"]).status == AnalysisState.Status.QUEUED


def test_the_audit_dashboard_lists_only_the_rounds_the_user_may_see(two_teams, team_a_objects):
    from coding.models import CodingRound

    CodingRound.objects.filter(pk=team_a_objects["round_id"]).update(team=two_teams["b"])
    html = client_of(two_teams["alice"][0]).get(reverse("audit-dashboard", args=[team_a_objects["audit_id"]]))
    assert reverse("coding-round-results", args=[team_a_objects["round_id"]]) not in html.content.decode()



def test_only_an_editor_is_offered_the_audits_controls(two_teams, team_a_objects):
    url = reverse("audit-dashboard", args=[team_a_objects["audit_id"]])
    assert 'data-action="pause"' not in client_of(two_teams["vera"][0]).get(url).content.decode()
    assert 'data-action="pause"' in client_of(two_teams["ed"][0]).get(url).content.decode()
