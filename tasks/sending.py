"""Sending a task from a service: by its name, so a service never imports a task module (which imports the
service); and when the broker may be away, with the service's own state saying what is still to send, which the
periodic recovery (tasks.recovery) sends once the broker is back. Imports no task module and no service."""
from __future__ import annotations

import logging
from importlib import import_module

from celery import current_app
from django.conf import settings
from kombu.exceptions import OperationalError as BrokerError

logger = logging.getLogger(__name__)


def task_named(name: str):
    """The registered task of that name (``@shared_task(name=...)``). The task modules (settings.CELERY_IMPORTS)
    are imported the first time a task is asked for in a process that has not imported them. Imported directly,
    not through Celery's loader, whose signal would run Django's setup again (rebuilding logging mid-request)."""
    if name not in current_app.tasks:
        for module in settings.CELERY_IMPORTS:
            import_module(module)
    return current_app.tasks[name]


def task_send(name: str, *args, what: str) -> bool:
    """``task_named(name).delay(*args)``; False (and a warning naming ``what``) when the broker cannot be
    reached."""
    try:
        task_named(name).delay(*args)
    except BrokerError as error:
        logger.warning("%s: could not reach the task queue (%s); the recovery will send it", what, error)
        return False
    return True
