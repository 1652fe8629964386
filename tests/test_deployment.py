"""The deployment files: docker-compose.yml against the Compose Specification, and its wiring; the production
settings against Django's deployment checks."""
from __future__ import annotations

import json
import os
import secrets
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest
import yaml

REPO = Path(__file__).resolve().parents[1]


def compose() -> dict:
    return yaml.safe_load((REPO / "docker-compose.yml").read_text())


def test_compose_file_is_valid_against_the_compose_specification():
    schema = json.loads((REPO / "tests" / "data" / "compose-spec.json").read_text())
    validator = jsonschema.Draft201909Validator(schema)
    errors = [f"{'/'.join(map(str, e.path))}: {e.message}" for e in validator.iter_errors(compose())]
    assert errors == []


def test_compose_runs_postgres_redis_web_and_worker_with_healthchecks():
    services = compose()["services"]
    assert set(services) == {"postgres", "redis", "web", "worker"}
    assert all("healthcheck" in service for service in services.values())
    for name in ("web", "worker"):
        env = services[name]["environment"]
        assert env["DATABASE_URL"].startswith("postgres://") and "@postgres:5432/" in env["DATABASE_URL"]
        assert env["CELERY_BROKER_URL"] == "redis://redis:6379/0"
        assert services[name]["depends_on"]["postgres"]["condition"] == "service_healthy"
    assert "gunicorn config.wsgi" in " ".join(services["web"]["command"])
    assert "celery -A config worker" in " ".join(services["worker"]["command"])


def test_workers_are_started_again_and_run_without_gossip_in_compose_and_systemd():
    import configparser

    services = compose()["services"]
    worker_command = " ".join(services["worker"]["command"])
    assert services["worker"]["restart"] == services["web"]["restart"] == "unless-stopped"
    units = {}
    for name in ("web", "worker"):
        unit = configparser.ConfigParser(strict=False, interpolation=None)
        unit.read_string((REPO / "deploy" / "systemd" / f"auditapp-{name}.service").read_text())
        units[name] = unit["Service"]
        assert units[name]["Restart"] == "always" and float(units[name]["RestartSec"]) <= 5
    for flag in ("--without-gossip", "--without-mingle"):
        assert flag in worker_command and flag in units["worker"]["ExecStart"]
        assert flag in (REPO / "bin" / "run").read_text()
    assert units["web"]["TimeoutStartSec"] == "infinity", "an upgrade may take longer than systemd's 90 s"
    web = (REPO / "deploy" / "systemd" / "auditapp-web.service").read_text()
    assert web.index("manage.py migrate") < web.index("manage.py upgrade") < web.index("ExecStart=")
    assert "manage.py migrate --noinput && python manage.py upgrade && exec gunicorn" in " ".join(
        services["web"]["command"])


def test_env_example_names_every_variable_the_compose_file_requires():
    example = (REPO / ".env.example").read_text()
    for variable in ("SECRET_KEY", "POSTGRES_PASSWORD", "POSTGRES_USER", "POSTGRES_DB", "ALLOWED_HOSTS"):
        assert f"\n{variable}=" in f"\n{example}"


def production_env(tmp_path: Path, **overrides: str) -> dict[str, str]:
    """The environment of a production deployment with the defaults: no SECURE_* overrides inherited, nor the
    browser tests' DJANGO_ALLOW_ASYNC_UNSAFE (set for Playwright in this process)."""
    env = {key: value for key, value in os.environ.items()
           if not key.startswith(("SECURE_", "DJANGO_SETTINGS_MODULE", "DATABASE_URL", "DJANGO_ALLOW_ASYNC_UNSAFE"))}
    return {**env, "DJANGO_SETTINGS_MODULE": "config.settings.production", "SECRET_KEY": secrets.token_urlsafe(50),
            "VAR_DIR": str(tmp_path), **overrides}


@pytest.mark.slow  # starts a Python process that sets Django up: seconds
def test_production_defaults_pass_the_deployment_checks(tmp_path):
    result = subprocess.run([sys.executable, "manage.py", "check", "--deploy", "--fail-level", "WARNING"], cwd=REPO,
                            env=production_env(tmp_path), capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "WARNINGS" not in result.stderr + result.stdout


PROBE = """
from django.test import Client
client = Client()
print(client.get("/healthz").status_code)
plain = client.get("/about/")
print(plain.status_code, plain.headers.get("Location"))
secure = client.get("/healthz", headers={"X-Forwarded-Proto": "https"})
print(secure.headers.get("Strict-Transport-Security"))
"""


@pytest.mark.slow  # starts a Python process that sets Django up: seconds
def test_production_redirects_plain_http_but_not_the_health_check_and_sends_hsts_over_https(tmp_path):
    env = production_env(tmp_path, ALLOWED_HOSTS="testserver")
    result = subprocess.run([sys.executable, "manage.py", "shell", "-v", "0", "-c", PROBE], cwd=REPO, env=env,
                            capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    health, redirect, hsts = result.stdout.strip().splitlines()[-3:]
    assert health == "200", "container health checks ask over plain HTTP"
    assert redirect == "301 https://testserver/about/"
    assert hsts == "max-age=31536000; includeSubDomains"


def test_env_example_keeps_secure_cookies_and_the_https_redirect_on():
    settings = dict(line.split("=", 1) for line in (REPO / ".env.example").read_text().splitlines()
                    if line and not line.startswith("#"))
    assert settings.get("SECURE_COOKIES", "1") not in ("0", "false", "no")
    assert settings.get("SECURE_SSL_REDIRECT", "1") not in ("0", "false", "no")
