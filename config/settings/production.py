"""Production settings: SECRET_KEY is required; HTTPS everywhere, behind a TLS-terminating proxy.

The defaults pass ``manage.py check --deploy --fail-level WARNING`` (tests/test_deployment.py) and assume a
reverse proxy (nginx, Caddy, a load balancer) that terminates TLS and forwards to gunicorn with
``X-Forwarded-Proto: https`` (``SECURE_PROXY_SSL_HEADER``). The proxy must set that header itself and drop
any value a client sent, or a client could make a plain-HTTP request look secure.

- Plain HTTP is redirected to HTTPS (``SECURE_SSL_REDIRECT``), except ``/healthz``, which container health
  checks ask over plain HTTP from inside the container.
- HSTS for a year with subdomains (``SECURE_HSTS_SECONDS``, ``SECURE_HSTS_INCLUDE_SUBDOMAINS``). Browsers
  take it only from HTTPS answers. The ``preload`` directive is the operator's choice for the whole domain
  (``SECURE_HSTS_PRELOAD=1``); without it Django's reminder security.W021 is silenced.
- Session and CSRF cookies are secure (``SECURE_COOKIES``).

Running the production settings over plain HTTP with no proxy (a trial on localhost, the production-shape
test and benchmarks) needs ``SECURE_SSL_REDIRECT=0 SECURE_COOKIES=0``.
"""
import os

from django.core.exceptions import ImproperlyConfigured

from config.settings.base import *  # noqa: F403
from config.settings.base import env_bool

SECRET_KEY = os.environ.get("SECRET_KEY", "")
if not SECRET_KEY:
    raise ImproperlyConfigured("SECRET_KEY must be set in the environment in production.")

DEBUG = False
SESSION_COOKIE_SECURE = env_bool("SECURE_COOKIES", True)
CSRF_COOKIE_SECURE = env_bool("SECURE_COOKIES", True)
SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
SECURE_SSL_REDIRECT = env_bool("SECURE_SSL_REDIRECT", True)
SECURE_REDIRECT_EXEMPT = [r"^healthz$"]
SECURE_HSTS_SECONDS = int(os.environ.get("SECURE_HSTS_SECONDS", str(365 * 24 * 3600)))
SECURE_HSTS_INCLUDE_SUBDOMAINS = env_bool("SECURE_HSTS_INCLUDE_SUBDOMAINS", True)
SECURE_HSTS_PRELOAD = env_bool("SECURE_HSTS_PRELOAD", False)
SECURE_CONTENT_TYPE_NOSNIFF = True
if not SECURE_HSTS_PRELOAD:
    SILENCED_SYSTEM_CHECKS = ["security.W021"]
