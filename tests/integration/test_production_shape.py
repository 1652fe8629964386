"""The production shape of docker-compose.yml, run natively: gunicorn with production settings and
WhiteNoise static files, a Celery worker, PostgreSQL and Redis. A researcher uploads through the admin
and the worker imports into PostgreSQL."""
from __future__ import annotations

import os
import re
import subprocess
import sys

import httpx
import pytest
from django.contrib.auth.hashers import PBKDF2PasswordHasher

from annotation.models import Study
from auditapp.services import researcher_create
from tests.factories import autalic_like_csv
from tests.integration.support import (
    REPO,
    admin_upload_as_researcher,
    celery_worker,
    gunicorn,
    http_answers,
    production_environment,
    wait_for_study_counts,
)

pytestmark = [pytest.mark.integration, pytest.mark.slow, pytest.mark.django_db(transaction=True)]


def test_gunicorn_and_worker_on_postgres_and_redis(tmp_path):
    env = production_environment(tmp_path)
    study = Study.objects.create(name="Production", slug="production")
    user, password, token = researcher_create(username="prod-researcher")
    # The test settings hash with MD5 for speed; production verifies with its own default hasher.
    user.password = PBKDF2PasswordHasher().encode(password, PBKDF2PasswordHasher().salt())
    user.save(update_fields=["password"])

    web, base = gunicorn(env=env)
    worker = celery_worker(env=env)
    try:
        worker.wait_for_output(r"celery@\S+ ready", timeout=60)
        login = httpx.get(f"{base}/admin/login/").text
        stylesheet = re.search(r'href="(/static/admin/css/base\.[0-9a-f]{12}\.css)"', login).group(1)
        assert http_answers(f"{base}{stylesheet}")  # hashed name: WhiteNoise's manifest storage
        admin_upload_as_researcher(base, username="prod-researcher", password=password, study_id=study.id,
                                   filename="autalic.csv", content=autalic_like_csv(300))
        wait_for_study_counts(base, token=token, study_id=study.id, n_items=300, n_labels=900)
    finally:
        web.stop()
        worker.stop()


def test_production_settings_refuse_to_start_without_a_secret_key():
    env = {k: v for k, v in os.environ.items() if k != "SECRET_KEY"}
    env["DJANGO_SETTINGS_MODULE"] = "config.settings.production"
    result = subprocess.run([sys.executable, "manage.py", "check"], cwd=REPO, env=env, capture_output=True, text=True)
    assert result.returncode != 0
    assert "SECRET_KEY must be set in the environment in production" in result.stderr
