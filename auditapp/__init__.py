"""The Django project (settings, urls, Celery app, wsgi/asgi) and, later, the audit domain.

Importing the Celery app here makes ``@shared_task`` bind to it whenever Django starts.
"""
from auditapp.celery import app as celery_app

__all__ = ("celery_app",)
__version__ = "0.1.0"
