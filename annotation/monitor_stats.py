"""The numbers of a study's monitor, from counts the database has already grouped (pure: no Django).

**Recruitment funnel.** A study's participants pass milestones in the order of its flow
(``annotation.participation.study_flow``): invited (their link issued, or created by the open link), opened the
link, consented, finished each instrument and the IAT (the *middle steps*, in the study's order), started labelling
(read the labelling instructions), completed. ``reached`` counts the participants past a milestone; ``waiting``
counts those past it but not past the next one, that is, now at the next step (the first milestone not passed is
found as ``next_step`` finds a participant's page: a step finished out of order, by an imported score, does not move
anyone on; a completed participant has passed them all). Every invited participant is in exactly one ``waiting`` count or one exit (declined consent, withdrew),
so those add up to ``invited``; participants imported with a data file never took the flow and are counted apart.

Withdrawal deletes a participant's answers (``participant_withdraw``): a withdrawn participant counts as invited
and opened, as consented when they had consented (one who withdrew from the consent page had not), then only as
withdrawn, never as past a later milestone.

**Completion times.** The median and a histogram of the seconds from consent to completion; the bins are whole
minutes wide, of a width from ``BIN_WIDTHS_MINUTES`` that gives at most ``MAX_BINS`` bins.
"""
from __future__ import annotations

import math
import statistics
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

INVITED, ACTIVE, COMPLETED, WITHDRAWN, DECLINED, IMPORTED = (
    "invited", "active", "completed", "withdrawn", "declined", "imported")
BIN_WIDTHS_MINUTES = (1, 2, 5, 10, 15, 30, 60, 120, 240, 480, 1440)
MAX_BINS = 12


@dataclass(frozen=True)
class MiddleStep:
    """A step between consent and labelling: what passing it is called, and what a participant at it is doing."""

    finished: str
    doing: str


@dataclass(frozen=True)
class ParticipantGroup:
    """``n`` participants who share a status and the same answers to: opened their link? consented? finished each
    middle step (``finished``, in the flow's order)? read the labelling instructions? passed the attention checks
    (None: not scored)?"""

    status: str
    opened: bool
    consented: bool
    finished: tuple[bool, ...]
    read_instructions: bool
    attention_passed: bool | None
    n: int


@dataclass(frozen=True)
class FunnelRow:
    key: str
    milestone: str
    reached: int
    waiting: int
    waiting_text: str


@dataclass
class Funnel:
    rows: list[FunnelRow]
    invited: int
    declined: int
    withdrawn: int
    imported: int
    statuses: dict[str, int] = field(default_factory=dict)

    @property
    def opened(self) -> int:
        return self.rows[1].reached

    @property
    def accounted(self) -> int:
        """Participants now at some step, done, or gone: always ``invited``."""
        return sum(row.waiting for row in self.rows) + self.declined + self.withdrawn


def _milestones(middle: Sequence[MiddleStep]) -> list[tuple[str, str, str]]:
    """(key, milestone, what those past it and not past the next are doing) in flow order."""
    return [("invited", "Invited (a link issued)", "have not opened their link yet"),
            ("opened", "Opened their link", "at the consent page"),
            ("consented", "Consented", middle[0].doing if middle else "at the labelling instructions"),
            *((f"step-{k}", step.finished, middle[k + 1].doing if k + 1 < len(middle)
               else "at the labelling instructions") for k, step in enumerate(middle)),
            ("labelling", "Started labelling (read the instructions)", "labelling"),
            ("completed", "Completed", "")]


def _position(group: ParticipantGroup, n_middle: int) -> int:
    """The index of the last milestone an invited participant still in the study has passed, in flow order."""
    if group.status == COMPLETED:
        return n_middle + 4
    if not group.opened:
        return 0
    if not group.consented:
        return 1
    for k, finished in enumerate(group.finished):
        if not finished:
            return 2 + k
    return 3 + n_middle if group.read_instructions else 2 + n_middle


def recruitment_funnel(*, groups: Iterable[ParticipantGroup], middle: Sequence[MiddleStep]) -> Funnel:
    """The funnel of the module docstring. ``groups`` cover every participant of the study; each one's ``finished``
    has one flag per step of ``middle``."""
    milestones = _milestones(middle)
    reached = [0] * len(milestones)
    waiting = [0] * len(milestones)
    statuses: dict[str, int] = {}
    exits = {DECLINED: 0, WITHDRAWN: 0, IMPORTED: 0}
    for group in groups:
        if len(group.finished) != len(middle):
            raise ValueError(f"a group has {len(group.finished)} middle-step flags for {len(middle)} steps")
        statuses[group.status] = statuses.get(group.status, 0) + group.n
        if group.status == IMPORTED:
            exits[IMPORTED] += group.n
            continue
        reached[0] += group.n
        reached[1] += group.n if group.opened or group.consented or group.status == DECLINED else 0
        reached[2] += group.n if group.consented else 0
        if group.status in (DECLINED, WITHDRAWN):
            exits[group.status] += group.n
            continue
        done = group.status == COMPLETED
        for k, finished in enumerate(group.finished):
            reached[3 + k] += group.n if finished or done else 0
        reached[3 + len(middle)] += group.n if group.read_instructions or done else 0
        reached[4 + len(middle)] += group.n if done else 0
        waiting[_position(group, len(middle))] += group.n
    rows = [FunnelRow(key, milestone, reached[i], waiting[i], doing)
            for i, (key, milestone, doing) in enumerate(milestones)]
    return Funnel(rows, reached[0], exits[DECLINED], exits[WITHDRAWN], exits[IMPORTED], statuses)


@dataclass(frozen=True)
class AttentionChecks:
    """Completed participants whose attention checks were scored, and how many of them passed."""

    scored: int
    passed: int

    @property
    def pass_rate(self) -> float | None:
        """passed / scored; None when none was scored."""
        return self.passed / self.scored if self.scored else None

    @property
    def pass_percent(self) -> int | None:
        """The pass rate as a whole percentage (rounded half to even), None when none was scored."""
        return round(100 * self.passed / self.scored) if self.scored else None


def attention_checks(groups: Iterable[ParticipantGroup]) -> AttentionChecks:
    """The attention-check results of the completed participants (a withdrawal deletes them)."""
    scored = passed = 0
    for group in groups:
        if group.status == COMPLETED and group.attention_passed is not None:
            scored += group.n
            passed += group.n if group.attention_passed else 0
    return AttentionChecks(scored, passed)


@dataclass(frozen=True)
class TimeBin:
    """``n`` participants who took from ``start`` (included) to ``end`` (excluded) minutes."""

    start: int
    end: int
    n: int


@dataclass(frozen=True)
class CompletionTimes:
    """Seconds from consent to completion: how many, median, shortest, longest, and the histogram's bins (empty
    when there is no time)."""

    n: int
    median: float | None
    shortest: float | None
    longest: float | None
    bins: list[TimeBin]
    n_negative: int = 0
    """Completions recorded before their consent (a clock set back, a record edited by hand): left out, counted."""

    @property
    def most_in_a_bin(self) -> int:
        return max((b.n for b in self.bins), default=0)

    @property
    def median_text(self) -> str:
        return duration_text(self.median) if self.median is not None else ""

    @property
    def shortest_text(self) -> str:
        return duration_text(self.shortest) if self.shortest is not None else ""

    @property
    def longest_text(self) -> str:
        return duration_text(self.longest) if self.longest is not None else ""


def duration_text(seconds: float) -> str:
    """A duration as people say it, to the second under an hour: "45 s", "27 min 30 s", "1 h 5 min", "2 d 3 h"."""
    total = round(seconds)
    if total < 60:
        return f"{total} s"
    minutes, rest = divmod(total, 60)
    if minutes < 60:
        return f"{minutes} min {rest} s" if rest else f"{minutes} min"
    hours, minutes = divmod(minutes, 60)
    if hours < 24:
        return f"{hours} h {minutes} min" if minutes else f"{hours} h"
    days, hours = divmod(hours, 24)
    return f"{days} d {hours} h" if hours else f"{days} d"


def completion_times(seconds: Sequence[float]) -> CompletionTimes:
    """Median (``statistics.median``: the mean of the middle two for an even count) and a histogram of whole-minute
    bins: the narrowest width of ``BIN_WIDTHS_MINUTES`` that covers shortest to longest in at most ``MAX_BINS`` bins
    (the widest one otherwise), the first bin starting at a multiple of the width. A negative time (a clock set
    back, a record edited by hand) is left out of every figure and counted in ``n_negative``."""
    n_negative = sum(1 for s in seconds if s < 0)
    seconds = [s for s in seconds if s >= 0]
    if not seconds:
        return CompletionTimes(0, None, None, None, [], n_negative)
    minutes = [s / 60 for s in seconds]
    low, high = min(minutes), max(minutes)
    width = next((w for w in BIN_WIDTHS_MINUTES
                  if math.floor(high / w) - math.floor(low / w) + 1 <= MAX_BINS), BIN_WIDTHS_MINUTES[-1])
    first, last = math.floor(low / width), math.floor(high / width)
    counts = [0] * (last - first + 1)
    for value in minutes:
        counts[math.floor(value / width) - first] += 1
    bins = [TimeBin((first + i) * width, (first + i + 1) * width, n) for i, n in enumerate(counts)]
    return CompletionTimes(len(seconds), statistics.median(seconds), min(seconds), max(seconds), bins, n_negative)
