"""The project's old names (auditapp.settings.production, auditapp.wsgi, auditapp.asgi, ``celery -A auditapp``) still
run a deployment that names them, with a DeprecationWarning naming the new one, until 0.2.0 removes them
(docs/operations.md, "Upgrading"). Each check runs in a process of its own, as gunicorn, an ASGI server or the
Celery command would import them."""
from __future__ import annotations

import json
import subprocess
import sys
import tomllib

import pytest

from tests.test_deployment import REPO, production_env

# Prints the settings Django loaded and the messages of the deprecations raised meanwhile.
SETTINGS_PROBE = """
import json, warnings
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    import django
    django.setup()
from django.conf import settings
print(json.dumps({
    "settings": {name: repr(getattr(settings, name)) for name in dir(settings) if name.isupper()},
    "deprecations": [str(w.message) for w in caught if issubclass(w.category, DeprecationWarning)
                     and "auditapp 0.2.0" in str(w.message)],
}))
"""

# Resolves the old names as gunicorn (gunicorn.util.import_app), an ASGI server (module:attribute) and
# ``celery -A`` (celery.app.utils.find_app) do, and says whether each found the object config holds.
ENTRY_POINT_PROBE = """
import json, warnings
from importlib import import_module
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    from celery.app.utils import find_app
    from gunicorn.util import import_app
    import config.asgi, config.celery, config.wsgi
    found = {
        "gunicorn auditapp.wsgi": import_app("auditapp.wsgi") is config.wsgi.application,
        "gunicorn auditapp.wsgi:application": import_app("auditapp.wsgi:application") is config.wsgi.application,
        "auditapp.asgi:application": import_module("auditapp.asgi").application is config.asgi.application,
        "celery -A auditapp": find_app("auditapp") is config.celery.app,
    }
print(json.dumps({
    "found": found,
    "deprecations": [str(w.message) for w in caught if issubclass(w.category, DeprecationWarning)
                     and "auditapp 0.2.0" in str(w.message)],
}))
"""


def probe(code: str, env: dict[str, str]) -> dict:
    result = subprocess.run([sys.executable, "-c", code], cwd=REPO, env=env, capture_output=True, text=True,
                            timeout=120)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout.strip().splitlines()[-1])


@pytest.mark.slow
def test_the_old_production_settings_name_gives_the_same_settings_with_a_warning(tmp_path):
    env = production_env(tmp_path)
    old = probe(SETTINGS_PROBE, {**env, "DJANGO_SETTINGS_MODULE": "auditapp.settings.production"})
    new = probe(SETTINGS_PROBE, {**env, "DJANGO_SETTINGS_MODULE": "config.settings.production"})

    assert old["settings"].pop("SETTINGS_MODULE") == "'auditapp.settings.production'"
    assert new["settings"].pop("SETTINGS_MODULE") == "'config.settings.production'"
    assert old["settings"] == new["settings"]
    assert new["settings"]["ROOT_URLCONF"] == "'config.urls'" and new["settings"]["DEBUG"] == "False"
    assert old["deprecations"] == ["auditapp.settings.production is deprecated and goes in auditapp 0.2.0: set "
                                   "DJANGO_SETTINGS_MODULE=config.settings.production"]
    assert new["deprecations"] == []


@pytest.mark.slow
def test_the_old_wsgi_asgi_and_celery_names_find_configs_objects_with_a_warning(tmp_path):
    result = probe(ENTRY_POINT_PROBE, production_env(tmp_path))

    assert result["found"] == {"gunicorn auditapp.wsgi": True, "gunicorn auditapp.wsgi:application": True,
                               "auditapp.asgi:application": True, "celery -A auditapp": True}
    assert result["deprecations"] == [
        "auditapp.wsgi is deprecated and goes in auditapp 0.2.0: serve config.wsgi:application",
        "auditapp.asgi is deprecated and goes in auditapp 0.2.0: serve config.asgi:application",
        "celery -A auditapp is deprecated and goes in auditapp 0.2.0: run celery -A config",
    ]


def test_the_old_names_are_removed_by_0_2_0():
    version = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["version"]
    major, minor = (int(part) for part in version.split(".")[:2])
    assert (major, minor) < (0, 2), (
        "0.2.0 removes auditapp/settings/, auditapp/wsgi.py, auditapp/asgi.py, auditapp/celery.py, their import "
        "contract exceptions in pyproject.toml, their part of docs/operations.md and this test module")
