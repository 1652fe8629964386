"""``manage.py load_demo_audit``: a finished perturbation-sensitivity audit (seed 001) to look at on a new install,
created once, its dashboard printed every time.

VADER and TextBlob score the default BITS corpus (seed 001's Tables 3–5) inside this process: no model server and
no worker are needed, and the audit is complete when ``bin/run`` starts the web server. It goes through the same
engine as every audit (request keys, stored replies, judgments, analysis), so it is a real audit, not a picture.
"""
from __future__ import annotations

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand

from auditapp.engine import analysis as engine_analysis
from auditapp.engine import endpoints, launch, preparation
from auditapp.engine import runner as audit_runner
from auditapp.models import Audit, LLMEndpoint
from auditapp.paradigms.bits.services import bits_audit_create
from teams.scoping import demo_team, new_objects_in

DEMO_AUDIT = "Demo: BITS with VADER and TextBlob"
LOCAL_ENDPOINT = "Local scorers (in the worker)"


class Command(BaseCommand):
    help = "Create and run the demo BITS audit (VADER and TextBlob on seed 001's corpus), once."

    def add_arguments(self, parser):
        parser.add_argument("--base-url", default="http://127.0.0.1:8000")

    def handle(self, *args, base_url: str, **options):
        audit = Audit.objects.filter(name=DEMO_AUDIT, paradigm="bits").order_by("id").first()
        if audit is None or audit.status != Audit.Status.COMPLETED:
            # The demo researcher of load_demo, when there is one, owns it.
            owners = get_user_model().objects.filter(username="researcher", is_staff=True)
            with new_objects_in(demo_team(*owners)):
                audit = self._run(audit)
        if audit.status != Audit.Status.COMPLETED:
            # The app still starts: the audit's page says what went wrong, and the next start tries again.
            self.stderr.write(f"The demo audit did not complete: {audit.status}: {audit.status_reason}")
        self.stdout.write(f"Demo BITS audit '{audit.name}' ({audit.get_status_display().lower()}): "
                          f"{base_url}/audits/{audit.id}/dashboard/")

    def _run(self, audit: Audit | None) -> Audit:
        if audit is None:
            endpoint, _ = LLMEndpoint.objects.get_or_create(name=LOCAL_ENDPOINT,
                                                            defaults={"protocol": "local", "base_url": ""})
            endpoints.endpoint_list_models(endpoint)
            audit = bits_audit_create(name=DEMO_AUDIT, models=[launch.ModelChoice(endpoint, "vader"),
                                                               launch.ModelChoice(endpoint, "textblob")])
        preparation.audit_prepare(audit_id=audit.id)
        if Audit.objects.get(pk=audit.id).status == Audit.Status.RUNNING:
            audit_runner.audit_work(audit.id)
        if Audit.objects.get(pk=audit.id).status == Audit.Status.ANALYSING:
            engine_analysis.audit_analyse(audit_id=audit.id)
        audit.refresh_from_db()
        return audit
