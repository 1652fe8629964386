"""PostgreSQL stopped under gunicorn with production settings: participant pages answer 503 with a page that
explains and retries (never a bare "Server Error (500)"), and a label sent again once the database is back
is stored."""
from __future__ import annotations

import subprocess
import sys

import httpx
import pytest

from tests.integration.support import REPO, ThrowawayPostgres, gunicorn, production_environment, wait_for

pytestmark = [pytest.mark.integration, pytest.mark.slow, pytest.mark.django_db(transaction=True)]

SETUP = """
from tests import team_defaults
team_defaults.connect()  # this process's objects go to the suite's team, as the test's own do
from annotation.models import Item, Study
from annotation.participation import instructions_read, participant_consent, participants_invite
study = Study.objects.create(name="Outage", slug="outage", status=Study.Status.OPEN, iat_enabled=False,
                             items_per_annotator=2)
Item.objects.bulk_create([Item(study=study, external_id=f"i{n}", target=f"Target {n}.", position=n) for n in range(2)])
(participant,) = participants_invite(study=study, count=1)
participant_consent(participant=participant)
instructions_read(participant=participant)
print(participant.invite_token, participant.assignments.order_by("position").first().item_id)
"""
LABELS = "from annotation.models import Label; print(list(Label.objects.values_list('item_id', 'value', 'rationale')))"


def _django(env: dict[str, str], *args: str) -> str:
    return subprocess.run([sys.executable, "manage.py", *args], cwd=REPO, env=env, check=True, capture_output=True,
                          text=True).stdout.strip()


def test_participant_pages_answer_503_while_postgres_is_down_and_a_retried_label_is_stored(tmp_path):
    database = ThrowawayPostgres()
    web = None
    try:
        env = production_environment(tmp_path, DATABASE_URL=database.url)
        _django(env, "migrate", "--noinput", "-v0")
        token, item_id = _django(env, "shell", "-c", SETUP).splitlines()[-1].split()
        web, base = gunicorn(env=env, workers=1, threads=2)
        page = f"{base}/p/{token}/label/"
        browser = httpx.Client(timeout=30)
        assert browser.get(page).status_code == 200
        csrf = browser.cookies["csrftoken"]
        label = {"csrfmiddlewaretoken": csrf, "item": item_id, "value": "1", "rationale": "sent during the outage"}

        database.stop()
        shown = browser.get(page)
        assert shown.status_code == 503 and int(shown.headers["Retry-After"]) > 0
        assert "Your answers so far are saved" in shown.text and "Server Error" not in shown.text
        posted = browser.post(page, data=label)
        assert posted.status_code == 503 and "Server Error" not in posted.text

        database.start()
        # What the label page's script does: send again until the server acknowledges (a redirect).
        wait_for(lambda: browser.post(page, data=label).status_code == 302, timeout=30, interval=1,
                 what="the label to be acknowledged once PostgreSQL is back")
        assert _django(env, "shell", "-c", LABELS).splitlines()[-1] == f"[({item_id}, 1, 'sent during the outage')]"
        assert "Traceback" not in web.output, web.output[-5000:]
    finally:
        if web is not None:
            web.stop()
        database.close()
