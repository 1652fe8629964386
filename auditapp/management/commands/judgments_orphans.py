"""``manage.py judgments_orphans [--delete]``: the judgments whose request no longer exists, per audit (none
should remain: a deletion sweeps them when it commits, see AuditJudgment); ``--delete`` sweeps them. Exits with
status 1 when some are found and not deleted, so a monitoring script can run it."""
from django.core.management.base import BaseCommand

from auditapp.engine.judgments import audit_judgments_sweep
from auditapp.engine.selectors import judgment_orphan_counts


class Command(BaseCommand):
    help = "Count (and with --delete remove) the judgments whose request no longer exists."

    def add_arguments(self, parser):
        parser.add_argument("--delete", action="store_true", help="Delete them.")

    def handle(self, *args, delete: bool, **options):
        counts = judgment_orphan_counts()
        if not counts:
            self.stdout.write("No judgment without its request.")
            return
        for audit_id, n in counts.items():
            if delete:
                n = audit_judgments_sweep(audit_id=audit_id)
            self.stdout.write(f"audit {audit_id}: {n} judgments without their request{' deleted' if delete else ''}")
        if not delete:
            raise SystemExit(1)
