"""The Celery side: small idempotent tasks that take ids and call services.

Every module here is in ``CELERY_IMPORTS`` (settings finds them), so the worker registers its tasks.
"""
