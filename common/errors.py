"""Application errors: a service's refusal with its reason, which the API answers in one place
(:mod:`common.api.errors`): 400, or 409 for a refusal in the present state of what was asked about."""
from __future__ import annotations


class ApplicationError(ValueError):
    """A service refuses what was asked; the message says why."""


class StateConflict(ApplicationError):
    """Refused in the present state of what was asked about (pause a completed audit, re-parse a running one)."""
