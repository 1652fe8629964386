"""App configuration for teams (who may see and change which objects)."""
from django.apps import AppConfig


class TeamsConfig(AppConfig):
    name = "teams"
    verbose_name = "Teams"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        import teams.signals  # noqa: F401
