"""The one order in which a study's writers take row locks, so that no two of them wait on each other in a cycle
(on PostgreSQL a deadlock: one of the transactions fails, a 503 for the researcher or annotator, nothing stored).

1. The study row (:func:`study_lock`): an analysis storing its results, an annotator import and its deletion,
   invites, the open link, handing out items.
2. The study's participants: all of them in id order (:func:`study_participants_lock`, an annotator import) or
   one (``annotation.participation.participant_locked``, every write of the annotator flow).
3. The study's ``AnalysisState`` (``annotation.study_analysis``): a request for an analysis comes at the end of the
   transaction that changed the data.

A transaction may skip a level but never goes back up one: holding a participant, it does not lock the study.
Rows are locked FOR NO KEY UPDATE, which excludes the other holders of the lock and writers of the row, but not
the FOR KEY SHARE that inserting a row referencing it takes: any level may insert rows that reference the study
or a participant (an analysis request creating the study's state, the weights an analysis stores) without waiting.

The deadlock this order ends: an annotator import locked the participants, then inserted its own row (FOR KEY
SHARE on the study), while the analysis held the study FOR UPDATE and inserted weights (FOR KEY SHARE on those
participants). SQLite ignores row locks and runs one writing transaction at a time, so it cannot deadlock.
"""
from __future__ import annotations

from annotation.models import Participant, Study


def study_lock(study_id: int) -> Study:
    """Lock the study row (level 1); call inside a transaction, before any other lock of the study."""
    return Study.objects.select_for_update(no_key=True).get(pk=study_id)


def study_participants_lock(study_id: int) -> list[int]:
    """Lock the study row, then every participant of the study in id order (levels 1 and 2); returns their ids."""
    study_lock(study_id)
    return list(Participant.objects.select_for_update(no_key=True).filter(study_id=study_id).order_by("id")
                .values_list("id", flat=True))
