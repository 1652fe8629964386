"""Fast test settings: MD5 password hashing, in-memory e-mail, plain static storage.

DATABASE_URL chooses the database as everywhere else: unset, the suite runs on SQLite; set to a
PostgreSQL URL, the same suite runs on PostgreSQL (pytest-django creates a test_ database there).

The SQLite test database is a file, as it is under bin/run, never Django's default in-memory one: the live
server of the browser tests answers each request in its own thread, and with an in-memory database Django hands
every one of those threads the test's single connection, so two requests at once (an autosave and a page
load) break each other's savepoints ("cannot release savepoint - SQL statements in progress"). A file gives
each thread its own connection, serialised by SQLite's WAL and busy timeout like the web server's.
As there, transactions are IMMEDIATE: a test that writes from a second thread or connection must be
``django_db(transaction=True)``, or it waits out the busy timeout behind the test's own open transaction.
"""
import os
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit


def _isolate_xdist_worker() -> None:
    """Give each pytest-xdist worker (bin/test runs each pass on two) its own VAR_DIR, where the file-system
    broker keeps its queue, and its own Redis database, which integration tests flush and whose Celery queue a
    worker process of theirs reads. Done in the environment, before the settings read it, so that the processes a
    test starts inherit the same; they inherit the marker too, and keep what they are given."""
    worker = os.environ.get("PYTEST_XDIST_WORKER", "")
    if not worker or os.environ.get("AUDITAPP_TEST_WORKER") == worker:
        return
    os.environ["AUDITAPP_TEST_WORKER"] = worker
    index = int(worker.removeprefix("gw"))
    var_dir = os.environ.get("VAR_DIR") or str(Path(__file__).resolve().parents[2] / "var")
    os.environ["VAR_DIR"] = str(Path(var_dir, worker))
    broker = urlsplit(os.environ.get("CELERY_BROKER_URL", ""))
    if broker.scheme in ("redis", "rediss"):
        database = int(broker.path.strip("/") or 0) + index
        os.environ["CELERY_BROKER_URL"] = urlunsplit(broker._replace(path=f"/{database}"))


_isolate_xdist_worker()

from config.settings.base import *  # noqa: E402, F403

SECRET_KEY = "test-only-not-secret"  # noqa: S105
DEBUG = False
# Tests compute analyses explicitly; the worker path has its own integration tests, whose worker processes
# turn the automatic recomputation on with ANALYSIS_AUTO_RECOMPUTE=1.
ANALYSIS_AUTO_RECOMPUTE = os.environ.get("ANALYSIS_AUTO_RECOMPUTE") == "1"
PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
EMAIL_BACKEND = "django.core.mail.backends.locmem.EmailBackend"
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.InMemoryStorage"},
    "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"},
}

if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":  # noqa: F405
    # One file per test process, so that two local runs at once never share one; Django deletes it at the end
    # (a killed run leaves it in VAR_DIR, which bin/test's passes delete with their temporary VAR_DIR).
    DATABASES["default"]["TEST"] = {"NAME": str(VAR_DIR / f"test-db-{os.getpid()}.sqlite3")}  # noqa: F405

# WhiteNoise warns about a missing STATIC_ROOT; tests never run collectstatic.
WHITENOISE_USE_FINDERS = True
STATIC_ROOT.mkdir(parents=True, exist_ok=True)  # noqa: F405
