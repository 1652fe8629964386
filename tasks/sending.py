"""Sending a task from a service when the broker may be away: the service's own state says what is still to
send, and the periodic recovery (tasks.recovery) sends it once the broker is back."""
from __future__ import annotations

import logging

from kombu.exceptions import OperationalError as BrokerError

logger = logging.getLogger(__name__)


def task_send(task, *args, what: str) -> bool:
    """``task.delay(*args)``; False (and a warning naming ``what``) when the broker cannot be reached."""
    try:
        task.delay(*args)
    except BrokerError as error:
        logger.warning("%s: could not reach the task queue (%s); the recovery will send it", what, error)
        return False
    return True
