"""An annotator import, the analysis recomputation it asks for and annotators starting to label, all in the same
study at once, on PostgreSQL: none waits on another in a cycle (a deadlock is a 503, and nothing stored), because
all take the study's locks in the order ``annotation.locking`` documents. SQLite runs one writer at a time, so it
cannot deadlock."""
from __future__ import annotations

import csv
import io
import random
import threading

import pytest

from annotation.models import AnalysisRun, Assignment, Participant
from annotation.participation import instructions_read, participant_consent, participants_invite
from annotation.services import items_import_file
from annotation.study_analysis import study_analysis_run
from psychometrics.annotator_imports import annotator_import_submit
from psychometrics.models import AnnotatorImport, InstrumentScore, StudyInstrument
from tests.auditapp.db_race import in_thread, postgresql_only
from tests.factories import autalic_like_csv, make_study

pytestmark = [pytest.mark.integration, pytest.mark.slow, pytest.mark.django_db(transaction=True), postgresql_only]

ROUNDS = 30
PER_ROUND = 3


def scores_file(annotators: list[str], rng: random.Random) -> bytes:
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(["annotator", "aq", "sata"])
    writer.writerows([name, rng.randint(0, 50), rng.randint(5, 20)] for name in annotators)
    return buffer.getvalue().encode()


def test_an_annotator_import_and_the_analysis_of_its_study_never_deadlock(shipped_instruments, monkeypatch):
    # The analysis an import asks for is the other thread's work here: a worker would run it the same way.
    monkeypatch.setattr("tasks.analysis.study_analysis_compute_task.delay", lambda study_id: None)
    study = make_study(annotators_per_item=ROUNDS * PER_ROUND + ROUNDS)   # items left for those who join
    StudyInstrument.objects.create(study=study, instrument=shipped_instruments["aq50"], role="aq", position=0)
    StudyInstrument.objects.create(study=study, instrument=shipped_instruments["sata_partial"], role="sata",
                                   position=1)
    assert items_import_file(study=study, filename="items.csv", content=autalic_like_csv(
        60, annotators=tuple(f"A{n}" for n in range(ROUNDS * PER_ROUND)))).status == "succeeded"
    names = list(Participant.objects.filter(study=study).order_by("id").values_list("pseudonym", flat=True))
    rng = random.Random(3)
    start = threading.Barrier(3)

    def imports() -> None:
        for round_number in range(ROUNDS):
            content = scores_file(names[round_number * PER_ROUND:(round_number + 1) * PER_ROUND], rng)
            start.wait(30)
            annotator_import_submit(study=study, kind="scores", filename=f"scores-{round_number}.csv",
                                    content=content)

    def analyses() -> None:
        for _ in range(ROUNDS):
            start.wait(30)
            study_analysis_run(study_id=study.id)

    def annotators_starting() -> None:
        for _ in range(ROUNDS):
            (participant,) = participants_invite(study=study, count=1)
            participant_consent(participant=participant)
            start.wait(30)
            instructions_read(participant=participant)   # hands out items: the study's lock

    threads = [in_thread(imports), in_thread(analyses), in_thread(annotators_starting)]
    for thread, _ in threads:
        thread.join(300)
    errors = [str(error) for _, found in threads for error in found]
    assert not errors, errors   # a deadlock is an OperationalError ("deadlock detected") in one of them
    assert AnnotatorImport.objects.filter(study=study).count() == ROUNDS
    assert InstrumentScore.objects.filter(participant__study=study).count() == 2 * ROUNDS * PER_ROUND
    assert AnalysisRun.objects.filter(study=study).exists()
    joined = Participant.objects.filter(study=study, status=Participant.Status.ACTIVE)
    assert joined.count() == ROUNDS
    assert Assignment.objects.filter(participant__in=joined).values("participant").distinct().count() == ROUNDS
