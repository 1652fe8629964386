"""Autosaves that reach the server at the same moment are all stored: the questionnaire page sends one request per
answer, and a participant who answers quickly has several in flight at once. Run against pytest-django's live
server, which answers each request in its own thread, over real HTTP. An autosave that reaches the server while
the form's submit is being stored waits for it, and cannot replace an answer the submit carried."""
from __future__ import annotations

import re
import threading
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest

from annotation.participation import participant_consent
from psychometrics import services
from psychometrics.models import Instrument, InstrumentResponse
from psychometrics.services import answer_save, questionnaire_session, questionnaire_submit
from tests.auditapp.db_race import finish, in_thread, postgresql_only, wait_until_blocked_on_a_lock
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


@postgresql_only
def test_an_autosave_arriving_during_the_submit_waits_and_cannot_replace_the_submitted_answer(monkeypatch):
    (participant,) = invite(flow_study())
    participant_consent(participant=participant)
    aq = Instrument.objects.get(slug="aq50")
    numbers = questionnaire_session(participant=participant, instrument=aq).item_order
    stored, release = threading.Event(), threading.Event()
    real_finish = services.questionnaire_finish

    def finish_when_released(**kwargs):
        stored.set()  # the submit's answers are written, the questionnaire not yet scored
        assert release.wait(30)
        return real_finish(**kwargs)
    monkeypatch.setattr(services, "questionnaire_finish", finish_when_released)

    submit = in_thread(lambda: questionnaire_submit(participant=participant, instrument=aq,
                                                    answers=dict.fromkeys(numbers, (1, None))))
    assert stored.wait(30)
    refused = []

    def late_autosave():
        try:
            answer_save(participant=participant, instrument=aq, item_number=numbers[0], response_index=3, rt_ms=700)
        except ValueError as error:
            refused.append(str(error))
    autosave = in_thread(late_autosave)
    wait_until_blocked_on_a_lock()
    release.set()
    finish(submit, autosave)
    assert refused == ["this questionnaire is already finished"]
    assert InstrumentResponse.objects.get(participant=participant, instrument=aq, item_number=numbers[0]
                                          ).response_index == 1
