"""App configuration for coding rounds (qualitative error analysis)."""
from django.apps import AppConfig
from django.db.models.signals import post_migrate


class CodingConfig(AppConfig):
    name = "coding"
    verbose_name = "Error-analysis coding rounds"

    def ready(self) -> None:
        post_migrate.connect(_sync_shipped_codebooks, sender=self)
        post_migrate.connect(_researchers_may_run_rounds, sender=self)


def _sync_shipped_codebooks(sender, using: str = "default", **kwargs) -> None:
    """After every migrate that leaves this app's tables as today's models have them, the three default codebooks of
    seed 000 §3.4/§4.3 are in the database."""
    from auditapp.migration_state import app_fully_migrated
    from coding.codebook_services import codebooks_sync_shipped

    if not app_fully_migrated(sender.label, using):
        return

    codebooks_sync_shipped()


def _researchers_may_run_rounds(sender, using: str = "default", **kwargs) -> None:
    """Researchers hold every permission on this app's models too, including researchers created before it was
    installed (their group is refreshed once this app's permissions exist)."""
    from django.contrib.auth.models import Group

    from auditapp.migration_state import app_fully_migrated
    from auditapp.services import RESEARCHER_GROUP, researcher_group_ensure

    if not (app_fully_migrated("auth", using) and app_fully_migrated(sender.label, using)):
        return

    if Group.objects.filter(name=RESEARCHER_GROUP).exists():
        researcher_group_ensure()
