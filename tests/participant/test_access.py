"""Participant access: tokens reach only their own pages, guessing is rate-limited, the open link, CSRF."""
from __future__ import annotations

import pytest
from django.core.cache import cache
from django.test import Client

from annotation.access import BAD_TOKEN_LIMIT
from annotation.models import Participant, Study
from tests.participant.helpers import flow_study, invite

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def clear_cache():
    cache.clear()
    yield
    cache.clear()


def test_tokens_are_long_and_random():
    study = flow_study()
    tokens = [p.invite_token for p in invite(study, 50)]
    assert len(set(tokens)) == 50 and min(len(t) for t in tokens) >= 32  # 24 random bytes → 192 bits


def test_unknown_token_is_404_and_guessing_is_rate_limited():
    client = Client()
    for n in range(BAD_TOKEN_LIMIT):
        assert client.get(f"/p/guess-{n}/").status_code == 404
    refused = client.get("/p/guess-more/")
    assert refused.status_code == 429 and int(refused["Retry-After"]) > 0
    assert Client(REMOTE_ADDR="10.9.9.9").get("/p/guess-elsewhere/").status_code == 404  # per address


def test_a_guesser_on_a_shared_address_does_not_lock_out_valid_links():
    study = flow_study()
    (participant, other) = invite(study, 2)
    shared = Client()  # every participant behind one proxy has the same address
    for n in range(25):
        shared.get(f"/p/guess-{n}/")
    assert shared.get("/p/guess-again/").status_code == 429
    assert shared.get(f"/p/{participant.invite_token}/").status_code == 302
    assert shared.get(f"/p/{participant.invite_token}/consent/").status_code == 200
    assert shared.post(f"/p/{other.invite_token}/consent/", {"consent": "yes"}).status_code == 302
    assert shared.get("/p/guess-after-a-valid-one/").status_code == 429


def test_a_participant_token_reaches_nothing_of_the_researcher_side():
    study = flow_study()
    (participant,) = invite(study)
    client = Client()
    client.post(f"/p/{participant.invite_token}/consent/", {"consent": "yes"})
    assert client.get("/api/studies/").status_code == 401
    assert client.get(f"/api/studies/{study.id}/labels/").status_code == 401
    assert client.get("/admin/")["Location"].startswith("/admin/login/")


def test_posts_need_the_csrf_token():
    study = flow_study()
    (participant,) = invite(study)
    strict = Client(enforce_csrf_checks=True)
    assert strict.post(f"/p/{participant.invite_token}/consent/", {"consent": "yes"}).status_code == 403
    participant.refresh_from_db()
    assert participant.started_at is None


def test_open_link_creates_participants_up_to_the_cap_and_keeps_prolific_ids():
    study = flow_study()
    study.open_link_enabled, study.open_link_cap = True, 2
    study.save()
    url = f"/join/{study.open_link_token}/"
    first = Client().get(url, {"PROLIFIC_PID": "pp1", "STUDY_ID": "st", "SESSION_ID": "se1"})
    assert first.status_code == 302
    participant = Participant.objects.get(prolific_pid="pp1")
    assert (participant.prolific_study_id, participant.prolific_session_id, participant.via_open_link) == ("st", "se1", True)
    assert first["Location"] == f"/p/{participant.invite_token}/"
    # The same Prolific participant on another device resumes; a new one takes the last place; then it is full.
    assert Client().get(url, {"PROLIFIC_PID": "pp1"})["Location"] == first["Location"]
    assert Client().get(url, {"PROLIFIC_PID": "pp2"}).status_code == 302
    full = Client().get(url, {"PROLIFIC_PID": "pp3"})
    assert full.status_code == 403 and "This study is full" in full.content.decode()
    assert Participant.objects.filter(study=study).count() == 2


def test_open_link_off_or_study_closed():
    study = flow_study()
    assert Client().get(f"/join/{study.open_link_token}/").status_code == 403
    study.open_link_enabled, study.status = True, Study.Status.CLOSED
    study.save()
    assert Client().get(f"/join/{study.open_link_token}/").status_code == 403
    assert Client().get("/join/not-a-token/").status_code == 404


def test_closed_study_shows_a_message_before_consent():
    study = flow_study()
    (participant,) = invite(study)
    study.status = Study.Status.CLOSED
    study.save()
    page = Client().get(f"/p/{participant.invite_token}/consent/").content.decode()
    assert "not open at the moment" in page


def test_open_link_of_a_keyboard_study_shows_the_notice_and_creates_a_participant_only_on_its_form():
    study = flow_study()
    study.open_link_enabled, study.open_link_cap, study.keyboard_required = True, 1, True
    study.save()
    url = f"/join/{study.open_link_token}/"
    query = {"PROLIFIC_PID": "pp1", "STUDY_ID": "st", "SESSION_ID": "se1"}
    client = Client(enforce_csrf_checks=True)
    for _ in range(3):  # a phone that reloads uses no place under the cap
        page = client.get(url, query)
        assert page.status_code == 200
    html = page.content.decode()
    assert 'id="keyboard-required"' in html and "You need a keyboard" in html
    assert 'id="no-keyboard" class="error" role="alert" hidden' in html
    # The form starts hidden (shown by the device check); without scripts the page says why.
    assert f'action="{url}?PROLIFIC_PID=pp1&amp;STUDY_ID=st&amp;SESSION_ID=se1" id="join-form" data-keyboard-gate hidden' in html
    assert "please turn\n  on JavaScript" in html
    assert not Participant.objects.filter(study=study).exists()

    token = client.cookies["csrftoken"].value
    joined = client.post(f"{url}?PROLIFIC_PID=pp1&STUDY_ID=st&SESSION_ID=se1", {"csrfmiddlewaretoken": token})
    participant = Participant.objects.get(study=study)
    assert joined.status_code == 302 and joined["Location"] == f"/p/{participant.invite_token}/"
    assert (participant.prolific_pid, participant.prolific_session_id, participant.via_open_link) == ("pp1", "se1", True)
    # The one place is taken: a newcomer is told before the notice; the same PROLIFIC_PID still gets back in.
    full = Client().get(url, {"PROLIFIC_PID": "pp2"})
    assert full.status_code == 403 and "This study is full" in full.content.decode()
    assert Client().get(url, {"PROLIFIC_PID": "pp1"}).status_code == 200
    assert Participant.objects.filter(study=study).count() == 1
