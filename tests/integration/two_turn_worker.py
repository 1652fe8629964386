"""A real Celery worker with the test-only two-turn paradigm registered (tests/auditapp/two_turn_builder.py), for the
SIGKILL test of conversations (tests/integration/test_conversation_worker.py) until a paradigm of the app asks in
two turns. Its prefork children are forked after the registration, so they have it too.

    python -m tests.integration.two_turn_worker -A auditapp worker --loglevel=INFO
"""
from __future__ import annotations

import sys

import django

if __name__ == "__main__":
    django.setup()
    from celery.__main__ import main

    from tests.auditapp import two_turn_builder

    two_turn_builder.install_for_process()
    sys.exit(main())
