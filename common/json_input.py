"""JSON from outside (uploads, request bodies) read with a bound on its nesting; pure Python, no Django.

Python's parser recurses once per nested array or object, so text nested 100,000 deep raises
``RecursionError`` (not the ``ValueError`` every caller handles: a 500), and data nested just under the
interpreter's limit breaks the next recursive step instead (storing it as JSON, rendering it). Nothing
we accept needs more than a handful of levels, so :func:`json_loads_bounded` refuses anything nested
more than ``MAX_JSON_DEPTH`` levels with :class:`JSONTooDeepError`, a ``ValueError``.
"""
from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

MAX_JSON_DEPTH = 64


class JSONTooDeepError(ValueError):
    """The JSON text nests arrays and objects more deeply than allowed."""

    def __init__(self, max_depth: int):
        self.max_depth = max_depth
        super().__init__(f"JSON nested more than {max_depth} levels deep (arrays and objects within each other)")


def json_loads_bounded(text: str | bytes, *, max_depth: int = MAX_JSON_DEPTH, **loads_options: Any) -> Any:
    """``json.loads(text, **loads_options)``, raising JSONTooDeepError for text nested deeper than ``max_depth``."""
    try:
        data = json.loads(text, **loads_options)
    except RecursionError:
        raise JSONTooDeepError(max_depth) from None
    if json_depth(data) > max_depth:
        raise JSONTooDeepError(max_depth)
    return data


def json_depth(data: Any) -> int:
    """How many arrays and objects nest at the deepest point: 0 for a scalar, 1 for ``[]`` or ``{"a": 1}``.

    Walked with an explicit stack, so it never recurses however deep the data is.
    """
    deepest = 0
    stack = [(data, 1)]
    while stack:
        value, depth = stack.pop()
        children: Iterable[Any]
        if isinstance(value, dict):
            children = value.values()
        elif isinstance(value, list | tuple):
            children = value
        else:
            continue
        deepest = max(deepest, depth)
        stack.extend((child, depth + 1) for child in children)
    return deepest


def json_kind(value: object) -> str:
    """What a JSON value is, in JSON's words, for a message saying what was given instead ("not an array")."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    return "an object"
