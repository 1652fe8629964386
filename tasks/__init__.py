"""The Celery side: small idempotent tasks that take ids and call services.

Each module here is listed in ``CELERY_IMPORTS`` (settings) so the worker registers its tasks.
"""
