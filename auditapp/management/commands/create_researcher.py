"""``manage.py create_researcher NAME``: a staff account with researcher permissions and an API token."""
from django.core.management.base import BaseCommand, CommandError

from auditapp.services import researcher_create


class Command(BaseCommand):
    help = "Create a researcher (staff user in the Researchers group) and print the password and API token."

    def add_arguments(self, parser):
        parser.add_argument("username")
        parser.add_argument("--email", default="")
        parser.add_argument("--password", help="Default: a random password, printed once.")
        parser.add_argument("--superuser", action="store_true", help="Also grant every permission.")

    def handle(self, *args, username, email, password, superuser, **options):
        try:
            _, password, token = researcher_create(username=username, email=email, password=password,
                                                   superuser=superuser)
        except ValueError as exc:
            raise CommandError(str(exc)) from exc
        self.stdout.write(f"Researcher '{username}' created.\n  password:  {password}\n  API token: {token}\n"
                          "  use it as:  curl -H 'Authorization: Token <token>' http://127.0.0.1:8000/api/studies/")
