"""App configuration for the audit domain (the Django project around it is the ``config`` package)."""
from django.apps import AppConfig
from django.db.models.signals import post_migrate


class AuditappConfig(AppConfig):
    name = "auditapp"
    verbose_name = "LLM audits"

    def ready(self) -> None:
        import auditapp.signals  # noqa: F401

        post_migrate.connect(_paradigms_after_migrate, sender=self)


def _paradigms_after_migrate(sender, using: str = "default", **kwargs) -> None:
    """After every migrate that leaves this app's tables as today's models have them, each paradigm's shipped records
    are in the database (e.g. the seven default prompt templates of seed 000 Appendix A.4)."""
    from auditapp.engine import registry
    from auditapp.migration_state import app_fully_migrated

    if not app_fully_migrated(sender.label, using):
        return

    for paradigm in registry.every():
        paradigm.after_migrate()
