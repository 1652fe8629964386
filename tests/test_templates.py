"""templates/base.html is the one head of every page outside the admin: checked on the template files (every
page template reaches it through its extends chain and no other writes a <head>) and on rendered pages (the
participant flow, home, the outage page, the study and audit dashboards)."""
from __future__ import annotations

import re
from pathlib import Path

import pytest
from django.conf import settings
from django.db import OperationalError
from django.test import Client, RequestFactory

from annotation.models import Study
from auditapp.middleware import DatabaseUnavailableMiddleware
from tests.auditapp.test_audit_dashboard_view import COMPLETED_PLAN, build_audit
from tests.factories import make_researcher
from tests.participant.helpers import answer_everything, flow_study, iat_block_posts, invite, page_config

TEMPLATES = Path(settings.BASE_DIR) / "templates"
EXTENDS = re.compile(r'{%\s*extends\s+"([^"]+)"\s*%}')
INCLUDE = re.compile(r'{%\s*include\s+"([^"]+)"')


def _page_templates() -> list[Path]:
    return [path for path in TEMPLATES.rglob("*.html") if path.relative_to(TEMPLATES).parts[0] != "admin"]


def test_every_page_template_reaches_the_site_base_and_no_other_writes_a_head():
    reached, includes = [], []
    for path in _page_templates():
        name = str(path.relative_to(TEMPLATES))
        text = path.read_text()
        if name != "base.html":
            assert not re.search(r"<head[\s>]|<!doctype|<html[\s>]|<body[\s>]", text, re.I), f"{name} writes its own document"
        chain = [name]
        while (parent := EXTENDS.search((TEMPLATES / chain[-1]).read_text())) is not None:
            chain.append(parent.group(1))
        if chain[-1] == "base.html":
            reached.append(name)
        else:
            includes.append(name)
    # Only fragments that other templates include stand alone; every page of the flow and every dashboard extends
    # base.
    included = {match for path in _page_templates() for match in INCLUDE.findall(path.read_text())}
    assert includes and set(includes) <= included, sorted(set(includes) - included)
    assert {"home.html", "unavailable.html", "participant/consent.html", "participant/iat.html",
            "annotation/dashboard.html", "auditapp/names_dashboard.html"} <= set(reached)


def _assert_site_head(html: str, *, noindex: bool = True) -> None:
    assert html.count("<head>") == 1 and html.count("</head>") == 1
    head = html[html.index("<head>"):html.index("</head>")]
    for tag in ('<meta charset="utf-8">', '<meta name="viewport" content="width=device-width, initial-scale=1">',
                '<meta name="color-scheme" content="light">', '<link rel="stylesheet" href="/static/site/site.css">'):
        assert tag in head
    assert ('<meta name="robots" content="noindex, nofollow">' in head) is noindex
    # Landmarks: one main, which the skip link (the first thing in the body) points to.
    assert html.count("<main") == 1
    skip = re.search(r'<body[^>]*>\s*<a class="skip-link" href="#([\w-]+)">', html)
    assert skip and f'<main id="{skip.group(1)}"' in html
    # Nothing inline a script-src/style-src 'self' policy would block: scripts have a src or are JSON data.
    assert "<style" not in html and " style=" not in html and " onclick=" not in html
    for script in re.findall(r"<script[^>]*>", html):
        assert "src=" in script or 'type="application/json"' in script, script


@pytest.mark.django_db
def test_every_participant_page_has_the_site_head_and_its_step():
    study = flow_study()
    participant, other = invite(study, count=2)
    client = Client()
    base = f"/p/{participant.invite_token}/"
    pages = {"consent/": "Step 1 of 5: Consent"}
    response = client.get(base + "consent/")
    _assert_site_head(response.content.decode())
    assert response["Referrer-Policy"] == "same-origin"
    assert pages["consent/"] in response.content.decode()
    answer_everything(client, participant)
    for page in ("done/", "withdraw/"):
        response = client.get(base + page)
        assert response.status_code == 200
        html = response.content.decode()
        _assert_site_head(html)
        assert 'id="study-step"' not in html

    # The steps between, as the other participant meets them: consent, AQ, SATA, IAT, labelling.
    other_client = Client()
    other_base = f"/p/{other.invite_token}/"
    other_client.post(other_base + "consent/", {"consent": "yes"})
    seen = []
    for _ in range(4):
        url = other_client.get(other_base)["Location"]
        html = other_client.get(url).content.decode()
        _assert_site_head(html)
        seen.append(re.search(r'<p class="progress" id="study-step">(.*?)</p>', html).group(1))
        if "/questionnaire/" in url:
            numbers = re.findall(r'data-item="(\d+)"', html)
            other_client.post(url, {f"item-{n}": 0 for n in numbers})
        elif url.endswith("/iat/"):
            for post in iat_block_posts(page_config(html)):
                other_client.post(other_base + "iat/block/", post, content_type="application/json")
        else:
            other_client.post(url)
    names = [setting.instrument.name for setting in study.study_instruments.order_by("position")]
    assert seen == [f"Step 2 of 5: {names[0]}", f"Step 3 of 5: {names[1]}", "Step 4 of 5: Reaction-time task",
                    "Step 5 of 5: Labelling"]
    html = other_client.get(other_base + "label/").content.decode()
    _assert_site_head(html)
    assert "Step 5 of 5: Labelling" in html and 'id="progress">Sentence 1 of 5<' in html
    study.status = Study.Status.CLOSED
    study.save(update_fields=["status"])
    _assert_site_head(Client().get(f"/p/{invite(study)[0].invite_token}/consent/").content.decode())


@pytest.mark.django_db
def test_home_dashboards_and_the_outage_page_have_the_site_head():
    anonymous = Client().get("/")
    _assert_site_head(anonymous.content.decode(), noindex=False)
    assert anonymous["Referrer-Policy"] == "same-origin"
    client = Client()
    client.force_login(make_researcher()[0])
    study = flow_study()
    _assert_site_head(client.get("/").content.decode(), noindex=False)
    dashboard = client.get(f"/studies/{study.pk}/dashboard/")
    assert dashboard.status_code == 200
    _assert_site_head(dashboard.content.decode())
    audit = build_audit(COMPLETED_PLAN)
    html = client.get(f"/audits/{audit.pk}/dashboard/").content.decode()
    _assert_site_head(html)
    assert '<main id="audit-dashboard"' in html

    outage = DatabaseUnavailableMiddleware(lambda request: None).process_exception(
        RequestFactory().get("/p/x/consent/"), OperationalError("down"))
    _assert_site_head(outage.content.decode())
