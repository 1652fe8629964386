"""The deployment files: docker-compose.yml against the Compose Specification, and its wiring."""
from __future__ import annotations

import json
from pathlib import Path

import jsonschema
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
    assert "gunicorn auditapp.wsgi" in " ".join(services["web"]["command"])
    assert "celery -A auditapp worker" in " ".join(services["worker"]["command"])


def test_env_example_names_every_variable_the_compose_file_requires():
    example = (REPO / ".env.example").read_text()
    for variable in ("SECRET_KEY", "POSTGRES_PASSWORD", "POSTGRES_USER", "POSTGRES_DB", "ALLOWED_HOSTS"):
        assert f"\n{variable}=" in f"\n{example}"
