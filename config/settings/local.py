"""Settings for one machine with no servers: the embedded defaults plus a persistent dev secret key.

Static files are served as in production: DEBUG is off unless DEBUG=1 (as everywhere), so WhiteNoise serves what collectstatic (which
bin/run runs at every start) put in STATIC_ROOT: names with a content hash, cached by browsers for a year, and
gzip-compressed. DEBUG=1 gives Django's debug pages and serves static/ as it is (unhashed, uncompressed, never
cached), which needs no collectstatic.
"""
import os
import secrets

from config.settings.base import *  # noqa: F403
from config.settings.base import VAR_DIR


def _local_secret_key() -> str:
    """A random key generated once and kept in var/, so sessions survive restarts."""
    path = VAR_DIR / "secret_key"
    if not path.exists():
        VAR_DIR.mkdir(parents=True, exist_ok=True)
        path.write_text(secrets.token_urlsafe(50))
        path.chmod(0o600)
    return path.read_text().strip()


SECRET_KEY = os.environ.get("SECRET_KEY") or _local_secret_key()
