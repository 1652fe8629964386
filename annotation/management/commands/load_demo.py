"""``manage.py load_demo``: the demo study and a demo researcher login, created once, printed every time.

Meant for the embedded one-machine setup (``bin/run``); it never touches a study other than ``demo``.
The demo researcher's password is generated once and kept in ``var/demo-researcher.txt`` (mode 600)
so it can be printed again; change it in the admin for anything beyond a demo.
"""
from pathlib import Path

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError
from rest_framework.authtoken.models import Token

from annotation.models import ItemImport, Participant, Study
from annotation.participation import participants_invite
from annotation.services import items_import_file
from auditapp.services import researcher_create
from psychometrics.models import Instrument, StudyInstrument
from teams.scoping import demo_team, new_objects_in

DEMO_FILE = Path(__file__).resolve().parents[2] / "demo" / "demo_items.csv"
DEMO_USERNAME = "researcher"


class Command(BaseCommand):
    help = ("Create the demo study (24 invented sentences, 3 invented annotators' labels, AQ-50, partial SATA, IAT, "
            "3 invite links) and a demo researcher.")

    def add_arguments(self, parser):
        parser.add_argument("--base-url", default="http://127.0.0.1:8000")

    def handle(self, *args, base_url: str, **options):
        password, token = self._demo_researcher()
        with new_objects_in(demo_team(get_user_model().objects.get(username=DEMO_USERNAME))):
            study = self._demo_study()
        invite = study.participants.filter(status=Participant.Status.INVITED).order_by("pseudonym").first()
        self.stdout.write(
            f"Demo study '{study.name}': {study.items.count()} items.\n"
            f"Researcher login at {base_url}/admin/  user: {DEMO_USERNAME}  password: {password}\n"
            f"API token: {token}   (docs: {base_url}/api/docs/)"
        )
        if invite is not None:
            self.stdout.write(f"Try the annotator flow as {invite.pseudonym}: {base_url}/p/{invite.invite_token}/")

    def _demo_study(self) -> Study:
        study, created = Study.objects.get_or_create(
            slug="demo",
            defaults={
                "name": "Demo: ableist language in context",
                "description": "A demonstration study with invented sentences (see annotation/demo/README.md).",
                "content_warning": "Some sentences express stereotypes or ableist views about autistic people.",
                "consent_text": "This is a demonstration. No data from this study is used for research.",
                "status": Study.Status.OPEN,
                "items_per_annotator": 8,
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
            StudyInstrument.objects.create(study=study, instrument=Instrument.objects.get(slug="aq50", shipped=True),
                                           position=0, role=StudyInstrument.Role.AQ, randomise_items=True)
            StudyInstrument.objects.create(study=study, instrument=Instrument.objects.get(slug="sata_partial",
                                                                                          shipped=True),
                                           position=1, role=StudyInstrument.Role.SATA)
            participants_invite(study=study, count=3)
        return study

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
