"""Settings split by environment: ``base`` is shared; ``local``, ``production`` and ``test`` extend it.

Every setting comes from the environment, with the embedded default (SQLite under ``var/``, a
file-system Celery broker) when it is unset.
"""
