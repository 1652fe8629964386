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

from config.settings.base import *  # noqa: F403

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
