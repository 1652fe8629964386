"""Deprecated name of ``config.settings.production``, kept until auditapp 0.2.0 so that a deployment whose unit files
or environment say ``DJANGO_SETTINGS_MODULE=auditapp.settings.production`` keeps running after an upgrade."""
import warnings

from config.settings.production import *  # noqa: F403

warnings.warn("auditapp.settings.production is deprecated and goes in auditapp 0.2.0: set "
              "DJANGO_SETTINGS_MODULE=config.settings.production", DeprecationWarning, stacklevel=1)
