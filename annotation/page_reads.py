"""The reads an annotator makes at every sentence, written once in SQL: who the link is, what a label post needs to
know, and which sentence comes next.

Every label takes two requests (the page, then the post), made by a hundred annotators at once, and one of these
reads or two are made at each. Built with the ORM they cost 2.5-4 ms of CPU each, nearly all of it building and
compiling the query, most of a request's CPU (``benchmarks/label_breakdown.py``); run as SQL through
``Model.objects.raw`` (which still turns each row into its model, with the database's conversions) they cost
0.4-0.7 ms. The SQL is standard and runs on PostgreSQL and SQLite alike. What each returns is what the ORM queries
it replaced return (``tests/annotation/test_page_reads.py`` holds them side by side); the ORM versions remain off
this path (a participant read otherwise, the page after the last sentence).

A raw query's extra columns are not converted by the database backend: an EXISTS is a boolean on PostgreSQL and 0
or 1 on SQLite, so each is read with ``bool``; a time is compared in SQL against a parameter adapted by the backend
(``adapt_datetimefield_value``), never read back.
"""
from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from django.db import connection

from annotation.models import Assignment, Item, Participant, Study

_PARTICIPANT_FOR_PAGE = """
SELECT p.*,
  (SELECT si.instrument_id FROM psychometrics_studyinstrument si
    WHERE si.study_id = p.study_id
      AND NOT EXISTS (SELECT 1 FROM psychometrics_questionnairesession qs
                      WHERE qs.participant_id = p.id AND qs.instrument_id = si.instrument_id
                        AND qs.completed_at IS NOT NULL)
    ORDER BY si.position, si.id LIMIT 1) AS flow_unfinished_instrument_id,
  EXISTS (SELECT 1 FROM psychometrics_iatsession iat
          WHERE iat.participant_id = p.id AND iat.completed_at IS NOT NULL) AS flow_iat_finished,
  (SELECT COUNT(*) FROM psychometrics_studyinstrument si WHERE si.study_id = p.study_id) AS flow_instrument_count
FROM annotation_participant p
WHERE p.invite_token = %s
"""


def participant_for_page(token: str) -> Participant | None:
    """The participant of an invite token with their study, and with what ``participation.next_step`` and
    ``step_position`` ask the database (``flow_unfinished_instrument_id``, ``flow_iat_finished``,
    ``flow_instrument_count``), or None for an unknown token."""
    participant = next(iter(Participant.objects.raw(_PARTICIPANT_FOR_PAGE, [token])), None)
    if participant is None:
        return None
    participant.flow_iat_finished = bool(participant.flow_iat_finished)
    participant.study = next(iter(Study.objects.raw("SELECT * FROM annotation_study WHERE id = %s",
                                                    [participant.study_id])))
    return participant


_ASSIGNMENT_FOR_WRITE = """
SELECT a.*,
  EXISTS (SELECT 1 FROM annotation_label l WHERE l.participant_id = a.participant_id AND l.item_id = a.item_id)
    AS labelled,
  EXISTS (SELECT 1 FROM annotation_assignment other
          WHERE other.participant_id = a.participant_id AND other.item_id <> a.item_id
            AND other.skipped_at IS NULL
            AND NOT EXISTS (SELECT 1 FROM annotation_label l WHERE l.participant_id = other.participant_id
                                                               AND l.item_id = other.item_id)) AS others_pending,
  EXISTS (SELECT 1 FROM annotation_assignment other
          WHERE other.participant_id = a.participant_id AND other.expires_at < %s) AS expiry_due
FROM annotation_assignment a
WHERE a.participant_id = %s AND a.item_id = %s
"""


def assignment_for_write(*, participant_id: int, item_id: int, due: datetime) -> Assignment | None:
    """The participant's assignment of the item (None if it is not theirs), with ``labelled`` (the item has their
    label), ``others_pending`` (another of their sentences is neither labelled nor skipped) and ``expiry_due`` (one of
    their assignments expires before ``due``)."""
    assignment = next(iter(Assignment.objects.raw(_ASSIGNMENT_FOR_WRITE, [
        connection.ops.adapt_datetimefield_value(due), participant_id, item_id])), None)
    if assignment is not None:
        for flag in ("labelled", "others_pending", "expiry_due"):
            setattr(assignment, flag, bool(getattr(assignment, flag)))
    return assignment


@dataclass(frozen=True)
class NextSentence:
    """The participant's next assignment to do (with its item), how many of their assignments there are and how
    many are done (labelled or skipped), and the position of the last done one before it (None if none)."""

    assignment: Assignment
    total: int
    done: int
    previous_position: int | None


# "Done" is labelled or skipped; the next one is the first in position neither labelled nor skipped.
_NEXT_SENTENCE = """
SELECT a.*,
  (SELECT COUNT(*) FROM annotation_assignment t WHERE t.participant_id = a.participant_id) AS total,
  (SELECT COUNT(*) FROM annotation_assignment d
    WHERE d.participant_id = a.participant_id
      AND (d.skipped_at IS NOT NULL
           OR EXISTS (SELECT 1 FROM annotation_label l WHERE l.participant_id = d.participant_id
                                                        AND l.item_id = d.item_id))) AS done,
  (SELECT MAX(d.position) FROM annotation_assignment d
    WHERE d.participant_id = a.participant_id AND d.position < a.position
      AND (d.skipped_at IS NOT NULL
           OR EXISTS (SELECT 1 FROM annotation_label l WHERE l.participant_id = d.participant_id
                                                        AND l.item_id = d.item_id))) AS previous_position
FROM annotation_assignment a
WHERE a.participant_id = %s AND a.skipped_at IS NULL
  AND NOT EXISTS (SELECT 1 FROM annotation_label l WHERE l.participant_id = a.participant_id AND l.item_id = a.item_id)
ORDER BY a.position
LIMIT 1
"""


def next_sentence(*, participant_id: int) -> NextSentence | None:
    """The participant's next sentence to label, or None when every one is labelled or skipped."""
    assignment = next(iter(Assignment.objects.raw(_NEXT_SENTENCE, [participant_id])), None)
    if assignment is None:
        return None
    assignment.item = next(iter(Item.objects.raw("SELECT * FROM annotation_item WHERE id = %s",
                                                 [assignment.item_id])))
    return NextSentence(assignment, assignment.total, assignment.done, assignment.previous_position)
