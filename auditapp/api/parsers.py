"""The API's JSON request parser: every JSON write takes one object, nested a bounded number of levels.

DRF's own parser accepts any JSON value, so a body that is a list, a number, a string or ``null`` reached
the views (which read it as an object: a 500), and text nested thousands deep raised ``RecursionError``
(another 500). Here both are a 400 saying what is wrong, before any view runs.
"""
from __future__ import annotations

import codecs

from rest_framework.exceptions import ParseError
from rest_framework.parsers import JSONParser, get_encoding
from rest_framework.utils.json import strict_constant

from annotation.json_input import JSONTooDeepError, json_loads_bounded


class JSONObjectParser(JSONParser):
    """``application/json`` bodies: one JSON object (NaN and Infinity refused, as DRF's strict mode does)."""

    def parse(self, stream, media_type=None, parser_context=None) -> dict:
        try:
            text = codecs.getreader(get_encoding(parser_context or {}))(stream).read()
            data = json_loads_bounded(text, parse_constant=strict_constant if self.strict else None)
        except JSONTooDeepError as exc:
            raise ParseError(f"JSON parse error - {exc}.") from None
        except ValueError as exc:
            raise ParseError(f"JSON parse error - {exc}") from None
        if not isinstance(data, dict):
            raise ParseError(f"The request body must be a JSON object ({{...}}), not {_json_kind(data)}.")
        return data


def _json_kind(value) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, list):
        return "an array"
    if isinstance(value, str):
        return "a string"
    return "a number"
