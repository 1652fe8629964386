"""``manage.py upgrade [--list] [--again NAME ...]``: run the upgrade steps (:mod:`auditapp.upgrade_steps`) this
database has not run to their end yet, in order. Run it after every ``manage.py migrate`` (``bin/run`` and
``docker-compose.yml`` do). Idempotent and resumable: a step that stopped (a fault, Ctrl-C) runs again at the next
call; what it already did is either not selected again or redone with the same result."""
from django.core.management.base import BaseCommand, CommandError

from auditapp.migration_state import migrations_pending
from auditapp.upgrade_steps import STEPS, pending_steps, run_step


class Command(BaseCommand):
    help = "Run the upgrade steps (recomputations of stored results) this database still needs, after migrate."

    def add_arguments(self, parser):
        parser.add_argument("--list", dest="list_steps", action="store_true", help="List the steps and whether each has run.")
        parser.add_argument("--again", nargs="+", metavar="NAME", default=[],
                            help="Run these steps again even if they have run.")

    def handle(self, *args, list_steps: bool, again: list[str], **options):
        if migrations_pending():
            raise CommandError("The database has migrations to apply: run `manage.py migrate` first.")
        unknown = sorted(set(again) - {step.name for step in STEPS})
        if unknown:
            raise CommandError(f"No such upgrade step: {', '.join(unknown)} (see --list).")
        pending = pending_steps()
        if list_steps:
            for step in STEPS:
                state = "to run" if step in pending else "done"
                self.stdout.write(f"{step.name:45} {state:7} {step.description}")
            return
        to_run = [step for step in STEPS if step in pending or step.name in again]
        if not to_run:
            self.stdout.write("Upgrade: nothing to do.")
            return
        for step in to_run:
            self.stdout.write(f"Upgrade step {step.name}: {step.description} ...")
            self.stdout.write(f"  {run_step(step)}")
