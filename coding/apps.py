"""App configuration for coding rounds (qualitative error analysis)."""
from django.apps import AppConfig


class CodingConfig(AppConfig):
    name = "coding"
    verbose_name = "Error-analysis coding rounds"
