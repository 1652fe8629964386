"""The Django project: settings by environment, the root URLs, the Celery app, the WSGI and ASGI entry points.

The apps (auditapp, annotation, psychometrics, coding, tasks) hold the domain and never import this package; they
read settings through ``django.conf.settings``. Loading the Celery app here, as every settings module is imported
from this package, binds ``@shared_task`` to it in every Django process (web, worker, commands) without an app
having to import it; ``celery -A config`` finds it as ``config.celery.app``.
"""
from config.celery import app as celery_app

__all__ = ["celery_app"]
