"""App configuration for psychometrics."""
from django.apps import AppConfig
from django.db.models.signals import post_migrate


class PsychometricsConfig(AppConfig):
    name = "psychometrics"
    verbose_name = "Psychometrics"

    def ready(self) -> None:
        post_migrate.connect(_sync_shipped_instruments, sender=self)


def _sync_shipped_instruments(sender, **kwargs) -> None:
    """After every migrate, the shipped instruments (AQ-50, partial SATA) are in the database."""
    from psychometrics.services import instruments_sync_shipped

    instruments_sync_shipped()
