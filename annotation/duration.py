"""How long a study takes a participant: the estimate shown before consent, from the study's parts.

Pure: it takes counts and returns minutes. The per-part times are our own estimates, not published figures,
and a study can state its own duration instead (``Study.estimated_minutes``):

- a questionnaire statement answered on a Likert scale: 6 s (reading a one-line statement and choosing one
  of four or five options; speeding checks in survey research flag answers faster than about 2 s per item,
  and attentive answers take a few seconds);
- the IAT: 200 trials (the sum of ``psychometrics.iat.BLOCK_TRIAL_COUNTS``, which a test keeps equal) at about
  1 s each with the 250 ms gap, plus seven instruction screens of about 20 s: 390 s, 6.5 minutes;
- a sentence to label with its context: 15 s (reading two to three sentences and choosing a label);
- consent and the labelling instructions: 2 minutes together.

The total is rounded up to whole minutes, so a participant is not told less than the parts add up to.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

SECONDS_PER_STATEMENT = 6
IAT_TRIALS = 200
IAT_BLOCKS = 7
IAT_SECONDS = IAT_TRIALS * 1.0 + IAT_TRIALS * 0.25 + IAT_BLOCKS * 20
SECONDS_PER_SENTENCE = 15
CONSENT_AND_INSTRUCTIONS_SECONDS = 120
# A researcher's own figure: at least a minute (0 would read "about 0 minutes"), at most a day.
STATED_MINUTES_MIN, STATED_MINUTES_MAX = 1, 24 * 60


@dataclass(frozen=True)
class DurationPart:
    name: str
    seconds: float


@dataclass(frozen=True)
class DurationEstimate:
    """``minutes`` to show, and the parts it adds up (``stated`` when the researcher gave the duration)."""

    minutes: int
    parts: tuple[DurationPart, ...]
    stated: bool = False


def duration_estimate(*, statements: int, iat: bool, sentences: int,
                      stated_minutes: int | None = None) -> DurationEstimate:
    """The duration of a study with ``statements`` questionnaire statements in all, the IAT or not, and
    ``sentences`` to label (attention checks included); ``stated_minutes`` (a researcher's own figure) wins."""
    if min(statements, sentences) < 0:
        raise ValueError("counts cannot be negative")
    parts = [DurationPart("consent and instructions", CONSENT_AND_INSTRUCTIONS_SECONDS)]
    if statements:
        parts.append(DurationPart(f"questionnaires ({statements} statements)", statements * SECONDS_PER_STATEMENT))
    if iat:
        parts.append(DurationPart("reaction-time task", IAT_SECONDS))
    if sentences:
        parts.append(DurationPart(f"labelling ({sentences} sentences)", sentences * SECONDS_PER_SENTENCE))
    if stated_minutes is not None:
        return DurationEstimate(stated_minutes, tuple(parts), stated=True)
    return DurationEstimate(math.ceil(sum(part.seconds for part in parts) / 60), tuple(parts))
