"""The API's JSON request parser: every JSON write takes one object, nested a bounded number of levels, holding only
values the database can store.

DRF's own parser accepts any JSON value, so a body that is a list, a number, a string or ``null`` reached
the views (which read it as an object: a 500), and text nested thousands deep raised ``RecursionError``
(another 500). Here both are a 400 saying what is wrong, before any view runs.

Python's json reads ``1e400`` as infinity (an id of infinity was a 500 in the database lookup), and a NUL character
or a lone surrogate in any text, free-form objects included (an audit model's ``params``), cannot be stored in
PostgreSQL or rendered in an answer. Every such value anywhere in the body is a 400 naming its place, by the rules
the participants' pages use (:func:`common.participant_input.json_problems`). Like the parser's other refusals
it is a ``detail``, the one shape every operation documents for its 400 (its own field errors come later, from its
view).
"""
from __future__ import annotations

import codecs
from collections.abc import Mapping
from itertools import islice
from typing import IO, Any

from rest_framework.exceptions import ParseError

# get_encoding is DRF's (3.16) but missing from djangorestframework-stubs 3.16.9.
from rest_framework.parsers import JSONParser, get_encoding  # type: ignore[attr-defined]

from common.json_input import MAX_JSON_DEPTH, JSONTooDeepError, json_kind
from common.participant_input import json_loads_marking_non_finite, json_problems

# A body of a million NaNs would otherwise be answered with a million messages.
MAX_PROBLEMS_NAMED = 20


class JSONObjectParser(JSONParser):
    """``application/json`` bodies: one JSON object whose numbers are finite (``NaN`` and ``Infinity`` refused, as
    DRF's strict mode does, and ``1e400`` too) and whose texts hold no NUL character or lone surrogate."""

    def parse(self, stream: IO[Any], media_type: str | None = None,
              parser_context: Mapping[str, Any] | None = None) -> dict[str, Any]:
        try:
            text = codecs.getreader(get_encoding(parser_context or {}))(stream).read()
            data = json_loads_marking_non_finite(text, max_depth=MAX_JSON_DEPTH)
        except JSONTooDeepError as exc:
            raise ParseError(f"JSON parse error - {exc}.") from None
        except ValueError as exc:
            raise ParseError(f"JSON parse error - {exc}") from None
        if not isinstance(data, dict):
            raise ParseError(f"The request body must be a JSON object ({{...}}), not {json_kind(data)}.")
        if problems := list(islice(json_problems(data), MAX_PROBLEMS_NAMED + 1)):
            named = "; ".join(str(problem) for problem in problems[:MAX_PROBLEMS_NAMED])
            if len(problems) > MAX_PROBLEMS_NAMED:
                named += f"; and more (only the first {MAX_PROBLEMS_NAMED} are named)"
            raise ParseError(f"{named}.")
        return data


