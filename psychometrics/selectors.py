"""Reads of the psychometrics domain: a study's annotator imports, and what its trust weights will lack."""
from __future__ import annotations

from django.db.models import QuerySet

from annotation.models import Study, StudyAnalysisSettings
from psychometrics import roles
from psychometrics.models import AnnotatorImport, StudyInstrument


def study_annotator_imports(*, study: Study) -> QuerySet[AnnotatorImport]:
    """A study's annotator imports, newest first, without their file bytes."""
    return AnnotatorImport.objects.filter(study=study).defer("content").order_by("-created_at", "-id")


def study_weights_gap(*, study: Study) -> str | None:
    """What the study's trust weights will lack with its stored roles, IAT and missing-instrument rule, and what they
    then use (``psychometrics.roles.weights_gap``); None when they have every score."""
    settings = StudyAnalysisSettings.objects.filter(study=study).first()
    return roles.weights_gap(
        roles=list(StudyInstrument.objects.filter(study=study).values_list("role", flat=True)),
        iat_enabled=study.iat_enabled,
        missing_rule=settings.missing_instrument if settings else StudyAnalysisSettings.MissingInstrument.EXCLUDE)
