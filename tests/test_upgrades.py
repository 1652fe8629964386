"""Upgrades that cannot fail: migrations that match the models and run no application code, each app migrated
alone on an empty database, databases left at historical states (with data) upgraded to today's tables, and the
upgrade command that runs the recomputations migrations may not."""
from __future__ import annotations

import ast
import io
import os
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from auditapp.models import UpgradeStep
from auditapp.upgrade_steps import STEPS
from tests.integration.support import REPO

MIGRATION_FOLDERS = sorted(REPO.glob("*/migrations"))
# What a migration may import: Django, the standard library's uuid, and the names its fields refer to (validators,
# defaults, choices) in a model module or the paradigm registry; never a service, selector or task.
ALLOWED_IMPORTS = ("django", "uuid", "annotation.models", "auditapp.models", "auditapp.engine.registry",
                   "psychometrics.models", "coding.models")
# The historical states the upgrade test starts from: a new database; an app part-way along its replaced migrations
# (the others then start from nothing, or from their own squash); just before each data step; the state 0009
# once failed from (today's code on 0008's tables); every app at its last replaced migration. Every state is run by
# `python -m tests.upgrade_history every` (see docs/upgrades.md).
STATES = ("annotation.0001_initial", "annotation.0007_analysisrun_ground_truth_alternatives",
          "psychometrics.0004_iat_trial_first_latency_unknown", "auditapp.0005_item_variants",
          "auditapp.0008_registry_paradigms", "auditapp.0017_judgments_without_database_foreign_keys",
          "coding.0001_coding_rounds", "psychometrics.0006_answer_writer_of_autosaves")


def _imports(tree: ast.Module) -> list[tuple[str, int, bool]]:
    """(module, line, at module level) of every import in a migration."""
    top = set(map(id, tree.body))
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(alias.name, node.lineno, id(node) in top) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            found.append((node.module or "", node.lineno, id(node) in top))
    return found


@pytest.mark.parametrize("path", [p for folder in MIGRATION_FOLDERS for p in sorted(folder.glob("0*.py"))],
                         ids=lambda path: f"{path.parent.parent.name}/{path.stem}")
def test_no_migration_runs_application_code(path: Path):
    for module, line, at_top in _imports(ast.parse(path.read_text())):
        assert at_top, f"line {line}: an import inside a function runs the app's code of the day ({module})"
        assert module.startswith(ALLOWED_IMPORTS), f"line {line}: {module} is application code"


@pytest.mark.django_db
def test_the_migrations_match_the_models():
    out = io.StringIO()
    call_command("makemigrations", "--check", "--dry-run", stdout=out)
    assert "No changes detected" in out.getvalue()


@pytest.mark.django_db
def test_the_upgrade_command_runs_each_step_once_and_again_when_asked():
    UpgradeStep.objects.all().delete()
    out = io.StringIO()
    call_command("upgrade", stdout=out)
    assert [line.split(":")[0] for line in out.getvalue().splitlines() if line.startswith("Upgrade step")] == [
        f"Upgrade step {step.name}" for step in STEPS]
    assert set(UpgradeStep.objects.values_list("name", flat=True)) == {step.name for step in STEPS}
    out = io.StringIO()
    call_command("upgrade", stdout=out)
    assert out.getvalue().strip() == "Upgrade: nothing to do."
    out = io.StringIO()
    call_command("upgrade", "--again", STEPS[0].name, stdout=out)
    assert f"Upgrade step {STEPS[0].name}" in out.getvalue() and STEPS[1].name not in out.getvalue()
    with pytest.raises(CommandError, match="No such upgrade step: nope"):
        call_command("upgrade", "--again", "nope")
    out = io.StringIO()
    call_command("upgrade", "--list", stdout=out)
    assert all(f"{step.name}" in out.getvalue() for step in STEPS) and "to run" not in out.getvalue()


def _separate_database(tmp_path: Path) -> dict[str, str]:
    """The environment of a process that works on a database of its own (never the test database)."""
    env = {k: v for k, v in os.environ.items() if k != "DJANGO_SETTINGS_MODULE"}
    env.update(VAR_DIR=str(tmp_path / "var"), PYTHONPATH=str(REPO), DJANGO_SETTINGS_MODULE="config.settings.local")
    if os.environ.get("DATABASE_URL", "").startswith("postgres"):
        base = os.environ["DATABASE_URL"].rsplit("/", 1)[0]
        env["DATABASE_URL"] = f"{base}/upgrade_{uuid.uuid4().hex[:12]}"
    return env


def _run(args: list[str], env: dict[str, str], timeout: float) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, *args], cwd=REPO, env=env, capture_output=True, text=True,
                          timeout=timeout, check=False)


@pytest.mark.slow
@pytest.mark.integration
def test_each_app_migrates_alone_on_an_empty_database(tmp_path):
    """``migrate <app>`` sends every app's post-migrate signal while the other apps have no tables: their hooks wait
    for their own migrations instead of failing."""
    env = _separate_database(tmp_path)
    result = _run(["-m", "tests.upgrade_history", "--alone", "annotation", "psychometrics", "auditapp", "coding"],
                  env, timeout=900)
    assert result.returncode == 0, result.stdout[-5000:] + result.stderr[-5000:]
    assert result.stdout.count("ok alone") == 4


@pytest.mark.slow
@pytest.mark.integration
def test_databases_at_historical_states_holding_data_upgrade_to_todays_tables(tmp_path):
    env = _separate_database(tmp_path)
    result = _run(["-m", "tests.upgrade_history", *STATES], env, timeout=1500)
    print(result.stdout)
    assert result.returncode == 0, result.stdout[-8000:] + result.stderr[-5000:]
    upgraded = [line.split()[1] for line in result.stdout.splitlines() if line.startswith("ok ")]
    assert sorted(upgraded) == sorted(["none", *STATES]) and upgraded[0] == "none"
