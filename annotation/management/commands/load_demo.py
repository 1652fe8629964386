"""``manage.py load_demo``: the demo study and a demo researcher login, created once, printed every time.

The demo study holds 24 invented sentences with 3 invented annotators' labels (imported), 12 simulated annotators
(team "simulated", seed :data:`DEMO_SEED`) who took the AQ-50, the partial SATA and the IAT and labelled 8 sentences
each through the participant services, so its dashboard shows trust weights and a weighted ground truth, and 3 invite
links with room for 8 sentences each, so the printed link walks through every step. The simulated annotators label as
the imported ones did where those agreed, and by their simulated perspective where they disagreed
(``annotation.simulation.items_from_labels``).

Meant for the embedded one-machine setup (``bin/run``); it never touches a study other than ``demo``.
The demo researcher's password is generated once and kept in ``var/demo-researcher.txt`` (mode 600)
so it can be printed again; change it in the admin for anything beyond a demo.
"""
import csv
import io
import math
from pathlib import Path

import numpy as np
from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError
from django.db import transaction
from django.test.utils import override_settings
from rest_framework.authtoken.models import Token

from annotation import simulation
from annotation.models import ItemImport, Participant, Study
from annotation.participation import participants_invite
from annotation.services import items_import_file
from annotation.simulated_participation import instrument_answers, participate
from annotation.study_analysis import study_analysis_enqueue
from auditapp.services import researcher_create
from psychometrics.models import Instrument, StudyInstrument
from teams.scoping import demo_team, new_objects_in

DEMO_FILE = Path(__file__).resolve().parents[2] / "demo" / "demo_items.csv"
DEMO_USERNAME = "researcher"
DEMO_SEED = 2024
SIMULATED_ANNOTATORS = 12
SIMULATED_TEAM = "simulated"
INVITES = 3
ITEMS_PER_ANNOTATOR = 8
# Every annotator also gets the attention check (demo-12), so the other 23 sentences hold the imported annotators'
# 3 labels each plus the simulated annotators' and the invitees' 8 each, spread as evenly as allocation does.
ANNOTATORS_PER_ITEM = 3 + math.ceil((SIMULATED_ANNOTATORS + INVITES) * ITEMS_PER_ANNOTATOR / 23)


class Command(BaseCommand):
    help = ("Create the demo study (24 invented sentences, 3 invented annotators' labels, 12 simulated annotators who "
            "took the AQ-50, partial SATA and IAT, 3 invite links) and a demo researcher.")

    def add_arguments(self, parser):
        parser.add_argument("--base-url", default="http://127.0.0.1:8000")

    def handle(self, *args, base_url: str, **options):
        password, token = self._demo_researcher()
        team = demo_team(get_user_model().objects.get(username=DEMO_USERNAME))
        # One analysis once every simulated annotator is done, not one queued per annotator.
        with new_objects_in(team), override_settings(ANALYSIS_AUTO_RECOMPUTE=False):
            study, created = self._demo_study()
        if created:
            study_analysis_enqueue(study_id=study.pk)
        invite = study.participants.filter(status=Participant.Status.INVITED).order_by("pseudonym").first()
        self.stdout.write(
            f"Demo study '{study.name}': {study.items.count()} items.\n"
            f"Researcher login at {base_url}/admin/  user: {DEMO_USERNAME}  password: {password}\n"
            f"API token: {token}   (docs: {base_url}/api/docs/)"
        )
        if invite is not None:
            self.stdout.write(f"Try the annotator flow as {invite.pseudonym}: {base_url}/p/{invite.invite_token}/")

    def _demo_study(self) -> tuple[Study, bool]:
        study, created = Study.objects.get_or_create(
            slug="demo",
            defaults={
                "name": "Demo: ableist language in context",
                "description": (f"A demonstration study with invented sentences (see annotation/demo/README.md): three "
                                f"invented annotators' labels, imported, and {SIMULATED_ANNOTATORS} simulated "
                                f"annotators (team '{SIMULATED_TEAM}'): no real person took part."),
                "content_warning": "Some sentences express stereotypes or ableist views about autistic people.",
                "consent_text": "This is a demonstration. No data from this study is used for research.",
                "status": Study.Status.OPEN,
                "items_per_annotator": ITEMS_PER_ANNOTATOR,
                "annotators_per_item": ANNOTATORS_PER_ITEM,
                "labelling_instructions": "Decide whether the sentence in bold is ableist towards autistic "
                                          "people. Use 'unrelated' when it is not about disability at all.",
            },
        )
        if created or not study.items.exists():
            item_import = items_import_file(study=study, filename=DEMO_FILE.name, content=DEMO_FILE.read_bytes())
            if item_import.status != ItemImport.Status.SUCCEEDED:
                raise CommandError(f"demo import failed: {item_import.errors}")
            # An item everyone should call unrelated serves as the demo's attention check.
            study.items.filter(external_id="demo-12").update(attention_check_answer=-1)
        if created:
            try:
                StudyInstrument.objects.create(study=study, position=0, role=StudyInstrument.Role.AQ,
                                               instrument=Instrument.objects.get(slug="aq50", shipped=True),
                                               randomise_items=True)
                StudyInstrument.objects.create(study=study, position=1, role=StudyInstrument.Role.SATA,
                                               instrument=Instrument.objects.get(slug="sata_partial", shipped=True))
                _simulated_annotators(study)
                participants_invite(study=study, count=INVITES)
            except BaseException:
                # Half a demo would never be completed by the next run, which only creates a missing one.
                study.delete()
                raise
        return study, created

    def _demo_researcher(self) -> tuple[str, str]:
        secret_file = Path(settings.VAR_DIR) / "demo-researcher.txt"
        user = get_user_model().objects.filter(username=DEMO_USERNAME).first()
        if user is None:
            user, password, token = researcher_create(username=DEMO_USERNAME, superuser=True)
            secret_file.parent.mkdir(parents=True, exist_ok=True)
            secret_file.write_text(password)
            secret_file.chmod(0o600)
            return password, token
        password = secret_file.read_text().strip() if secret_file.exists() else "(set by you; not shown)"
        token, _ = Token.objects.get_or_create(user=user)
        return password, token.key


def _simulated_annotators(study: Study) -> None:
    """The demo's simulated annotators, each through the whole flow in their own transaction."""
    with DEMO_FILE.open(encoding="utf-8") as demo:
        rows = list(csv.DictReader(io.StringIO(demo.read())))
    scores = [column for column in rows[0] if column.endswith("_Score")]
    items, unrelated = simulation.items_from_labels(np.array([[int(row[c]) for c in scores] for row in rows]))
    item_ids = dict(study.items.values_list("external_id", "id"))
    traits = simulation.draw_participants(DEMO_SEED, SIMULATED_ANNOTATORS, teams=1)
    shipped = {si.role: si.instrument for si in study.study_instruments.select_related("instrument")}
    answers = instrument_answers(traits, aq=shipped[StudyInstrument.Role.AQ], sata=shipped[StudyInstrument.Role.SATA],
                                 seed=DEMO_SEED)
    people = participants_invite(study=study, count=SIMULATED_ANNOTATORS, team=SIMULATED_TEAM)
    for person, person_seed in zip(people, simulation.participant_seeds(DEMO_SEED, len(people)), strict=True):
        person.seed = person_seed
    Participant.objects.bulk_update(people, ["seed"])
    for index, person in enumerate(people):
        values = np.where(unrelated, -1, simulation.participant_labels(traits, index, items, seed=DEMO_SEED))
        with transaction.atomic():
            participate(person, index, traits=traits, answers=answers, seed=DEMO_SEED,
                        labels={item_ids[row["id"]]: int(value) for row, value in zip(rows, values, strict=True)})
