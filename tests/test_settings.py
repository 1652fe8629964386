"""Settings come from the environment, with the embedded defaults when unset."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


def settings_in(env: dict[str, str], *expressions: str) -> list[str]:
    """Each expression's value (printed) in a process started with ``env``: one process for all of them, as each
    takes seconds to set Django up."""
    code = "import django; django.setup(); from django.conf import settings; " + "; ".join(
        f"print({expression})" for expression in expressions)
    clean = {"PATH": "/usr/bin:/bin", "DJANGO_SETTINGS_MODULE": "config.settings.local", **env}
    return subprocess.run([sys.executable, "-c", code], cwd=REPO, env=clean, capture_output=True, text=True,
                          check=True).stdout.splitlines()


@pytest.mark.slow  # starts a Python process that sets Django up: seconds
def test_embedded_defaults(tmp_path):
    env = {"VAR_DIR": str(tmp_path)}
    assert settings_in(env, "settings.DATABASES['default']['ENGINE']", "settings.DATABASES['default']['NAME']",
                       "settings.CELERY_BROKER_URL",
                       "settings.CELERY_BROKER_TRANSPORT_OPTIONS['data_folder_in']") == [
        "django.db.backends.sqlite3", str(tmp_path / "db.sqlite3"), "filesystem://",
        str(tmp_path / "broker" / "queue")]
    assert (tmp_path / "secret_key").exists()  # generated once for local use, kept in VAR_DIR


@pytest.mark.slow  # starts a Python process that sets Django up: seconds
def test_database_and_broker_from_the_environment(tmp_path):
    env = {"VAR_DIR": str(tmp_path), "DATABASE_URL": "postgres://u:p@db.example:6543/research",
           "CELERY_BROKER_URL": "redis://cache:6379/2"}
    db = "settings.DATABASES['default']"
    # Redis: only a visibility timeout longer than the longest task (no file-system folders).
    assert settings_in(env, f"{db}['ENGINE'], {db}['HOST'], {db}['PORT'], {db}['NAME']",
                       "settings.CELERY_BROKER_URL", "settings.CELERY_BROKER_TRANSPORT_OPTIONS") == [
        "django.db.backends.postgresql db.example 6543 research", "redis://cache:6379/2",
        "{'visibility_timeout': 3900}"]
