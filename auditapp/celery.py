"""Deprecated place of the Celery app, kept until auditapp 0.2.0 so that a deployment that runs ``celery -A auditapp``
keeps running after an upgrade: Celery looks for ``app`` in ``auditapp.celery`` and finds ``config.celery``'s."""
import warnings

from config.celery import app

__all__ = ["app"]

warnings.warn("celery -A auditapp is deprecated and goes in auditapp 0.2.0: run celery -A config",
              DeprecationWarning, stacklevel=1)
