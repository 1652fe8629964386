"""App configuration for psychometrics."""
from django.apps import AppConfig
from django.db.models.signals import post_migrate


class PsychometricsConfig(AppConfig):
    name = "psychometrics"
    verbose_name = "Psychometrics"

    def ready(self) -> None:
        post_migrate.connect(_sync_shipped_instruments, sender=self)


def _sync_shipped_instruments(sender, using: str = "default", **kwargs) -> None:
    """After every migrate that leaves this app's tables as today's models have them, the shipped instruments (AQ-50,
    partial SATA) are in the database."""
    from auditapp.migration_state import app_fully_migrated
    from psychometrics.services import instruments_sync_shipped

    if not app_fully_migrated(sender.label, using):
        return

    instruments_sync_shipped()
