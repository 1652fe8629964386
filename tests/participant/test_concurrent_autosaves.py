"""Autosaves that reach the server at the same moment are all stored: the questionnaire page sends one request per
answer, and a participant who answers quickly has several in flight at once. Run against pytest-django's live
server, which answers each request in its own thread, over real HTTP."""
from __future__ import annotations

import re
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest

from annotation.participation import participant_consent
from psychometrics.models import Instrument, InstrumentResponse
from psychometrics.services import questionnaire_session
from tests.participant.helpers import flow_study, invite

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]


def test_forty_answers_sent_at_once_by_eight_connections_are_all_stored(live_server):
    (participant,) = invite(flow_study())
    participant_consent(participant=participant)
    aq = Instrument.objects.get(slug="aq50")
    numbers = questionnaire_session(participant=participant, instrument=aq).item_order[:40]
    page_url = f"{live_server.url}/p/{participant.invite_token}/questionnaire/{aq.pk}/"
    with httpx.Client(timeout=30) as browser:
        page = browser.get(page_url, follow_redirects=True)
        assert page.status_code == 200, page.text[:300]
        token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page.text).group(1)

        def send(number: int) -> int:
            return browser.post(f"{page_url}answer/", json={"item": number, "response": 2, "rt_ms": 1500 + number},
                                headers={"X-CSRFToken": token, "Referer": page_url}).status_code

        with ThreadPoolExecutor(max_workers=8) as pool:
            statuses = list(pool.map(send, numbers))
    assert statuses == [200] * 40
    stored = InstrumentResponse.objects.filter(participant=participant, instrument=aq)
    assert sorted(stored.values_list("item_number", "rt_ms")) == sorted((n, 1500 + n) for n in numbers)
