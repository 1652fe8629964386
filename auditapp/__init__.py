"""The Django project (settings, urls, Celery app, wsgi/asgi) and the audit domain.

Deliberately empty of imports: the pure modules below (paradigms, scorers, metrics) must load without
Django or Celery. The Celery app is bound when Django starts (``AuditappConfig.ready``) and found by
``celery -A auditapp`` in ``auditapp.celery``.
"""
__version__ = "0.1.0"
