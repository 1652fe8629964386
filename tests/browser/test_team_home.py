"""Two teams' researchers open the home page in Debian Chromium: each sees their own team's studies and audits and
none of the other team's; the home page passes axe."""
from __future__ import annotations

import pytest
from django.conf import settings
from django.test import Client
from playwright.sync_api import expect

from auditapp.models import Audit
from teams.models import Membership, Team
from tests import team_defaults
from tests.browser.accessibility import assert_accessible
from tests.browser.staff import assert_no_sideways_scroll
from tests.factories import make_researcher, make_study

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.django_db(transaction=True)]


def home_of(user, browser_context, live_server):
    client = Client()
    client.force_login(user)
    browser_context.clear_cookies()
    browser_context.add_cookies([{"name": settings.SESSION_COOKIE_NAME,
                                  "value": client.cookies[settings.SESSION_COOKIE_NAME].value,
                                  "url": live_server.url}])
    page = browser_context.new_page()
    page.goto(f"{live_server.url}/")
    return page


def test_each_team_sees_only_its_own_studies_and_audits(live_server, browser_context, monkeypatch):
    monkeypatch.setitem(team_defaults.ENABLED, "on", False)  # the teams here are the test's own
    team_a, team_b = Team.objects.create(name="A"), Team.objects.create(name="B")
    (alice, _), (bob, _) = make_researcher("alice"), make_researcher("bob")
    Membership.objects.create(team=team_a, user=alice, role="owner")
    Membership.objects.create(team=team_b, user=bob, role="owner")
    study = make_study(team=team_a, name="Study of A")
    Audit.objects.create(name="Audit of A", study=study)
    make_study(team=team_b, name="Study of B")

    alices = home_of(alice, browser_context, live_server)
    expect(alices.locator("#studies")).to_contain_text("Study of A")
    expect(alices.locator("#audits")).to_contain_text("Audit of A")
    expect(alices.locator("#studies")).not_to_contain_text("Study of B")
    expect(alices.locator("#teams")).to_contain_text("A: owner")
    assert_accessible(alices, "home page with studies, audits and teams")
    assert_no_sideways_scroll(alices)

    bobs = home_of(bob, browser_context, live_server)
    expect(bobs.locator("#studies")).to_contain_text("Study of B")
    for table in ("#studies", "#audits"):
        expect(bobs.locator(table)).not_to_contain_text("of A")
    expect(bobs.locator("#audits")).to_contain_text("No audits of your teams yet")
    assert bobs.locator(f'a[href="/studies/{study.id}/dashboard/"]').count() == 0
