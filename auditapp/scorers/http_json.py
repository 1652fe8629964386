"""HTTP JSON scorers: any scoring service reached by a JSON POST whose reply holds a number (seed 001's
Google NL, DistilBERT and Toxic-BERT are of this kind when served: a self-hosted classifier, a Hugging Face
inference endpoint, a Perspective-style API).

Pure: no Django, no network. A scorer is described by

- a **request template**: any JSON value in which exactly one string is the placeholder ``"{{text}}"``; the
  text replaces that string as a JSON value, so quotes, backslashes and newlines in a text can never break
  the request's structure (nothing is formatted into a JSON string by hand);
- a **score path**: a JMESPath expression (the query language of the AWS CLI, with a maintained Python
  library) that picks the score out of the reply, e.g. ``attributeScores.TOXICITY.summaryScore.value``
  (Perspective) or ``[0][?label=='POSITIVE'].score | [0]`` (a Hugging Face text-classification endpoint);
- the **scale** the score must fall in.

:func:`extract_score` turns a reply body into a float or a :class:`~auditapp.scorers.local.ScoreFailure`
whose reason says what was wrong (not JSON, the path found nothing, not a number, out of scale).
"""
from __future__ import annotations

import json
import math
from typing import Any

import jmespath
from jmespath.exceptions import JMESPathError

from auditapp.scorers.local import ScoreFailure

PLACEHOLDER = "{{text}}"
MAX_REPLY_BYTES = 1_000_000


def _placeholder_paths(value: Any, path: str = "$") -> list[str]:
    if isinstance(value, dict):
        return [p for key, item in value.items() for p in _placeholder_paths(item, f"{path}.{key}")]
    if isinstance(value, list):
        return [p for index, item in enumerate(value) for p in _placeholder_paths(item, f"{path}[{index}]")]
    return [path] if value == PLACEHOLDER else []


def validate_request_template(template: Any) -> list[str]:
    """Problems of a request template: it must be a JSON object or array with the placeholder exactly once."""
    if not isinstance(template, dict | list):
        return [f"the request template must be a JSON object or array, not {type(template).__name__}"]
    paths = _placeholder_paths(template)
    if not paths:
        return [f"the request template has no string {PLACEHOLDER!r} where the text goes"]
    if len(paths) > 1:
        return [f"the request template has {PLACEHOLDER!r} {len(paths)} times ({', '.join(paths)}); one is needed"]
    return []


def render_request(template: Any, text: str) -> Any:
    """The request body for one text: the template with its placeholder string replaced by the text."""
    def fill(value: Any) -> Any:
        if isinstance(value, dict):
            return {key: fill(item) for key, item in value.items()}
        if isinstance(value, list):
            return [fill(item) for item in value]
        return text if value == PLACEHOLDER else value

    return fill(template)


def compile_score_path(expression: str) -> jmespath.parser.ParsedResult:
    """The compiled JMESPath expression; ``ValueError`` naming the problem if it does not parse."""
    if not expression or not expression.strip():
        raise ValueError("the score path is empty")
    try:
        return jmespath.compile(expression)
    except JMESPathError as error:
        raise ValueError(f"the score path {expression!r} is not a JMESPath expression: {error}") from None


def extract_score(body: bytes | str, path: jmespath.parser.ParsedResult, *,
                  scale: tuple[float, float]) -> float | ScoreFailure:
    """The score in a reply body, or why there is none."""
    if len(body) > MAX_REPLY_BYTES:
        return ScoreFailure(f"the reply is {len(body):,} bytes, more than {MAX_REPLY_BYTES:,}")
    try:
        reply = json.loads(body)
    except (ValueError, RecursionError) as error:
        return ScoreFailure(f"the reply is not JSON: {error}")
    try:
        value = path.search(reply)
    except JMESPathError as error:
        return ScoreFailure(f"the score path {path.expression!r} failed on the reply: {error}")
    if value is None:
        return ScoreFailure(f"the score path {path.expression!r} found nothing in the reply")
    if isinstance(value, bool) or not isinstance(value, int | float):
        return ScoreFailure(f"the score path {path.expression!r} found {json.dumps(value)[:80]}, not a number")
    low, high = scale
    if not math.isfinite(value) or not low <= value <= high:
        return ScoreFailure(f"the score {value!r} is outside [{low:g}, {high:g}]")
    return float(value)
