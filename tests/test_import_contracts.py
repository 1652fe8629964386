"""The import contracts (pyproject.toml ``[tool.importlinter]``) can fail: a copy of the code with one violation
of each planted is reported broken on every contract. bin/test checks that the real code keeps them."""
from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
PACKAGES = ("auditapp", "annotation", "coding", "common", "config", "psychometrics", "tasks", "teams")

# One violation per contract, each in a module the contract covers by its package rather than by name.
PLANTED = {
    # Pure computation imports no Django.
    "auditapp/engine/protocol.py": "import django.db\n",
    # The engine names no paradigm.
    "auditapp/engine/recording.py": "from auditapp.paradigms.counterfactual import services\n",
    # A paradigm uses the engine's public interface only.
    "auditapp/paradigms/names/adapter.py": "from auditapp.engine import recording\n",
    # What the apps share imports no app.
    "common/api/pagination.py": "from annotation import models\n",
    # The apps never import the project.
    "annotation/selectors.py": "from config.settings import base\n",
}


@pytest.mark.slow
def test_each_contract_reports_a_planted_violation(tmp_path):
    for package in PACKAGES:
        shutil.copytree(REPO / package, tmp_path / package, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(REPO / "pyproject.toml", tmp_path / "pyproject.toml")
    for path, line in PLANTED.items():
        with (tmp_path / path).open("a") as module:
            module.write(line)

    result = subprocess.run([str(Path(sys.executable).with_name("lint-imports")), "--no-cache"], cwd=tmp_path,
                            capture_output=True, text=True, timeout=600, env={"PYTHONPATH": str(tmp_path),
                                                                              "PATH": "/usr/bin:/bin", "COLUMNS": "400"})
    assert result.returncode == 1, result.stdout + result.stderr
    assert "Contracts: 0 kept, 5 broken." in result.stdout, result.stdout
    assert "auditapp.engine.protocol -> django (l." in result.stdout
    assert "auditapp.engine.recording -> auditapp.paradigms.counterfactual.services (l." in result.stdout
    assert "auditapp.paradigms.names.adapter -> auditapp.engine.recording (l." in result.stdout
    assert "common.api.pagination -> annotation.models (l." in result.stdout
    assert "annotation.selectors -> config.settings.base (l." in result.stdout
