"""Which environment variables an endpoint's API key may be read from.

An endpoint names the variable that holds its key (``LLMEndpoint.api_key_env``) and the server sends the value as
a Bearer token to the endpoint's URL. Whoever may register an endpoint chooses both the name and the URL, so a free
name would let them have any of the server's settings sent to a listener of theirs (``SECRET_KEY``,
``DATABASE_URL``, a cloud credential). Only names with the documented prefix ``LLM_KEY_`` are read; an operator
puts each model provider's key in such a variable (``LLM_KEY_OPENAI=sk-…``) and nothing else of the server's can be
named. Whether any other variable exists is never looked up, so it cannot be probed either.

Pure layer: no Django.
"""
from __future__ import annotations

import os
import re

KEY_VARIABLE_PREFIX = "LLM_KEY_"
KEY_VARIABLE_PATTERN = re.compile(rf"\A{KEY_VARIABLE_PREFIX}[A-Z0-9_]{{1,92}}\Z")


class EndpointRefused(ValueError):
    """An endpoint the server will not ask; the message says why (its address, or its key variable)."""


class EndpointKeyRefused(EndpointRefused):
    """An endpoint whose key variable is not one the server may read (stored before names were restricted)."""


def key_variable_problem(name: str) -> str:
    """Why ``name`` may not hold an endpoint's key, or "" (an empty name, no key, is fine)."""
    if not name or KEY_VARIABLE_PATTERN.match(name):
        return ""
    return (f"the key's environment variable must be named {KEY_VARIABLE_PREFIX}<NAME> (capital letters, digits "
            f"and _, e.g. {KEY_VARIABLE_PREFIX}OPENAI); no other variable of the server can be named")


def check_key_variable(name: str) -> None:
    """Raise EndpointKeyRefused when ``name`` may not hold an endpoint's key."""
    problem = key_variable_problem(name)
    if problem:
        raise EndpointKeyRefused(f"its key variable {name} is refused: {problem}")


def read_key(name: str, environ: dict[str, str] | None = None) -> str | None:
    """The key in the variable ``name``, or None when it is unnamed, unset, or not a name that may hold a key (which
    is then never looked up: callers refuse such an endpoint with :func:`check_key_variable` before using it)."""
    if not name or key_variable_problem(name):
        return None
    return (os.environ if environ is None else environ).get(name) or None
