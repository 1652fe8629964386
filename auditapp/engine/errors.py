"""The audit engine's errors: what a launch or a control refuses (:class:`AuditError`), and the faults that pass by
themselves, which a running audit waits out instead of failing."""
from __future__ import annotations

import re

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


# What a researcher can do about the most frequent error of an audit stopped by its error budget, by what the
# error says (first match wins); anything else: look at the endpoint.
_FAILURE_ADVICE = (
    (re.compile(r"HTTP 429\b"), "the endpoint's rate limit: lower its max concurrency or set requests per minute"),
    (re.compile(r"context (?:length|window|size)|maximum context|n_ctx|too many tokens|prompt is too long"
                r"|input is too long|exceeds? (?:the )?(?:available )?context", re.I),
     "the prompts are longer than the model's context: serve the model with a longer context (llama.cpp: "
     "--n_ctx), choose a model with one, or send shorter prompts (a smaller batch)"),
    (re.compile(r"HTTP 40[13]\b"), "the endpoint refused the API key: check the endpoint's key variable"),
    (re.compile(r"HTTP 404\b"), "the model or the path was not found: check the model's name and the endpoint's "
                                "base URL"),
)


def failure_advice(error: str) -> str:
    """What to do about an audit's most frequent request error (``error`` as recorded on the request)."""
    return next((advice for pattern, advice in _FAILURE_ADVICE if pattern.search(error)),
                "check the endpoint and the model")
