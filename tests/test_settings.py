"""Settings come from the environment, with the embedded defaults when unset."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def settings_in(env: dict[str, str], expression: str) -> str:
    code = f"import django; django.setup(); from django.conf import settings; print({expression})"
    clean = {"PATH": "/usr/bin:/bin", "DJANGO_SETTINGS_MODULE": "config.settings.local", **env}
    return subprocess.run([sys.executable, "-c", code], cwd=REPO, env=clean, capture_output=True, text=True,
                          check=True).stdout.strip()


def test_embedded_defaults(tmp_path):
    env = {"VAR_DIR": str(tmp_path)}
    assert settings_in(env, "settings.DATABASES['default']['ENGINE']") == "django.db.backends.sqlite3"
    assert settings_in(env, "settings.DATABASES['default']['NAME']") == str(tmp_path / "db.sqlite3")
    assert settings_in(env, "settings.CELERY_BROKER_URL") == "filesystem://"
    assert settings_in(env, "settings.CELERY_BROKER_TRANSPORT_OPTIONS['data_folder_in']") == str(
        tmp_path / "broker" / "queue")
    assert (tmp_path / "secret_key").exists()  # generated once for local use, kept in VAR_DIR


def test_database_and_broker_from_the_environment(tmp_path):
    env = {"VAR_DIR": str(tmp_path), "DATABASE_URL": "postgres://u:p@db.example:6543/research",
           "CELERY_BROKER_URL": "redis://cache:6379/2"}
    db = "settings.DATABASES['default']"
    assert settings_in(env, f"{db}['ENGINE'], {db}['HOST'], {db}['PORT'], {db}['NAME']") == (
        "django.db.backends.postgresql db.example 6543 research")
    assert settings_in(env, "settings.CELERY_BROKER_URL") == "redis://cache:6379/2"
    # Redis: only a visibility timeout longer than the longest task (no file-system folders).
    assert settings_in(env, "settings.CELERY_BROKER_TRANSPORT_OPTIONS") == "{'visibility_timeout': 3900}"
