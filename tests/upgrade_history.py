"""Upgrading databases left at historical migration states, holding data (run by tests/test_upgrades.py in a
process of its own, on the database DATABASE_URL names, which it may drop and create again).

A historical state is a point along the migrations as they were before each app's were squashed: the database is
migrated there by Django's executor with ``replace_migrations=False`` (the old migrations, as a database of that
time had applied them), given data with the historical models of that state, then upgraded as a user would
(``manage.py migrate`` and ``manage.py upgrade``), and checked: every row kept, each historical data step done.

    python -m tests.upgrade_history STATE [STATE ...]   # "app.migration" names, or "every"
    python -m tests.upgrade_history --alone APP [APP ...]   # ``migrate APP`` alone on an empty database

Prints one line per state: "ok <state> <seconds>", or "FAILED <state>: <reason>" (exit status 1). A new database
("none") is always upgraded first: every other state's tables must come out like its.
"""
from __future__ import annotations

import os
import re
import sqlite3
import sys
import time
import traceback
from collections.abc import Callable

import django

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings.local")
django.setup()

from django.core.management import call_command  # noqa: E402
from django.db import connection, connections  # noqa: E402
from django.db.migrations.executor import MigrationExecutor  # noqa: E402
from django.db.migrations.loader import MigrationLoader  # noqa: E402

OUR_APPS = ("annotation", "psychometrics", "auditapp", "coding")


def historical_plan() -> list[tuple[str, str]]:
    """Every migration of our apps as they were before the squash, in the order a database applied them."""
    executor = _old_executor()
    replaced = {node for migration in executor.loader.disk_migrations.values() for node in (migration.replaces or [])}
    targets = [max(node for node in replaced if node[0] == app) for app in OUR_APPS]
    return [(migration.app_label, migration.name) for migration, _ in executor.migration_plan(targets, clean_start=True)
            if (migration.app_label, migration.name) in replaced]


def _old_executor() -> MigrationExecutor:
    executor = MigrationExecutor(connection)
    executor.loader = MigrationLoader(connection, replace_migrations=False)
    return executor


def fresh_database(*, create: bool = True) -> None:
    """Drop and create the database (SQLite: remove the file); ``create=False`` only drops it."""
    settings = connection.settings_dict
    connections.close_all()
    if connection.vendor == "sqlite":
        for suffix in ("", "-wal", "-shm"):
            if os.path.exists(f"{settings['NAME']}{suffix}"):
                os.remove(f"{settings['NAME']}{suffix}")
        return
    with _postgresql_admin() as admin:
        admin.execute(f'DROP DATABASE IF EXISTS "{settings["NAME"]}" WITH (FORCE)')
        if create:
            admin.execute(f'CREATE DATABASE "{settings["NAME"]}"')


def _postgresql_admin():
    import psycopg

    settings = connection.settings_dict
    return psycopg.connect(host=settings["HOST"], port=settings["PORT"], user=settings["USER"],
                           password=settings["PASSWORD"] or None, dbname="postgres", autocommit=True)


class HistorySnapshots:
    """Copies of the database taken at historical states (before any data is held), so that each later state
    starts from the nearest earlier copy instead of replaying every old migration from nothing again: the states
    then cost one walk along the old migrations together, not one each."""

    def __init__(self) -> None:
        self.taken: dict[int, str] = {}

    def _name(self, upto: int) -> str:
        return f"{connection.settings_dict['NAME']}-at-{upto}" if connection.vendor == "sqlite" else \
            f"{connection.settings_dict['NAME']}_at_{upto}"

    def take(self, upto: int) -> None:
        connections.close_all()
        copy = self._name(upto)
        if connection.vendor == "sqlite":
            _sqlite_copy(connection.settings_dict["NAME"], copy)
        else:
            with _postgresql_admin() as admin:
                admin.execute(f'DROP DATABASE IF EXISTS "{copy}"')
                admin.execute(f'CREATE DATABASE "{copy}" TEMPLATE "{connection.settings_dict["NAME"]}"')
        self.taken[upto] = copy

    def restore_nearest(self, upto: int) -> int:
        """Make the database the copy of the latest state at or before ``upto`` (a new database if there is
        none); returns how far along the plan it is."""
        start = max((taken for taken in self.taken if taken <= upto), default=0)
        fresh_database(create=not start)
        if start:
            if connection.vendor == "sqlite":
                _sqlite_copy(self.taken[start], connection.settings_dict["NAME"])
            else:
                with _postgresql_admin() as admin:
                    admin.execute(f'CREATE DATABASE "{connection.settings_dict["NAME"]}" TEMPLATE "{self.taken[start]}"')
        return start

    def drop(self) -> None:
        connections.close_all()
        for copy in self.taken.values():
            if connection.vendor == "sqlite":
                os.remove(copy)
            else:
                with _postgresql_admin() as admin:
                    admin.execute(f'DROP DATABASE IF EXISTS "{copy}" WITH (FORCE)')
        self.taken.clear()


def _sqlite_copy(source: str, target: str) -> None:
    # The backup API copies a consistent database whatever its journal holds, unlike copying the file.
    with sqlite3.connect(source) as origin, sqlite3.connect(target) as copy:
        origin.backup(copy)
    origin.close()
    copy.close()


def migrate_to_history(plan: list[tuple[str, str]], upto: int) -> None:
    """Apply the old migrations plan[:upto] (the other apps' tables Django's own apps need come with them)."""
    executor = _old_executor()
    done: dict[str, tuple[str, str]] = {}
    for node in plan[:upto]:
        done[node[0]] = node
    targets = list(done.values()) + [(app, None) for app in OUR_APPS if app not in done]
    executor.migrate(targets)


def hold_data(apps) -> dict[str, int]:
    """Rows written with the historical models of the state, where their tables exist; returns what must be kept."""
    kept = {}
    User = apps.get_model("auth", "User")
    User.objects.create(username="researcher", is_staff=True)
    try:
        Study = apps.get_model("annotation", "Study")
    except LookupError:
        return kept
    study = Study.objects.create(name="Kept", slug="kept")
    Item = apps.get_model("annotation", "Item")
    items = [Item.objects.create(study=study, external_id=f"i{n}", target=f"Sentence {n}.") for n in range(3)]
    Participant = apps.get_model("annotation", "Participant")
    participant = Participant.objects.create(study=study, pseudonym="P1")
    Label = apps.get_model("annotation", "Label")
    for item in items:
        Label.objects.create(participant=participant, item=item, value=1)
    kept.update(study=1, items=3, labels=3)
    try:
        Endpoint = apps.get_model("auditapp", "LLMEndpoint")
    except LookupError:
        return kept
    # Before 0006 an endpoint could be saved with a limit no request runs under; 0006 gives it the default back.
    unusable_allowed = not any(c.name == "endpoint_max_concurrency_positive" for c in Endpoint._meta.constraints)
    Endpoint.objects.create(name="hosted", base_url="http://127.0.0.1:9", max_concurrency=0 if unusable_allowed else 3)
    kept.update(endpoints=1, endpoint_concurrency=8 if unusable_allowed else 3)
    hold_an_answered_audit(apps, study, items, Endpoint.objects.get())
    kept.update(audits=1, requests=len(items), replies=len(items), judgments_of_1=len(items))
    return kept


def hold_an_answered_audit(apps, study, items, endpoint) -> None:
    """A classification audit of the study whose requests were answered "1" (as audits of every version had)."""
    Audit = apps.get_model("auditapp", "Audit")
    audit = Audit.objects.create(name="Answered", study=study, status="completed")
    audit_model = apps.get_model("auditapp", "AuditModel").objects.create(audit=audit, endpoint=endpoint, model="m")
    template = apps.get_model("auditapp", "PromptTemplate").objects.create(
        condition="zs", name="zero-shot", text="Label this sentence: {target}", content_hash="0" * 64)
    apps.get_model("auditapp", "AuditCondition").objects.create(audit=audit, condition="zs", template=template)
    Request = apps.get_model("auditapp", "AuditRequest")
    Reply = apps.get_model("auditapp", "LLMReply")
    for order, item in enumerate(items):
        apps.get_model("auditapp", "AuditItem").objects.create(audit=audit, item=item)
        key = f"{order:064d}"
        reply = Reply.objects.create(key=key, text="1", latency_ms=5, attempts=1)
        Request.objects.create(audit=audit, audit_model=audit_model, item=item, condition="zs", order=order, key=key,
                               state="answered", reply=reply)


def schema() -> dict:
    """Our apps' tables as the database has them: columns (type, null), and constraints and indexes by their
    columns and kind (names aside: a database that took the old path may name an index another way)."""
    with connection.cursor() as cursor:
        tables = sorted(t for t in connection.introspection.table_names(cursor) if t.split("_")[0] in OUR_APPS)
        describe = _sqlite_table if connection.vendor == "sqlite" else _postgresql_table
        return {table: describe(cursor, table) for table in tables}


def _postgresql_table(cursor, table: str) -> dict:
    introspection = connection.introspection
    return {"columns": sorted((c.name, c.type_code, c.null_ok)
                              for c in introspection.get_table_description(cursor, table)),
            "constraints": sorted((tuple(c["columns"] or ()), bool(c["primary_key"]), bool(c["unique"]),
                                   bool(c["index"]), bool(c["check"]), tuple(c["foreign_key"] or ()))
                                  for c in introspection.get_constraints(cursor, table).values())}


def _sqlite_table(cursor, table: str) -> dict:
    # Django's SQLite introspection cannot parse a CHECK such as "value" IN (-1, 0, 1): SQLite's pragmas instead.
    cursor.execute(f'PRAGMA table_info("{table}")')
    columns = sorted((name, kind.lower(), not not_null) for _, name, kind, not_null, _, _ in cursor.fetchall())
    cursor.execute(f'PRAGMA index_list("{table}")')
    indexes = []
    for _, name, unique, origin, _ in cursor.fetchall():
        cursor.execute(f'PRAGMA index_info("{name}")')
        indexes.append((tuple(row[2] for row in cursor.fetchall()), bool(unique), origin))
    cursor.execute(f'PRAGMA foreign_key_list("{table}")')
    keys = sorted((row[3], row[2], row[4]) for row in cursor.fetchall())
    cursor.execute("SELECT sql FROM sqlite_master WHERE name = %s", [table])
    checks = sorted(re.findall(r'CONSTRAINT "([^"]+)" CHECK', cursor.fetchone()[0]))
    return {"columns": columns, "indexes": sorted(indexes), "foreign_keys": keys, "checks": checks}


def check(kept: dict[str, int]) -> None:
    from annotation.models import Item, Label, Study
    from auditapp.migration_state import migrations_pending
    from auditapp.models import Audit, AuditJudgment, AuditRequest, LLMEndpoint, LLMReply, PromptTemplate, UpgradeStep
    from auditapp.upgrade_steps import STEPS
    from psychometrics.models import Instrument

    counts = {"study": Study.objects.filter(slug="kept").count(), "items": Item.objects.count(),
              "labels": Label.objects.count(), "endpoints": LLMEndpoint.objects.count(),
              "audits": Audit.objects.filter(name="Answered").count(),
              "requests": AuditRequest.objects.filter(audit__name="Answered", state="answered").count(),
              "replies": LLMReply.objects.count(),
              "judgments_of_1": AuditJudgment.objects.filter(audit_id__in=Audit.objects.filter(name="Answered"),
                                                             label=1).count()}
    for name in counts.keys() & kept.keys():
        assert counts[name] == kept[name], f"{name}: {counts[name]} rows after the upgrade, {kept[name]} before"
    if kept.get("endpoints"):
        assert LLMEndpoint.objects.get().max_concurrency == kept["endpoint_concurrency"], "0006 reset only 0"
    assert PromptTemplate.objects.exists() and Instrument.objects.exists(), "shipped records are in"
    assert set(UpgradeStep.objects.values_list("name", flat=True)) == {step.name for step in STEPS}
    assert not migrations_pending(), "every migration applied"


def upgrade_from(plan: list[tuple[str, str]], upto: int, snapshots: HistorySnapshots) -> dict:
    if snapshots.restore_nearest(upto) < upto:
        migrate_to_history(plan, upto)
        snapshots.take(upto)
    executor = _old_executor()
    kept = hold_data(executor.loader.project_state(plan[:upto], at_end=True).apps) if upto else {}
    connections.close_all()
    call_command("migrate", verbosity=0, interactive=False)
    call_command("upgrade", verbosity=0)
    check(kept)
    return schema()


def each(labels: list[str], check: Callable[[str], None]) -> int:
    """Run ``check`` for each label, printing "ok <label> <seconds>" or "FAILED <label>: …"; 1 if any failed."""
    failed = False
    for label in labels:
        started = time.monotonic()
        try:
            check(label)
        except Exception as error:  # noqa: BLE001 - reported per label, the others still run
            failed = True
            print(f"FAILED {label}: {type(error).__name__}: {error}\n{traceback.format_exc()}", flush=True)
            continue
        print(f"ok {label} {time.monotonic() - started:.1f}", flush=True)
    return 1 if failed else 0


def main(arguments: list[str]) -> int:
    try:
        return run(arguments)
    finally:
        fresh_database(create=False)


def run(arguments: list[str]) -> int:
    if arguments[:1] == ["--alone"]:
        def migrate_alone(label: str) -> None:
            fresh_database()
            call_command("migrate", label.removeprefix("alone "), verbosity=0, interactive=False)

        return each([f"alone {app}" for app in arguments[1:]], migrate_alone)
    fresh_database()
    plan = historical_plan()
    names = [f"{app}.{name}" for app, name in plan]
    wanted = names if arguments == ["every"] else [state for state in arguments if state != "none"]
    fresh: dict = {}
    snapshots = HistorySnapshots()

    def upgrade(state: str) -> None:
        tables = upgrade_from(plan, 0 if state == "none" else names.index(state) + 1, snapshots)
        fresh.setdefault("tables", tables)
        differing = sorted(t for t in fresh["tables"].keys() | tables.keys() if fresh["tables"].get(t) != tables.get(t))
        assert not differing, f"tables unlike a new database's: {differing}"

    try:
        # Along the plan, so that each state's old migrations continue from the previous state's copy.
        return each(["none", *sorted(wanted, key=names.index)], upgrade)
    finally:
        snapshots.drop()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
