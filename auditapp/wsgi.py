"""Deprecated name of ``config.wsgi``, kept until auditapp 0.2.0 so that a deployment that runs
``gunicorn auditapp.wsgi`` (or ``auditapp.wsgi:application``) keeps running after an upgrade."""
import warnings

from config.wsgi import application

__all__ = ["application"]

warnings.warn("auditapp.wsgi is deprecated and goes in auditapp 0.2.0: serve config.wsgi:application",
              DeprecationWarning, stacklevel=1)
