"""Whether an app's migrations have all been applied to a database: post-migrate hooks that write shipped records
(prompt templates, instruments, codebooks) with today's models act only then. ``manage.py migrate annotation`` on
an empty database sends every app's post-migrate signal while the other apps have no tables yet, and a database
migrated to an earlier state has tables without today's columns."""
from __future__ import annotations

from django.db import connections
from django.db.migrations.executor import MigrationExecutor


def app_fully_migrated(app_label: str, using: str = "default") -> bool:
    """True when every migration of ``app_label`` (and what it depends on) is applied to ``using``."""
    executor = MigrationExecutor(connections[using])
    leaves = [node for node in executor.loader.graph.leaf_nodes() if node[0] == app_label]
    return bool(leaves) and not executor.migration_plan(leaves)
