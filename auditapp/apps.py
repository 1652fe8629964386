"""App configuration for the audit domain (auditapp is both the Django project and this app)."""
from django.apps import AppConfig
from django.db.models.signals import post_migrate


class AuditappConfig(AppConfig):
    name = "auditapp"
    verbose_name = "LLM audits"

    def ready(self) -> None:
        # Binds ``@shared_task`` to our Celery app in every Django process (web, worker, commands).
        import auditapp.celery  # noqa: F401

        post_migrate.connect(_sync_default_templates, sender=self)


def _sync_default_templates(sender, **kwargs) -> None:
    """After every migrate, the seven default prompt templates of seed 000 Appendix A.4 are in the database."""
    from auditapp.audit_services import templates_sync_defaults

    templates_sync_defaults()
