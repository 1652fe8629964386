"""Withdrawal wins against requests in flight, on the production shape: gunicorn with several workers and
threads, PostgreSQL. Each round fires a burst of label posts and a withdrawal for one participant at once;
after every acknowledged withdrawal the participant is withdrawn with nothing of theirs left, in the
database or in the exports, and a later label post stores nothing."""
from __future__ import annotations

import random
import re
import threading
import time

import httpx
import pytest

from annotation.models import Assignment, Item, Label, Participant, Study
from annotation.participation import instructions_read, participant_consent, participants_invite
from auditapp.services import researcher_create
from tests.integration.support import gunicorn, production_environment

pytestmark = [pytest.mark.integration, pytest.mark.slow, pytest.mark.django_db(transaction=True)]

ROUNDS = 20
LABEL_POSTS = 8


def _labelling_participant(study: Study) -> Participant:
    (participant,) = participants_invite(study=study, count=1)
    participant_consent(participant=participant)
    instructions_read(participant=participant)
    return participant


def _browser_credentials(page: str) -> dict:
    """The CSRF cookie and header of a browser that opened the participant's label page."""
    with httpx.Client() as browser:
        browser.get(page + "label/").raise_for_status()
        csrf = browser.cookies["csrftoken"]
    return {"cookies": {"csrftoken": csrf}, "headers": {"X-CSRFToken": csrf, "Referer": page}}


def _burst(page: str, participant: Participant, credentials: dict, *,
           withdraw_delay: float) -> tuple[httpx.Response, list[int]]:
    """A label post for each assigned item and, ``withdraw_delay`` seconds after they start, a withdrawal;
    returns the withdrawal's response and the label posts' status codes."""
    item_ids = list(Assignment.objects.filter(participant=participant).values_list("item_id", flat=True))
    start = threading.Barrier(len(item_ids) + 1)
    statuses: list[int] = []
    withdrawal: list[httpx.Response] = []

    def label(item_id: int) -> None:
        with httpx.Client(**credentials, timeout=30) as client:
            start.wait()
            statuses.append(client.post(page + "label/", data={"item": item_id, "value": 1}).status_code)

    def withdraw() -> None:
        with httpx.Client(**credentials, timeout=30) as client:
            start.wait()
            time.sleep(withdraw_delay)
            withdrawal.append(client.post(page + "withdraw/", data={"confirm": "yes"}))

    threads = [threading.Thread(target=label, args=(item_id,)) for item_id in item_ids]
    threads.append(threading.Thread(target=withdraw))
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    return withdrawal[0], statuses


def test_an_acknowledged_withdrawal_survives_label_posts_in_flight(tmp_path):
    env = production_environment(tmp_path)
    study = Study.objects.create(name="Race", slug="race", status=Study.Status.OPEN, iat_enabled=False,
                                 items_per_annotator=LABEL_POSTS, annotators_per_item=ROUNDS + 1)
    Item.objects.bulk_create([Item(study=study, external_id=f"i{n}", target=f"Target {n}.", position=n)
                              for n in range(LABEL_POSTS)])
    _, _, token = researcher_create(username="race-researcher")
    api = {"Authorization": f"Token {token}"}
    web, base = gunicorn(env=env, workers=2, threads=4)
    rng = random.Random(11)
    undone = []
    try:
        for round_number in range(ROUNDS):
            participant = _labelling_participant(study)
            page = f"{base}/p/{participant.invite_token}/"
            credentials = _browser_credentials(page)
            withdrawal, _ = _burst(page, participant, credentials, withdraw_delay=rng.uniform(0, 0.04))
            assert withdrawal.status_code == 200 and "You have withdrawn" in withdrawal.text, withdrawal.text[:500]
            # A request that starts after the acknowledgement stores nothing either.
            item_id = Item.objects.filter(study=study).values_list("id", flat=True).first()
            late = httpx.post(page + "label/", data={"item": item_id, "value": 1}, **credentials)
            assert late.status_code in (302, 410) and not late.headers.get("location", "").endswith("/done/")
            participant.refresh_from_db()
            left = Label.objects.filter(participant=participant).count()
            assigned = Assignment.objects.filter(participant=participant).count()
            exported = httpx.get(f"{base}/api/studies/{study.id}/labels/", params={"page_size": 1000},
                                 headers=api).json()
            exported_rows = [row for row in exported["results"] if row["participant"] == participant.pseudonym]
            if (participant.status != Participant.Status.WITHDRAWN or participant.withdrawn_at is None or left
                    or assigned or exported_rows):
                undone.append((round_number, participant.status, participant.withdrawn_at, left, assigned,
                               len(exported_rows)))
    finally:
        web.stop()
    errors = re.findall(r"Traceback|Internal Server Error", web.output)
    assert not undone, f"withdrawals undone (round, status, withdrawn_at, labels, assignments, exported): {undone}"
    assert not errors, web.output[-5000:]
