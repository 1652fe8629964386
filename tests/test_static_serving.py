"""Under the local settings (bin/run's), static files are served as in production: hashed names, gzip, a year's cache."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]

# collectstatic as bin/run runs it, then the plotly bundle as the study and audit dashboards name it, asked for by a
# browser that takes gzip, and the admin's login page (its stylesheets' names).
PROBE = """
import json
import django
django.setup()
from django.core.management import call_command
from django.templatetags.static import static
from django.test import Client

call_command("collectstatic", interactive=False, verbosity=0)
url = static("vendor/plotly/plotly.min.js")
response = Client().get(url, HTTP_ACCEPT_ENCODING="gzip, deflate", HTTP_HOST="127.0.0.1")
body = b"".join(response.streaming_content)
login = Client().get("/admin/login/", HTTP_HOST="127.0.0.1").content.decode()
print(json.dumps({"url": url, "status": response.status_code, "headers": dict(response.headers),
                  "bytes": len(body), "login": login}))
"""


@pytest.mark.slow  # a Django process that runs collectstatic: seconds
def test_static_files_are_hashed_compressed_and_cached_for_a_year(tmp_path):
    env = {"PATH": "/usr/bin:/bin", "DJANGO_SETTINGS_MODULE": "config.settings.local", "VAR_DIR": str(tmp_path)}
    result = json.loads(subprocess.run([sys.executable, "-c", PROBE], cwd=REPO, env=env, capture_output=True,
                                       text=True, check=True).stdout)

    assert result["url"].startswith("/static/vendor/plotly/plotly.min.") and result["url"].endswith(".js")
    assert result["url"] != "/static/vendor/plotly/plotly.min.js"  # a content hash in the name
    assert result["status"] == 200
    headers = result["headers"]
    assert headers["Content-Encoding"] == "gzip"
    assert result["bytes"] < (REPO / "static/vendor/plotly/plotly.min.js").stat().st_size / 2
    assert "max-age=315360000" in headers["Cache-Control"] and "immutable" in headers["Cache-Control"]
    assert "/static/admin/css/base.css" not in result["login"]
    assert '/static/admin/css/base.' in result["login"]  # the hashed name instead


@pytest.mark.slow  # a Django process: seconds
def test_debug_serves_static_as_it_is_without_collectstatic(tmp_path):
    env = {"PATH": "/usr/bin:/bin", "DJANGO_SETTINGS_MODULE": "config.settings.local", "VAR_DIR": str(tmp_path),
           "DEBUG": "1"}
    code = ("import django; django.setup(); from django.templatetags.static import static; "
            "from django.conf import settings; print(static('vendor/plotly/plotly.min.js'), settings.DEBUG)")
    output = subprocess.run([sys.executable, "-c", code], cwd=REPO, env=env, capture_output=True, text=True,
                            check=True).stdout.split()
    assert output == ["/static/vendor/plotly/plotly.min.js", "True"]
