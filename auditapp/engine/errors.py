"""The audit engine's errors: what a launch or a control refuses (:class:`AuditError`), and the faults that pass by
themselves, which a running audit waits out instead of failing."""
from __future__ import annotations

import redis
from django.db import InterfaceError
from django.db import OperationalError as DatabaseError
from kombu.exceptions import OperationalError as BrokerError

from common.errors import ApplicationError, StateConflict

# Faults that pass by themselves (the broker or the Redis holding the endpoint limits restarting, the database
# failing over): a running audit that meets one waits with a note and resumes by itself
# (``audits_resume_stalled``) instead of failing.
DATABASE_ERRORS = (DatabaseError, InterfaceError)
TRANSIENT_ERRORS = (redis.ConnectionError, redis.TimeoutError, BrokerError, *DATABASE_ERRORS)
WAITING_NOTE = "waiting since"


class AuditError(ApplicationError):
    """An audit cannot be created or changed as asked; the message says why (the API answers 400 with it:
    :mod:`common.api.errors`)."""


class AuditStateError(AuditError, StateConflict):
    """What was asked is refused in the audit's present state (pause a completed audit, re-parse a running one):
    the API answers 409 with the reason."""
