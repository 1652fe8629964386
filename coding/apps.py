"""App configuration for coding rounds (qualitative error analysis)."""
from django.apps import AppConfig
from django.db.models.signals import post_migrate


class CodingConfig(AppConfig):
    name = "coding"
    verbose_name = "Error-analysis coding rounds"

    def ready(self) -> None:
        post_migrate.connect(_sync_shipped_codebooks, sender=self)


def _sync_shipped_codebooks(sender, **kwargs) -> None:
    """After every migrate, the three default codebooks of seed 000 §3.4/§4.3 are in the database."""
    from coding.codebook_services import codebooks_sync_shipped

    codebooks_sync_shipped()
