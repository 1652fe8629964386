"""Settings shared by every environment; each value is read from the environment with a default.

Environment variables:
    SECRET_KEY              Django's signing key (required in production).
    DEBUG                   "1"/"true" to enable debug pages.
    ALLOWED_HOSTS           comma-separated host names.
    CSRF_TRUSTED_ORIGINS    comma-separated origins (https://example.org) behind a proxy.
    VAR_DIR                 where the embedded defaults keep their files (default: ./var).
    STATIC_ROOT             where collectstatic puts static files (default: VAR_DIR/static).
    DATABASE_URL            e.g. postgres://user:pass@host:5432/db; default: SQLite in VAR_DIR.
    CELERY_BROKER_URL       e.g. redis://host:6379/0; default: kombu's file-system transport in VAR_DIR.
    CELERY_RESULT_BACKEND   optional; tasks record their outcome in the database, so none is needed.
    CACHE_URL               e.g. redis://host:6379/1, shared by all web processes (rate limits);
                            default: each process's own memory.
    LLM_LIMITS_REDIS_URL    Redis holding LLM endpoints' concurrency and rate limits across workers
                            (default: the broker when it is Redis; otherwise limits are per worker process).
    CORPUS_UPLOAD_MAX_BYTES bytes to read in each file of a corpus upload (default 16 MiB).
    GIT_COMMIT              recorded in audit manifests when the code is not a git checkout.
    ONE_LAB                 "1"/"true" for a single-group install (AUDITAPP_ONE_LAB): every researcher is an editor
                            of the one team "Lab", and new studies, audits, corpora... go there (teams.scoping).
"""
from __future__ import annotations

import os
import pkgutil
import tomllib
from pathlib import Path
from typing import Any

import dj_database_url

BASE_DIR = Path(__file__).resolve().parent.parent.parent
VAR_DIR = Path(os.environ.get("VAR_DIR", BASE_DIR / "var")).resolve()


def env_bool(name: str, default: bool = False) -> bool:
    """Read a boolean from the environment ("1", "true", "yes", "on" are true)."""
    value = os.environ.get(name)
    if value is None:
        return default
    return value.strip().lower() in {"1", "true", "yes", "on"}


def env_list(name: str, default: str = "") -> list[str]:
    """Read a comma-separated list from the environment, dropping empty entries."""
    return [part.strip() for part in os.environ.get(name, default).split(",") if part.strip()]


DEBUG = env_bool("DEBUG", False)
ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", "127.0.0.1,localhost")
CSRF_TRUSTED_ORIGINS = env_list("CSRF_TRUSTED_ORIGINS")

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "whitenoise.runserver_nostatic",
    "django.contrib.staticfiles",
    "rest_framework",
    "rest_framework.authtoken",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "teams.apps.TeamsConfig",
    "auditapp.apps.AuditappConfig",
    "annotation",
    "psychometrics",
    "coding.apps.CodingConfig",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "auditapp.middleware.DatabaseUnavailableMiddleware",
]

ROOT_URLCONF = "config.urls"
WSGI_APPLICATION = "config.wsgi.application"
ASGI_APPLICATION = "config.asgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "auditapp.worker_status.researcher_worker_status",
            ],
        },
    },
]


def database_from_environment() -> dj_database_url.DBConfig | dict[str, Any]:
    """DATABASE_URL if set, else an SQLite file under VAR_DIR tuned for a web and a worker process.

    SQLite runs in WAL mode with IMMEDIATE transactions and a busy timeout, so the web server and the
    Celery worker can write to the same file without "database is locked" errors under light load.
    """
    url = os.environ.get("DATABASE_URL")
    if url:
        config = dj_database_url.parse(url, conn_max_age=60, conn_health_checks=True)
        if config["ENGINE"] == "django.db.backends.sqlite3":
            config["OPTIONS"] = SQLITE_OPTIONS
        return config
    # Not a DBConfig: its NAME is a Path, which Django takes and DBConfig (text) does not.
    return {
        "ENGINE": "django.db.backends.sqlite3",
        "NAME": VAR_DIR / "db.sqlite3",
        "OPTIONS": SQLITE_OPTIONS,
    }


SQLITE_OPTIONS = {
    "timeout": 30,
    "transaction_mode": "IMMEDIATE",
    "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
}
DATABASES = {"default": database_from_environment()}
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

CACHES = {
    "default": (
        {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": os.environ["CACHE_URL"]}
        if os.environ.get("CACHE_URL")
        else {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}
    )
}

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATIC_ROOT = Path(os.environ.get("STATIC_ROOT", VAR_DIR / "static"))
STATICFILES_DIRS = [BASE_DIR / "static"]
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "whitenoise.storage.CompressedManifestStaticFilesStorage"},
}
MEDIA_ROOT = VAR_DIR / "media"

# Uploaded item files are kept in the database for provenance; allow research-sized files.
DATA_UPLOAD_MAX_MEMORY_SIZE = 100 * 1024 * 1024
FILE_UPLOAD_MAX_MEMORY_SIZE = 10 * 1024 * 1024
# A corpus upload is validated while the uploader waits: each of its two files may take this many bytes to read
# (a workbook: its uncompressed size).
CORPUS_UPLOAD_MAX_BYTES = int(os.environ.get("CORPUS_UPLOAD_MAX_BYTES", str(16 * 1024 * 1024)))

LOGIN_URL = "admin:login"

# A single-group install: every researcher an editor of the one team "Lab" (teams.scoping.team_for_new_object).
AUDITAPP_ONE_LAB = env_bool("ONE_LAB", False)

REST_FRAMEWORK = {
    # Token first, so an anonymous request gets 401 with a WWW-Authenticate header, not 403.
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "rest_framework.authentication.TokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAdminUser"],
    # Every JSON write takes one object: any other JSON value, or one nested too deeply, is a 400.
    "DEFAULT_PARSER_CLASSES": [
        "common.api.parsers.JSONObjectParser",
        "rest_framework.parsers.FormParser",
        "rest_framework.parsers.MultiPartParser",
    ],
    "DEFAULT_RENDERER_CLASSES": [
        "rest_framework.renderers.JSONRenderer",
        "rest_framework.renderers.BrowsableAPIRenderer",
        "common.api.csv_export.CSVRenderer",
    ],
    "DEFAULT_PAGINATION_CLASS": "common.api.pagination.ExportPagination",
    "DEFAULT_CONTENT_NEGOTIATION_CLASS": "common.api.negotiation.FormatNegotiation",
    "DEFAULT_SCHEMA_CLASS": "common.api.schema.AutoSchema",
    # A service's refusal (AuditError and its kinds) answers with its reason and status, in one place.
    "EXCEPTION_HANDLER": "common.api.errors.exception_handler",
}

SPECTACULAR_SETTINGS = {
    "TITLE": "auditapp API",
    "DESCRIPTION": (
        "Researcher API for annotator studies and model audits. Authenticate with "
        "`Authorization: Token <key>` (staff users only). Every list endpoint also answers "
        "`?format=csv`, streamed in full without pagination. Participants appear only by "
        "pseudonym in a column called `participant`; items by external id in a column called `item`."
    ),
    "VERSION": "0.1.0",
    # The schema describes the API, not its data: public, so scripts can generate clients.
    "SERVE_PERMISSIONS": ["rest_framework.permissions.AllowAny"],
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    "COMPONENT_SPLIT_REQUEST": True,
    # Four models have a "status" with different choices: each enum is named after its model.
    "ENUM_NAME_OVERRIDES": {
        "StudyStatusEnum": "annotation.models.Study.Status",
        "ParticipantStatusEnum": "annotation.models.Participant.Status",
        "LabelValueEnum": "annotation.models.LabelValue",
        "ItemImportStatusEnum": "annotation.models.ItemImport.Status",
        "AuditStatusEnum": "auditapp.models.Audit.Status",
        "ParadigmEnum": "auditapp.engine.registry.choices",
        "TeamRoleEnum": "teams.roles.CHOICES",
        "PairAnswerEnum": "auditapp.paradigms.counterfactual.pairs.ANSWER_CHOICES",
        "PairSideOutcomeEnum": "auditapp.paradigms.counterfactual.pairs.SIDE_OUTCOMES",
    },
    "POSTPROCESSING_HOOKS": [
        "drf_spectacular.hooks.postprocess_schema_enums",
        "common.api.schema.state_request_rules",
        "common.api.schema.document_error_responses",
    ],
}

# Celery: JSON messages, a time limit on every task, late acknowledgement so a task whose worker
# dies is redelivered (tasks are idempotent, so a second run changes nothing).
CELERY_BROKER_URL = os.environ.get("CELERY_BROKER_URL", "filesystem://")
CELERY_BROKER_FOLDER = VAR_DIR / "broker"
if CELERY_BROKER_URL.startswith("filesystem://"):
    # kombu's file-system transport with atomic publishing and claimed messages (auditapp/embedded_broker.py): kombu's
    # own lets a worker read a message file before it is written, which killed the worker within minutes.
    CELERY_BROKER_TRANSPORT = "auditapp.embedded_broker:Transport"
    CELERY_BROKER_TRANSPORT_OPTIONS = {
        "data_folder_in": str(CELERY_BROKER_FOLDER / "queue"),
        "data_folder_out": str(CELERY_BROKER_FOLDER / "queue"),
        "control_folder": str(CELERY_BROKER_FOLDER / "control"),
        "store_processed": False,
        # The worker looks for new tasks this often (kombu's default is 1 s, which an audit's three tasks, prepare,
        # work and analyse, each waited for: benchmarks/bits_throughput.py). Listing a folder 10 times a second
        # costs the worker next to nothing.
        "polling_interval": 0.1,
    }
    for _folder in ("queue", "control"):
        (CELERY_BROKER_FOLDER / _folder).mkdir(parents=True, exist_ok=True)
CELERY_RESULT_BACKEND = os.environ.get("CELERY_RESULT_BACKEND") or None
CELERY_TASK_IGNORE_RESULT = CELERY_RESULT_BACKEND is None
# Every module of the tasks package, found (not imported) here: a new task module is registered without a list.
CELERY_IMPORTS = sorted(f"tasks.{module.name}" for module in pkgutil.iter_modules([str(BASE_DIR / "tasks")]))
# Every worker runs the recovery (tasks.recovery) when it starts and then this often: pending work whose worker
# died or whose task was lost resumes by itself; work nobody has held for WORK_STALLED_SECONDS is sent again.
WORK_RECOVERY_SECONDS = float(os.environ.get("WORK_RECOVERY_SECONDS", "15"))
# Each worker also writes its heartbeat that often (auditapp/worker_status.py); researchers' pages say that no worker
# is alive once the newest is older than this.
WORKER_SILENT_SECONDS = float(os.environ.get("WORKER_SILENT_SECONDS", str(max(40.0, 2.5 * WORK_RECOVERY_SECONDS))))
WORK_STALLED_SECONDS = float(os.environ.get("WORK_STALLED_SECONDS", "30"))
# An audit's work task just sent may wait this long in a busy queue before the recovery counts it as lost.
WORK_QUEUED_GRACE_SECONDS = float(os.environ.get("WORK_QUEUED_GRACE_SECONDS", "600"))
# Recompute a study's analysis in the background when an annotator finishes or its settings change.
ANALYSIS_AUTO_RECOMPUTE = True
# A running recomputation is taken over by another worker after this long (or five times the study's last
# computation, if longer); one queued this long ago and never started is sent again (a lost message).
ANALYSIS_LEASE_SECONDS = float(os.environ.get("ANALYSIS_LEASE_SECONDS", "60"))
ANALYSIS_RESEND_SECONDS = float(os.environ.get("ANALYSIS_RESEND_SECONDS", "600"))
# Recomputations have their own queue, which a worker serves in turn with the default one, so an item
# import or an audit never waits behind a backlog of analyses.
CELERY_TASK_QUEUES: dict[str, dict[str, Any]] = {"celery": {}, "analysis": {}}
CELERY_TASK_ROUTES = {"annotation.study_analysis_compute": {"queue": "analysis"},
                      "annotation.study_alternatives_compute": {"queue": "analysis"}}
CELERY_ACCEPT_CONTENT = ["json"]
CELERY_TASK_SERIALIZER = "json"
CELERY_RESULT_SERIALIZER = "json"
CELERY_TIMEZONE = TIME_ZONE
CELERY_TASK_TIME_LIMIT = 60 * 60
CELERY_TASK_SOFT_TIME_LIMIT = 55 * 60
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
if CELERY_BROKER_URL.startswith(("redis://", "rediss://")):
    # Redis gives a message taken by a worker that died to another only after this long; it must outlast the
    # longest task, or a task still running is delivered twice. The workers' recovery (tasks.recovery) does
    # not wait for it: it sends again, within WORK_STALLED_SECONDS, whatever no live worker holds.
    CELERY_BROKER_TRANSPORT_OPTIONS = {"visibility_timeout": CELERY_TASK_TIME_LIMIT + 5 * 60}
CELERY_WORKER_HIJACK_ROOT_LOGGER = False
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True

# LLM audits: an endpoint's concurrency and rate limits hold across all workers through Redis (the broker's,
# unless LLM_LIMITS_REDIS_URL names another); without Redis, across every worker process of this machine through
# lock files in LLM_LIMITS_DIR (the embedded defaults run their workers on one machine).
LLM_LIMITS_REDIS_URL = os.environ.get("LLM_LIMITS_REDIS_URL") or (
    CELERY_BROKER_URL if CELERY_BROKER_URL.startswith(("redis://", "rediss://")) else "")
LLM_LIMITS_DIR = VAR_DIR / "llm-limits"
# A request's concurrency slot in Redis is a lease this long, renewed while the request is in flight: a killed
# worker's slots are free again within it.
LLM_SLOT_LEASE_SECONDS = float(os.environ.get("LLM_SLOT_LEASE_SECONDS", "15"))
# Addresses the server may send LLM requests and model listings to (auditapp/endpoint_addresses.py): link-local
# and cloud metadata addresses are refused; private and loopback ranges are allowed unless this is turned off
# (local model servers on 127.0.0.1 or the LAN are the common case).
LLM_ENDPOINTS_ALLOW_PRIVATE = env_bool("LLM_ENDPOINTS_ALLOW_PRIVATE", True)
LLM_ENDPOINTS_ALLOW_LINK_LOCAL = env_bool("LLM_ENDPOINTS_ALLOW_LINK_LOCAL", False)
# A worker's claim on audit requests, and its hold on the audit's work, expire this long after its last renewal: a
# killed worker's are then taken over. A working task renews every fraction of a second, and takes a lapsed lease
# again while no other task holds the audit, so this bounds how long a killed worker's audit waits.
AUDIT_LEASE_SECONDS = float(os.environ.get("AUDIT_LEASE_SECONDS", "10"))
# A worker's claim on a second-pass extraction expires this long after its last renewal (it renews between pages
# of replies, while an extractor model answers, and before computing the metrics, which may take a minute on a
# large audit); the workers' recovery then sends it to another.
EXTRACTION_LEASE_SECONDS = float(os.environ.get("EXTRACTION_LEASE_SECONDS", "300"))
# Recorded in every audit's manifest. GIT_COMMIT is for deployments without a git checkout (Docker images).
APP_VERSION = tomllib.loads((BASE_DIR / "pyproject.toml").read_text())["project"]["version"]
GIT_COMMIT = os.environ.get("GIT_COMMIT", "")

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s: %(message)s"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "plain"}},
    "root": {"handlers": ["console"], "level": os.environ.get("LOG_LEVEL", "INFO")},
    # httpx logs every request at INFO: an audit sends thousands a second.
    "loggers": {"httpx": {"level": "WARNING"}, "httpcore": {"level": "WARNING"}},
}
