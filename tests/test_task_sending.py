"""Services send tasks by name (tasks/sending.py): in a process that has imported no task module, as a web
process has not, the name finds the task the worker registers, and settings list every task module."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent

FRESH_PROCESS = """
import sys
import django
django.setup()
assert not [name for name in sys.modules if name.startswith("tasks.") and name != "tasks.sending"], "imported early"
from tasks.sending import task_named
for name in ("auditapp.audit_prepare", "auditapp.audit_work", "auditapp.audit_analyse", "annotation.item_import_run",
             "annotation.study_analysis_compute", "annotation.study_alternatives_compute",
             "auditapp.audit_extraction_run"):
    print(task_named(name).name)
"""


@pytest.mark.slow
def test_a_task_is_found_by_name_in_a_process_that_imported_none():
    result = subprocess.run([sys.executable, "-c", FRESH_PROCESS], cwd=REPO, capture_output=True, text=True,
                            timeout=120, env={"DJANGO_SETTINGS_MODULE": "config.settings.test", "PATH": "/usr/bin"})
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["auditapp.audit_prepare", "auditapp.audit_work", "auditapp.audit_analyse",
                                     "annotation.item_import_run", "annotation.study_analysis_compute",
                                     "annotation.study_alternatives_compute", "auditapp.audit_extraction_run"]


def test_every_module_of_the_tasks_package_is_imported_by_the_worker(settings):
    modules = {f"tasks.{path.stem}" for path in (REPO / "tasks").glob("*.py") if path.stem != "__init__"}
    assert set(settings.CELERY_IMPORTS) == modules


def test_an_unknown_name_is_refused():
    from tasks.sending import task_named

    with pytest.raises(KeyError):
        task_named("auditapp.no_such_task")
