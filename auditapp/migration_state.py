"""Whether an app's migrations have all been applied to a database: post-migrate hooks that write shipped records
(prompt templates, instruments, codebooks) with today's models act only then. ``manage.py migrate annotation`` on
an empty database sends every app's post-migrate signal while the other apps have no tables yet, and a database
migrated to an earlier state has tables without today's columns."""
from __future__ import annotations

from django.db import connections
from django.db.migrations.executor import MigrationExecutor


def migrations_pending(app_label: str | None = None, using: str = "default") -> bool:
    """True when a migration of ``app_label`` (of any app when None), or one it depends on, is not applied to
    ``using``."""
    executor = MigrationExecutor(connections[using])
    leaves = [node for node in executor.loader.graph.leaf_nodes() if app_label is None or node[0] == app_label]
    return bool(executor.migration_plan(leaves))


def app_fully_migrated(app_label: str, using: str = "default") -> bool:
    """True when ``app_label`` has migrations and every one of them (and what it depends on) is applied."""
    return app_label in MigrationExecutor(connections[using]).loader.migrated_apps and not migrations_pending(
        app_label, using)
