"""The audit domain: LLM endpoints, audits, requests and replies, the engine, paradigms, metrics, the audits' API.

Deliberately empty of imports: the pure modules below (paradigms, scorers, metrics) must load without
Django or Celery. The Django project around it (settings, urls, the Celery app) is the ``config`` package.
"""
__version__ = "0.1.0"
