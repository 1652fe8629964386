"""Settings for one machine with no servers: the embedded defaults plus a persistent dev secret key."""
import os
import secrets

from config.settings.base import *  # noqa: F403
from config.settings.base import VAR_DIR, env_bool


def _local_secret_key() -> str:
    """A random key generated once and kept in var/, so sessions survive restarts."""
    path = VAR_DIR / "secret_key"
    if not path.exists():
        VAR_DIR.mkdir(parents=True, exist_ok=True)
        path.write_text(secrets.token_urlsafe(50))
        path.chmod(0o600)
    return path.read_text().strip()


SECRET_KEY = os.environ.get("SECRET_KEY") or _local_secret_key()
DEBUG = env_bool("DEBUG", True)
