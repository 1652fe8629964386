"""Deprecated name of ``config.asgi``, kept until auditapp 0.2.0 so that a deployment that serves
``auditapp.asgi:application`` keeps running after an upgrade."""
import warnings

from config.asgi import application

__all__ = ["application"]

warnings.warn("auditapp.asgi is deprecated and goes in auditapp 0.2.0: serve config.asgi:application",
              DeprecationWarning, stacklevel=1)
