"""The one Celery app: configured from Django settings (CELERY_*), importing the task modules listed in CELERY_IMPORTS."""
import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings.local")

app = Celery("auditapp")
app.config_from_object("django.conf:settings", namespace="CELERY")
