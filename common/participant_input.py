"""What a participant's or coder's browser sends, checked at the boundary before any service sees it (pure, no
Django): the checks every page shares (an instrument's answers and IAT blocks are read with them in
:mod:`psychometrics.page_input`).

Every value is refused with an :class:`InputError` that names the field (``trials[3].latency_first_ms``):
numbers must be finite and in range, so ``1e400`` (which Python's json reads as infinity), ``NaN`` and
``Infinity`` never reach the database; texts may not hold a NUL character or a lone surrogate, which
PostgreSQL cannot store; a JSON body must be an object and not nested absurdly deep. The researchers' API
reads its JSON bodies with the same rules (:func:`json_loads_marking_non_finite`, :func:`json_problems`).
"""
from __future__ import annotations

import math
import re
from collections.abc import Iterator
from dataclasses import dataclass

from common.json_input import JSONTooDeepError, json_loads_bounded

MAX_JSON_DEPTH = 20
MAX_ID = 2**31 - 1


class InputError(ValueError):
    """A value the browser sent is unusable; ``field`` names it, the message says what is expected."""

    def __init__(self, field: str, problem: str):
        self.field = field
        self.problem = problem
        super().__init__(f"{field}: {problem}")


@dataclass(frozen=True)
class NotFinite:
    """What stands in a parsed body for ``NaN``, ``Infinity`` or a number too large for a float, so that
    the field holding it can be named when it is refused."""

    text: str


def _float_or_not_finite(text: str) -> float | NotFinite:
    value = float(text)
    return value if math.isfinite(value) else NotFinite(text)


def json_loads_marking_non_finite(text: str | bytes, *, max_depth: int):
    """JSON text read with :func:`json_loads_bounded`, ``NaN``, ``Infinity`` and numbers that overflow a float
    read as :class:`NotFinite`, so that :func:`json_problems` can name where they are."""
    return json_loads_bounded(text, max_depth=max_depth, parse_constant=NotFinite, parse_float=_float_or_not_finite)


def json_problems(data) -> Iterator[InputError]:
    """Each value of parsed JSON the database cannot take, in the order of the text: a :class:`NotFinite` number (or
    a float that is not finite, as other readers give), a text (or an object's key) with a NUL character or a lone
    surrogate. Each is named by its place, as ``models[0].params.temperature``; a key is shown escaped, never as it
    came."""
    stack = [(data, "")]
    while stack:
        value, where = stack.pop()
        if isinstance(value, NotFinite):
            yield InputError(where, f"{value.text} is not a finite number")
        elif isinstance(value, float) and not math.isfinite(value):
            yield InputError(where, f"{value} is not a finite number")
        elif isinstance(value, str) and (reason := unstorable_reason(value)):
            yield InputError(where, reason)
        elif isinstance(value, dict):
            members = []
            for key, member in value.items():
                name = f"{where}.{_escaped(key)}" if where else _escaped(key)
                if reason := unstorable_reason(key):
                    yield InputError(name, f"the name {reason}")
                members.append((member, name))
            stack.extend(reversed(members))
        elif isinstance(value, list):
            stack.extend(reversed([(item, f"{where}[{n}]") for n, item in enumerate(value)]))


def _escaped(text: str) -> str:
    """``text`` as it can be shown in a message: a NUL character and a lone surrogate written as escapes."""
    return text.replace("\x00", "\\x00").encode("utf-8", "backslashreplace").decode("utf-8")


def json_object(body: bytes) -> dict:
    """The request body as a JSON object, refused when it is not one, is nested too deeply, or holds a value
    :func:`json_problems` finds (the first one is named)."""
    try:
        parsed = json_loads_marking_non_finite(body, max_depth=MAX_JSON_DEPTH)
    except JSONTooDeepError:
        raise InputError("body", "JSON nested too deeply") from None
    except ValueError as error:
        raise InputError("body", f"not valid JSON ({error})") from None
    if not isinstance(parsed, dict):
        raise InputError("body", "must be a JSON object")
    if problem := next(json_problems(parsed), None):
        raise problem
    return parsed


def whole_number(value, *, field: str, minimum: int = 0, maximum: int = MAX_ID) -> int:
    """A JSON integer (not a boolean, not a float) between ``minimum`` and ``maximum``."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise InputError(field, "must be a whole number")
    if not minimum <= value <= maximum:
        raise InputError(field, f"must be between {minimum} and {maximum}")
    return value


def finite_number(value, *, field: str, minimum: float, maximum: float) -> float:
    """A JSON number (integer or float, not a boolean), finite and between ``minimum`` and ``maximum``."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise InputError(field, "must be a number")
    try:
        number = float(value)
    except OverflowError:
        number = math.inf
    if not math.isfinite(number) or not minimum <= number <= maximum:
        raise InputError(field, f"must be a finite number between {minimum:g} and {maximum:g}")
    return number


def form_number(text: str | None, *, field: str, minimum: int = 0, maximum: int = MAX_ID) -> int:
    """A whole number typed in a form field: ASCII digits only (``int`` would also take '١' or '1_0')."""
    if text is None or not text.isascii() or not text.isdigit() or len(text) > 10:
        raise InputError(field, "must be a whole number")
    return whole_number(int(text), field=field, minimum=minimum, maximum=maximum)


def unstorable_reason(text: str) -> str | None:
    """Why the database cannot store ``text`` (a NUL character, an unpaired surrogate), or None."""
    if "\x00" in text:
        return "contains a NUL character, which cannot be stored; please remove it"
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return "contains an invalid character (an unpaired surrogate)"
    return None


PAGE_ID_PATTERN = re.compile(r"[A-Za-z0-9-]{0,64}")  # a page's id: a UUID, or digits where crypto is missing


@dataclass(frozen=True)
class PageWrite:
    """Which open page sent a save (``writer``, "" for none named) and how many saves it had sent (``seq``): a page's
    saves may reach the server out of order, and a later one must not be replaced by an earlier one."""
    writer: str
    seq: int

    def overtaken(self, stored_writer: str, stored_seq: int) -> bool:
        """Whether this save is an earlier one of the page whose save (``stored_writer``, ``stored_seq``) is stored,
        or that same save again; a save that names no page never is."""
        return bool(self.writer) and self.writer == stored_writer and self.seq <= stored_seq


def page_write(data: dict) -> PageWrite:
    """The ``writer`` and ``seq`` of a page's save (both optional)."""
    writer = data.get("writer", "")
    if not isinstance(writer, str) or not PAGE_ID_PATTERN.fullmatch(writer):
        raise InputError("writer", "must be at most 64 letters, digits and dashes (the page's id)")
    return PageWrite(writer=writer, seq=whole_number(data.get("seq", 0), field="seq"))


def storable_text(text: str, *, field: str) -> str:
    """A text the database can store: no NUL character, no unpaired surrogate."""
    if reason := unstorable_reason(text):
        raise InputError(field, reason)
    return text
